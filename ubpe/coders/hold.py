""""hold": a stream that mostly repeats one token, coded as holds and steps (level 2).

Slow readings on a coarse grid (station pressure in whole hPa, wind in whole units, a
temperature in tenths sampled each minute) hold their value for a while and then step by a
unit or two, often back again: after a difference, one token (the zero step) fills most of the
stream. The chance of a step depends mostly on how long the value has held (a flicker between
two levels comes back within minutes, a settled reading holds for hours), which the general
context mixer ("cms2", contexts of the last tokens) sees only through its order-2 context.
"hold" codes each token as: a step or not, in the context of the hold's length (half octaves);
a step's direction, in the context of the last one's; its size as an Elias gamma code with
adaptive bits (``ubpe._kernels.hold``, normative). About 1 binary decision a held token.

``payload``: the hold token ``z`` (LEB128, minimal, ``z < V``), then the coder's bytes.
"""

from __future__ import annotations

import numpy as np

from ..errors import CorruptDataError
from ..format.bits import pack_varints
from . import _cm
from ._base import Coder, Tokens, alloc_tokens

#: The longest payload header: LEB128 of a token below 2**24.
MAX_HEADER = 4


def header(payload: bytes, vocab_size: int) -> tuple[int, int]:
    """The hold token and the header's length of a "hold" payload; CorruptDataError for a
    header that is cut, not minimal or names a token >= ``vocab_size``."""
    z = shift = 0
    for i in range(min(len(payload), MAX_HEADER)):
        b = payload[i]
        z |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            if i and b == 0:
                raise CorruptDataError("field 'payload': the 'hold' token is not minimally encoded")
            if z >= vocab_size:
                raise CorruptDataError(f"field 'payload': the 'hold' token {z} is not below vocab_size {vocab_size}")
            return z, i + 1
    raise CorruptDataError("field 'payload': the 'hold' token is cut or longer than 4 bytes")


def encode(tokens: Tokens, budget: int) -> dict | None:
    from .._kernels import hold  # subtle: imported (and compiled) only when first used
    from ..planner import settings

    z = int(np.argmax(tokens.counts))
    if int(tokens.counts[z]) < settings.current().hold_min_share * tokens.n:  # (encoder only: any stream decodes)
        return None
    head = pack_varints(np.array([z], np.uint64))
    values = np.ascontiguousarray(tokens.values, dtype=np.int32)
    size = min(budget, _cm.max_payload(tokens.n, tokens.vocab_size))
    if size <= len(head):
        return None
    buf = np.zeros(size - len(head), dtype=np.uint8)
    length = len(head) + int(hold.hold_code(values, tokens.n, tokens.vocab_size, z, buf, False))
    if length > size or not _cm.within_bound(tokens.n, length):
        return None
    return {"coder": "hold", "n": tokens.n, "payload": head + buf[:length - len(head)].tobytes()}


def decode(fields: dict, n: int, vocab_size: int, classes: np.ndarray | None) -> np.ndarray:
    from .._kernels import hold

    data = _cm.checked_payload(fields, n, vocab_size, MAX_HEADER)
    z, hl = header(data[:MAX_HEADER].tobytes(), vocab_size)
    out = alloc_tokens(n)
    _cm.raise_status(hold.hold_code(out, n, vocab_size, z, data[hl:], True), vocab_size)
    return out


CODER = Coder("hold", 8, ("coder", "n", "payload"), (2,), "adaptive", "signal", encode, decode)
