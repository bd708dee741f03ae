"""Window containers written: a window's bytes with each variant (:func:`_variant_bytes`), the
bodies of versions 1 to 3, :func:`compress_window` (never larger than compressing alone)."""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

from .._validate import check_int
from .chain import _chain_forward, _first_residual, _quotients, _residual
from .coder import _check_work, _digit_coder, _encode_tokens, _primed_stream, _skip_bound
from .model import (DTYPES, REF_BYTES_V2, REF_BYTES_V3, WINDOW_LEAD, WINDOW_MAGIC, WINDOW_VERSION, _COLD, _HAS_ESC,
                    _HAS_SHAPE, _HAS_SOURCE, _V3_ESC, _V3_SHAPE, _V3_SOURCE, SharedModel, Variant)
from .own import OWN_GAIN, V4_OWN, own_predictor, predictor_field, with_predictor
from .v5 import (CODE_SAVING_MIN, CRC_BYTES, HEAD_COLD, HEAD_EXTRAS, HEAD_NEAR, NEAR_BELOW, OWN_PRIMED_WITHIN,
                 PRIMED_WITHIN, X_CODE, X_ESC, X_FIRST, X_OWN, X_SHAPE, X_SOURCE, code_field, code_saving, implied_skip,
                 own_code, with_code)


def _variant_bytes(v: Variant, arr: np.ndarray, cold: bool = False, version: int = 2,
                   restart: bool | None = None, apart: bool = False,
                   memo: dict | None = None) -> tuple[int, bytes, bytes | None] | None:
    """(skip, rest, esc) of ``arr`` coded with the variant ``v`` (``cold``: the coder without
    the primer, skip 0), or None when it cannot. A split variant's ``rest`` starts with the
    digits' stream: its length (varint), then it; from ``version`` 3 the digits are primed with
    the history's: ``bound - skip`` of their stream (varint) first, then its length and rest.
    ``apart``: the window's first residual held apart (0 in the stream; version 5). ``memo``
    (one window's and one model variant's): the residuals by predictor and ``apart``, and the
    digits' part, which the window's trials with the variant share (cold or not, its own code
    or predictor or the variant's), computed once."""
    from ..format.fields import escape_field

    memo = {} if memo is None else memo
    flat = np.ascontiguousarray(arr.reshape(-1)).astype(np.int64)
    r = _window_residuals(v, flat, version >= 3 if restart is None else restart, apart, memo)
    tokens, outside = v.tokens(r)
    coded = _primed_stream(v, tokens, cold)
    if coded is None:
        return None
    esc = escape_field(r, outside) if outside.size else None
    if v.base == 1:
        return coded[0], coded[1], esc
    if "digits" not in memo:
        memo["digits"] = _digits_part(v, flat, version)
    if memo["digits"] is None:
        return None
    return coded[0], memo["digits"] + coded[1], esc


def _window_residuals(v: Variant, flat: np.ndarray, restart: bool, apart: bool, memo: dict) -> np.ndarray:
    """The window's residuals (int64) by the variant ``v``'s chain (:func:`_chain_forward`
    without the history's), memoized in ``memo`` by predictor, ``restart`` and ``apart`` (the
    code does not change them)."""
    key = ("r", v.shift, v.coefs.tobytes(), restart, apart)
    r = memo.get(key)
    if r is None:
        r = memo[key] = _chain_forward(v, flat, restart=restart, apart=apart)[v.history.size:]
    return r


def _digits_part(v: Variant, flat: np.ndarray, version: int) -> bytes | None:
    """The digits' part of a split variant's ``rest`` (:func:`_variant_bytes`), or None when
    the reader's work bound refuses it: the same for every predictor and code of the variant."""
    digit_tokens = ((flat - v.offset) % v.base).astype(np.int32)
    if version >= 3:
        dc = _digit_coder(v, primed=True)
        primed = _primed_stream(dc, digit_tokens)
        if primed is None:
            return None
        skip, digits = primed
        return _varint(_skip_bound(dc) - skip) + _varint(len(digits)) + digits
    digits = _encode_tokens(_digit_coder(v), digit_tokens)
    if not _check_work(flat.size, len(digits)):
        return None
    return _varint(len(digits)) + digits


def _window_bytes(model: SharedModel, arr: np.ndarray, source: dict | None = None,
                  version: int = WINDOW_VERSION) -> bytes | None:
    """The window container (``version`` 1, 2 or 3) of ``arr`` (any shape, a dtype of
    :data:`DTYPES`) with the variant that gives the smallest (the first on ties), or None when
    no variant can code it."""
    from ..format.container import values_crc

    if arr.dtype.str not in DTYPES or arr.size == 0:
        return None
    native = np.ascontiguousarray(arr.reshape(-1)).astype(arr.dtype.newbyteorder("<"), copy=False)
    crc = values_crc(arr.dtype, list(arr.shape), native)
    dtype = DTYPES.index(arr.dtype.str)
    shape = None if arr.ndim == 1 else [int(d) for d in arr.shape]
    specs = []  # every trial, in order: (order, variant index, predictor key, variant, field, own field, code,
    # first residual, cold, apart, memo)
    own = {}  # (base, offset) -> the window's own predictor (version 4: ubpe/shared/own.py)
    for i, model_v in enumerate(model.variants):
        if version == 1 and model_v.base > 1:
            continue  # (version 1 has no digits' stream)
        tries = [(model_v, None, 0)]  # (variant, field, predictor: 0 the variant's, 1 the window's own)
        memo = {}  # (the residuals and digits this window's trials with the variant share: _variant_bytes)
        if version >= 4 and model_v.values is None:
            key = (model_v.base, model_v.offset)
            if key not in own:
                flat = native.astype(np.int64)
                own[key] = own_predictor((flat - model_v.offset) // model_v.base if model_v.base > 1 else flat)
            if own[key] is not None and _predicts_better(model_v, native, *own[key]):
                tries.append((with_predictor(model_v, *own[key]), predictor_field(*own[key]), 1))
        if version >= 5:  # the window's own code, coded cold (a window unlike the training windows)
            for v, field, p in list(tries):
                tokens = v.tokens(_window_residuals(v, native.astype(np.int64), True, False, memo))[0]
                code = own_code(v, tokens)
                if code_saving(v, tokens, code) <= CODE_SAVING_MIN:
                    continue  # (the variant's code fits the window about as well)
                tries.append((with_code(v, *code), (field, code_field(*code)), p))
        for v, field, p in tries:
            own_field, code = field if isinstance(field, tuple) else (field, None)
            first = None
            if version >= 5 and (v.adaptive or v.coefs.size):  # the first residual apart: the jump from the history
                first = _first_residual(v, native.astype(np.int64))
                first = first if 0 < abs(first) < 1 << 62 else None  # (0 apart: the same stream, a field more)
            for cold, apart in [(c, a) for c in ((True,) if code is not None else (False, True)
                                                 if version >= 2 and v.history.size else (False,))
                                for a in ((False, True) if first is not None else (False,))]:
                specs.append((len(specs), i, (i, p), v, field, own_field, code, first, cold, apart, memo))

    def body_of(spec) -> bytes | None:
        _, i, _, v, field, own_field, code, first, cold, apart, memo = spec
        coded = _variant_bytes(v, native, cold, version, apart=apart, memo=memo)
        if coded is None:
            return None
        skip, rest, esc = coded
        if version >= 5:
            near = None if cold else skip - implied_skip(v, int(arr.size))
            below = 0 if cold else _skip_bound(v) - skip  # (a cold window has none: no primer coded)
            return bytes([5]) + _body_v5(i, dtype, shape, int(arr.size), near, below, rest,
                                         esc, crc, source, own_field, code, first if apart else None)
        if version == 1:
            fields = [model.ref, i, dtype, shape, int(arr.size), skip, rest, esc, crc]
            return msgpack.packb(fields + ([source] if source is not None else []), use_bin_type=True)
        if version >= 3:  # (version 3's bytes when the window keeps its variant's predictor)
            return bytes([3 if field is None else 4]) + _body_v3(
                model.ref[:REF_BYTES_V3], i, dtype, shape, int(arr.size),
                None if cold else _skip_bound(v) - skip, rest, esc, crc, source, field)
        return _body_v2(model.ref[:REF_BYTES_V2], i, dtype, shape, int(arr.size),
                        None if cold else _skip_bound(v) - skip, rest, esc, crc, source)

    # Version 5: the cold trials first (the window's tokens alone: cheap); a predictor's primed
    # trials (primer + window, the primer often 30 times the window) only when its cold ones
    # came close to the best cold one. (The first residual apart only when it paid cold, or when
    # it was large against the residuals' mean magnitude: 6 % to 10 % fewer primed trials at
    # W=1000 and a few bytes more, up to 27 B more at W=10000; not done.)
    gated = version >= 5
    cold_sizes = {}  # predictor key -> body length of its smallest cold trial
    sized = []  # (length, order, body)
    for spec in specs:
        if gated and not spec[8] and spec[3].history.size:
            continue
        body = body_of(spec)
        if body is not None:
            sized.append((len(body), spec[0], body))
            if spec[8]:
                cold_sizes[spec[2]] = min(len(body), cold_sizes.get(spec[2], len(body)))
    if gated:
        least = min(cold_sizes.values(), default=0)
        for spec in specs:
            within = OWN_PRIMED_WITHIN if spec[5] is not None else PRIMED_WITHIN
            if spec[8] or not spec[3].history.size or cold_sizes.get(spec[2], 0) > least + within:
                continue
            body = body_of(spec)
            if body is not None:
                sized.append((len(body), spec[0], body))
    best = min(sized)[2] if sized else None  # (the first in the trials' order on ties)
    if best is None:
        return None
    if version >= 5:  # (one lead byte for the magic and the version)
        return bytes([WINDOW_LEAD | best[0]]) + best[1:]
    return WINDOW_MAGIC + (best if version >= 3 else bytes([version]) + best)  # (from 3 the body has it)


def _predicts_better(v: Variant, values: np.ndarray, shift: int, coefs: np.ndarray) -> bool:
    """Whether the window's own predictor ``(shift, coefs)`` leaves residuals (of the quotients
    of a split variant) whose mean magnitude is below :data:`OWN_GAIN` times the variant's
    predictor's: the window's spectrum moved from the training windows'. (Trying the own
    predictor only then gave the same sizes on the recordings of benchmarks/bench_windows.py
    at 1 000 values, with two encodings a variant fewer on the others.)"""
    q = _quotients(v, values.astype(np.int64))
    own = np.abs(_residual(q, shift, coefs)).sum()
    return bool(own < OWN_GAIN * np.abs(_residual(q, v.shift, v.coefs)).sum())


def _varint(v: int) -> bytes:
    """LEB128 of ``v >= 0``."""
    out = bytearray()
    while True:
        out.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
        v >>= 7
        if not v:
            return bytes(out)


def _body_tail(shape: list | None, esc: bytes | None, source: dict | None, crc: int, rest: bytes) -> list[bytes]:
    """The end of a version-2 or version-3 body: the optional shape, escapes and source, each
    length first, then the CRC and the coder bytes."""
    out = []
    if shape is not None:
        out += [_varint(len(shape))] + [_varint(d) for d in shape]
    if esc is not None:
        out += [_varint(len(esc)), esc]
    if source is not None:
        packed = msgpack.packb(source, use_bin_type=True)
        out += [_varint(len(packed)), packed]
    return out + [int(crc).to_bytes(4, "little"), rest]


def _body_v2(ref: bytes, index: int, dtype: int, shape: list | None, n: int, below: int | None, rest: bytes,
             esc: bytes | None, crc: int, source: dict | None) -> bytes:
    """Version 2's body (docs/format.md, "Window containers"): ``below`` = skip bound - skip,
    None for a window coded cold (no primer)."""
    flags = dtype | (_HAS_SHAPE if shape is not None else 0) | (_HAS_ESC if esc is not None else 0) | (
        _HAS_SOURCE if source is not None else 0) | (_COLD if below is None else 0)
    out = [ref, bytes([flags, index]), _varint(n)] + ([] if below is None else [_varint(below)])
    return b"".join(out + _body_tail(shape, esc, source, crc, rest))


def _body_v3(ref: bytes, index: int, dtype: int, shape: list | None, n: int, below: int | None, rest: bytes,
             esc: bytes | None, crc: int, source: dict | None, own: bytes | None = None) -> bytes:
    """Version 3's body (docs/format.md, "Window containers"): one byte ``16 dtype + 2 variant +
    cold``, the varint ``2 n + extras``, ``below`` (not when cold), the extras byte and fields
    when any, the CRC, the coder bytes. ``own``: version 4's field of the window's own predictor
    (:func:`ubpe.shared.own.predictor_field`), right after the extras byte."""
    extras = (_V3_SHAPE if shape is not None else 0) | (_V3_ESC if esc is not None else 0) | (
        _V3_SOURCE if source is not None else 0) | (V4_OWN if own is not None else 0)
    out = [ref, bytes([16 * dtype + 2 * index + (below is None)]), _varint(2 * n + (extras != 0))]
    if below is not None:
        out.append(_varint(below))
    if extras:
        out.append(bytes([extras]))
    if own is not None:
        out.append(own)
    return b"".join(out + _body_tail(shape, esc, source, crc, rest))


def _body_v5(index: int, dtype: int, shape: list | None, n: int, near: int | None, below: int, rest: bytes,
             esc: bytes | None, crc: int, source: dict | None, own: bytes | None, code: bytes | None,
             first: int | None = None) -> bytes:
    """Version 5's body (docs/format.md, "Window containers"): ``head``, the varint ``16 n +
    dtype``, ``below`` unless the skip is the implied one plus ``near`` in 0 to 6 (``near``
    None: cold), the extras byte and its fields when any (the own predictor, the own code,
    shape, escapes, source; ``first``: the first residual held apart), the CRC's low
    :data:`CRC_BYTES` bytes, the coder bytes."""
    extras = ((X_SHAPE if shape is not None else 0) | (X_ESC if esc is not None else 0)
              | (X_SOURCE if source is not None else 0) | (X_OWN if own is not None else 0)
              | (X_CODE if code is not None else 0) | (X_FIRST if first is not None else 0))
    field = 0 if near is None else near if 0 <= near < NEAR_BELOW else NEAR_BELOW
    head = index | (HEAD_COLD if near is None else 0) | (HEAD_EXTRAS if extras else 0) | (field << HEAD_NEAR)
    out = [bytes([head]), _varint(16 * n + dtype)]
    if field == NEAR_BELOW:
        out.append(_varint(below))
    if extras:
        out += [bytes([extras]), own or b"", code or b""]
        if first is not None:
            out.append(_varint(2 * first if first >= 0 else -2 * first - 1))  # (zigzag)
    tail = _body_tail(shape, esc, source, crc, rest)
    tail[-2] = tail[-2][:CRC_BYTES]
    return b"".join(out + tail)


def compress_window(values: Any, model: SharedModel, alone: bytes, *, source: dict | None = None,
                    lossy: bool = False, progress: Any = None, version: int = WINDOW_VERSION) -> bytes:
    """``values`` coded with ``model`` (what ``ubpe.compress(values, tokenizer=model, ...)``
    does): the window container, or ``alone`` (the ordinary container of ``values``, which
    :func:`ubpe.compress` builds) when that is not larger. The window container is tried for a
    numpy integer array of :data:`DTYPES` when the compression is not ``lossy`` (``step`` or
    ``bits``); it keeps ``source``. Never larger than compressing alone. ``version``: the
    window-container version to write (1 to 5; 1 to 4 only to reproduce old files; with 4 a
    window that keeps its variant's predictor is written as version 3, the same bytes)."""
    from ..format.fields import argument_error, check_source

    if not isinstance(model, SharedModel):
        raise TypeError(f"model must be a ubpe.SharedModel, got {type(model).__name__}")
    version = check_int("version", version, 1, WINDOW_VERSION)
    arr = values if isinstance(values, np.ndarray) else None
    if arr is not None and not lossy:
        shared = _window_bytes(model, arr, None if source is None else check_source(source, argument_error), version)
        if shared is not None and len(shared) < len(alone):
            alone = shared
    if progress is not None:
        progress(int(arr.shape[0]) if arr is not None and arr.ndim else 1)
    return alone
