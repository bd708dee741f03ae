"""A variant's prediction chain over ``history + window``: linear predictor, LMS cascade, their
inverses, and the primer (the history's residual tokens)."""

from __future__ import annotations

import dataclasses

import numpy as np

from .model import Variant


def _residual(x: np.ndarray, shift: int, coefs: np.ndarray) -> np.ndarray:
    """``x[i] - (sum_j coefs[j] x[i-1-j] >> shift)`` as int64 (mod 2**64; the first ``order``
    values predicted by the previous one): ``ubpe._kernels.predict.lpc_filter``, one block."""
    from .._kernels import predict

    s = np.ascontiguousarray(x, dtype=np.int64)
    out = np.empty_like(s)
    if s.size:
        predict.lpc_filter(s, s.size, np.array([coefs.size], np.int64), np.array([shift], np.int64),
                           np.ascontiguousarray(coefs, np.int64), 0, False, out)
    return out


def _restore(r: np.ndarray, shift: int, coefs: np.ndarray) -> np.ndarray:
    """The inverse of :func:`_residual` (int64)."""
    from .._kernels import predict

    out = np.empty_like(r)
    if r.size:
        predict.lpc_filter(np.ascontiguousarray(r), r.size, np.array([coefs.size], np.int64),
                           np.array([shift], np.int64), np.ascontiguousarray(coefs, np.int64), 0, True, out)
    return out


def _lms(r: np.ndarray, inverse: bool) -> np.ndarray:
    """The "adaptive" stage's default sign-sign LMS cascade over int64 ``r`` (or its inverse)."""
    from ..frontend.adaptive import DEFAULT_STAGES, adaptive_rows

    return adaptive_rows(r.reshape(1, -1), [list(st) for st in DEFAULT_STAGES], inverse=inverse)[0].astype(np.int64)


def _quotients(model: Variant, x: np.ndarray) -> np.ndarray:
    """``x`` (int64), or of a split variant its quotients ``(x - offset) // base``."""
    return (x - model.offset) // model.base if model.base > 1 else x


def _chain_forward(model: Variant, v: np.ndarray, restart: bool = False, apart: bool = False) -> np.ndarray:
    """The residuals of ``history + v`` (int64), predicted by the model's chain (of the
    quotients ``(x - offset) // base`` of a split variant). ``restart`` (window containers from
    version 3): the window's first value is predicted as without it, from the history; from the
    second on, the linear predictor uses no value before the window (the next ``order - 1``
    values predicted by the value before, as at the start of a block): a window is rarely the
    continuation of the history, and a predictor of order 32 fed the jump at the join pays for
    it 32 times. (The same residuals as without restart for no predictor and delta 1.) The LMS
    cascade runs on over the join. ``apart`` (window containers from version 5): the window's
    first residual is 0 before the cascade (the container holds it apart: :func:`_first_residual`)."""
    if apart and v.size:
        r = _chain_forward(dataclasses.replace(model, adaptive=0, _cache={}), v, restart).copy()
        r[model.history.size] = 0
        return _lms(r, False) if model.adaptive else r
    if not restart or not model.history.size or not v.size:
        r = _residual(_quotients(model, np.concatenate((model.history, v))), model.shift, model.coefs)
    else:
        hq = _quotients(model, model.history)
        q = _quotients(model, v)
        window = _residual(q, model.shift, model.coefs)
        window[:1] = q[:1] - np.int64(_first_prediction(model, hq))
        r = np.concatenate((_residual(hq, model.shift, model.coefs), window))
    return _lms(r, False) if model.adaptive else r


def _first_residual(model: Variant, v: np.ndarray, restart: bool = True) -> int:
    """The window ``v``'s first residual before the LMS cascade (int64, as
    :func:`_chain_forward`): a jump from the history the cascade would feed on for its whole
    length, which a window container from version 5 may hold apart."""
    bare = dataclasses.replace(model, adaptive=0, _cache={})
    return int(_chain_forward(bare, v[:1], restart)[model.history.size])


def _first_prediction(model: Variant, hq: np.ndarray) -> int:
    """The prediction (int64) of the value after the history's (quotients) ``hq``: the linear
    predictor over its last values (as :func:`_residual` over ``hq`` joined with that value)."""
    tail = np.concatenate((hq[max(0, hq.size - model.coefs.size):], np.zeros(1, np.int64)))
    return -int(_residual(tail, model.shift, model.coefs)[-1])


def _chain_inverse(model: Variant, r: np.ndarray, restart: bool = False, first: int | None = None) -> np.ndarray:
    """The values (int64) of the window residuals ``r`` (:func:`_chain_forward` inverted; of a
    split variant: the quotients); ``first``: the first residual held apart (the stream's must
    then be 0, else CorruptDataError)."""
    h = model.history.size
    full = np.concatenate((_primer_residuals(model), r))
    if model.adaptive:
        full = _lms(full, True)
    if first is not None and r.size:
        if full[h] != 0:
            from ..errors import CorruptDataError

            raise CorruptDataError("window: the first residual is held apart, but the stream's is not 0")
        full[h] = first
    if not restart or not h or not r.size:
        return _restore(full, model.shift, model.coefs)[h:]
    window = full[h:].copy()
    window[:1] += np.int64(_first_prediction(model, _quotients(model, model.history)))  # (wraps, as the filter)
    return _restore(window, model.shift, model.coefs)


def _primer_residuals(model: Variant) -> np.ndarray:
    """The history's residuals (cached)."""
    r = model._cache.get("primer_residuals")
    if r is None:
        r = _chain_forward(model, np.zeros(0, np.int64))
        model._cache["primer_residuals"] = r
    return r


def _primer(model: Variant) -> np.ndarray:
    """The primer tokens: the history's residuals as tokens (cached)."""
    t = model._cache.get("primer")
    if t is None:
        t = model.tokens(_primer_residuals(model))[0]
        model._cache["primer"] = t
    return t
