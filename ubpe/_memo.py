"""A memo of results by the content of an array, without a pass over every array kept: entries
are keyed by everything but the array's content, then ``j = 0, 1, ...`` for arrays alike in all
else, each entry ``(kept, value)`` where ``kept`` is the array itself (or a copy) while the memo
holds at most ``held`` bytes of them, else the array's 256-bit BLAKE2b digest. Most keys have one
entry, so a lookup usually costs one comparison (``np.array_equal``) or none.

    lookup(memo, key, array) -> the value kept for an array equal to ``array`` (same dtype and
                                shape in ``key``), or None
    store(memo, key, array, value, held, copy) -> keep ``value`` for ``array``

Used by the lpc stage's analysis cache (``ubpe.frontend.lpc``, copies: a caller may change its
channel afterwards) and the planner's costing memo (``ubpe.api.writer``, references: a costed
candidate's tokens never change). The planner's threads share a memo: :func:`store` holds one
lock (it sums the bytes kept over every entry, which another thread's store would change under
it: "dictionary changed size during iteration"), and :func:`lookup` reads each entry once (an
entry dropped meanwhile is a miss, never a KeyError).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from typing import Any, Iterator

import numpy as np


_STORE_LOCK = threading.Lock()


def digest(array: np.ndarray) -> bytes:
    """The 256-bit BLAKE2b of a C-contiguous array's bytes."""
    return hashlib.blake2b(array.view(np.uint8), digest_size=32).digest()


def lookup(memo: dict, key: tuple, array: np.ndarray) -> Any:
    """The value kept under ``key`` for an array equal to ``array`` (C-contiguous; ``key`` must
    hold its dtype and shape), or None: the entries ``(key, 0)``, ``(key, 1)``, ... compared by
    the array kept, else by digest (made once, only where an entry holds one)."""
    j, mine = 0, None
    while (entry := memo.get((key, j))) is not None:
        kept, value = entry
        if isinstance(kept, np.ndarray):
            if np.array_equal(kept, array):
                return value
        else:
            mine = mine or digest(array)
            if kept == mine:
                return value
        j += 1
    return None


def store(memo: dict, key: tuple, array: np.ndarray, value: Any, held: int, copy: bool) -> None:
    """Keep ``value`` for ``array`` under ``key`` (the first free ``j``): the array (a copy when
    ``copy``) while the arrays kept in ``memo`` and it come to at most ``held`` bytes, else its
    digest. Safe from several threads at once (one lock for every memo)."""
    with _STORE_LOCK:
        kept_bytes = sum(kept.nbytes for kept, _ in memo.values() if isinstance(kept, np.ndarray))
        if kept_bytes + array.nbytes <= held:
            kept: np.ndarray | bytes = array.copy() if copy else array
        else:
            kept = digest(array)
        j = 0
        while (key, j) in memo:
            j += 1
        memo[key, j] = (kept, value)


class CallScope:
    """A cache that lives only while a scope is open: :meth:`open` scopes nest and may overlap
    across threads, and ``entries`` (a dict, the same object throughout) is emptied when the last
    one closes, so that nothing outlives the call that opened it (a second ``compress`` of the
    same array pays what the first did). ``lock`` guards ``depth`` and the emptying."""

    def __init__(self) -> None:
        self.entries: dict = {}
        self.depth = 0  #: scopes open now (any thread)
        self.lock = threading.Lock()

    @contextlib.contextmanager
    def open(self) -> Iterator[None]:
        """Within it, callers may keep results in ``entries``; they are dropped when the last
        open scope ends."""
        with self.lock:
            self.depth += 1
        try:
            yield
        finally:
            with self.lock:
                self.depth -= 1
                if self.depth == 0:
                    self.entries.clear()
