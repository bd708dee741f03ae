"""Which encoding method ``compress`` picks, and what it saves (issue 7 item 4).

For each data set of ../shared/data and each level, the container size with the method choice
off (replay only, as before), with each segmenting method offered beside replay, and with the
default offer (``planner.ENCODE_METHODS``); the method picked; and the compression time of each,
with bz2-9 on the same values in the same run as the peer.

    python benchmarks/bench_method.py [--levels 1,2] [--quick] [--merges M]
"""

from __future__ import annotations

import argparse
import bz2
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _data  # noqa: E402

from ubpe import compress, decompress, describe, planner  # noqa: E402

OFFERS = {"replay": ("replay",), "+bits": ("replay", "bits"), "+optimal": ("replay", "optimal"),
          "+both": ("replay", "bits", "optimal")}


def datasets(quick: bool) -> dict[str, np.ndarray]:
    out = {
        "ecg": _data.ecg(),
        "seismic": _data.seismic(),
        "text": np.frombuffer(_data.text(), dtype=np.uint8),
        "float(q)": _data.float_quantized(),
        "audio[0:4]": np.concatenate([a for a, _ in _data.audio()[:4]]),
    }
    if not quick:
        out["neural[0]"] = _data.neural(1)[0]
    return out


def run(x: np.ndarray, level: int, methods: tuple[str, ...], n_tokens: int | None) -> tuple[bytes, float]:
    saved = planner.ENCODE_METHODS
    planner.ENCODE_METHODS = methods
    try:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # a fixed size may exceed what training finds
            size = None if n_tokens is None else len(np.unique(x)) + n_tokens
            data = compress(x, level=level, n_tokens=size)
        return data, time.perf_counter() - t0
    finally:
        planner.ENCODE_METHODS = saved


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="1,2")
    ap.add_argument("--quick", action="store_true", help="skip the neural recording")
    ap.add_argument("--merges", type=int, default=None,
                    help="fix the model at (distinct values + MERGES) tokens instead of the automatic size")
    args = ap.parse_args(argv)
    levels = [int(v) for v in args.levels.split(",")]
    print(f"{'data':<11} {'lvl':>3} {'bz2-9':>8} " + " ".join(f"{k:>9}" for k in OFFERS)
          + f" {'default':>8} {'picked':>7} {'saved':>7} {'merges':>6} {'t replay':>8} {'t dflt':>7}")
    for name, x in datasets(args.quick).items():
        peer = len(bz2.compress(x.tobytes(), 9))
        for level in levels:
            sizes, times, picked = {}, {}, {}
            for key, methods in OFFERS.items():
                data, sec = run(x, level, methods, args.merges)
                sizes[key], times[key], picked[key] = len(data), sec, describe(data).method
            data, t_default = run(x, level, planner.ENCODE_METHODS, args.merges)
            assert np.array_equal(decompress(data), x)
            info = describe(data)
            default, method = len(data), info.method
            saved = 100 * (1 - default / sizes["replay"])
            print(f"{name:<11} {level:>3} {peer:>8} " + " ".join(f"{sizes[k]:>9}" for k in OFFERS)
                  + f" {default:>8} {method:>7} {saved:>6.2f}% {info.n_merges:>6} {times['replay']:>7.2f}s {t_default:>6.2f}s"
                  + f"   (+optimal picked {picked['+optimal']}, +both picked {picked['+both']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
