""""packed": fixed-width little-endian bit packing (tiny or near-uniform streams, and the fallback)."""

from __future__ import annotations

import msgpack
import numpy as np

from ..errors import CorruptDataError
from ..format.bits import pack_uints, unpack_uints
from ._base import Coder, Tokens, alloc_tokens, field_bytes, field_int, packed_width


def encode(tokens: Tokens, budget: int) -> dict:
    """The packed stream (always possible: the writer's fallback)."""
    width = packed_width(int(tokens.ids[-1])) if tokens.ids.shape[0] else 0
    return {"coder": "packed", "n": tokens.n, "width": width, "payload": pack_uints(tokens.values, width)[1]}


def size(n: int, width: int) -> int:
    """``len(msgpack.packb(encode(...)))`` for ``n`` tokens of ``width`` bits, without packing them:
    the map with an empty payload (a bin 8 of length 0: 2 bytes) plus the payload's bytes and the
    header of a bin of that length (bin 8, 16 or 32: 2, 3 or 5 bytes)."""
    length = (n * width + 7) // 8
    header = 2 if length < 1 << 8 else (3 if length < 1 << 16 else 5)
    return len(msgpack.packb({"coder": "packed", "n": n, "width": width, "payload": b""})) - 2 + header + length


def decode(fields: dict, n: int, vocab_size: int, classes: np.ndarray | None) -> np.ndarray:
    width = field_int(fields, "width", 0, packed_width(vocab_size - 1))
    payload = field_bytes(fields, "payload")
    expect = (n * width + 7) // 8
    if len(payload) != expect:
        raise CorruptDataError(f"field 'payload' has {len(payload)} bytes, expected {expect} for n={n} width={width}")
    if width == 0:
        out = alloc_tokens(n)
        out.fill(0)
        return out
    values = unpack_uints(payload, n, width)
    if n and int(values.max()) >= vocab_size:
        raise CorruptDataError(f"field 'payload': token {int(values.max())} >= vocab_size {vocab_size}")
    return values.astype(np.int32)


CODER = Coder("packed", 1, ("coder", "n", "width", "payload"), (1, 2), "trivial", "any", encode, decode)
