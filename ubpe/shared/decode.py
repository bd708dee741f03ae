"""Window containers read: parsing every version's fields (every length checked against the
bytes), :func:`describe_window`, :func:`decompress_window`."""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

from .._validate import check_int
from ..errors import CorruptDataError, FormatVersionError
from ..format.sealed import unpack
from .chain import _chain_inverse, _primer
from .coder import _check_work, _digit_coder, _kernels, _primed_decode, _skip_bound
from .model import (DTYPES, REF_BYTES, REF_BYTES_V2, REF_BYTES_V3, WINDOW_LEAD, WINDOW_MAGIC, WINDOW_VERSION, _COLD,
                    _HAS_ESC, _HAS_SHAPE, _HAS_SOURCE, _V3_ESC, _V3_SHAPE, _V3_SOURCE, SharedModel, Variant)
from .own import V4_OWN, parse_predictor, with_predictor
from .v5 import (CRC_BYTES, HEAD_COLD, HEAD_EXTRAS, HEAD_NEAR, NEAR_BELOW, X_CODE, X_ESC, X_FIRST, X_OWN, X_SHAPE,
                 X_SOURCE, _X_ALL, check_code, implied_skip, parse_code)


def is_window(data: Any) -> bool:
    """Whether ``data`` starts as a window container (:data:`WINDOW_MAGIC`, or from version 5 a
    lead byte above ``WINDOW_LEAD | 4``)."""
    return isinstance(data, (bytes, bytearray, memoryview)) and (
        bytes(data[:4]) == WINDOW_MAGIC or (len(data) > 0 and data[0] > WINDOW_LEAD | 4))


def _long_form(data: bytes) -> bytes:
    """``data`` with a version-5 lead byte spelt as :data:`WINDOW_MAGIC` and the version byte
    (the form the parser reads; positions in its errors count from it), checked: a newer
    version is refused (FormatVersionError), and so is version 5 spelt long."""
    if data[:4] == WINDOW_MAGIC:
        if len(data) > 4 and data[4] >= 5:
            if data[4] > WINDOW_VERSION:
                raise FormatVersionError("this window container", data[4], WINDOW_VERSION)
            raise CorruptDataError(f"window: version {data[4]} starts with the one byte {WINDOW_LEAD | data[4]:#x}, "
                                   "not the 4-byte magic and a version byte")
        return data
    version = data[0] - WINDOW_LEAD
    if version > WINDOW_VERSION:
        raise FormatVersionError("this window container", version, WINDOW_VERSION)
    return WINDOW_MAGIC + bytes([version]) + data[1:]


def _window_fields(data: bytes) -> list:
    """The fields of a window container: ref, variant, dtype index, shape, n, skip, rest, esc,
    crc, source (None when absent, else checked), own (from version 4: the window's own
    predictor ``(shift, coefs)``, else None), code (version 5: the window's own code ``(mode,
    center, counts)``, else None), first (version 5: the first residual held apart, else None).
    Version 2 gives ``-1 - (skip bound - skip)`` for skip (the bound is the variant's:
    :func:`_resolve_skip`), None for a window coded cold. Version 5 gives ref ``b""``, skip
    ``("implied", near)`` without ``below``, the CRC's low 2 bytes."""
    from ..format.fields import check_source, data_error

    if data[4] >= 2:
        return _fields_v2(data)  # (and version 3's)
    d = unpack(data[5:], "window container")
    if not isinstance(d, list) or len(d) not in (9, 10):
        raise CorruptDataError("window: expected an array of 9 or 10 fields")
    if len(d) == 9:
        return d + [None, None, None, None]
    if d[9] is None:
        raise CorruptDataError("window: a 10th field (source) is a map, never nil")
    return d[:9] + [check_source(d[9], data_error), None, None, None]


def _fields_v2(data: bytes) -> list:
    """:func:`_window_fields` of a version-2 container (every length checked against the bytes)."""
    from ..format.fields import check_source, data_error

    pos = 5
    own = None

    def take(k: int) -> bytes:
        nonlocal pos
        if k < 0 or pos + k > len(data):
            raise CorruptDataError(f"window: truncated ({len(data)} bytes; a field needs {k} more at {pos})")
        pos += k
        return data[pos - k:pos]

    def varint() -> int:
        nonlocal pos
        v = shift = 0
        while True:
            if pos >= len(data):
                raise CorruptDataError("window: truncated inside a varint")
            b = data[pos]
            pos += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v
            if shift >= 63:
                raise CorruptDataError("window: a varint longer than 9 bytes")

    code = first = None
    if data[4] >= 5:
        ref = b""
        head = take(1)[0]
        near = head >> HEAD_NEAR
        if head & HEAD_COLD and near:
            raise CorruptDataError(f"window: head bits 5-7 must be 0 in a cold window, got {head:#x}")
        index = head & 7
        count = varint()
        n, dtype = count >> 4, count & 15
        below = None if head & HEAD_COLD else varint() if near == NEAR_BELOW else (_IMPLIED, near)
        extras = take(1)[0] if head & HEAD_EXTRAS else 0
        if head & HEAD_EXTRAS and (extras == 0 or extras & ~_X_ALL):
            raise CorruptDataError(f"window: the extras byte must be a non-empty set of its flags ({_X_ALL:#x}), "
                                   f"got {extras}")
        if extras & X_OWN:
            own = parse_predictor(take, varint)
        if extras & X_CODE:
            code = parse_code(take, varint)
        if extras & X_FIRST:
            z = varint()
            first = z >> 1 if not z & 1 else -(z >> 1) - 1
        flags = (_HAS_SHAPE if extras & X_SHAPE else 0) | (_HAS_ESC if extras & X_ESC else 0) | (
            _HAS_SOURCE if extras & X_SOURCE else 0)
    elif data[4] >= 3:
        ref = take(REF_BYTES_V3)
        head = take(1)[0]
        count = varint()
        n, index, cold = count >> 1, (head >> 1) & 7, head & 1
        below = None if cold else varint()
        extras = take(1)[0] if count & 1 else None
        allowed = _V3_SHAPE | _V3_ESC | _V3_SOURCE | (V4_OWN if data[4] >= 4 else 0)
        if extras is not None and (extras == 0 or extras & ~allowed):
            raise CorruptDataError(f"window: the extras byte must be a non-empty set of its flags ({allowed:#x}), "
                                   f"got {extras}")
        extras = extras or 0
        if data[4] >= 4:  # (a window without its own predictor is written as version 3)
            if not extras & V4_OWN:
                raise CorruptDataError("window: a version-4 container carries its own predictor (extras flag 0x08)")
            own = parse_predictor(take, varint)
        flags = (head >> 4) | (_HAS_SHAPE if extras & _V3_SHAPE else 0) | (_HAS_ESC if extras & _V3_ESC else 0) | (
            _HAS_SOURCE if extras & _V3_SOURCE else 0)
    else:
        ref = take(REF_BYTES_V2)
        flags, index = take(2)
        n = varint()
        below = None if flags & _COLD else varint()
    shape = None
    if flags & _HAS_SHAPE:
        dims = varint()
        if dims > 32:
            raise CorruptDataError("window: a shape of more than 32 dims")
        shape = [varint() for _ in range(dims)]
    esc = take(varint()) if flags & _HAS_ESC else None
    source = None
    if flags & _HAS_SOURCE:
        source = check_source(unpack(take(varint()), "window source"), data_error)
    crc = int.from_bytes(take(CRC_BYTES if data[4] >= 5 else 4), "little")
    if data[4] < 5:
        dtype = flags & 0x0F
    skip = None if below is None else below if isinstance(below, tuple) else -1 - below
    return [ref, index, dtype, shape, n, skip, data[pos:], esc, crc, source, own, code, first]


#: The skip field of a version-5 window without ``below`` is ``(_IMPLIED, near)``: the skip is
#: :func:`ubpe.shared.v5.implied_skip` plus ``near``.
_IMPLIED = "implied"


def _read_varint(data: bytes) -> tuple[int, int]:
    """(value, bytes used) of the LEB128 varint that starts ``data`` (at most 9 bytes)."""
    v = 0
    for i in range(min(len(data), 9)):
        v |= (data[i] & 0x7F) << (7 * i)
        if not data[i] & 0x80:
            return v, i + 1
    raise CorruptDataError("window: a truncated or overlong varint")


def _resolve_skip(v: Variant, skip: int) -> int:
    """The skip of a field from :func:`_window_fields` (version 2's ``-1 - below``) for variant ``v``."""
    if skip >= 0:
        return skip
    below = -1 - skip
    if below > _skip_bound(v):
        raise CorruptDataError(f"window: skip below the bound by {below}, more than the bound ({_skip_bound(v)})")
    return _skip_bound(v) - below


def describe_window(data: Any) -> Any:
    """The :class:`~ubpe.ContainerInfo` of a window container (``ubpe.describe``): the model
    referenced by its digest prefix (none from version 5: ``digest`` ""), ``coder`` "cms2",
    ``front`` empty (the model's predictor), ``payload`` the coder's bytes. Nothing is decoded."""
    from ..format.describe import ContainerInfo
    from ..format.fields import parse_escapes

    size = len(data)
    data = _long_form(bytes(data)) if is_window(data) else bytes(data)
    _check_prefix(data)
    ref, index, dtype_str, shape, n, skip, rest, esc, crc, source, _, _, _ = _window_fields(data)
    if not isinstance(ref, bytes) or type(n) is not int or n < 1 or not isinstance(rest, bytes):
        raise CorruptDataError("window: malformed fields")
    dtype = _window_dtype(dtype_str)
    dims = tuple(shape) if isinstance(shape, list) else (n,)
    escapes = int(parse_escapes(esc, n, np.dtype(np.int64))[0].size) if esc is not None else 0
    esc_bytes = len(msgpack.packb(esc, use_bin_type=True)) if esc is not None else 0
    payload = len(msgpack.packb(rest, use_bin_type=True))
    itemsize = dtype.itemsize
    recorded = source.get("size") if isinstance(source, dict) else None
    file_size = recorded if type(recorded) is int and recorded >= 0 else None
    return ContainerInfo(
        version=data[4], dtype=dtype.str, shape=dims, n_values=n,
        original_size=n * itemsize, size=size, header=size - payload, model=0, freq=0, payload=payload,
        ratio=((file_size if file_size is not None else n * itemsize) / size), embedded=False,
        digest=ref.hex(), alphabet_size=None, n_merges=None, coder="cms2", n_tokens=n, source=source,
        escapes=escapes, escape_bytes=esc_bytes, file_size=file_size)


def _window_dtype(index: Any) -> np.dtype:
    if type(index) is not int or not 0 <= index < len(DTYPES):
        raise CorruptDataError(f"window: the dtype must be an index into {DTYPES}")
    return np.dtype(DTYPES[index])


def _check_prefix(data: bytes) -> None:
    if not is_window(data):
        raise CorruptDataError("not a ubpe window container (bad magic)")
    if len(data) < 5:
        raise CorruptDataError("window: truncated (no version byte)")
    if data[4] > WINDOW_VERSION:
        raise FormatVersionError("this window container", data[4], WINDOW_VERSION)
    if data[4] < 1:
        raise CorruptDataError("window: invalid version 0")


def decompress_window(data: Any, model: Any, max_output_size: int | None = None) -> np.ndarray:
    """The values of a window container (``model``: the :class:`SharedModel` it references)."""
    from ..model import DEFAULT_MAX_OUTPUT_SIZE

    data = _long_form(bytes(data)) if is_window(data) else bytes(data)
    _check_prefix(data)
    cap = DEFAULT_MAX_OUTPUT_SIZE if max_output_size is None else check_int("max_output_size", max_output_size, 0)
    ref, index, dtype_str, shape, n, skip, rest, esc, crc, _, own, code, first = _window_fields(data)
    ref_bytes = {1: REF_BYTES, 2: REF_BYTES_V2}.get(data[4], REF_BYTES_V3 if data[4] < 5 else 0)
    if not isinstance(ref, bytes) or len(ref) != ref_bytes:
        raise CorruptDataError(f"window: the model reference must be {ref_bytes} bytes")
    if model is None:
        raise CorruptDataError(f"this window container references shared model {ref.hex()}...: pass "
                               "tokenizer=ubpe.SharedModel.load(path) (the model it was compressed with)")
    if not isinstance(model, SharedModel):
        # (the bytes, not the argument, say that a SharedModel is needed: one lead byte marks a
        # window container, so damaged bytes of another container may claim it)
        raise CorruptDataError(f"these bytes are a window container, which needs the ubpe.SharedModel it was "
                               f"compressed with, not a {type(model).__name__} (or the bytes are damaged)")
    if ref != model.ref[:ref_bytes]:
        raise CorruptDataError(f"this window container references shared model {ref.hex()}..., "
                               f"not the given one ({model.ref.hex()}...)")
    if type(index) is not int or not 0 <= index < len(model.variants):
        raise CorruptDataError(f"window: variant {str(index)[:20]} is not one of the model's {len(model.variants)}"
                               + (" (damaged bytes, or not the model the window was compressed with)"
                                  if data[4] >= 5 else ""))
    v = model.variants[index]
    if own is not None:  # (version 4: the window's own predictor in place of the variant's)
        if v.values is not None:
            raise CorruptDataError("window: a dense variant cannot take the window's own predictor")
        v = with_predictor(v, *own)
    if code is not None:  # (version 5: the window's own code in place of the variant's)
        v = check_code(v, *code)
    dtype = _window_dtype(dtype_str)
    if type(n) is not int or n < 1:
        raise CorruptDataError("window: the value count must be a positive int")
    if n * dtype.itemsize > cap:
        raise CorruptDataError(f"window: {n} values are more than max_output_size={cap} bytes")
    if shape is None:
        dims = [n]
    elif isinstance(shape, list) and len(shape) != 1 and len(shape) <= 32 and all(
            type(s) is int and s >= 0 for s in shape) and int(np.prod(shape, dtype=object)) == n:
        dims = shape
    else:
        raise CorruptDataError("window: shape must be nil (1-D) or a list of other dims whose product is the count")
    cold = skip is None and data[4] >= 2
    if isinstance(skip, tuple):  # (version 5: v resolved; the reader's work bounded before it codes the primer)
        if not isinstance(rest, bytes) or not _check_work(int(_primer(v).size) + n, _skip_bound(v) + len(rest)):
            raise CorruptDataError(f"window: {n} values cannot come from {len(rest)} coder bytes and the primer's")
        skip = implied_skip(v, n) + skip[1]
    if not cold and (type(skip) is not int or (skip < 0 and data[4] == 1)):
        raise CorruptDataError("window: skip must be a non-negative int")
    skip = 0 if cold else _resolve_skip(v, skip)
    if not isinstance(rest, bytes):
        raise CorruptDataError("window: the coder bytes must be bytes")
    if type(crc) is not int or not 0 <= crc < 1 << 32:
        raise CorruptDataError("window: crc must be a 32-bit unsigned int")
    if data[4] < 5:
        return _window_values(data, v, n, skip, rest, esc, crc, first, cold, dtype, dims)
    try:  # version 5 names no model: what fails may be damage or another model
        return _window_values(data, v, n, skip, rest, esc, crc, first, cold, dtype, dims)
    except CorruptDataError as exc:
        if "not the model" in str(exc):
            raise
        raise CorruptDataError(f"{exc} (damaged bytes, or not the model the window was compressed with)") from None


def _window_values(data: bytes, v: Variant, n: int, skip: Any, rest: bytes, esc: Any, crc: int, first: Any,
                   cold: bool, dtype: np.dtype, dims: tuple) -> np.ndarray:
    """The values of a window whose fields are checked: its payload decoded with variant ``v``."""
    from ..format.container import values_crc
    from ..format.fields import parse_escapes

    digits = None
    if v.base > 1:
        if data[4] == 1:
            raise CorruptDataError("window: a version-1 container cannot use a split variant")
        if data[4] >= 3:  # the digits primed with the history's
            dc = _digit_coder(v, primed=True)
            below, used_below = _read_varint(rest)
            length, used = _read_varint(rest[used_below:])
            used += used_below
            if used + length > len(rest):
                raise CorruptDataError(f"window: a digits' stream of {length} bytes (of {len(rest) - used} left)")
            digits = _primed_decode(dc, n, _resolve_skip(dc, -1 - below), rest[used:used + length])
        else:
            length, used = _read_varint(rest)
            if used + length > len(rest) or not _check_work(n, length):
                raise CorruptDataError(f"window: a digits' stream of {length} bytes (of {len(rest) - used} left)")
            k = _kernels()
            dc = _digit_coder(v)
            digits = np.empty(n, np.int32)
            from ..coders._cm import raise_status

            raise_status(int(k._code(digits, n, dc.size, np.frombuffer(rest[used:used + length], np.uint8).copy(),
                                     True, dc.mode, dc.center, dc.counts, k._adapt_table(), 0, k.NO_COST)), dc.size)
        rest = rest[used + length:]
    tokens = _primed_decode(v, n, skip, rest, cold)
    r = v.residuals(tokens)
    if esc is not None:
        positions, values = parse_escapes(esc, n, np.dtype(np.int64))
        r[positions] = values.astype(np.int64)
    x = _chain_inverse(v, r, restart=data[4] >= 3, first=first)
    if digits is not None:
        x = x * v.base + v.offset + digits
    native = dtype.newbyteorder("=")
    info = np.iinfo(native)
    if x.size and (int(x.min()) < info.min or int(x.max()) > info.max):
        raise CorruptDataError("window: the decoded values do not fit the dtype (damaged bytes)")
    out = x.astype(native)
    crc_mask = (1 << 8 * CRC_BYTES) - 1 if data[4] >= 5 else 0xFFFFFFFF
    if values_crc(dtype, dims, out.astype(native.newbyteorder("<"), copy=False)) & crc_mask != crc:
        raise CorruptDataError("window: CRC mismatch (damaged bytes" + (
            ", or not the model the window was compressed with)" if data[4] >= 5 else ")"))
    return out.astype(dtype).reshape(dims)
