"""How much larger than "cms2" a level-2 coder with fewer, cheaper decisions would be (issue 28.2):
python benchmarks/bench_level2_models.py [--sets ecg,seismic,audio,neural] [--cache DIR]

The "cms2" token streams of each set's level-2 containers (``bench_level2_decode.containers``:
compressed here, or read from ``--cache``) are sized, without coding, by the ideal adaptive code
length (sum of -log2 p, p the model's probability before it adapts) of cheaper models over the
same ranks u ("cms2"'s binarization: the payload header's mode and center), and compared with
the "cms2" payload bytes. Every model codes a token in 1 multi-symbol decision (the bucket
b = bit_length(u)) and at most 2 adaptive binary decisions (the offset's top bits), the rest
of the offset raw: about 3 decisions a token where "cms2" takes 4.4 to 6.2, each without a mixer.

* ``b|b1b2``: the bucket by adaptive counts in the context of the two previous buckets (12 x 12);
* ``b|b1e``: ... of the previous bucket and the loudness (bit_length of the running mean of
  |u|, 4 fractional bits, rate 1/8);
* ``b|b1b2e``: both (12 x 12 x 16 contexts);
* ``mix2``: ``b|b1b2`` and ``b|b1e`` averaged in the probability domain (a stand-in for a
  2-input multi-symbol mixer).

``--speed``: the decoder-side work of the ``b|b1e`` model in integer arithmetic, timed (process
time, least of 5) per token: the cumulative-count scan to the bucket a range decoder would
search, the counts' update and halving, the two offset bits' adaptive probabilities and the raw
bits' extraction; no arithmetic coder (a range coder's decode step adds its own few ns). A lower
bound of such a coder's decode time, against "cms2"'s 223-374 ns a token.

Offsets: the top offset bit by an adaptive binary model per (b, previous bucket), the next per
(b, top bit), the rest raw. Adaptive counts: each symbol starts at 1, +32 a use, halved when a
context's total passes 2**16. Not a coder: the printout says what a faster coder of this shape
would cost in bytes, before anyone builds one.
"""

from __future__ import annotations

import argparse
import math
import time

import numba
import numpy as np

try:
    from . import bench_level2_decode as dec
except ImportError:  # run as a script
    import bench_level2_decode as dec

from ubpe._kernels import cmsignal2

NB = 26  # buckets: u < 2**25
CAP = 11


@numba.njit(cache=False)
def _sizes(u):
    """Ideal code lengths in bits of ``u`` (int64 ranks) under the module docstring's models:
    (b|b1b2, b|b1e, b|b1b2e, mix2, offsets)."""
    n = u.shape[0]
    f12 = np.ones((CAP + 1, CAP + 1, NB), np.float64)
    t12 = np.full((CAP + 1, CAP + 1), float(NB))
    f1e = np.ones((CAP + 1, 16, NB), np.float64)
    t1e = np.full((CAP + 1, 16), float(NB))
    f3 = np.ones((CAP + 1, CAP + 1, 16, NB), np.float64)
    t3 = np.full((CAP + 1, CAP + 1, 16), float(NB))
    pb1 = np.full((NB, NB), 2048.0)
    pb2 = np.full((NB, 2), 2048.0)
    out = np.zeros(5)
    b1 = 0
    b2 = 0
    en = 0
    for i in range(n):
        x = u[i]
        b = 0
        while (x >> b) > 0:
            b += 1
        c1 = min(b1, CAP)
        c2 = min(b2, CAP)
        e = 0
        while ((en >> 4) >> e) > 0:
            e += 1
        e = min(e, 15)
        p12 = f12[c1, c2, b] / t12[c1, c2]
        p1e = f1e[c1, e, b] / t1e[c1, e]
        p3 = f3[c1, c2, e, b] / t3[c1, c2, e]
        out[0] -= math.log2(p12)
        out[1] -= math.log2(p1e)
        out[2] -= math.log2(p3)
        out[3] -= math.log2(0.5 * (p12 + p1e))
        f12[c1, c2, b] += 32
        t12[c1, c2] += 32
        if t12[c1, c2] > 65536:
            for s in range(NB):
                t12[c1, c2] -= f12[c1, c2, s] - (f12[c1, c2, s] + 1) // 2
                f12[c1, c2, s] = (f12[c1, c2, s] + 1) // 2
        f1e[c1, e, b] += 32
        t1e[c1, e] += 32
        if t1e[c1, e] > 65536:
            for s in range(NB):
                t1e[c1, e] -= f1e[c1, e, s] - (f1e[c1, e, s] + 1) // 2
                f1e[c1, e, s] = (f1e[c1, e, s] + 1) // 2
        f3[c1, c2, e, b] += 32
        t3[c1, c2, e] += 32
        if t3[c1, c2, e] > 65536:
            for s in range(NB):
                t3[c1, c2, e] -= f3[c1, c2, e, s] - (f3[c1, c2, e, s] + 1) // 2
                f3[c1, c2, e, s] = (f3[c1, c2, e, s] + 1) // 2
        # offset: b - 1 bits below the leading one
        if b >= 2:
            top = (x >> (b - 2)) & 1
            p = pb1[b, min(b1, NB - 1)] / 4096.0
            out[4] -= math.log2(p if top else 1.0 - p)
            pb1[b, min(b1, NB - 1)] += ((top * 4096.0) - pb1[b, min(b1, NB - 1)]) / 16.0
            rest = b - 2
            if b >= 3:
                nx = (x >> (b - 3)) & 1
                q = pb2[b, top] / 4096.0
                out[4] -= math.log2(q if nx else 1.0 - q)
                pb2[b, top] += ((nx * 4096.0) - pb2[b, top]) / 16.0
                rest = b - 3
            out[4] += rest
        b2 = b1
        b1 = b
        en += ((x << 4) - en) >> 3
    return out


@numba.njit(cache=False)
def _walk(u):
    """The ``b|b1e`` model's decoder-side work over ``u`` (module docstring, ``--speed``), integer
    counts; returns a checksum so that nothing is optimized away."""
    n = u.shape[0]
    f = np.ones((CAP + 1) * 16 * NB, np.int32)
    tot = np.full((CAP + 1) * 16, NB, np.int32)
    pb = np.full(NB * NB + 2 * NB, 2048, np.int32)
    b1 = 0
    en = 0
    acc = 0
    for i in range(n):
        x = u[i]
        e = 0
        v = en >> 4
        while v > 0:
            v >>= 1
            e += 1
        e = min(e, 15)
        c = min(b1, CAP) * 16 + e
        row = c * NB
        b = 0
        while (x >> b) > 0:
            b += 1
        cum = 0
        for s in range(b):  # the scan a range decoder makes to find b
            cum += f[row + s]
        acc += cum * 7 + tot[c]
        f[row + b] += 32
        tot[c] += 32
        if tot[c] > 65536:
            t = 0
            for s in range(NB):
                f[row + s] = (f[row + s] + 1) >> 1
                t += f[row + s]
            tot[c] = t
        if b >= 2:
            top = (x >> (b - 2)) & 1
            k = b * NB + min(b1, NB - 1)
            acc += pb[k]
            pb[k] += ((top << 12) - pb[k]) >> 4
            if b >= 3:
                nx = (x >> (b - 3)) & 1
                k2 = NB * NB + 2 * b + top
                acc += pb[k2]
                pb[k2] += ((nx << 12) - pb[k2]) >> 4
                acc += x & ((1 << (b - 3)) - 1)
        b1 = b
        en += ((x << 4) - en) >> 3
    return acc


def ranks(buf: np.ndarray, vocab_size: int, tokens: np.ndarray) -> np.ndarray:
    """u of every token of a "cms2" payload (its header's mode and center)."""
    mode, center, _cnt, _hl = cmsignal2.parse_header(buf[:cmsignal2.MAX_HEADER].tobytes(), vocab_size)
    t = tokens.astype(np.int64)
    P = np.full(t.size, center, np.int64)
    if mode >= 1:
        P[1:] = t[:-1]
    if mode == 2:
        P[2:] = np.clip(2 * t[1:-1] - t[:-2], 0, vocab_size - 1)
    return cmsignal2._ranks(t, P, vocab_size).astype(np.int64)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="ecg,seismic,audio,neural")
    ap.add_argument("--cache", help="the containers' directory (bench_level2_decode.py --cache)")
    ap.add_argument("--speed", action="store_true", help="also time the b|b1e model's decoder-side work")
    args = ap.parse_args(argv)
    names = ["b|b1b2", "b|b1e", "b|b1b2e", "mix2"]
    print(f"{'set':10} {'tokens':>8} {'cms2 B':>9} " + " ".join(f"{k:>16}" for k in names)
          + "   (bytes, change vs cms2)")
    for name in args.sets.split(","):
        items = dec.containers(name, args.cache)
        tot = np.zeros(5)
        cms2_bytes = 0
        ntok = 0
        walk = 0.0
        for (buf, vocab_size, out), _status in dec.calls_all(items):
            u = ranks(buf, vocab_size, out)
            tot += _sizes(u)
            if args.speed:
                _walk(u[:10])
                best = float("inf")
                for _ in range(5):
                    t = time.process_time()
                    _walk(u)
                    best = min(best, time.process_time() - t)
                walk += best
            cms2_bytes += buf.size
            ntok += out.size
        cells = []
        for k in range(4):
            b = (tot[k] + tot[4]) / 8
            cells.append(f"{b:9.0f} {100 * (b / cms2_bytes - 1):+5.1f}%")
        speed = f"   b|b1e model walk {walk * 1e9 / ntok:.1f} ns/token" if args.speed else ""
        print(f"{name:10} {ntok:8d} {cms2_bytes:9d} " + " ".join(f"{c:>16}" for c in cells) + speed)


if __name__ == "__main__":
    main()
