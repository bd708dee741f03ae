"""A cascade of sign-sign LMS predictors, the front-end stage ``"adaptive"``.

:func:`adaptive_forward` stores no coefficients: decoding repeats the same integer adaptation
(about 10 M values/s, so level 1, the fast-decoding level, does not offer it). The default
cascade (normalized rule, :data:`DEFAULT_STAGES`): a long, slowly adapting stage for the
spectrum's shape (resonances, long correlations), then short, fast stages for what changes
from moment to moment. How samples are carried: :mod:`ubpe.frontend._common`.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .._kernels import predict as _k
from .._validate import check_int, expect_map, field_int, short
from ..errors import CorruptDataError
from ._common import (
    SIGNED,
    UNSIGNED,
    PerChannel,
    as_signal,
    bits_of,
    field_unsigned,
    residual_in,
    restore,
    signed_bits,
)
from ._stage import register

MAX_STAGES = 8


MAX_STAGE_ORDER = 1024


MAX_STAGE_SHIFT = 28


# Default cascade (normalized rule): a long, slowly adapting stage for the spectrum's shape
# (resonances, long correlations), then short, fast stages for what changes from moment to moment.
DEFAULT_STAGES: tuple[tuple[int, int, int], ...] = _k.DEFAULT_CASCADE


def _check_stages(stages: Any) -> list[list[int]]:
    if isinstance(stages, (str, bytes)) or not hasattr(stages, "__iter__"):
        raise TypeError(f"stages must be a sequence of (order, shift[, rule]) tuples, got {type(stages).__name__}")
    out = []
    for st in stages:
        if isinstance(st, (str, bytes)) or not hasattr(st, "__len__") or len(st) not in (2, 3):
            raise TypeError(f"each stage must be an (order, shift[, rule]) tuple, got {st!r}")
        out.append([check_int("stage order", st[0], 1, MAX_STAGE_ORDER),
                    check_int("stage shift", st[1], 1, MAX_STAGE_SHIFT),
                    check_int("stage rule", st[2], 0, 1) if len(st) == 3 else 1])
    if len(out) > MAX_STAGES:
        raise ValueError(f"at most {MAX_STAGES} stages are allowed, got {len(out)}")
    return out


def adaptive_forward(x: Any, *, stages: Any = DEFAULT_STAGES,
                     ) -> tuple[np.ndarray, dict]:
    """Residual of a cascade of sign-sign LMS predictors (backward-adaptive, no coefficients stored).

    Stage ``m`` predicts its input (the residual of stage ``m - 1``; ``x`` for the first) as
    ``(sum_j w[j] * u[i-1-j] + 2**(shift-1)) >> shift`` with integer weights that start at 0 and
    move after each sample by ``sign(e)`` times an adaptation value of ``u[i-1-j]`` (its sign,
    or its magnitude relative to the running mean, quantized);
    it outputs ``(u - prediction) mod 2**bits``. The larger ``shift``, the slower and finer the
    adaptation.

    Parameters
    ----------
    x : 1-D integer array, any dtype int8..uint64
    stages : sequence of (order, shift) or (order, shift, rule)
        0 to 8 stages, order in [1, 1024], shift in [1, 28], rule 0 (sign-sign) or 1 (sign-error
        with power-of-two normalization, the default); see ``ubpe._kernels.predict.lms_stage``.
        Default :data:`DEFAULT_STAGES`.

    Returns
    -------
    residual : ndarray of the signed integer type of ``x``'s width
    params : dict
        ``stages`` (a list of ``[order, shift, rule]``) and ``unsigned`` (0 signed, 1 unsigned:
        :mod:`ubpe.frontend._common`).
    """
    s, dtype, mode = as_signal(x)
    st = _check_stages(stages)
    bits = 8 * dtype.itemsize
    cur = s
    for order, shift, rule in st:
        nxt = np.empty_like(cur)
        _k.lms_stage(cur, order, shift, rule, 64 - bits, False, nxt)
        cur = nxt
    return cur.astype(f"i{bits // 8}"), {"stages": st, "unsigned": mode}


def check_adaptive_params(params: Any, n: int, dtype: Any) -> list[tuple[int, int, int]]:
    """Validate untrusted adaptive params; the stage list as (order, shift, rule) triples."""
    where = "adaptive params"
    bits_of(dtype)
    p = expect_map(params, where, ("stages", "unsigned"))
    field_unsigned(p, where)
    stages = p["stages"]
    if not isinstance(stages, list) or len(stages) > MAX_STAGES:
        raise CorruptDataError(f"{where}: 'stages' must be a list of at most {MAX_STAGES} stages, got {short(stages)}")
    out = []
    for st in stages:
        if not isinstance(st, list) or len(st) != 3:
            raise CorruptDataError(f"{where}: a stage must be an [order, shift, rule] list, got {short(st)}")
        triple = {"order": st[0], "shift": st[1], "rule": st[2]}
        out.append((field_int(triple, "order", 1, MAX_STAGE_ORDER, where=where),
                    field_int(triple, "shift", 1, MAX_STAGE_SHIFT, where=where),
                    field_int(triple, "rule", 0, 1, where=where)))
    return out


def adaptive_inverse(residual: Any, params: Any) -> np.ndarray:
    """Undo :func:`adaptive_forward`: the stages inverted last to first, bit-exact."""
    r = residual_in(residual, "residual")
    bits = 8 * np.asarray(residual).dtype.itemsize
    stages = check_adaptive_params(params, r.shape[0], f"i{bits // 8}")
    cur = r
    for order, shift, rule in reversed(stages):
        nxt = np.empty_like(cur)
        _k.lms_stage(cur, order, shift, rule, 64 - bits, True, nxt)
        cur = nxt
    return restore(cur, params["unsigned"], bits)


#: the most values a row may have for :func:`adaptive_rows` to keep its two int64 work arrays
#: (the cascade's temporary signal and scratch) for the thread's next call: 2**18, at most 4 MiB
#: a thread. Fresh, they were ~430 page faults a call on ECG (108 000 values): glibc returns the
#: top of its heap to the system when the two are freed, and the next call faults them in again
#: (about 1 ms of its 21-23 ms level-2 decode; benchmarks/results/level2-decode-ecg-2.md)
KEEP_VALUES = 1 << 18

_work = threading.local()


def _work_arrays(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Two int64 arrays of ``n`` values for :func:`ubpe._kernels.predict.lms_cascade_rows_into`
    (any content): this thread's kept pair (grown to ``n``) when ``n <= KEEP_VALUES``, else new
    ones. Each thread has its own pair, and a call uses it only until it returns."""
    if n > KEEP_VALUES:
        return np.empty(n, np.int64), np.empty(n, np.int64)
    pair = getattr(_work, "pair", None)
    if pair is None or pair[0].shape[0] < n:
        pair = _work.pair = (np.empty(n, np.int64), np.empty(n, np.int64))
    return pair[0][:n], pair[1][:n]



def adaptive_rows(x: np.ndarray, stages: list, inverse: bool = False, unsigned: int = SIGNED) -> np.ndarray:
    """The cascade ``stages`` (checked ``[order, shift, rule]`` triples) over every row of the
    2-D integer array ``x`` in one kernel call: residuals (forward) in the signed type of
    ``x``'s width, or (inverse, ``x`` residuals) the bits of the values as the signed type,
    which the caller views as its dtype. ``unsigned`` is the rows' ``unsigned`` param (1: the
    values offset by ``-2**(bits-1)``, undone by the inverse; 0: the bits as they are).
    Row by row what :func:`adaptive_forward` / :func:`adaptive_inverse` compute, without their
    per-call overhead on many short channels."""
    bits = 8 * x.dtype.itemsize
    x = np.ascontiguousarray(x)
    s = (x.view(f"i{bits // 8}") if inverse else signed_bits(x, unsigned)).astype(np.int64)
    st = np.array(stages, np.int64).reshape(-1, 3)
    out = np.empty_like(s)
    tmp, scratch = _work_arrays(s.shape[1])
    if not _k.lms_cascade_rows_into(s, st[:, 0].copy(), st[:, 1].copy(), st[:, 2].copy(), 64 - bits, inverse,
                                    out, tmp, scratch):
        raise AssertionError("the cascade's work arrays have a row's length")  # pragma: no cover
    out = out.astype(f"i{bits // 8}")
    return signed_bits(out, unsigned) if inverse else out



@register
class AdaptiveStage(PerChannel):
    """Sign-sign LMS cascade per channel (:func:`adaptive_forward`, its default
    cascade :data:`DEFAULT_STAGES`). Channels sharing a cascade (all of them, as written) run
    through one kernel call (:func:`adaptive_rows`)."""

    name = "adaptive"
    number = 2  #: its number on the wire (``ubpe.format.container.STAGES``)
    fast_inverse = False  # the decoder repeats the cascade's arithmetic: ~10 M values/s
    _forward = staticmethod(adaptive_forward)
    _inverse = staticmethod(adaptive_inverse)
    _check = staticmethod(check_adaptive_params)

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        if x.dtype.kind not in "iu":
            raise TypeError(f"the {self.name} stage takes integer values, got dtype {x.dtype}")
        stages = [list(s) for s in DEFAULT_STAGES]
        unsigned = UNSIGNED if x.dtype.kind == "u" else SIGNED
        return adaptive_rows(x, stages, unsigned=unsigned), {
            "channels": [{"stages": [list(s) for s in stages], "unsigned": unsigned} for _ in range(x.shape[0])]}

    def inverse(self, y: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        out = np.empty(y.shape, dtype=f"i{y.dtype.itemsize}")
        groups: dict[str, list[int]] = {}
        for c, p in enumerate(params["channels"]):  # checked: lists of [order, shift, rule]
            groups.setdefault(repr((p["stages"], p["unsigned"])), []).append(c)
        if len(groups) == 1:  # every channel alike (as written): no gather, no scatter
            first = params["channels"][0]
            return adaptive_rows(y, first["stages"], inverse=True, unsigned=first["unsigned"])
        for rows in groups.values():
            first = params["channels"][rows[0]]
            out[rows] = adaptive_rows(y[rows], first["stages"], inverse=True, unsigned=first["unsigned"])
        return out
