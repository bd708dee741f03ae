"""Payload size of rans vs cm and cm speed on real token streams: python benchmarks/bench_cm.py

Streams come from the real tokenizer: the text (taylorswift.txt, alphabet 256) and the first 24
neural recordings, raw and as first differences, for N tokens in {512, 1024, 4096, 16384}
(``--n 384,512`` to choose, ``--quick`` for the text only). For the text it also prints the
packed merge table and the total model + cm payload, the figure to compare with brotli-11.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import ubpe
from ubpe.entropy import decode_stream, encode_stream, pack_merges

try:
    from . import _data
except ImportError:  # run as a script
    import _data


def _row(name: str, n_tokens: int, tokens: np.ndarray, vocab: int, merges_bytes: int | None) -> None:
    rans = encode_stream(tokens, vocab)
    rans_bytes = len(rans.get("freq", b"")) + len(rans.get("payload", b""))
    t = time.perf_counter()
    cm = encode_stream(tokens, vocab, coders=("cm",))
    te = time.perf_counter() - t
    t = time.perf_counter()
    out = decode_stream(cm, vocab, max_count=tokens.size)
    td = time.perf_counter() - t
    assert np.array_equal(out, tokens)
    cm_bytes = len(cm["payload"])
    line = (
        f"{name:5s} N={n_tokens:5d} V={vocab:5d} n={tokens.size:8d} rans={rans_bytes:8d}B "
        f"{cm['coder']}={cm_bytes:8d}B ({cm_bytes / rans_bytes:.3f}) "
        f"enc={tokens.size / te / 1e6:5.2f} dec={tokens.size / td / 1e6:5.2f} Mtok/s"
    )
    if merges_bytes is not None:
        line += f" merges={merges_bytes}B model+cm={merges_bytes + cm_bytes}B"
    print(line, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="512,1024,4096,16384", help="comma-separated vocabulary sizes")
    ap.add_argument("--quick", action="store_true", help="text only")
    args = ap.parse_args()
    sizes = [int(v) for v in args.n.split(",")]
    warnings.simplefilter("ignore", UserWarning)  # "fit stopped early" at large N on the text
    encode_stream(np.arange(10) % 3, 3, coders=("cm",))  # compile outside the timings
    text = np.frombuffer(_data.text(), dtype=np.uint8)
    for n_tokens in sizes:
        tok = ubpe.Tokenizer(256, n_tokens).fit(text)
        tokens = tok.encode(text)
        _row("text", n_tokens, tokens, tok.vocab_size, len(pack_merges(tok.merges, 256)))
    if args.quick:
        return
    x = np.concatenate(_data.neural(24))
    for name, data in (("neu", x), ("dneu", np.diff(x))):
        alphabet = ubpe.Alphabet.from_data(data)
        for n_tokens in sizes:
            tok = ubpe.Tokenizer(alphabet, n_tokens).fit(data)
            _row(name, n_tokens, tok.encode(data), tok.vocab_size, None)


if __name__ == "__main__":
    main()
