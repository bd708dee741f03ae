""""floatpack": a short float series as its decimal integers at one fixed width (issue 30).

Like "mixsignal" it codes **the values themselves**, not tokens: a container holding it has no
model, no alphabet, no front end and no escapes, which a float container of a hundred values
otherwise spends more bytes on than its values (obspy's 100-value LMOW trace: 141 bytes through
the "floatdec" stage, 120 so; pcodec 123). Every value ``x`` (flattened in C order) is
``float64(k) / 10**e``, ``float64(k) * 10**-e`` or ``float64(k) * c`` rounded to the dtype, as
the "floatdec" stage's inverse computes it (:func:`ubpe.frontend.floatcodes.decimal_floats`),
with ``k = lo + u`` and ``u`` packed at ``width`` bits. The payload (docs/format.md, "Coders"):

    width (1 byte, <= 54) | base tag (1 byte) | [c: 4 bytes float32 or 8 bytes float64, LE]
    | zigzag(lo) (canonical LEB128) | the n values u, packed LSB-first (ubpe.format.bits.pack_uints)

Base tag ``t <= 44``: the decimal exponent ``e = t - 22``; 45: a float32 multiplier follows
(written so whenever ``c`` is a float32); 46: a float64 one (only when ``c`` is no float32).
The writer (``ubpe.compress``, every level) offers it for float values whose "floatdec" stage
has one base for every channel and no exception, adjustment or low bits, and keeps the smaller
container. Its :data:`CODER` is registered (kind ``"values"``, offered to no token stream:
``encode`` declines, ``decode`` raises) for its number and field checks.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

from ..errors import CorruptDataError
from .._kernels import floatpack as _kf
from ..format.bits import pack_uints, pack_varints, unpack_uints
from ..frontend import floatcodes
from ._base import Coder, Tokens

#: Name of the coder (the stream's ``coder`` field).
NAME = "floatpack"
#: Largest width of a value: |k| <= 2**53, so k - lo < 2**54.
MAX_WIDTH = 54
#: Largest |lo|.
MAX_LO = 1 << 53
#: Largest |e| of a decimal base.
MAX_DECIMAL_EXP = floatcodes.MAX_DECIMAL_EXP
#: Base tags: a decimal exponent e is ``e + MAX_DECIMAL_EXP``; then the two multiplier forms.
TAG_FLOAT32 = 2 * MAX_DECIMAL_EXP + 1
TAG_FLOAT64 = TAG_FLOAT32 + 1


def _base_bytes(base: int | float) -> bytes:
    """The base tag and multiplier bytes of a "floatdec" base."""
    if type(base) is int:
        return bytes([base + MAX_DECIMAL_EXP])
    as32 = np.float32(base)
    if float(as32) == base:
        return bytes([TAG_FLOAT32]) + as32.astype("<f4").tobytes()
    return bytes([TAG_FLOAT64]) + np.float64(base).astype("<f8").tobytes()


def encode_values(flat: np.ndarray, base: int | float) -> dict | None:
    """The stream map of the float values ``flat`` (1-D, native float dtype, at least one) on the
    "floatdec" base ``base`` (an int exponent in [-22, 22] or a positive finite float; a float
    multiplier is replaced by the float32 nearest it when the values come back so as well: 4
    bytes fewer), or None when some value is not ``k`` on that base bit for bit (NaN, -0.0, a
    finer reading), ``|k|`` exceeds ``2**53`` or the span of ``k`` needs more than 54 bits."""
    x64 = flat.astype(np.float64)
    if not np.isfinite(x64).all():
        return None
    candidates = [base] if type(base) is int else list(dict.fromkeys([float(np.float32(base)), base]))
    for b in candidates:
        k = _exact_ints(flat, x64, b)
        if k is not None:
            return _stream(k, b, int(flat.shape[0]))
    return None


def _exact_ints(flat: np.ndarray, x64: np.ndarray, base: int | float) -> np.ndarray | None:
    """The integers k (int64, |k| <= 2**53) of ``flat`` on ``base``, or None unless every value
    comes back from its k bit for bit."""
    if type(base) is float and not (math.isfinite(base) and base > 0):
        return None
    k = floatcodes.decimal_ints(x64, base)
    if int(np.abs(k).max()) > MAX_LO:
        return None
    if floatcodes.decimal_floats(k, base, flat.dtype).tobytes() != flat.tobytes():  # -0.0 included: its bits differ
        return None
    return k


def _stream(k: np.ndarray, base: int | float, n: int) -> dict | None:
    """The stream map of the integers ``k`` (int64) on ``base``; None when their span needs more
    than :data:`MAX_WIDTH` bits (``k`` from -2**53 to 2**53: 55 bits)."""
    lo = int(k.min())
    if (int(k.max()) - lo).bit_length() > MAX_WIDTH:
        return None
    width, packed = pack_uints(k - lo)
    zz = 2 * lo if lo >= 0 else -2 * lo - 1
    head = bytes([width]) + _base_bytes(base) + pack_varints(np.array([zz], np.uint64))
    return {"coder": NAME, "n": n, "payload": head + packed}


def decode_values(stream: dict, native: np.dtype, n: int) -> np.ndarray:
    """The ``n`` flat values (``native``, a float dtype) of a checked "floatpack" stream; every
    field of the payload is checked before anything proportional to ``n`` is allocated.
    CorruptDataError for anything else (the CRC is the caller's)."""
    payload = stream["payload"]
    if len(payload) < 3:
        raise CorruptDataError(f"stream: the 'floatpack' payload has {len(payload)} bytes, fewer than its head")
    width, tag = payload[0], payload[1]
    if width > MAX_WIDTH:
        raise CorruptDataError(f"stream: 'floatpack' width {width} exceeds {MAX_WIDTH}")
    at = 2
    base: int | float
    if tag < TAG_FLOAT32:
        base = tag - MAX_DECIMAL_EXP
    elif tag in (TAG_FLOAT32, TAG_FLOAT64):
        size = 4 if tag == TAG_FLOAT32 else 8
        if len(payload) < at + size + 1:
            raise CorruptDataError("stream: the 'floatpack' payload ends in its multiplier")
        base = struct.unpack_from("<f" if size == 4 else "<d", payload, at)[0]
        at += size
        if not (math.isfinite(base) and base > 0):
            raise CorruptDataError(f"stream: the 'floatpack' multiplier {base!r} is not positive and finite")
        if size == 8 and float(np.float32(base)) == base:
            raise CorruptDataError("stream: a 'floatpack' multiplier that is a float32 is written in 4 bytes")
    else:
        raise CorruptDataError(f"stream: unknown 'floatpack' base tag {tag}")
    zz, at = _read_lo(payload, at)
    lo = zz >> 1 if zz % 2 == 0 else -((zz + 1) >> 1)
    if abs(lo) > MAX_LO:
        raise CorruptDataError(f"stream: 'floatpack' lo {lo} outside [-2**53, 2**53]")
    expect = (n * width + 7) // 8
    if len(payload) - at != expect:
        raise CorruptDataError(f"stream: the 'floatpack' payload holds {len(payload) - at} bytes of values, "
                               f"expected {expect} for {n} values of {width} bits")
    if native.itemsize not in (4, 8):  # (float16: numpy's arithmetic, the same floats)
        k = unpack_uints(payload[at:], n, width)
        k += lo
        return floatcodes.decimal_floats(k, base, native)
    # (floatcodes.decimal_floats' arithmetic: x = k / 10**e for e >= 0, k * 10**-e, or k * c)
    if type(base) is int:
        divide, scale = (True, 10.0 ** base) if base >= 0 else (False, 10.0 ** -base)
    else:
        divide, scale = False, base
    out = np.empty(n, native)
    if _kf.decode(payload, at, width, lo, divide, scale, out):
        raise CorruptDataError("packed data has nonzero padding bits")
    return out


def _read_lo(payload: bytes, at: int) -> tuple[int, int]:
    """The canonical LEB128 varint of ``payload`` at ``at`` (at most 10 bytes; a last byte 0
    after another, or a 10-byte one beyond 64 bits, is not canonical) and the offset after it."""
    value = shift = 0
    for i in range(at, min(at + 10, len(payload))):
        b = payload[i]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if (i > at and b == 0) or (i == at + 9 and b > 1):
                raise CorruptDataError("stream: 'floatpack' lo: an overlong or non-shortest varint")
            return value, i + 1
        shift += 7
    raise CorruptDataError("stream: the 'floatpack' lo is cut short or longer than 10 bytes")


def encode(tokens: Tokens, budget: int) -> dict | None:
    """None: "floatpack" codes float values, never a token stream."""
    return None


def decode(fields: dict, n: int, vocab_size: int, classes: Any) -> np.ndarray:
    raise CorruptDataError("a 'floatpack' stream codes values, not tokens: it is only a container's one stream, "
                           "without a model or front end")


CODER = Coder(NAME, 7, ("coder", "n", "payload"), (), "values", "signal", encode, decode)
