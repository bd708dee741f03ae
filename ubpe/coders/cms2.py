""""cms2": context mixing for signals over a binary code fitted to the stream (level 2).

Each token's rank by distance from a predicted id (a stored center, or the previous token) is
coded by a canonical prefix code whose length counts the payload's header stores, so a token
costs about its entropy + 1 binary decisions instead of bit_length(V - 1); five hashed contexts
(orders 1 and 2, linear prediction, loudness, magnitudes), order 0, two mixers, one APM
(``ubpe._kernels.cmsignal2``, normative). For streams without text classes. 2-3 M tokens/s.
"""

from __future__ import annotations

import numpy as np

from . import _cm
from ._base import Coder, Tokens, alloc_tokens

#: The longest payload header (``cmsignal2.MAX_HEADER``): a reader allows that much more.
MAX_HEADER = 2 + 4 + 4 * 30


def encode(tokens: Tokens, budget: int) -> dict | None:
    from .._kernels import (
        cmsignal2,  # subtle: imported (and compiled) only when first used
    )

    return _cm.encode_with(cmsignal2.cms2_encode, tokens, budget, "cms2")


def decode(fields: dict, n: int, vocab_size: int, classes: np.ndarray | None) -> np.ndarray:
    from .._kernels import cmsignal2

    data = _cm.checked_payload(fields, n, vocab_size, MAX_HEADER)
    out = alloc_tokens(n)
    _cm.raise_status(cmsignal2.cms2_decode(data, vocab_size, out), vocab_size)
    return out


CODER = Coder("cms2", 4, ("coder", "n", "payload"), (2,), "adaptive", "signal", encode, decode)
