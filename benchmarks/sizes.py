"""ubpe's container sizes on every benchmark input, to compare two trees byte for byte.

    python benchmarks/sizes.py --out /tmp/sizes-main.json                       # this tree
    python benchmarks/sizes.py --out /tmp/sizes-new.json --compare /tmp/sizes-main.json
    python benchmarks/sizes.py --unseen /tmp/unseen-data --texts ...           # more inputs
    python benchmarks/sizes.py --out /tmp/s.json --settings '{"screen_keep": 3}'  # planner settings

The inputs are those of bench_signals.py (every data set; the float seismogram both rounded,
"float-q", and with ``step=1.0``, "float-step"), of bench_unseen.py (``--unseen DIR``, when the
recordings were fetched with unseen_data.py) and of bench_text_compress.py (taylorswift.txt and,
unless ``--no-debian``, the Debian texts it reads). Each input is compressed at the default level
and at level 1 (``--levels``), decoded and checked, and its size written to the JSON. With
``--compare``, every input whose size differs from the other run is printed, with the totals of
both: the check that a change which should not move a byte moved none. ``--settings`` (a JSON
object, or ``@file``) applies ``ubpe.planner.settings.configured(**object)`` to every compress
call (JSON lists become tuples; ``Infinity`` is allowed): what a planner setting is worth. The
CPU time of the compress calls (``time.process_time``, all threads) is printed in all, and with
``--times FILE`` written per input and level; sizes are exact, times are only comparable
between runs alternated in one session.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _data  # noqa: E402
from bench_ratio import load  # noqa: E402

import ubpe  # noqa: E402
from ubpe.planner import settings as planner_settings  # noqa: E402

SIGNAL_SETS = ["neural24-each", "neural120-concat", "ecg", "seismic", "audio-each", "float-q"]


def inputs(unseen: str | None, texts: bool, debian: bool, quick: bool) -> list[tuple[str, np.ndarray, dict]]:
    """(name, values, compress options) of every input."""
    out: list[tuple[str, np.ndarray, dict]] = []
    for name in SIGNAL_SETS:
        if quick and name.startswith("neural120"):
            continue
        arrays, _rate = load(name)
        for i, x in enumerate(arrays):
            out.append((f"{name}/{i}" if len(arrays) > 1 else name, np.asarray(x), {}))
    out.append(("float-step", np.load(_data.data_dir() / "float" / "BW_UH4_EHZ.npy"), {"step": 1.0}))
    if unseen:
        import bench_unseen

        paths = sorted(str(p) for p in Path(unseen).iterdir() if p.suffix in bench_unseen.SUFFIXES)
        for name, x, _rate in bench_unseen.load(paths, "0", 0.0):
            out.append((f"unseen/{name}", x, {}))
    if texts:
        out.append(("text/taylorswift.txt", np.frombuffer(_data.text(), np.uint8), {}))
        if debian:
            import bench_text_compress

            for name, raw in bench_text_compress.debian_texts().items():
                out.append((f"text/{name}", np.frombuffer(raw, np.uint8), {}))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="JSON file to write: {input: {level: bytes}}")
    ap.add_argument("--compare", help="a JSON written by an earlier run: print every difference")
    ap.add_argument("--unseen", help="the folder unseen_data.py wrote (skipped when absent)")
    ap.add_argument("--no-texts", action="store_true")
    ap.add_argument("--no-debian", action="store_true", help="taylorswift.txt only")
    ap.add_argument("--quick", action="store_true", help="leave out neural120-concat")
    ap.add_argument("--levels", default="2,1")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--settings", help="JSON object (or @file) of planner Settings fields for every compress call")
    ap.add_argument("--times", help="JSON file to write: {input: {level: CPU seconds of compress}}")
    a = ap.parse_args(argv)
    changes = settings_argument(a.settings)
    levels = [int(v) for v in a.levels.split(",")]
    unseen = a.unseen if a.unseen and Path(a.unseen).is_dir() else None
    if a.unseen and not unseen:
        print(f"note: {a.unseen} is not a folder: unseen recordings skipped")
    sizes: dict[str, dict[str, int]] = {}
    times: dict[str, dict[str, float]] = {}
    t0 = time.perf_counter()
    for name, x, opts in inputs(unseen, not a.no_texts, not a.no_debian, a.quick):
        row, cpu = {}, {}
        for level in levels:
            c0 = time.process_time()
            with planner_settings.configured(**changes):
                blob = ubpe.compress(x, level=level, threads=a.threads, **opts)
            cpu[str(level)] = time.process_time() - c0
            back = ubpe.decompress(blob)
            if "step" in opts:
                ok = back.shape == x.shape and float(np.max(np.abs(back - x))) <= opts["step"] / 2 * (1 + 1e-9)
            else:
                ok = back.dtype == x.dtype and np.array_equal(back, x)
            if not ok:
                raise AssertionError(f"{name}: level {level} did not round-trip")
            row[str(level)] = len(blob)
        sizes[name], times[name] = row, cpu
        print(f"{name}: " + ", ".join(f"L{k} {v}" for k, v in row.items()), flush=True)
    cpu_total = {k: sum(t[k] for t in times.values()) for k in map(str, levels)}
    print(f"{len(sizes)} inputs in {time.perf_counter() - t0:.0f} s; compress CPU "
          + ", ".join(f"L{k} {v:.1f} s" for k, v in cpu_total.items()))
    Path(a.out).write_text(json.dumps(sizes, indent=1) + "\n")
    if a.times:
        Path(a.times).write_text(json.dumps(times, indent=1) + "\n")
    if a.compare:
        other = json.loads(Path(a.compare).read_text())
        common = [k for k in sizes if k in other]
        for level in map(str, levels):
            mine = sum(sizes[k][level] for k in common if level in other[k])
            theirs = sum(other[k][level] for k in common if level in other[k])
            print(f"level {level}: {mine} B here, {theirs} B in {a.compare} ({len(common)} inputs in both, "
                  f"{100 * (mine / theirs - 1):+.3f} %)")
            for k in common:
                if level in other[k] and sizes[k][level] != other[k][level]:
                    print(f"  {k}: {other[k][level]} -> {sizes[k][level]} ({sizes[k][level] - other[k][level]:+d} B)")
        missing = sorted(set(other) ^ set(sizes))
        if missing:
            print(f"in one run only: {', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}")
    return 0


def settings_argument(text: str | None) -> dict:
    """``--settings``: a JSON object of Settings fields (``@path``: read from a file), lists
    made tuples; unknown fields are refused by ``configured``."""
    if not text:
        return {}
    raw = json.loads(Path(text[1:]).read_text() if text.startswith("@") else text)
    if not isinstance(raw, dict):
        raise SystemExit("--settings: expected a JSON object of Settings fields")
    changes = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}
    try:
        with planner_settings.configured(**changes):  # an unknown field: refused before any work
            pass
    except TypeError as e:
        raise SystemExit(f"--settings: {e}") from None
    return changes


if __name__ == "__main__":
    sys.exit(main())
