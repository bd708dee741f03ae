"""The primed coder: the "cms2" kernel over ``primer + window``, of which a window container
stores only the bytes after those of ``primer + zeros`` (``skip``); the split digits' coder."""

from __future__ import annotations

import numpy as np

from ..errors import CorruptDataError
from .chain import _primer
from .model import _SMOOTH, Variant


def _kernels():
    from .._kernels import cmsignal2

    return cmsignal2


def _encode_tokens(model: Variant, tokens: np.ndarray) -> bytes:
    """The "cms2" coder's bytes (no header: the model's code) for ``tokens`` (int32, in [0, size))."""
    k = _kernels()
    n = int(tokens.size)
    size = n * 4 + 64
    while True:
        buf = np.zeros(size, np.uint8)
        length = int(k._code(tokens, n, model.size, buf, False, model.mode, model.center, model.counts,
                             k._adapt_table(), 0, k.NO_COST))
        if length <= size:
            return buf[:length].tobytes()
        size = length


def _skip_bound(model: Variant) -> int:
    """Most leading bytes a window may take from the reader's ``primer + zeros``: the bytes the
    primer takes coded alone, plus a margin (bounds the reader's work: :func:`_check_work`)."""
    bound = model._cache.get("skip_bound")
    if bound is None:
        bound = len(_encode_tokens(model, _primer(model))) + 64 if _primer(model).size else 0
        model._cache["skip_bound"] = bound
    return bound


def _zeros_stream(model: Variant, n: int) -> bytes:
    """The first :func:`_skip_bound` bytes of ``primer + zeros(n)`` coded (cached per ``n``)."""
    key = ("zeros", n)
    z = model._cache.get(key)
    if z is None:
        tokens = np.concatenate((_primer(model), np.zeros(n, np.int32)))
        z = _encode_tokens(model, tokens)[:_skip_bound(model)]
        with model._lock:
            if len(model._cache) > 64:  # window lengths seen: keep a few
                for old in [k for k in model._cache if isinstance(k, tuple)][:32]:
                    model._cache.pop(old, None)
            model._cache[key] = z
    return z


def _check_work(n_all: int, nbytes: int) -> bool:
    """Whether ``n_all`` tokens may come from ``nbytes`` coder bytes (``cms2``'s bound)."""
    from ..coders._cm import within_bound

    return within_bound(n_all, nbytes)


def _primed_stream(model: Variant, tokens: np.ndarray, cold: bool = False) -> tuple[int, bytes] | None:
    """(skip, rest) of ``tokens`` coded after the primer (``cold``: without it, skip 0), or None
    when the reader's work bound refuses them (a window that codes to almost nothing: the
    ordinary container takes it)."""
    n = int(tokens.size)
    if cold:
        rest = _encode_tokens(model, tokens)
        return (0, rest) if _check_work(n, len(rest)) else None
    full = _encode_tokens(model, np.concatenate((_primer(model), tokens)))
    z = _zeros_stream(model, n)
    limit = min(len(z), len(full))
    a = np.frombuffer(full[:limit], np.uint8)
    b = np.frombuffer(z[:limit], np.uint8)
    diff = np.flatnonzero(a != b)
    skip = int(diff[0]) if diff.size else limit
    rest = full[skip:]
    if not _check_work(_primer(model).size + n, skip + len(rest)):
        return None
    return skip, rest


def _digit_coder(model: Variant, primed: bool = False) -> Variant:
    """The code of a split variant's digits ``(x - offset) % base``, cached: without primer, or
    (``primed``, window containers from version 3) with the history's digits as its primer."""
    key = "digits_primed" if primed else "digits"
    c = model._cache.get(key)
    if c is None:
        mode, center, counts = model.digits
        c = Variant(model.dtype, 0, np.zeros(0, np.int64), 0, model.base, mode, center, counts, np.zeros(0, np.int64))
        if primed:  # (the digits of a noisy ADC are near independent: their statistics are what the primer gives)
            c._cache["primer"] = ((model.history - model.offset) % model.base).astype(np.int32)
        model._cache[key] = c
    return c


def _digit_coders(model: Variant) -> dict:
    """The cache entries of ``model``'s digit coders (created for a split variant), for a
    variant derived from it with another predictor or code (``with_predictor``, ``with_code``):
    its digits are coded the same, so it shares them and their cached primer streams."""
    if model.base > 1:
        _digit_coder(model)
        _digit_coder(model, primed=True)
    return {k: model._cache[k] for k in ("digits", "digits_primed") if k in model._cache}


def _primed_decode(model: Variant, n: int, skip: int, rest: bytes, cold: bool = False) -> np.ndarray:
    """The ``n`` window tokens of (skip, rest) (``cold``: ``rest`` codes them without the primer)."""
    from ..coders._cm import raise_status

    k = _kernels()
    if cold:
        if not _check_work(n, len(rest)):
            raise CorruptDataError(f"window: {n} values cannot come from {len(rest)} coder bytes")
        out = np.empty(n, np.int32)
        raise_status(int(k._code(out, n, model.size, np.frombuffer(rest, np.uint8).copy(), True, model.mode,
                                 model.center, model.counts, k._adapt_table(), 0, k.NO_COST)), model.size)
        return out
    p = int(_primer(model).size)
    if skip > _skip_bound(model):
        raise CorruptDataError(f"window: skip = {skip} is more than the model's primer can give ({_skip_bound(model)})")
    if not _check_work(p + n, skip + len(rest)):
        raise CorruptDataError(f"window: {n} values cannot come from {skip + len(rest)} coder bytes")
    z = _zeros_stream(model, n)
    if skip > len(z):
        raise CorruptDataError(f"window: skip = {skip} is more than the {len(z)} bytes the model's primer gives")
    buf = np.frombuffer(z[:skip] + rest, np.uint8).copy()
    out = np.empty(p + n, np.int32)
    raise_status(int(k._code(out, p + n, model.size, buf, True, model.mode, model.center, model.counts,
                             k._adapt_table(), 0, k.NO_COST)), model.size)
    if not np.array_equal(out[:p], _primer(model)):
        raise CorruptDataError("window: the primer did not decode as the model's (a different model, or damaged bytes)")
    return out[p:]


def _code_of(tokens: np.ndarray, size: int) -> tuple[int, int, np.ndarray]:
    """(mode, center, counts) of a "cms2" code over every token of ``[0, size)``, fitted to
    ``tokens`` (as ``cmsignal2.plan``, each rank's count scaled by 8 plus one: every rank
    gets a code)."""
    k = _kernels()
    t = np.ascontiguousarray(tokens, np.int32)
    center = int(np.partition(t, (t.size - 1) // 2)[(t.size - 1) // 2]) if t.size else size // 2
    best = None
    ranks = k._rank_counts(t, size, center) if t.size else (np.zeros(0, np.int64),) * 3
    for mode, counts in enumerate(ranks):
        seen = counts[:size]
        seen = np.sort(seen[seen > 0])  # (sorted as the whole alphabet's: its unseen ranks' weight 1 first)
        w = np.concatenate((np.ones(size - seen.size, np.int64), seen.astype(np.int64) * _SMOOTH + 1))
        lengths = k._code_lengths(w)
        cost = int((w[::-1] * lengths).sum())
        if best is None or cost < best[0]:
            best = (cost, mode, lengths)
    _, mode, lengths = best
    return mode, center, np.bincount(lengths, minlength=int(lengths[-1]) + 1).astype(np.int64)
