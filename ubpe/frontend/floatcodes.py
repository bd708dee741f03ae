"""Lossless float stages: floats to integers bit for bit, in a decimal and a binary mode.

``compress`` takes any float16/32/64 array losslessly (NaN payloads, ``-0.0``, infinities and
subnormals included): :func:`choose` picks the mode and its parameters by an estimate of the
coded size, and the chosen stage heads the front-end chain; the integers it outputs then go
through the usual chain choice and coders. Both stages record, per value that their integers
do not give back bit for bit, its position and its raw bits (*exceptions*, after ALP,
Afroozeh et al., SIGMOD 2024), so any input round-trips.

``"floatdec"``, the decimal mode (sensor readings, CSV columns, anything printed in decimal):
per channel a *base*, an int ``e`` (``x = k / 10**e``, or ``k * 10**-e`` for ``e < 0``, IEEE
binary64 with round to nearest, then rounded to the values' dtype: the nearest float to the
decimal ``k`` times ``10**-e``, which is what parsing its text gives) or a float ``c`` (``x = k *
c``: counts times a calibration factor). The writer takes ``k = rint(x * 10**e)`` (``rint(x /
c)``) and checks each value's round trip.

``"floatbin"``, the binary mode (float audio, processed float recordings): with a grid
exponent ``G``, ``y = trunc(x / 2**G)`` and the remainder ``x - y * 2**G``, an integer
multiple of ``2**(G - k)`` below ``2**G`` in magnitude, stored in ``k`` raw bits, ``k =
max(0, min(G - L, P - bitlen(|y|)))``: ``L`` the lowest set bit of any value and ``P`` the most
significant bits any value has (24 for float32 data stored as float64), so that the bits below
``2**G`` cost only what the values hold. ``G = L`` is the exact grid (no raw bits).

Both may move the ``s`` lowest bits of the integers out of the chain (the decimal mode's
``shifts``, the binary mode's ``G`` above ``L``) when prediction leaves many bits of noise in
them (``Settings.float_modelled_bits``): those bits cost as much raw, and the chain's coders
work best on the narrower integers. The writer chooses among the exact grid (``"floatgrid"``,
:mod:`ubpe.frontend.floats`) and these two by size (:mod:`ubpe.planner.floats`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._kernels import floats as _k
from .._kernels import floatulps as _ku
from .._validate import expect_map, field_bytes, field_int, short
from ..errors import CorruptDataError
from ..format.bits import pack_varints, read_varints
from ._stage import Stage, register

__all__ = ["FloatDecimalStage", "FloatBinaryStage", "PER_BLOCK"]

#: Precision (significand bits, hidden bit included) and the exponent of the lowest bit a
#: value can have, per float itemsize.
PRECISION = {2: 11, 4: 24, 8: 53}
LOWEST_BIT = {2: -24, 4: -149, 8: -1074}
#: Largest ``|e|`` of a decimal base: 10**22 is the largest power of ten exact in float64.
MAX_DECIMAL_EXP = 22
#: Largest alphabet of the adjustments' tokens, and most digits the ``fine`` adjustment adds.
MAX_ADJUST_VOCAB = 1 << 16
MAX_FINE = 3
#: Largest ``|d|`` of the ``"ulp"`` adjustment the writer uses by default (beyond: exceptions).
MAX_ULPS = 64
#: Most low bits a channel may move out of the chain (a reader's one load holds them).
MAX_SHIFT = 56
#: Output widths (bits) of the stages: the smallest signed integer type holding the integers.
WIDTHS = (8, 16, 32, 64)
_UINT = {2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}
_FLOAT = {16: np.dtype(np.float16), 32: np.dtype(np.float32), 64: np.dtype(np.float64)}


# ============================================================================ helpers


def _narrow(y: np.ndarray) -> tuple[np.ndarray, int]:
    """``y`` (int64) in the smallest signed width of WIDTHS holding it, and that width."""
    if y.size == 0:
        return y.astype(np.int8), 8
    lo, hi = int(y.min()), int(y.max())
    w = next(w for w in WIDTHS if -(1 << (w - 1)) <= lo and hi < (1 << (w - 1)))
    return y.astype(np.dtype(f"i{w // 8}")), w


def fill_forward(k: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """``k`` (int64, ``(C, F)``) with each position where ``ok`` is False set to the last ``ok``
    value before it in its channel (0 when there is none): exceptions keep the signal smooth."""
    if ok.all():
        return k
    frames = k.shape[1]
    idx = np.where(ok, np.arange(frames), -1)
    np.maximum.accumulate(idx, axis=1, out=idx)
    filled = np.take_along_axis(k, np.maximum(idx, 0), axis=1)
    return np.where(idx >= 0, filled, 0)


def _exceptions_field(positions: np.ndarray, raw: np.ndarray) -> bytes:
    """The ``esc`` field: varints of the count, of the gaps between positions (first: the
    position itself) and of the number ``d`` of distinct values, then those ``d`` values' float
    bits (little-endian, the values' width, in order of first appearance), then, when ``d`` is
    below the count, one byte per exception: its value's index among them (``d <= 256``).
    Repeated exceptions (NaN, ``-0.0``) cost a byte each."""
    gaps = np.diff(positions, prepend=-1) - 1
    distinct, first, index = np.unique(raw, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # first appearance
    if distinct.size < raw.size and distinct.size <= 256:
        rank = np.empty(order.size, dtype=np.int64)
        rank[order] = np.arange(order.size)
        table, indices = distinct[order], rank[index.reshape(-1)].astype(np.uint8).tobytes()
    else:
        table, indices = raw, b""
    head = pack_varints(np.concatenate(([positions.size], gaps, [table.size])).astype(np.uint64))
    return head + np.ascontiguousarray(table).astype(table.dtype.newbyteorder("<")).tobytes() + indices


def _parse_exceptions(field: Any, n: int, itemsize: int, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(positions, raw bits) of an ``esc`` field for ``n`` values of ``itemsize`` bytes."""
    if not isinstance(field, bytes):
        raise CorruptDataError(f"{where}: 'esc' must be bytes, got {type(field).__name__}")
    b = np.frombuffer(field, dtype=np.uint8)
    head, used = read_varints(b, 1, f"{where}: 'esc'")
    count = int(head[0])
    if not 1 <= count <= n:
        raise CorruptDataError(f"{where}: 'esc' declares {count} exceptions, expected 1 to {n}")
    if len(field) - used < count + 1 + itemsize:
        raise CorruptDataError(f"{where}: 'esc' has {len(field)} bytes, too few for {count} exceptions")
    ints, more = read_varints(b[used:], count + 1, f"{where}: 'esc'")
    used += more
    gaps, d = ints[:count], int(ints[count])
    if not (d == count or 1 <= d <= min(count - 1, 256)):
        raise CorruptDataError(f"{where}: 'esc' declares {d} distinct values for {count} exceptions")
    indices = count if d < count else 0
    if len(field) - used != d * itemsize + indices:
        raise CorruptDataError(f"{where}: 'esc' holds {len(field) - used} bytes after its varints, expected "
                               f"{d * itemsize + indices}")
    if np.any(gaps >= np.uint64(n)):
        raise CorruptDataError(f"{where}: 'esc' has a position beyond the {n} values")
    positions = np.cumsum(gaps.astype(np.int64) + 1) - 1
    if positions[-1] >= n:
        raise CorruptDataError(f"{where}: 'esc' has a position beyond the {n} values")
    table = np.frombuffer(field, dtype=_UINT[itemsize].newbyteorder("<"), offset=used, count=d).astype(_UINT[itemsize])
    if not indices:
        return positions, table
    index = np.frombuffer(field, dtype=np.uint8, offset=used + d * itemsize)
    if int(index.max()) >= d:
        raise CorruptDataError(f"{where}: 'esc' refers to distinct value {int(index.max())} of {d}")
    return positions, table[index]


def _check_float_dtype(params: dict, dtype: np.dtype, where: str) -> int:
    """The float width ``params["bits"]``, checked against the container's dtype."""
    if dtype.kind != "f" or dtype.itemsize not in PRECISION:
        raise CorruptDataError(f"{where}: takes float16, float32 or float64 values, not {dtype}")
    bits = field_int(params, "bits", 16, 64, where=where)
    if bits != 8 * dtype.itemsize:
        raise CorruptDataError(f"{where}: 'bits' is {bits} but the values are {dtype}")
    return bits


def _check_width(params: dict, where: str) -> None:
    if type(params["width"]) is not int or params["width"] not in WIDTHS:
        raise CorruptDataError(f"{where}: 'width' must be one of {list(WIDTHS)}, got {short(params['width'])}")


def _patch(out: np.ndarray, params: dict, where: str) -> np.ndarray:
    """``out`` (floats, ``(C, F)``) with the exceptions of ``params["esc"]`` written bit for bit."""
    if "esc" in params:
        positions, raw = _parse_exceptions(params["esc"], out.size, out.dtype.itemsize, where)
        out.reshape(-1).view(_UINT[out.dtype.itemsize])[positions] = raw
    return out


def mismatch(back: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Where ``back`` and ``x`` (same float dtype) differ bit for bit."""
    u = _UINT[x.dtype.itemsize]
    return np.ascontiguousarray(back).view(u) != np.ascontiguousarray(x).view(u)


# ============================================================================ decimal mode


def _base_scale(base: int | float) -> tuple[bool, float]:
    """(divide, scale) of a base: ``x = k / scale`` when divide, else ``x = k * scale``."""
    if type(base) is int:
        return (True, 10.0 ** base) if base >= 0 else (False, 10.0 ** -base)
    return False, float(base)


def decimal_ints(x64: np.ndarray, base: int | float) -> np.ndarray:
    """``rint(x * 10**e)`` (``rint(x / c)``) of finite float64 values, as int64 (clipped to
    ``+-2**62``: beyond, no value round-trips)."""
    divide, scale = _base_scale(base)
    with np.errstate(over="ignore", invalid="ignore"):
        kf = np.rint(x64 * scale) if divide else np.rint(x64 / scale)
    return np.clip(kf, -(2.0 ** 62), 2.0 ** 62).astype(np.int64)


def decimal_floats(k: np.ndarray, base: int | float, dtype: np.dtype) -> np.ndarray:
    """The stage's floats of integers ``k`` (int64) in ``dtype``: the reader's arithmetic."""
    divide, scale = _base_scale(base)
    with np.errstate(over="ignore", invalid="ignore"):
        v = k.astype(np.float64) / scale if divide else k.astype(np.float64) * scale
        return v.astype(dtype)


def zigzag(d: np.ndarray) -> np.ndarray:
    """Signed int64 ``d`` to the tokens ``2d`` (``d >= 0``) and ``-2d - 1`` (``d < 0``), int64."""
    return np.where(d >= 0, 2 * d, -2 * d - 1)


def ulp_parts(x: np.ndarray, xs: np.ndarray, finite: np.ndarray, base: int | float, max_ulps: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(k, d, ok) of one channel for the ``"ulp"`` adjustment: ``k = rint(x * 10**e)`` (``rint(x /
    c)``), ``d`` the float bits of ``x`` minus those of the stage's float of ``k`` (modulo the
    width, as a signed int64), ``ok`` where ``|d| <= max_ulps`` (and ``x`` finite)."""
    k = decimal_ints(xs, base)
    u = _UINT[x.dtype.itemsize]
    back = decimal_floats(k, base, x.dtype)
    d = (np.ascontiguousarray(x).view(u) - back.view(u)).astype(np.int64)
    if x.dtype.itemsize < 8:  # the difference modulo 2**bits, as a signed number
        half = 1 << (8 * x.dtype.itemsize - 1)
        d = np.where(d >= half, d - 2 * half, d)
    ok = finite & (d >= -max_ulps) & (d <= max_ulps)  # (np.abs(-2**63) is negative)
    return k, np.where(ok, d, 0), ok


def fine_floats(kf: np.ndarray, d: np.ndarray, base: int, fine: int, dtype: np.dtype) -> np.ndarray:
    """The floats of the ``fine`` adjustment: ``(kf * 10**fine + d) / 10**(base + fine)`` (``kf``
    the integers as float64, ``d`` int64; each step IEEE binary64, then rounded to ``dtype``)."""
    e = base + fine
    with np.errstate(over="ignore", invalid="ignore"):
        v = kf * 10.0 ** fine
        v += d.astype(np.float64)
        v = v / 10.0 ** e if e >= 0 else v * 10.0 ** -e
        return v.astype(dtype)


def fine_parts(x: np.ndarray, xs: np.ndarray, finite: np.ndarray, base: int | float, fine: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(k, d, ok) of one channel for the ``fine`` adjustment (an int base only): ``k2 = rint(x *
    10**(e + fine))``, ``k = k2 / 10**fine`` rounded half up, ``d = k2 - k * 10**fine``; ``ok``
    where the stage's float of ``(k, d)`` is ``x`` bit for bit. A float base: no value is ok."""
    if type(base) is not int or abs(base + fine) > MAX_DECIMAL_EXP:
        zero = np.zeros(x.shape, dtype=np.int64)
        return zero, zero, np.zeros(x.shape, dtype=bool)
    k2 = decimal_ints(xs, base + fine)
    unit = 10 ** fine
    k = (k2 + unit // 2) // unit
    d = k2 - k * unit
    ok = finite & ~mismatch(fine_floats(k.astype(np.float64), d, base, fine, x.dtype), x)
    return k, np.where(ok, d, 0), ok


def _check_adjustments(params: dict, channels: int, frames: int, where: str) -> None:
    """Check ``adj``, ``adjv`` and ``fine`` of a floatdec entry (the stream's fields are checked
    by its coder when it is decoded)."""
    if ("adj" in params) != ("adjv" in params):
        raise CorruptDataError(f"{where}: 'adj' and 'adjv' go together")
    if "fine" in params and "adj" not in params:
        raise CorruptDataError(f"{where}: 'fine' needs 'adj'")
    if "adj" not in params:
        return
    field_int(params, "adjv", 2, MAX_ADJUST_VOCAB, where=where)
    try:
        _, n = _coders.check_stream(params["adj"])
    except CorruptDataError as e:
        raise CorruptDataError(f"{where}: 'adj': {e}") from None
    if n != channels * frames:
        raise CorruptDataError(f"{where}: 'adj' holds {n} adjustments for {channels * frames} values")
    if "fine" in params:
        fine = field_int(params, "fine", 1, MAX_FINE, where=where)
        base = params["base"]
        if not isinstance(base, list) or not all(type(b) is int and abs(b + fine) <= MAX_DECIMAL_EXP for b in base):
            raise CorruptDataError(f"{where}: 'fine' needs int bases e with |e + fine| <= {MAX_DECIMAL_EXP}")


def _adjustments(params: dict, n: int) -> np.ndarray:
    """The ``n`` signed adjustments of a checked entry's ``adj`` stream (the stream's signed
    integer dtype: tokens below 65536 hold them)."""
    try:
        t = _coders.decode_stream(params["adj"], params["adjv"], max_count=n).astype(np.int32, copy=False)
    except CorruptDataError as e:
        raise CorruptDataError(f"front: floatdec: 'adj': {e}") from None
    return (t >> 1) ^ -(t & 1)  # zigzag back: t >> 1, or -((t + 1) >> 1) for odd t


def _check_base(base: Any) -> bool:
    if type(base) is int:
        return -MAX_DECIMAL_EXP <= base <= MAX_DECIMAL_EXP
    return type(base) is float and math.isfinite(base) and base > 0


_FLOATDEC_REQUIRED = frozenset(("bits", "base", "width"))
_FLOATDEC_KEYS = _FLOATDEC_REQUIRED | {"shifts", "low", "esc", "adj", "adjv", "fine"}


@register
class FloatDecimalStage(Stage):
    """Lossless, the decimal mode: floats to integers ``k`` with ``x = k / 10**e`` (or ``k *
    c``) per channel, exceptions bit for bit (module docstring).

    Parameters ``{"bits": b, "base": [..], "width": w}`` and optionally ``"shifts"``,
    ``"low"``, ``"esc"``: ``b`` the float width (16, 32, 64: the container's dtype); ``base``
    one entry per channel, an int ``e`` in ``[-22, 22]`` or a positive finite float ``c``;
    ``w`` in ``{8, 16, 32, 64}`` the signed output's bits; ``shifts`` one int in ``[0, 56]``
    per channel, the low bits of each ``k`` stored in ``low`` (``frames * sum(shifts)`` bits,
    channel-major, LSB-first) and the output ``k >> s``; ``esc`` the exceptions (count and
    position gaps as varints, then each value's bits, little-endian). An exception's integer
    is the channel's previous one.

    Optionally ``"adj"`` and ``"adjv"`` (and ``"fine"``): per value an adjustment ``d``, coded as
    the tokens ``zigzag(d)`` in ``[0, adjv)`` (``adjv`` in ``[2, 65536]``) of a stream of
    :mod:`ubpe.coders` (``n`` = channels x frames, channel-major; the stream map as
    :func:`ubpe.coders.encode_stream` writes it). Without ``fine``, ``d`` is in units in the
    last place: the float's bits (an unsigned integer of ``b`` bits) plus ``d``, modulo
    ``2**b`` (values that are ``k * c`` give or take a few ulps, as float32 arithmetic leaves
    them: pcodec's float-mult adjustment). With ``fine = j`` in ``[1, 3]`` (every base an int
    ``e`` with ``|e + j| <= 22``), ``d`` is in units of ``10**-(e + j)``: the value is ``(k *
    10**j + d) / 10**(e + j)``, each step IEEE binary64 (``float64(k) * 10.0**j``, ``+
    float64(d)``, then divided by ``10.0**(e + j)``, or times ``10.0**-(e + j)`` when ``e + j
    < 0``) and rounded to the values' dtype (decimals that need a digit or two more than
    most). An exception's ``d`` is 0 and its bits win.
    """

    name = "floatdec"
    number = 9  #: its number on the wire (``ubpe.format.container.STAGES``)
    accepts_float = True

    def __init__(self, bases: list[int | float] | None = None, shifts: list[int] | None = None,
                 adjust: str | int | None = None, coders: tuple[str, ...] | None = None,
                 max_ulps: int = MAX_ULPS) -> None:
        # adjust: None (exceptions only), "ulp" or a finer decimal digit count j (the "adj"
        # stream); coders: the coders offered for that stream (default: level 1's)
        self.bases, self.shifts, self.adjust, self.coders, self.max_ulps = bases, shifts, adjust, coders, max_ulps

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        with np.errstate(all="ignore"):  # signalling NaNs raise "invalid" on conversion: exceptions
            return self._forward(x)

    def _forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        channels, frames = x.shape
        if self.bases is None or len(self.bases) != channels:
            raise ValueError(f"the floatdec stage is configured for {len(self.bases or [])} channels, "
                             f"got {channels}")
        if type(self.adjust) is int and not all(type(b) is int and abs(b + self.adjust) <= MAX_DECIMAL_EXP
                                                for b in self.bases):
            raise ValueError(f"the floatdec stage's {self.adjust} finer digits need int bases e with "
                             f"|e + {self.adjust}| <= {MAX_DECIMAL_EXP}, got {self.bases}")
        shifts = self.shifts or [0] * channels
        x64 = x.astype(np.float64)
        finite = np.isfinite(x64)
        xs = np.where(finite, x64, 0.0)
        k = np.empty(x.shape, dtype=np.int64)
        ok = np.empty(x.shape, dtype=bool)
        d = np.zeros(x.shape, dtype=np.int64) if self.adjust is not None else None
        for c, base in enumerate(self.bases):
            if self.adjust is None:
                k[c] = decimal_ints(xs[c], base)
                ok[c] = finite[c] & ~mismatch(decimal_floats(k[c], base, x.dtype), x[c])
            elif self.adjust == "ulp":
                k[c], d[c], ok[c] = ulp_parts(x[c], xs[c], finite[c], base, self.max_ulps)
            else:
                k[c], d[c], ok[c] = fine_parts(x[c], xs[c], finite[c], base, self.adjust)
        k = fill_forward(k, ok)
        params: dict[str, Any] = {"bits": 8 * x.dtype.itemsize, "base": list(self.bases)}
        if d is not None:
            d[~ok] = 0
            if d.any():
                tokens = zigzag(d.reshape(-1))
                vocab = max(int(tokens.max()) + 1, 2)
                params["adj"] = _coders.encode_stream(tokens, vocab, coders=self.coders or _coders.coders_for(1))
                params["adjv"] = vocab
                if self.adjust != "ulp":
                    params["fine"] = int(self.adjust)
        if any(shifts):
            values = np.concatenate([(k[c] & ((1 << s) - 1)).astype(np.uint64) for c, s in enumerate(shifts)])
            nbits = np.repeat(np.asarray(shifts, dtype=np.int64), frames)
            low = np.zeros((frames * sum(shifts) + 7) // 8, dtype=np.uint8)
            _k.pack_bits(values, nbits, low)
            k = k >> np.asarray(shifts, dtype=np.int64)[:, None]
            params["shifts"] = [int(s) for s in shifts]
            params["low"] = low.tobytes()
        y, params["width"] = _narrow(k)
        if not ok.all():
            positions = np.flatnonzero(~ok.reshape(-1))
            params["esc"] = _exceptions_field(positions, np.ascontiguousarray(x).reshape(-1).view(
                _UINT[x.dtype.itemsize])[positions])
        return y, params

    def inverse(self, y: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        channels, frames = y.shape
        dtype = _FLOAT[params["bits"]]
        if "shifts" not in params and "fine" not in params and "adj" in params and params["bits"] != 16:
            return self._ulps_inverse(y, params, channels, frames, dtype)
        if "shifts" not in params and "fine" not in params:
            # no low bits: numpy's conversion and division (IEEE, round to nearest: the
            # kernel's arithmetic) cost less than the kernel's call on short channels
            out = np.empty((channels, frames), dtype=np.float64)
            with np.errstate(over="ignore", invalid="ignore"):
                for c, base in enumerate(params["base"]):
                    divide, scale = _base_scale(base)
                    (np.divide if divide else np.multiply)(y[c], scale, out=out[c], dtype=np.float64)
                return self._adjusted(out, params, channels, frames, dtype)
        shifts = np.asarray(params.get("shifts", [0] * channels), dtype=np.int64)
        divide = np.empty(channels, dtype=np.bool_)
        scale = np.empty(channels, dtype=np.float64)
        for c, base in enumerate(params["base"]):
            divide[c], scale[c] = _base_scale(base)
        out = np.empty((channels, frames), dtype=np.float64)
        fine = params.get("fine")
        if fine is not None:  # the integers k themselves, as float64 (1 / 1.0: exact)
            divide[:], scale[:] = True, 1.0
        _k.decimal_inverse(np.ascontiguousarray(y, dtype=np.int64), shifts, _k.padded(params.get("low", b"")),
                           divide, scale, out)
        with np.errstate(over="ignore", invalid="ignore"):
            return self._adjusted(out, params, channels, frames, dtype)

    @staticmethod
    def _ulps_inverse(y: np.ndarray, params: dict[str, Any], channels: int, frames: int, dtype: np.dtype
                      ) -> np.ndarray:
        """:meth:`inverse` of integers ``y`` ``(C, F)`` with ulp adjustments (``adj`` without
        ``fine`` or ``shifts``) into float32 or float64 ``dtype``: the division (or product), the
        rounding and the adjustments in one kernel pass (``_kernels.floatulps``), the same bits."""
        divide = np.empty(channels, dtype=np.bool_)
        scale = np.empty(channels, dtype=np.float64)
        for c, base in enumerate(params["base"]):
            divide[c], scale[c] = _base_scale(base)
        n = channels * frames
        try:
            tokens = _coders.decode_stream(params["adj"], params["adjv"], max_count=n)
        except CorruptDataError as e:
            raise CorruptDataError(f"front: floatdec: 'adj': {e}") from None
        if tokens.shape[0] != n:  # (checked by check: its n is channels * frames)
            raise CorruptDataError(f"front: floatdec: 'adj' holds {tokens.shape[0]} adjustments for {n} values")
        floats = np.empty((channels, frames), dtype=dtype)
        _ku.decimal_ulps(np.ascontiguousarray(y, dtype=np.int64), divide, scale, tokens.astype(np.int32, copy=False),
                         floats, floats.view(_UINT[dtype.itemsize]))
        return _patch(floats, params, "front: floatdec")

    @staticmethod
    def _adjusted(out: np.ndarray, params: dict[str, Any], channels: int, frames: int, dtype: np.dtype) -> np.ndarray:
        """The floats of ``dtype`` of ``out`` (float64: the integers' values, or with ``fine``
        the integers themselves) with the adjustments and exceptions of ``params``. Called under
        ``np.errstate(over="ignore", invalid="ignore")`` (out-of-range casts: the CRC decides)."""
        if "adj" not in params:
            return _patch(out.astype(dtype), params, "front: floatdec")
        d = _adjustments(params, channels * frames).reshape(channels, frames)
        fine = params.get("fine")
        if fine is not None:
            floats = np.empty((channels, frames), dtype=dtype)
            for c, base in enumerate(params["base"]):
                floats[c] = fine_floats(out[c], d[c], base, fine, dtype)
        else:
            floats = out.astype(dtype)
            u = floats.view(_UINT[dtype.itemsize])
            # modulo 2**bits (two's complement of negative d; int32 d as uint32: the same bits)
            u += d.view(u.dtype) if d.dtype.itemsize == u.dtype.itemsize else d.astype(u.dtype)
        return _patch(floats, params, "front: floatdec")

    def check(self, params: dict[str, Any], dtype: np.dtype, shape: tuple[int, int]) -> dict[str, Any]:
        where = "front: floatdec"
        if not (type(params) is dict and _FLOATDEC_REQUIRED <= params.keys() <= _FLOATDEC_KEYS):  # (else: why)
            expect_map(params, where, ("bits", "base", "width"), ("shifts", "low", "esc", "adj", "adjv", "fine"))
        _check_float_dtype(params, dtype, where)
        channels, frames = shape
        _check_adjustments(params, channels, frames, where)
        base = params["base"]
        if not isinstance(base, list) or len(base) != channels or not all(map(_check_base, base)):
            raise CorruptDataError(f"{where}: 'base' must list {channels} bases, each an int in "
                                   f"[-{MAX_DECIMAL_EXP}, {MAX_DECIMAL_EXP}] or a positive finite float")
        _check_width(params, where)
        if ("shifts" in params) != ("low" in params):
            raise CorruptDataError(f"{where}: 'shifts' and 'low' go together")
        if "shifts" in params:
            shifts = params["shifts"]
            if (not isinstance(shifts, list) or len(shifts) != channels
                    or not all(type(s) is int and 0 <= s <= MAX_SHIFT for s in shifts) or not any(shifts)):
                raise CorruptDataError(f"{where}: 'shifts' must list {channels} ints in [0, {MAX_SHIFT}], "
                                       "not all 0")
            field_bytes(params, "low", where=where, size=(frames * sum(shifts) + 7) // 8)
        if "esc" in params:
            _parse_exceptions(params["esc"], channels * frames, dtype.itemsize, where)
        return params

    def output_dtype(self, dtype: np.dtype, params: dict[str, Any]) -> np.dtype:
        return np.dtype(f"i{params['width'] // 8}")

    @staticmethod
    def scalable(params: dict[str, Any]) -> int:
        adj = params.get("adj")
        extra = sum(len(v) for v in adj.values() if isinstance(v, bytes)) if isinstance(adj, dict) else 0
        return len(params.get("low", b"")) + len(params.get("esc", b"")) + extra


# ============================================================================ binary mode


def grid_stats(x64: np.ndarray) -> tuple[int, int, int]:
    """(L, P, E) of the finite nonzero values of ``x64`` (float64, any shape): ``L`` the lowest
    set bit's exponent of any value, ``P`` the most significant bits (highest set bit to lowest,
    inclusive) of any value, ``E`` the smallest exponent with every ``|x| < 2**E``. (0, 1, 0)
    when there is no such value."""
    f = x64[np.isfinite(x64) & (x64 != 0)]
    if f.size == 0:
        return 0, 1, 0
    bits = f.view(np.uint64)
    field = (bits >> np.uint64(52)) & np.uint64(0x7FF)
    normal = field != 0
    m = (bits & np.uint64((1 << 52) - 1)) | (normal.astype(np.uint64) << np.uint64(52))
    low = (m & (~m + np.uint64(1))).astype(np.float64)  # m & -m, a power of two: exact
    tz = (low.view(np.uint64) >> np.uint64(52)).astype(np.int64) - 1023
    lowest = np.maximum(field.astype(np.int64), 1) - 1075 + tz
    top = np.frexp(np.abs(f))[1] - 1  # exponent of the highest set bit (exact for floats)
    return int(lowest.min()), int((top - lowest).max()) + 1, int(top.max()) + 1


def binary_parts(x: np.ndarray, grid: int, lowest: int, precision: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(y, m, nbits, ok) of the binary mode for ``x`` (floats, ``(C, F)``): the integer parts
    (int64, exceptions filled), the remainders (uint64) and their bit counts (int64), flat
    channel-major, and where the values round-trip (``(C, F)``)."""
    x64 = x.astype(np.float64)
    finite = np.isfinite(x64)
    xs = np.where(finite, x64, 0.0)
    yf = np.trunc(np.ldexp(xs, -grid))  # exact: a power-of-two scaling, then the integer part
    ok = finite & ((yf != 0) | (np.ascontiguousarray(x).view(_UINT[x.dtype.itemsize]) == 0))
    ok &= np.abs(yf) < 2.0 ** 62
    y = fill_forward(np.where(ok, yf, 0).astype(np.int64), ok)
    flat = y.reshape(-1)
    nbits = np.empty(flat.size, dtype=np.int64)
    rexp = np.empty(flat.size, dtype=np.int64)
    _k.binary_remainders(flat, rexp, grid, lowest, precision, nbits)
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.abs(xs.reshape(-1) - np.ldexp(yf.reshape(-1), grid))  # exact where ok
        mf = np.ldexp(r, -rexp)
    good = ok.reshape(-1) & (mf < np.ldexp(1.0, nbits)) & (mf == np.floor(mf))
    m = np.where(good, mf, 0).astype(np.uint64)
    return y, m, nbits, good.reshape(x.shape)


@register
class FloatBinaryStage(Stage):
    """Lossless, the binary mode: floats to the integer parts ``y = trunc(x / 2**exp)``, the
    remainders in raw bits, exceptions bit for bit (module docstring).

    Parameters ``{"bits": b, "exp": G, "lo": L, "precisions": P, "width": w}`` and optionally
    ``"raw"`` and ``"esc"``: ``b`` the float width (16, 32, 64: the container's dtype); ``L``
    in ``[lowest bit of the dtype, G]``, ``G - L <= 2100``; ``P`` in ``[1, precision of the
    dtype]``; ``w`` in ``{8, 16, 32, 64}`` the signed output's bits; ``raw`` the remainders,
    value after value (channel-major), ``k = max(0, min(G - L, P - bitlen(|y|)))`` bits each
    for ``y != 0`` (value ``y * 2**G + sign(y) * m * 2**(G - k)``), none for ``y = 0`` (value
    ``+0.0``); ``esc`` the exceptions, as the decimal mode's. An exception's integer is the
    channel's previous one (its remainder bits are written as zeros).
    """

    name = "floatbin"
    number = 10  #: its number on the wire (``ubpe.format.container.STAGES``)
    accepts_float = True

    def __init__(self, grid: int | None = None, lowest: int | None = None, precision: int | None = None) -> None:
        self.grid, self.lowest, self.precision = grid, lowest, precision

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        if self.grid is None:
            raise ValueError("the floatbin stage needs its grid, lowest bit and precision (see choose())")
        with np.errstate(all="ignore"):  # signalling NaNs raise "invalid" on conversion: exceptions
            y, m, nbits, ok = binary_parts(x, self.grid, self.lowest, self.precision)
        total = int(nbits.sum())
        params: dict[str, Any] = {"bits": 8 * x.dtype.itemsize, "exp": self.grid, "lo": self.lowest,
                                  "precisions": self.precision}
        out, params["width"] = _narrow(y)
        if total:
            raw = np.zeros((total + 7) // 8, dtype=np.uint8)
            _k.pack_bits(m, nbits, raw)
            params["raw"] = raw.tobytes()
        if not ok.all():
            positions = np.flatnonzero(~ok.reshape(-1))
            params["esc"] = _exceptions_field(positions, np.ascontiguousarray(x).reshape(-1).view(
                _UINT[x.dtype.itemsize])[positions])
        return out, params

    def inverse(self, y: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        raw = params.get("raw", b"")
        flat = np.ascontiguousarray(y, dtype=np.int64).reshape(-1)
        out = np.empty(flat.size, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            status = _k.binary_inverse(flat, params["exp"], params["lo"], params["precisions"], _k.padded(raw),
                                       len(raw), out)
            if status != _k.OK:
                what = "fewer" if status == _k.ERR_SHORT else "more"
                raise CorruptDataError(f"front: floatbin: 'raw' holds {what} bits than the values' remainders need")
            floats = out.astype(_FLOAT[params["bits"]]).reshape(y.shape)
        return _patch(floats, params, "front: floatbin")

    def check(self, params: dict[str, Any], dtype: np.dtype, shape: tuple[int, int]) -> dict[str, Any]:
        where = "front: floatbin"
        expect_map(params, where, ("bits", "exp", "lo", "precisions", "width"), ("raw", "esc"))
        _check_float_dtype(params, dtype, where)
        lowest = field_int(params, "lo", LOWEST_BIT[dtype.itemsize], 1024, where=where)
        field_int(params, "exp", lowest, lowest + 2100, where=where)
        field_int(params, "precisions", 1, PRECISION[dtype.itemsize], where=where)
        _check_width(params, where)
        channels, frames = shape
        if "raw" in params:  # its exact length depends on the integers: checked while decoding
            field_bytes(params, "raw", where=where, max_size=(channels * frames * 52 + 7) // 8)
        if "esc" in params:
            _parse_exceptions(params["esc"], channels * frames, dtype.itemsize, where)
        return params

    def output_dtype(self, dtype: np.dtype, params: dict[str, Any]) -> np.dtype:
        return np.dtype(f"i{params['width'] // 8}")

    @staticmethod
    def scalable(params: dict[str, Any]) -> int:
        return len(params.get("raw", b"")) + len(params.get("esc", b""))




#: The stages whose params hold data of each value (exceptions, raw bits): a blocked container
#: runs them on each block's frames, with the parameters chosen on all the values.
PER_BLOCK = frozenset((FloatDecimalStage.name, FloatBinaryStage.name))


# last, once every name above is defined: ubpe.coders.floatpack reads this module's constants
# (a stream's functions looked up once here, not imported at each call: ~1 us each)
from .. import coders as _coders  # noqa: E402
