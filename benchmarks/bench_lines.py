"""``Tokenizer.fit`` on many short documents (one per line of text) against the ``ubpe`` 0.3.0
peer (C++ backend, its own Python 3.12 venv, benchmarks/_peer.py) on the same documents.

    python benchmarks/bench_lines.py [--bytes N] [--n-tokens 4096] [--n-candidates 50] [--timeout S]

Text: the first ``--bytes`` (default 1 MB, cut at a line break) of Debian's fortune cookies
(bench_text_compress.debian_texts: the package files fetched with apt-get, not installed), or
taylorswift.txt repeated when they cannot be fetched (said so). Each non-empty line is one
document of byte ids. ubpe: best of 3 fits, identical documents trained once with their
multiplicity (Tokenizer.fit does this by itself). Target of issue 8: at least 100 times faster
than the peer.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _data  # noqa: E402
import _peer  # noqa: E402
import bench_text_compress  # noqa: E402

import ubpe  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bytes", type=int, default=1_000_000)
    ap.add_argument("--n-tokens", type=int, default=4096)
    ap.add_argument("--n-candidates", type=int, default=50)
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args(argv)
    texts = bench_text_compress.debian_texts()
    if "fortunes (all)" in texts:
        text, source = texts["fortunes (all)"], "Debian fortunes"
    else:
        text = _data.text() * (args.bytes // len(_data.text()) + 1)
        source = "taylorswift.txt repeated (the Debian texts could not be fetched)"
    cut = text.rfind(b"\n", 0, args.bytes) + 1
    lines = [ln for ln in text[:cut].split(b"\n") if ln]
    docs = [np.frombuffer(ln, np.uint8).astype(np.int32) for ln in lines]
    print(f"{source}: {cut} bytes, {len(docs)} line documents "
          f"({len(set(lines))} distinct), {args.n_tokens} tokens, n_candidates={args.n_candidates}", flush=True)
    best = float("inf")
    for _ in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            t0 = time.perf_counter()
            tok = ubpe.Tokenizer(256, args.n_tokens, n_candidates=args.n_candidates).fit(docs)
            best = min(best, time.perf_counter() - t0)
    print(f"ubpe Tokenizer.fit: {best:.3f} s (best of 3), vocabulary {tok.vocab_size}", flush=True)
    peer = _peer.run_peer(docs, 256, args.n_tokens, args.n_candidates, args.timeout)
    if peer is None:
        print("peer: not measured")
        return 0
    print(f"peer fit: {peer['fit_s']:.2f} s on {peer.get('n_values', '?')} of {peer.get('n_values_total', '?')} "
          f"values ({peer.get('note', '')})")
    ratio = peer["fit_s"] / best
    print(f"ubpe {ratio:.0f} times faster (target >= 100: {'PASS' if ratio >= 100 else 'FAIL'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
