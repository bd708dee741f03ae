"""Values on a grid (``offset + step * k``) against the values ``k`` themselves, levels 1 to 3.

    UBPE_DATA=/work/shared/data python benchmarks/bench_grid_values.py [--levels 1,2,3] [--only NAME ...]
    python benchmarks/bench_grid_values.py --checkout /path/to/main   # the same table with main's ubpe

Each case is built from real data (shared/data, and /work/unseen2's 24-bit drum hit when present)
as it occurs in practice: 16-bit audio shifted left by 8 and by 16 into int32 (and by 16 into
int64), the ECG times 4 plus 1000, a seismogram reduced to 12 bits and left-justified in uint16,
the ECG as uint16 on a grid with an offset, two channels on grids of their own, the drum hit
(a 24-bit word carrying 20 bits, every value a multiple of 16), and the audio shifted by 8 with
one value off the grid (no exact grid: what that costs). For each, the container of the
grid-valued input ("grid") and of its indices ("k": the values before they were put on the grid,
in their own dtype) at each level, their difference in bytes, the chain and coder chosen for
each, the compress CPU time of each (``time.process_time``; the first call of a level includes
its kernels' loading), and a bit-exact round trip of both. A fixed ubpe version gives fixed sizes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _data  # noqa: E402

if "--checkout" in sys.argv:  # (before ubpe is imported: the other checkout's package first)
    sys.path.insert(0, str(Path(sys.argv[sys.argv.index("--checkout") + 1]).resolve()))
import ubpe  # noqa: E402

DRUM = Path("/work/unseen2/drum-hat24mono_44100hz.npy")


def cases() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """name -> (values on a grid, their indices k in the dtype they came in)."""
    from scipy.io import wavfile

    piano, trumpet = (wavfile.read(_data.data_dir() / "audio" / f)[1] for f in ("piano-3.wav", "trumpet-1.wav"))
    ecg = _data.ecg()[:40000]
    seis = _data.seismic().astype(np.int64)
    shift = max(0, int(seis.max() - seis.min()).bit_length() - 12)
    seis12 = ((seis - seis.min()) >> shift).astype(np.uint16)  # a 12-bit ADC's codes
    out = {
        "piano int16<<8 in int32": (piano.astype(np.int32) << 8, piano),
        "piano int16<<16 in int32": (piano.astype(np.int32) << 16, piano),
        "trumpet int16<<16 in int64": (trumpet.astype(np.int64) << 16, trumpet),
        "ecg*4+1000 int16": (ecg * 4 + 1000, ecg),
        "ecg uint16 (k-min)*3+20000": (((ecg - ecg.min()) * 3 + 20000).astype(np.uint16),
                                       (ecg - ecg.min()).astype(np.uint16)),
        "seismic 12-bit <<4 uint16": (seis12 << 4, seis12),
        "stereo piano<<8, trumpet*6-5 int32": (
            np.stack([piano[:12000].astype(np.int32) << 8, trumpet[:12000].astype(np.int32) * 6 - 5], axis=1),
            np.stack([piano[:12000], trumpet[:12000]], axis=1)),
    }
    near = piano.astype(np.int32) << 8
    near[near.shape[0] // 2] += 1  # a grid that holds for all values but one: no grid (the gcd is 1)
    out["piano<<8, one value +1 (no grid)"] = (near, piano)
    if DRUM.is_file():
        x = np.load(DRUM)
        out["drum-hat24 (gcd 16) int32"] = (x, x // 16)
    return out


def front(info) -> str:
    return "+".join(e["stage"] + (str(e.get("order", "")) if e["stage"] == "delta" else "") for e in info.front) or "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--levels", default="1,2,3")
    ap.add_argument("--only", nargs="*", help="case names containing any of these words")
    ap.add_argument("--checkout", help="import ubpe from this checkout instead (e.g. a worktree of main)")
    args = ap.parse_args()
    levels = [int(v) for v in args.levels.split(",")]
    print(f"ubpe from {Path(ubpe.__file__).parent}")
    print(f"{'case':38} {'L':>1} {'grid B':>8} {'k B':>8} {'diff':>6}  grid chain / coder ; k chain / coder")
    total = {level: [0, 0] for level in levels}
    for name, (x, k) in cases().items():
        if args.only and not any(w in name for w in args.only):
            continue
        for level in levels:
            sizes, how, cpu = [], [], []
            for v in (x, k):
                t = time.process_time()
                data = ubpe.compress(v, level=level)
                cpu.append(time.process_time() - t)
                back = ubpe.decompress(data)
                assert back.dtype == v.dtype and np.array_equal(back, v), (name, level)
                info = ubpe.describe(data)
                sizes.append(len(data))
                how.append(f"{front(info)}/{info.coder}")
            if "no grid" not in name:  # (the totals: values on an exact grid)
                total[level][0] += sizes[0]
                total[level][1] += sizes[1]
            print(f"{name:38} {level:>1} {sizes[0]:>8} {sizes[1]:>8} {sizes[0] - sizes[1]:>+6}  {how[0]} ; {how[1]}"
                  f"  ({cpu[0]:.2f} s ; {cpu[1]:.2f} s CPU)", flush=True)
    for level, (g, k) in total.items():
        print(f"{'all on a grid':38} {level:>1} {g:>8} {k:>8} {g - k:>+6}")


if __name__ == "__main__":
    main()
