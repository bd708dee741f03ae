""""const": every token equals one symbol; nothing is stored but ``n`` and ``symbol``."""

from __future__ import annotations

import numpy as np

from ..errors import CorruptDataError
from ._base import Coder, Tokens, alloc_tokens, field_int


def encode(tokens: Tokens, budget: int) -> dict | None:
    """The stream when one symbol repeats (the registry tries it first), else None."""
    if tokens.ids.shape[0] != 1:
        return None
    return {"coder": "const", "n": tokens.n, "symbol": int(tokens.ids[0])}


def decode(fields: dict, n: int, vocab_size: int, classes: np.ndarray | None) -> np.ndarray:
    if n == 0:
        raise CorruptDataError("field 'n': a \"const\" stream holds at least one token (no tokens: \"packed\")")
    symbol = field_int(fields, "symbol", 0, vocab_size - 1)
    out = alloc_tokens(n)
    out.fill(symbol)
    return out


CODER = Coder("const", 2, ("coder", "n", "symbol"), (1, 2), "trivial", "any", encode, decode)
