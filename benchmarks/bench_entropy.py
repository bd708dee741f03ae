"""Scratch timing of ubpe.entropy on Zipf-like token streams: python benchmarks/bench_entropy.py"""

from __future__ import annotations

import time

import numpy as np

from ubpe.entropy import decode_stream, encode_stream, stream_cost_bits


def best_of(fn, *args, reps=5, **kw):
    best, out = float("inf"), None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn(*args, **kw)
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    rng = np.random.default_rng(0)
    for vocab, n in [(4096, 30_000), (1024, 98_700), (4096, 98_700), (4096, 1_000_000), (16384, 1_000_000)]:
        p = 1.0 / np.arange(1, vocab + 1) ** 1.1
        tokens = rng.choice(vocab, size=n, p=p / p.sum())
        for coders in (("rans", "packed", "const"), ("cm", "packed", "const")):
            te, fields = best_of(encode_stream, tokens, vocab, coders=coders)
            td, out = best_of(decode_stream, fields, vocab)
            tc, est = best_of(stream_cost_bits, tokens, vocab)
            assert np.array_equal(out, tokens)
            real = 8 * (len(fields.get("freq", b"")) + len(fields.get("payload", b"")))
            print(
                f"V={vocab:5d} n={n:8d} {fields['coder']:6s} q={fields.get('q')} pb={fields.get('pb')} "
                f"freq={len(fields.get('freq', b'')):6d}B payload={len(fields['payload']):8d}B "
                f"est/real={est / real:.4f} enc={n / te / 1e6:6.1f} dec={n / td / 1e6:6.1f} Mtok/s "
                f"cost={tc * 1e3:.1f}ms"
            )


if __name__ == "__main__":
    main()
