"""Progress on the command line: a bar on standard error while work runs, never elsewhere.

The rules, for every command that draws one (``compress``, ``decompress``, ``test``, ``fit``,
``bench``):

- drawn only when standard error is a terminal, and never with ``-q``: a log file or a pipe gets
  no bar (nor carriage returns);
- shown only once the work has taken :data:`DELAY` seconds (:func:`delay`): shorter jobs print nothing;
- a bar with the percentage done, the count and the rate when the work reports how far it is
  (blocks of a long input, runs of a bench, merges of a fit); the elapsed time only when it
  cannot (one stream: the coders report nothing until they finish);
- cleared from the terminal when the work ends, before the summary line is printed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

#: Seconds a job runs before its progress appears (shorter jobs print nothing); the environment
#: variable ``UBPE_PROGRESS_DELAY`` sets another (0: at once).
DELAY = 1.0


def delay() -> float:
    """:data:`DELAY`, or ``$UBPE_PROGRESS_DELAY`` seconds when that is a number >= 0."""
    try:
        value = float(os.environ.get("UBPE_PROGRESS_DELAY", DELAY))
    except ValueError:
        return DELAY
    return value if value >= 0 else DELAY


def enabled(quiet: bool = False) -> bool:
    """Whether a bar may be drawn: not ``quiet`` and standard error a terminal."""
    if quiet:
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stream
        return False


_ELAPSED = "{desc}: {elapsed}"
_BAR = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} {unit} [{elapsed}<{remaining}, {rate_fmt}]"


class _Off:
    """A bar that draws nothing."""

    def update(self, n: int = 1) -> None:
        pass

    def set_total(self, n: int) -> None:
        pass

    def set_postfix_str(self, text: str) -> None:
        pass


@contextlib.contextmanager
def bar(desc: str, total: int | None, *, unit: str = "it", quiet: bool = False,
        scale: bool = False) -> Iterator[Any]:
    """A progress bar of ``total`` ``unit`` (``update(n)`` as they are done), or, with ``total``
    None, a line with the elapsed time of ``desc``; drawn under the module's rules. ``scale``:
    counts in k, M, G (values, bytes)."""
    if not enabled(quiet):
        yield _Off()
        return
    from tqdm import tqdm

    fmt = _ELAPSED if total is None else _BAR
    wait = delay()
    try:
        known = os.get_terminal_size(sys.stderr.fileno()).columns > 0
    except (OSError, ValueError):
        known = False
    # a terminal that reports no size (a bare pseudo-terminal, where tqdm draws nothing): $COLUMNS
    # and $LINES, else 80 x 24
    size = shutil.get_terminal_size((80, 24))
    width = {} if known else {"ncols": size.columns or 80, "nrows": size.lines or 24}
    progress = tqdm(total=total, desc=desc, unit=unit, unit_scale=scale, delay=wait, file=sys.stderr,
                    leave=False, dynamic_ncols=known, bar_format=fmt, mininterval=0.2, **width)
    lock = threading.Lock()
    done = threading.Event()
    start = time.monotonic()
    shown = []

    class Bar:
        """Thread-safe updates (blocks finish on worker threads)."""

        def update(self, n: int = 1) -> None:
            with lock:
                progress.update(n)

        def set_postfix_str(self, text: str) -> None:
            with lock:
                progress.set_postfix_str(text, refresh=False)

        def set_total(self, n: int) -> None:
            """The total, once known (a bar begun with ``total=None`` becomes a bar)."""
            with lock:
                if progress.total != n:
                    progress.total = n
                    progress.bar_format = _BAR

    def tick() -> None:  # the elapsed time moves even while no block finishes
        while not done.wait(0.5):
            if time.monotonic() - start >= wait:  # (tqdm's refresh() ignores its delay)
                with lock:
                    progress.refresh()
                    shown.append(True)

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield Bar()
    finally:
        done.set()
        thread.join()
        with lock:
            if shown:  # drawn by refresh(), which close() does not know of: erase it here
                progress.clear()
            progress.close()  # leave=False: a line drawn by update() is erased
        sys.stderr.flush()
