"""The lane prototype (``lanes_prototype.py``) against "cms2" on level 2's token streams:
python benchmarks/bench_lanes.py [--sets ecg,seismic,audio,neural] [--cache DIR] [--repeat 5]

For each set, the "cms2" streams of its level-2 containers (``bench_level2_decode.containers``):
the prototype with 1 lane must give cms2's bytes; with L = 2, 4 lanes (``lanes_code``) and the
side-by-side pair (``pair_code``) its payload bytes (change vs cms2) and a round trip;
``halves``: "cms2" on each half of the stream alone (two independent models, summed: what lanes
sharing nothing would cost). Then decoding is timed (process time), cms2_decode and the
prototypes alternated stream by stream, the least of ``--repeat`` runs per stream, summed: ns
per token and the speed relative to cms2 (above 1: faster).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

try:
    from . import bench_level2_decode as dec
    from . import lanes_prototype as lanes
except ImportError:  # run as a script
    import bench_level2_decode as dec
    import lanes_prototype as lanes

from ubpe._kernels import cmsignal2

LANES = (1, 2, 4)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="ecg,seismic,audio,neural")
    ap.add_argument("--cache")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    print(f"{'set':8} {'tokens':>7} {'cms2 B':>8} " + " ".join(f"{'L=%d B' % L:>16}" for L in LANES)
          + f" {'halves B':>16} {'pair B':>16} {'cms2 ns/tok':>11} "
          + " ".join(f"{'L=%d ns (x)' % L:>16}" for L in LANES) + f" {'pair ns (x)':>16}")
    for name in args.sets.split(","):
        streams = [(buf, V, out.copy()) for (buf, V, out), _s in dec.calls_all(dec.containers(name, args.cache))]
        sizes = {L: 0 for L in LANES}
        payloads = {}
        halves = 0
        pair = 0
        for j, (buf, V, tok) in enumerate(streams):
            eb = np.zeros(buf.size * 2 + 256, np.uint8)
            h = tok.size // 2
            halves += cmsignal2.cms2_encode(tok[:h], V, eb) + cmsignal2.cms2_encode(tok[h:], V, eb)
            for L in LANES:
                eb = np.zeros(buf.size * 2 + 256, np.uint8)
                k = lanes.encode(tok, V, eb, L)
                if L == 1:
                    assert k == buf.size and np.array_equal(eb[:k], buf), "1 lane: not cms2's bytes"
                back = np.zeros(tok.size, np.int32)
                assert lanes.decode(eb[:k].copy(), V, back, L) == 0 and np.array_equal(back, tok), "round trip"
                sizes[L] += k
                payloads[j, L] = eb[:k].copy()
            eb = np.zeros(buf.size * 2 + 256, np.uint8)
            k = lanes.pair_encode(tok, V, eb)
            back = np.zeros(tok.size, np.int32)
            assert lanes.pair_decode(eb[:k].copy(), V, back) == 0 and np.array_equal(back, tok), "pair round trip"
            pair += k
            payloads[j, "pair"] = eb[:k].copy()
        secs = {c: 0.0 for c in ("cms2",) + LANES + ("pair",)}
        for j, (buf, V, tok) in enumerate(streams):
            best = {c: float("inf") for c in secs}
            out = np.zeros(tok.size, np.int32)
            for _ in range(args.repeat):
                t = time.process_time()
                cmsignal2.cms2_decode(buf, V, out)
                best["cms2"] = min(best["cms2"], time.process_time() - t)
                for L in LANES:
                    p = payloads[j, L]
                    t = time.process_time()
                    lanes.decode(p, V, out, L)
                    best[L] = min(best[L], time.process_time() - t)
                p = payloads[j, "pair"]
                t = time.process_time()
                lanes.pair_decode(p, V, out)
                best["pair"] = min(best["pair"], time.process_time() - t)
            for c in secs:
                secs[c] += best[c]
        n = sum(t.size for _b, _v, t in streams)
        base = sum(b.size for b, _v, _t in streams)
        cells = " ".join(f"{sizes[L]:8d} {100 * (sizes[L] / base - 1):+6.3f}%" for L in LANES)
        ns = " ".join(f"{secs[L] * 1e9 / n:8.1f} ({secs['cms2'] / secs[L]:4.2f}x)" for L in LANES + ("pair",))
        cells += f" {halves:8d} {100 * (halves / base - 1):+6.3f}% {pair:8d} {100 * (pair / base - 1):+6.3f}%"
        print(f"{name:8} {n:7d} {base:8d} {cells} {secs['cms2'] * 1e9 / n:11.1f} {ns}", flush=True)


if __name__ == "__main__":
    main()
