"""A window's own linear predictor (window containers from version 4).

A model's predictors are fitted on the training windows; a recording whose spectrum moves (a
seismometer's event then its noise, an accelerometer at rest then moving) has windows the
model's LPC predicts worse than an LPC fitted on the window itself, which is what compressing
alone does. A window container of version 4 may carry such a predictor (order, shift, the
coefficients: about ``2 + 1.5 order`` bytes) in place of its variant's; the variant keeps its
code, history, split and LMS cascade: the history runs through the window's predictor, so the
primer warms the coder as before. Tried for every variant that codes residuals over a range
(not a dense one, whose table is its predictor's residuals).
"""

from __future__ import annotations

import dataclasses
import threading

import numpy as np

from ..errors import CorruptDataError
from ..format.bits import pack_varints
from ..frontend.delta import zigzag
from .coder import _digit_coders
from .model import _MAX_COEF, _MAX_ORDER, Variant

#: The extras-byte flag of a window that carries its own predictor (version 4).
V4_OWN = 0x08
#: A writer tries the window's own predictor for a variant when its residuals' mean magnitude is
#: below this times the variant's predictor's (a spectrum that moved; not normative).
OWN_GAIN = 0.8


def own_predictor(q: np.ndarray) -> tuple[int, np.ndarray] | None:
    """``(shift, coefs)`` of the LPC that ``ubpe.frontend.lpc`` fits on the window ``q`` (int64:
    its values, or a split variant's quotients) as one block, or None (order 0, too few values,
    values beyond int32 or coefficients beyond int16)."""
    from ..frontend.lpc import check_lpc_params, lpc_forward

    if q.size < 64 or not q.size or int(q.min()) < -(1 << 31) or int(q.max()) >= 1 << 31:
        return None
    x = q.astype(np.int32)
    _, params = lpc_forward(x, block=int(q.size), max_order=_MAX_ORDER)
    _, orders, shifts, coefs = check_lpc_params(params, int(q.size), x.dtype)
    order = int(orders[0])
    if not order or not np.all(np.abs(coefs[:order]) < _MAX_COEF):
        return None
    return int(shifts[0]), coefs[:order].astype(np.int64)


def with_predictor(v: Variant, shift: int, coefs: np.ndarray) -> Variant:
    """The variant ``v`` with the linear predictor ``(shift, coefs)`` in place of its own (a
    fresh cache but for the digit coders: the primer is the history's residuals through this predictor)."""
    return dataclasses.replace(v, shift=int(shift), coefs=np.asarray(coefs, np.int64), _cache=_digit_coders(v),
                               _lock=threading.Lock())


def predictor_field(shift: int, coefs: np.ndarray) -> bytes:
    """The field: one byte ``order - 1`` (order 1 to 32), one byte ``shift``, each coefficient
    a zigzag LEB128 varint."""
    return bytes([coefs.size - 1, shift]) + pack_varints(zigzag(np.asarray(coefs, np.int64)))


def parse_predictor(take, varint) -> tuple[int, np.ndarray]:
    """The ``(shift, coefs)`` of a predictor field, read with the parser's ``take(k)`` and
    ``varint()`` (every value checked: order 1 to 32, shift 0 to 31, coefficients in
    [-2**15, 2**15))."""
    order, shift = take(2)
    order += 1
    if order > _MAX_ORDER or shift > 31:
        raise CorruptDataError(f"window: its predictor's order ({order}) must be at most {_MAX_ORDER}, "
                               f"its shift ({shift}) at most 31")
    coefs = []
    for _ in range(order):
        z = varint()
        c = z >> 1 if not z & 1 else -(z >> 1) - 1
        if not -_MAX_COEF <= c < _MAX_COEF:
            raise CorruptDataError("window: a predictor coefficient outside [-2**15, 2**15)")
        coefs.append(c)
    return shift, np.array(coefs, np.int64)
