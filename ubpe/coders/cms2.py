""""cms2": context mixing for signals over a binary code fitted to the stream (level 2).

Each token's rank by distance from a predicted id (a stored center, or the previous token) is
coded by a canonical prefix code whose length counts the payload's header stores, so a token
costs about its entropy + 1 binary decisions instead of bit_length(V - 1); three hashed contexts
(orders 1 and 2, magnitudes), order 0, two mixers, an APM when the header's flags ask for it,
and the bits below an aligned block of codes of one length sent without a model when they ask
for that (``ubpe._kernels.cmsignal2``, normative). For streams without text classes.
"""

from __future__ import annotations

import numpy as np

from . import _cm
from ._base import Coder, Tokens, alloc_tokens

#: The longest payload header (``cmsignal2.MAX_HEADER``): a reader allows that much more.
MAX_HEADER = 2 + 4 + 4 * 30 + 5  # (F: at most 5 bytes)

#: The writer offers "cms2" a stream only when its ids span at most this many values per token
#: (plus 2**16): the code covers every rank up to the largest (about the span), and planning it
#: (three histograms and a Huffman code over them) costs time and memory in the span, not in the
#: stream. A stream of a few thousand tokens over a sparse alphabet of millions (a float series'
#: decimals with finer digits: 7.5 M ids for 8 192 values) took 0.23 s a plan, 22 plans a
#: compress, to save 0.2 % over the static coders; a heavy-tailed residual's dense ids, 93 a
#: token (1.1 M over 12 000 values), save 2.2 %. Encoder only: any stream decodes.
MAX_SPAN_PER_TOKEN = 256


def encode(tokens: Tokens, budget: int) -> dict | None:
    from .._kernels import (
        cmsignal2,  # subtle: imported (and compiled) only when first used
    )

    if int(tokens.ids[-1]) - int(tokens.ids[0]) + 1 > MAX_SPAN_PER_TOKEN * tokens.n + (1 << 16):
        return None
    return _cm.encode_with(cmsignal2.cms2_encode, tokens, budget, "cms2", cmsignal2.FLAT_BUDGET, None, tokens.whole)


def decode(fields: dict, n: int, vocab_size: int, classes: np.ndarray | None) -> np.ndarray:
    from .._kernels import cmsignal2

    data = _cm.checked_payload(fields, n, vocab_size, MAX_HEADER)
    out = alloc_tokens(n)
    _cm.raise_status(cmsignal2.cms2_decode(data, vocab_size, out), vocab_size)
    return out


CODER = Coder("cms2", 4, ("coder", "n", "payload"), (2,), "adaptive", "signal", encode, decode)
