"""Measurement helpers shared by the benchmark scripts.

    time_call(fn, *args, warmup=1, repeat=3)  -> Timing(best_s, median_s, runs_s, result,
                                                         cpu_runs_s, cpu_best_s)
    peak_memory(target, *args, n_values=None) -> dict(peak_bytes, baseline_bytes, delta_bytes,
                                                      bytes_per_value, seconds)
    print_table(rows, columns=None, title=None) -> prints plain aligned text
    add_json_arg(parser, default_name) / write_json(path, payload, extra) / result_path(args)
        result files: JSON with date (UTC), machine, versions, git commit and dirtiness, command

Timing: ``warmup`` untimed calls (numba compilation, caches), then ``repeat`` timed calls with
``time.perf_counter_ns``; report the best (least disturbed by the other processes sharing the
machine) and the median. The CPU time of this process (``time.process_time_ns``) is recorded
for each timed call too: on a shared machine a wall time well above the CPU time of a
single-threaded call means it waited for a core.

Peak memory: the function runs in a fresh child process (``multiprocessing`` with the 'spawn'
start method, so nothing is inherited from this process's heap). The child loads its input,
takes the current resident size as the baseline, runs the call and reads the peak resident
size. On Linux the peak is ``VmHWM`` from /proc/self/status, reset to the current size just
before the call (``echo 5 > /proc/self/clear_refs``), so the measure is the call's own peak.
``resource.getrusage(RUSAGE_SELF).ru_maxrss`` is the fallback elsewhere, but beware: on Linux
it is inherited across fork+exec (a child of a 400 MB parent starts at ru_maxrss = 400 MB), and
it is a high-water mark that earlier steps may already have raised.
The target must be importable by name in the child (a module-level function, not a lambda).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence


# ---------------------------------------------------------------- timing


@dataclass
class Timing:
    best_s: float
    median_s: float
    runs_s: list[float] = field(default_factory=list)
    result: Any = None
    cpu_runs_s: list[float] = field(default_factory=list)  #: process CPU time of each timed call

    @property
    def cpu_best_s(self) -> float | None:
        """The smallest CPU time of the timed calls (None if not recorded)."""
        return min(self.cpu_runs_s) if self.cpu_runs_s else None


def time_call(fn: Callable, *args, warmup: int = 1, repeat: int = 3, **kwargs) -> Timing:
    """Call ``fn(*args, **kwargs)`` ``warmup`` times untimed, then ``repeat`` times timed."""
    result = None
    for _ in range(warmup):
        result = fn(*args, **kwargs)
    runs, cpu = [], []
    for _ in range(max(1, repeat)):
        c0 = time.process_time_ns()
        t0 = time.perf_counter_ns()
        result = fn(*args, **kwargs)
        runs.append((time.perf_counter_ns() - t0) / 1e9)
        cpu.append((time.process_time_ns() - c0) / 1e9)
    return Timing(best_s=min(runs), median_s=statistics.median(runs), runs_s=runs, result=result,
                  cpu_runs_s=cpu)


# ---------------------------------------------------------------- memory


def _proc_status_kib(key: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def reset_peak_rss() -> bool:
    """Reset this process's peak-RSS mark to its current RSS (Linux); False if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def current_rss_bytes() -> int | None:
    kib = _proc_status_kib("VmRSS")
    return None if kib is None else kib * 1024


def peak_rss_bytes() -> int:
    """Peak resident set size of this process: VmHWM on Linux, else ru_maxrss."""
    kib = _proc_status_kib("VmHWM")
    if kib is not None:
        return kib * 1024
    import resource

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024  # Linux and BSD report KiB


def _memory_child(conn, target, args, kwargs, call_loader):
    try:
        if call_loader:  # args[0] is a zero-argument loader: build the input inside the child
            args = (args[0](),) + tuple(args[1:])
        import gc

        gc.collect()
        reset = reset_peak_rss()
        base = current_rss_bytes() if reset else None
        if base is None:
            base = peak_rss_bytes()
        t0 = time.perf_counter_ns()
        target(*args, **kwargs)
        secs = (time.perf_counter_ns() - t0) / 1e9
        conn.send(dict(ok=True, baseline_bytes=base, peak_bytes=peak_rss_bytes(), seconds=secs,
                       method="VmHWM after clear_refs" if reset else "ru_maxrss"))
    except BaseException as exc:  # report, don't hang the parent
        conn.send(dict(ok=False, error=f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def peak_memory(
    target: Callable,
    *args,
    n_values: int | None = None,
    loader: bool = False,
    timeout: float | None = None,
    **kwargs,
) -> dict:
    """Extra peak resident memory of ``target(*args, **kwargs)``, measured in a spawned child.

    With ``loader=True`` the first argument is a zero-argument callable run in the child to
    build the real first argument (so a large input is not pickled across, and its loading
    is part of the baseline). ``n_values`` (the number of input values) adds
    ``bytes_per_value = delta_bytes / n_values``. Raises RuntimeError if the child fails or
    runs past ``timeout`` seconds.
    """
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_memory_child, args=(child, target, args, kwargs, loader))
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout):
            proc.kill()
            raise RuntimeError(f"peak_memory: {getattr(target, '__name__', target)} ran past {timeout} s")
        msg = parent.recv()
    except EOFError:
        msg = dict(ok=False, error=f"child died (exit code {proc.exitcode})")
    finally:
        proc.join(5)
        if proc.is_alive():
            proc.kill()
    if not msg.pop("ok"):
        raise RuntimeError(f"peak_memory: {msg['error']}")
    msg["delta_bytes"] = max(0, msg["peak_bytes"] - msg["baseline_bytes"])
    if n_values:
        msg["bytes_per_value"] = msg["delta_bytes"] / n_values
    return msg


# ---------------------------------------------------------------- output


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v == 0:
            return "0"
        a = abs(v)
        if a >= 1000:
            return f"{v:,.0f}"
        if a >= 100:
            return f"{v:.1f}"
        if a >= 1:
            return f"{v:.3f}"
        return f"{v:.4f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def format_table(rows: Sequence[dict], columns: Sequence[str] | None = None, title: str | None = None) -> str:
    """Rows of dicts as plain text: a header line, a rule, one line per row; numbers right-aligned."""
    if columns is None:
        columns = []
        for r in rows:
            columns += [k for k in r if k not in columns]
    cells = [[_fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    numeric = [all(isinstance(r.get(c), (int, float)) or r.get(c) is None for r in rows) for c in columns]

    def line(vals):
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(vals, widths, numeric)).rstrip()

    out = []
    if title:
        out.append(title)
    out.append(line(list(columns)))
    out.append("  ".join("-" * w for w in widths))
    out += [line(row) for row in cells]
    return "\n".join(out)


def print_table(rows: Sequence[dict], columns: Sequence[str] | None = None, title: str | None = None) -> None:
    print(format_table(rows, columns, title))
    print(flush=True)


RESULTS = Path(__file__).resolve().parent / "results"


def add_json_arg(parser, default_name: str | None = None) -> None:
    """Add ``--json OUT.json`` (default: benchmarks/results/<default_name>) and ``--no-json``."""
    default = str(RESULTS / default_name) if default_name else None
    parser.add_argument("--json", metavar="OUT.json", default=default,
                        help=f"write every result row, with the run's provenance, here (default: {default})")
    parser.add_argument("--no-json", action="store_true", help="do not write a result file")


def _git(*args: str) -> str | None:
    import subprocess

    try:
        res = subprocess.run(["git", *args], cwd=Path(__file__).resolve().parent, capture_output=True,
                             text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.rstrip() if res.returncode == 0 else None


def machine_info() -> dict:
    """Cores, CPU model, memory and OS of this machine (what a timing depends on)."""
    import os
    import platform

    cpu = platform.processor() or None
    mem = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return dict(cpus=os.cpu_count(), cpus_usable=usable, cpu_model=cpu, memory_bytes=mem,
                platform=platform.platform(), load_avg=list(os.getloadavg()) if hasattr(os, "getloadavg") else None)


def provenance(extra: dict | None = None) -> dict:
    """Date (UTC), machine, versions, the ubpe commit (and whether the tree was dirty), command."""
    import datetime
    from importlib import metadata

    def version(pkg):
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return None

    status = _git("status", "--porcelain", "--untracked-files=no")
    doc = dict(
        date_utc=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        command=" ".join([Path(sys.executable).name, *sys.argv]),
        machine=machine_info(),
        versions=dict(python=sys.version.split()[0], numpy=version("numpy"), numba=version("numba"),
                      ubpe=getattr(sys.modules.get("ubpe"), "__version__", None) or version("ubpe")),
        git=dict(commit=(_git("rev-parse", "HEAD") or "").strip() or None, dirty=None if status is None else bool(status),
                 dirty_files=None if not status else [ln[3:] for ln in status.splitlines() if ln.strip()]),
    )
    if extra:
        doc.update(extra)
    return doc


def write_json(path: str | Path | None, payload: Any, extra: dict | None = None) -> Path | None:
    """Write ``{provenance..., results: payload}`` as JSON atomically; no-op when ``path`` is None.

    The file is written to a temporary name in the same folder and renamed over the target, so a
    killed run never leaves half a result file. Prints and returns the path.
    """
    import os
    import tempfile

    if not path:
        return None
    doc = provenance(extra)
    doc["results"] = payload
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(doc, indent=1, default=str) + "\n")
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; a result file is for everyone to read
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    print(f"wrote {path}")
    return path


def result_path(args) -> str | None:
    """The result file an argparse namespace from ``add_json_arg`` asks for (None: --no-json)."""
    return None if getattr(args, "no_json", False) else args.json


def compile_times(script: str, cwd: Path) -> list[dict]:
    """First-call times of ``script`` (Python that prints a JSON map of stage -> seconds as its
    last line) in a new process: with an empty numba cache (cold), then with it filled (cached).
    Rows ``stage, cold_s, cached_s`` and a total; ``RuntimeError`` if a run fails.

    A stage's value may also be ``[wall_s, cpu_s]`` (the script's ``time.process_time`` too: on
    a shared machine the wall time includes waiting for a core); the rows then also hold
    ``cold_cpu_s`` and ``cached_cpu_s``.

    The children may write Python bytecode (``PYTHONDONTWRITEBYTECODE`` is dropped from their
    environment; ``__pycache__`` is ignored by git), so the cached run reads ubpe's compiled
    sources as an installed package does (pip compiles them): without it every run compiled
    them again. (A ``PYTHONPYCACHEPREFIX`` would keep the tree clean but would also make the
    cold run recompile numpy, numba and scipy, whose bytecode sits in site-packages.)
    """
    runs = {}
    with tempfile.TemporaryDirectory(prefix="ubpe-numba-cache-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["NUMBA_CACHE_DIR"] = cache
        for label in ("cold", "cached"):
            r = subprocess.run([sys.executable, "-c", script], env=env, cwd=cwd,
                               capture_output=True, text=True, timeout=1800)
            if r.returncode != 0:
                raise RuntimeError(f"compile measurement ({label}) failed:\n{r.stderr[-2000:]}")
            runs[label] = json.loads(r.stdout.strip().splitlines()[-1])

    def split(v):
        return (v[0], v[1]) if isinstance(v, list) else (v, None)

    rows = []
    for k in runs["cold"]:
        (cw, cc), (kw, kc) = split(runs["cold"][k]), split(runs["cached"][k])
        row = dict(stage=k, cold_s=cw, cached_s=kw)
        if cc is not None:
            row.update(cold_cpu_s=cc, cached_cpu_s=kc)
        rows.append(row)
    total = dict(stage="total")
    for key in ("cold_s", "cached_s", "cold_cpu_s", "cached_cpu_s"):
        if all(key in r for r in rows):
            total[key] = sum(r[key] for r in rows)
    rows.append(total)
    return rows
