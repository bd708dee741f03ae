"""How much more of a stereo recording a linear predictor explains with more lags of the other
channel (issue 29: Sac's edge on stereo audio), as the level-3 coder's OLS1 would see it.

    python benchmarks/level3_cross_lags.py FILE.npy [...] [--frames 200000] [--block 4096]

FILE: (frames, 2) integers. Per block of ``--block`` frames, each channel is fitted by least
squares (in-sample, per block: an oracle's fit, not the coder's recursive one) on ``own`` lags of
itself and ``cross`` lags of the other channel, channel 1 also on channel 0's value now (coded
before it, as in the kernel). Printed: the mean over blocks of 0.5 log2 of the residual power, in
bits a value, against own 16 and cross 2, which is what the kernel's OLS1 takes of a neighbour
(``ubpe._kernels.mixsignal``: two values of each neighbour). The figures are differences of an
ideal predictor's entropy, an upper bound on what a coder gains: its cascade and its mixer
after OLS1 recover part of it already.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

CONFIGS = ((16, 2), (16, 8), (16, 16), (32, 2), (32, 16))


def _lags(v: np.ndarray, lags: int, start: int) -> np.ndarray:
    """Columns v[t-1], ..., v[t-lags] for t from ``start`` to the end."""
    return np.stack([v[start - k: v.shape[0] - k] for k in range(1, lags + 1)], axis=1)


def residual_bits(x: np.ndarray, own: int, cross: int, block: int) -> tuple[float, float]:
    """(channel 0, channel 1): the mean over blocks of 0.5 log2 of the least-squares residual's
    power, with ``own`` lags of the channel and ``cross`` lags of the other one."""
    x = x.astype(np.float64)
    lead = max(own, cross) + 1
    out: tuple[list[float], list[float]] = ([], [])
    for b0 in range(lead, x.shape[0] - block, block):
        seg = x[b0 - lead: b0 + block]
        for c in (0, 1):
            cols = [_lags(seg[:, c], own, lead)]
            if cross:
                cols.append(_lags(seg[:, 1 - c], cross, lead))
            if c == 1:
                cols.append(seg[lead:, 0][:, None])
            a, y = np.concatenate(cols, axis=1), seg[lead:, c]
            w, *_ = np.linalg.lstsq(a, y, rcond=None)
            r = y - a @ w
            out[c].append(0.5 * np.log2(max(float(np.mean(r * r)), 1e-9)))
    return float(np.mean(out[0])), float(np.mean(out[1]))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--frames", type=int, default=200_000, help="the first frames of each recording")
    p.add_argument("--block", type=int, default=4096, help="frames a least-squares fit")
    a = p.parse_args(argv)
    print("| recording | own | cross | channel 0 | channel 1 |")
    print("|---|---|---|---|---|")
    for path in a.files:
        x = np.load(path)[: a.frames]
        if x.ndim != 2 or x.shape[1] != 2:
            print(f"| {path.stem} | (skipped: shape {x.shape}, not (frames, 2)) | | | |")
            continue
        base = residual_bits(x, 16, 2, a.block)
        for own, cross in CONFIGS[1:]:
            got = residual_bits(x, own, cross, a.block)
            print(f"| {path.stem} | {own} | {cross} | {got[0] - base[0]:+.3f} | {got[1] - base[1]:+.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
