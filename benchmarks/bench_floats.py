"""Lossless floats (issue 30): ubpe's sizes and level-1 decoding speed against pcodec at its best
level (12) and ALP, on the recordings of benchmarks/float_data.py (registry packages) and the
shared float recording, in one run.

    python benchmarks/float_data.py /tmp/float-data
    nice -n 5 python benchmarks/bench_floats.py /tmp/float-data [--repeat 5] [--md out.md]

Per series: ubpe's container at level 1 and 2 (checked bit for bit), pcodec
(``standalone.simple_compress``, ``compression_level=12``), ALP (the ``alp-codec`` package: the
ALP wire format of QTSurfer/alp-java, vectors of 1024 values, frame-of-reference bit packing,
exceptions; float64 only, so float32 series are widened exactly first), ubpe's mode (its float
stage, or "floatpack" for a short series coded as the values themselves). Decoding:
ubpe level 1 and pcodec alternated ``--repeat`` times, best CPU (process_time) and wall times
a call (a series of fewer than 20 000 values: timed over 20 000 // n calls, so that the
timer's own cost does not count), in million values per second. A missing peer is skipped with a note.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ubpe  # noqa: E402
from _data import DataMissingError, data_dir  # noqa: E402


def series(folders: list[Path]) -> list[tuple[str, np.ndarray]]:
    out = []
    for folder in folders:
        out += [(p.stem, np.load(p)) for p in sorted(folder.glob("*.npy"))]
    try:
        out.append(("shared-BW_UH4_EHZ", np.load(data_dir() / "float" / "BW_UH4_EHZ.npy")))
    except (DataMissingError, FileNotFoundError) as e:
        print(f"note: shared float recording skipped: {e}")
    return out


def best_of(fn, repeat: int, calls: int = 1) -> tuple[float, float]:
    """Best CPU and wall seconds a call of ``fn`` over ``repeat`` timings of ``calls`` calls."""
    cpu = wall = float("inf")
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(calls):
            fn()
        cpu = min(cpu, (time.process_time() - c0) / calls)
        wall = min(wall, (time.perf_counter() - w0) / calls)
    return cpu, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", type=Path, nargs="+")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--md", type=Path)
    args = ap.parse_args()
    try:
        from pcodec import ChunkConfig, standalone
    except ImportError as e:
        standalone = None
        print(f"note: pcodec skipped: {e}")
    try:
        import alp
    except ImportError as e:
        alp = None
        print(f"note: ALP (alp-codec) skipped: {e}")
    rows = []
    head = ("| series | values | dtype | raw B | ubpe L1 | ubpe L2 | pcodec 12 | ALP | L2 / pcodec | mode | "
            "ubpe L1 decode M/s cpu (wall) | pcodec decode M/s cpu (wall) |")
    print(head)
    print("|" + "---|" * 12)
    wins = losses = 0
    for name, x in series(args.folders):
        l1, l2 = ubpe.compress(x, level=1), ubpe.compress(x, level=2)
        for data in (l1, l2):
            y = ubpe.decompress(data)
            assert y.dtype == x.dtype and y.tobytes() == x.tobytes(), name
        info = ubpe.describe(l2)
        mode = info.front[0]["stage"] if info.front else info.coder  # ("floatpack": the values themselves)
        pc = standalone.simple_compress(x, ChunkConfig(compression_level=12)) if standalone else None
        alp_size = len(alp.encode(x.astype(np.float64))) if alp else None
        ubpe.decompress(l1)
        t_u = [float("inf"), float("inf")]
        t_p = [float("inf"), float("inf")]
        calls = max(1, 20_000 // x.size)  # (a short series: many calls a timing, the timer's cost shared)
        for _ in range(args.repeat):  # alternated, one timing each, best kept
            c, w = best_of(lambda: ubpe.decompress(l1), 1, calls)
            t_u = [min(t_u[0], c), min(t_u[1], w)]
            if pc is not None:
                c, w = best_of(lambda: standalone.simple_decompress(pc), 1, calls)
                t_p = [min(t_p[0], c), min(t_p[1], w)]

        def speed(t):
            return f"{x.size / max(t[0], 1e-9) / 1e6:.1f} ({x.size / max(t[1], 1e-9) / 1e6:.1f})"

        ratio = len(l2) / len(pc) if pc is not None else float("nan")
        if pc is not None:
            wins += len(l2) < len(pc)
            losses += len(l2) >= len(pc)
        row = (f"| {name} | {x.size} | {x.dtype} | {x.nbytes} | {len(l1)} | {len(l2)} | "
               f"{len(pc) if pc is not None else '-'} | {alp_size if alp_size is not None else '-'} | {ratio:.3f} | "
               f"{mode} | {speed(t_u)} | {speed(t_p) if pc is not None else '-'} |")
        rows.append(row)
        print(row, flush=True)
    summary = f"ubpe level 2 smaller than pcodec level 12 on {wins} of {wins + losses} series"
    print(summary)
    if args.md:
        args.md.write_text("\n".join([head, "|" + "---|" * 12, *rows, "", summary, ""]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
