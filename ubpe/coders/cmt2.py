""""cmt2": context mixing for text through its bytes (level 2).

Orders 0 to 4, 6 and 8, word, word bigram and trigram, column, class-pattern contexts, each
hashed context with a bit-history state mapped to an adaptive probability, two match models,
three mixers and a final mixer, two APMs (``ubpe._kernels.cmtext``, normative). Offered only
for a stream of at most 256 symbols whose alphabet values are bytes (its text classes,
:func:`text_classes`); the reader derives the same classes from the container's alphabet.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import CorruptDataError
from . import _cm
from ._base import Coder, Tokens, alloc_tokens


def text_classes(values: Any) -> np.ndarray | None:
    """The per-symbol classes "cmt2" needs (``cmcore.text_class`` of each alphabet value), or
    None when the symbols are not bytes: more than 256 of them, or a value outside [0, 255].
    ``values``: the alphabet's values in id order."""
    if isinstance(values, np.ndarray) and not 1 <= len(values) <= 256:
        return None  # (before tolist: a signal's alphabet often holds thousands of values)
    vals = list(values) if not isinstance(values, np.ndarray) else values.tolist()
    if not 1 <= len(vals) <= 256:
        return None
    from .._kernels.cmcore import text_class

    out = np.empty(len(vals), dtype=np.int64)
    for i, v in enumerate(vals):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) <= 255:
            return None
        out[i] = text_class(int(v))
    return out


def encode(tokens: Tokens, budget: int) -> dict | None:
    from .._kernels import (
        cmtext,  # subtle: imported (and compiled) only when text is coded
    )

    classes = tokens.classes
    if classes.shape != (tokens.vocab_size,):
        raise ValueError(f"classes must hold one entry per symbol ({tokens.vocab_size}), got shape {classes.shape}")
    return _cm.encode_with(cmtext.cmt2_encode, tokens, budget, "cmt2", np.ascontiguousarray(classes, dtype=np.int64))


def decode(fields: dict, n: int, vocab_size: int, classes: np.ndarray | None) -> np.ndarray:
    from .._kernels import cmtext

    if classes is None or classes.shape != (vocab_size,) or vocab_size > 256:
        raise CorruptDataError('field \'coder\': "cmt2" codes text through its bytes, but the '
                               "stream's symbols are not bytes")
    data = _cm.checked_payload(fields, n, vocab_size, 0)
    out = alloc_tokens(n)
    _cm.raise_status(cmtext.cmt2_decode(data, vocab_size, out, np.ascontiguousarray(classes, dtype=np.int64)),
                     vocab_size)
    return out


CODER = Coder("cmt2", 5, ("coder", "n", "payload"), (2,), "adaptive", "text", encode, decode)
