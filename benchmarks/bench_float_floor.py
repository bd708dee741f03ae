"""The fixed cost of a level-1 decompress of a short float container (issue 30: 100 values at
10 M values/s is 10 us a call), against the floor of this design: what any decompress call
must do, measured in the same run, alternated.

    nice -n 5 python benchmarks/bench_float_floor.py /tmp/float-data [--names obspy-lmow obspy-seism]

Per series (``NAME.npy`` in the folder, as ``benchmarks/float_data.py`` writes them): the
container's coder, ``ubpe.decompress``'s CPU time a call (``time.process_time``, best of the
rounds), and the floor's parts on the same bytes: ``msgpack.unpackb`` of the map after the
prefix (plain, no key names), ``zlib.crc32`` of the values, ``np.empty`` of the output, one
call of a compiled kernel (``ubpe._kernels.floatpack.decode``, the "floatpack" coder's: the
cheapest kernel a decoder runs), and their sum. Every part is timed in the same loop, round by
round, so that a busy machine slows them alike.
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib
from pathlib import Path

import msgpack
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ubpe  # noqa: E402
from ubpe._kernels import floatpack as floatpack_kernel  # noqa: E402


def per_call(fns: dict, rounds: int, calls: int) -> dict[str, float]:
    """Best CPU microseconds a call of each function, the functions alternated round by round."""
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            t = time.process_time()
            for _ in range(calls):
                fn()
            best[k] = min(best[k], (time.process_time() - t) / calls * 1e6)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path)
    ap.add_argument("--names", nargs="+", default=["obspy-lmow", "obspy-seism"])
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    print("| series | values | coder | decompress us | M values/s | floor: unpackb | crc32 | np.empty | kernel call "
          "| floor sum us | decompress / floor |")
    print("|" + "---|" * 11)
    for name in args.names:
        x = np.load(args.folder / f"{name}.npy")
        data = ubpe.compress(x, level=1)
        assert ubpe.decompress(data).tobytes() == x.tobytes()
        body = memoryview(data)[5:]
        flat = np.ascontiguousarray(x).reshape(-1)
        packed = b""  # (values of 0 bits: the call and its loop, nothing read)
        out = np.empty(x.size, x.dtype.newbyteorder("="))
        fns = {
            "decompress": lambda: ubpe.decompress(data),
            "unpackb": lambda: msgpack.unpackb(body, raw=False, strict_map_key=False),
            "crc32": lambda: zlib.crc32(flat),
            "empty": lambda: np.empty(x.size, out.dtype),
            "kernel": lambda: floatpack_kernel.decode(packed, 0, 0, 0, False, 1.0, out),
        }
        t = per_call(fns, args.rounds, max(50, 100_000 // x.size))
        floor = t["unpackb"] + t["crc32"] + t["empty"] + t["kernel"]
        print(f"| {name} | {x.size} | {ubpe.describe(data).coder} | {t['decompress']:.1f} | "
              f"{x.size / t['decompress']:.1f} | {t['unpackb']:.2f} | {t['crc32']:.2f} | {t['empty']:.2f} | "
              f"{t['kernel']:.2f} | {floor:.2f} | {t['decompress'] / floor:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
