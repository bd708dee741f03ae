"""What the context-mixing coders' streams share: the payload bounds a reader checks."""

from __future__ import annotations

import numpy as np

from ..errors import CorruptDataError
from ._base import Tokens, field_bytes, packed_width


#: A context-mixing stream holds at most this many tokens per payload bit (with 64 bits of slack
#: for the coder's flush and a header): ``n <= MAX_TOKENS_PER_BIT * (8 * len(payload) + 64)``.
#: The coders could code up to about 2 840 binary decisions per bit (each at p = 4095/4096); real
#: streams where they win code about 2 tokens per bit at most (0.3 to 1.94 on the benchmark
#: signals, 0.6 on English text: more compressible values go to merges and the static coders),
#: so the bound leaves a margin of 30 and bounds the work a hostile payload can ask for (a
#: 1 KB payload: at most about half a million tokens). The writer does not offer a stream
#: beyond it.
MAX_TOKENS_PER_BIT = 64


def within_bound(n: int, payload_bytes: int) -> bool:
    """Whether ``n`` tokens may be coded in ``payload_bytes`` (:data:`MAX_TOKENS_PER_BIT`)."""
    return n <= MAX_TOKENS_PER_BIT * (8 * payload_bytes + 64)


def max_payload(n: int, vocab_size: int) -> int:
    """Longest context-mixing payload a writer emits: it must beat "packed" (n * B bits + framing)."""
    return (n * max(1, packed_width(vocab_size - 1)) + 7) // 8 + 32


def encode_with(kernel, tokens: Tokens, budget: int, coder: str, *extra) -> dict | None:
    """The stream ``kernel(tokens, vocab_size, buf, *extra)`` writes into a buffer of
    ``min(budget, max_payload)`` bytes, or None when it did not fit (larger than the best anyway)."""
    values = np.ascontiguousarray(tokens.values, dtype=np.int32)
    buf = np.zeros(min(budget, max_payload(tokens.n, tokens.vocab_size)), dtype=np.uint8)
    length = int(kernel(values, tokens.vocab_size, buf, *extra))
    if length > buf.size or not within_bound(tokens.n, length):
        return None
    return {"coder": coder, "n": tokens.n, "payload": buf[:length].tobytes()}


def checked_payload(fields: dict, n: int, vocab_size: int, header: int) -> np.ndarray:
    """The payload of a context-mixing stream as a writable uint8 array, once its length is
    possible for ``n`` tokens: at most :func:`max_payload` plus ``header`` bytes, and at least
    what :data:`MAX_TOKENS_PER_BIT` asks (checked before the caller allocates ``n`` tokens)."""
    payload = field_bytes(fields, "payload")
    if len(payload) > max_payload(n, vocab_size) + header:
        raise CorruptDataError(f"field 'payload' has {len(payload)} bytes, more than n={n} tokens can need")
    if not within_bound(n, len(payload)):
        raise CorruptDataError(f"field 'n' = {n}: more tokens than {len(payload)} payload bytes may hold "
                               f"(at most {MAX_TOKENS_PER_BIT} a bit)")
    return np.frombuffer(payload, dtype=np.uint8).copy()  # writable: the kernel is shared with encoding


def raise_status(status: int, vocab_size: int) -> None:
    """CorruptDataError for a context-mixing decoder's status (nothing for OK)."""
    from .._kernels import cmcore

    if status == cmcore.ERR_SYMBOL:
        raise CorruptDataError(f"field 'payload': decoded a token >= vocab_size {vocab_size}")
    if status == cmcore.ERR_CHECK:
        raise CorruptDataError("field 'payload': the decoded tokens fail the stream's 16-bit check")
    if status != cmcore.OK:
        raise CorruptDataError("field 'payload': length or final bytes differ from the coder output")
