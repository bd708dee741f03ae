"""What the context-mixing coders' streams share: the payload bounds a reader checks."""

from __future__ import annotations

import numpy as np

from ..errors import CorruptDataError
from ._base import Tokens, field_bytes, packed_width


def max_payload(n: int, vocab_size: int) -> int:
    """Longest context-mixing payload a writer emits: it must beat "packed" (n * B bits + framing)."""
    return (n * max(1, packed_width(vocab_size - 1)) + 7) // 8 + 32


def encode_with(kernel, tokens: Tokens, budget: int, coder: str, *extra) -> dict | None:
    """The stream ``kernel(tokens, vocab_size, buf, *extra)`` writes into a buffer of
    ``min(budget, max_payload)`` bytes, or None when it did not fit (larger than the best anyway)."""
    values = np.ascontiguousarray(tokens.values, dtype=np.int32)
    buf = np.zeros(min(budget, max_payload(tokens.n, tokens.vocab_size)), dtype=np.uint8)
    length = int(kernel(values, tokens.vocab_size, buf, *extra))
    if length > buf.size:
        return None
    return {"coder": coder, "n": tokens.n, "payload": buf[:length].tobytes()}


def checked_payload(fields: dict, n: int, vocab_size: int, header: int, per_token: int) -> np.ndarray:
    """The payload of a context-mixing stream as a writable uint8 array, once its length is
    possible for ``n`` tokens: at most :func:`max_payload` plus ``header`` bytes, and enough
    bytes for ``n`` tokens of at least ``per_token`` binary decisions each (every decision
    costs more than -log2(4095/4096) > 1/2840 bit and the coder flushes at most 32 bits, so
    n * per_token <= 2840 * (8 * len + 32): a larger n cannot be real; checked before the
    caller allocates n tokens)."""
    payload = field_bytes(fields, "payload")
    if len(payload) > max_payload(n, vocab_size) + header:
        raise CorruptDataError(f"field 'payload' has {len(payload)} bytes, more than n={n} tokens can need")
    if n * per_token > 4096 * (8 * len(payload) + 64):
        raise CorruptDataError(f"field 'n' = {n}: more tokens than {len(payload)} payload bytes can hold")
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
