"""Floating-point values to integers: a lossy uniform quantizer and a lossless exact-grid map.

* :func:`quantize` / :class:`Quantizer`: ``q = rint((x - offset) / step)`` and back
  ``offset + q * step``; lossy, with the error bound stated on :meth:`Quantizer.dequantize`.
* :func:`exact_grid`: the exponent ``e`` such that every value is exactly ``k * 2**e`` with
  ``|k| <= 2**53`` (integers stored as floats are ``e = 0``), verified bit for bit; values on
  such a grid map to ``k`` and back without any loss.

Both are front-end stages of the container (``docs/format.md``), the only
stages that take floating-point input (:attr:`ubpe.frontend.Stage.accepts_float`):
``"floatgrid"`` (lossless, ``{"exp": e, "width": w}``) and ``"quantize"`` (lossy, ``{"step":
s, "offset": o, "width": w}``, ``s`` and ``o`` stored as msgpack float64, exactly). ``w`` is the
bit width of the signed integers the stage outputs. Importing this module registers them.

All arithmetic is IEEE-754 binary64 with round-to-nearest-even (numpy on every supported
platform); float16 and float32 values are converted to float64 exactly first.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validate import expect_map, field_int
from ..errors import CorruptDataError
from ._stage import Stage, register

__all__ = ["Quantizer", "quantize", "exact_grid", "FloatGridStage", "QuantizeStage", "FLOAT_DTYPES"]

#: Float dtypes (native byte order) that quantize, exact_grid and the container take.
FLOAT_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
#: Output widths (bits) of the float stages: the smallest signed integer type that holds q.
WIDTHS = (8, 16, 32, 64)
#: Smallest step accepted: the smallest normal float64, so that ``q * step`` never underflows.
MIN_STEP = 2.0 ** -1022
_TWO63 = 2.0 ** 63
#: Largest ``|k|`` of an exact grid: every integer up to 2**53 is exact in float64, and a wider
#: ``k`` means values spanning more binary orders of magnitude than float64's precision,
#: which a fixed grid does not describe (such values take the lossy path).
MAX_GRID_INT = 2.0 ** 53
#: Exponent range of the lowest set bit of a finite nonzero value, per float dtype.
_EXP_RANGE = {2: (-24, 15), 4: (-149, 127), 8: (-1074, 1023)}


def _float_array(x: Any, name: str = "x") -> np.ndarray:
    """``x`` as a float16/32/64 array (lists of numbers become float64), or raise TypeError."""
    arr = np.asarray(x)
    if arr.dtype.kind in "iub" and not isinstance(x, np.ndarray):
        arr = arr.astype(np.float64)
    if arr.dtype.kind != "f" or arr.dtype.itemsize not in (2, 4, 8):
        raise TypeError(f"{name} must be a float16, float32 or float64 array, got dtype {arr.dtype}")
    return arr


def check_finite(x: np.ndarray) -> None:
    """Raise ValueError naming the first NaN or infinity of the float array ``x``, if any."""
    _first_nonfinite(np.asarray(x))


def _first_nonfinite(x64: np.ndarray) -> None:
    """Raise ValueError naming the first NaN or infinity of ``x64`` (any shape), if any."""
    bad = ~np.isfinite(x64)
    if bad.any():
        flat = int(np.flatnonzero(bad.reshape(-1))[0])
        pos = tuple(int(i) for i in np.unravel_index(flat, x64.shape)) if x64.ndim > 1 else flat
        raise ValueError(f"values hold {float(x64.reshape(-1)[flat])!r} at position {pos}: quantize and "
                         "compress take finite values only (replace NaN and infinities first)")


def _width(lo: int, hi: int) -> int:
    """The smallest width in WIDTHS whose signed integers hold ``lo .. hi``."""
    return next(w for w in WIDTHS if -(1 << (w - 1)) <= lo and hi < (1 << (w - 1)))


def _step_value(step: Any) -> float:
    if isinstance(step, (bool, np.bool_)) or not isinstance(step, numbers.Real):
        raise TypeError(f"step must be a real number, got {type(step).__name__} {step!r}")
    s = float(step)
    if not math.isfinite(s) or s < MIN_STEP:
        raise ValueError(f"step must be finite and at least 2**-1022 (positive, normal), got {step!r}")
    return s


# ============================================================================ lossy quantizer


@dataclass(frozen=True)
class Quantizer:
    """A uniform quantizer: ``q = rint((x - offset) / step)``, back ``offset + q * step``.

    Attributes
    ----------
    step : float
        The grid spacing, a finite float64 ``>= 2**-1022``.
    offset : float
        A finite float64: the value of ``q = 0``.
    dtype : str
        The float dtype of the values (``numpy.dtype.str``, e.g. ``"<f4"``), which
        :meth:`dequantize` returns.
    """

    step: float
    offset: float
    dtype: str

    def __post_init__(self) -> None:
        _step_value(self.step)
        if isinstance(self.offset, (bool, np.bool_)) or not isinstance(self.offset, numbers.Real):
            raise TypeError(f"offset must be a real number, got {type(self.offset).__name__}")
        if not math.isfinite(float(self.offset)):
            raise ValueError(f"offset must be finite, got {self.offset!r}")
        if not isinstance(self.dtype, str):
            raise TypeError(f"dtype must be a numpy dtype string such as '<f4', got {type(self.dtype).__name__}")
        try:
            dt = np.dtype(self.dtype)
        except TypeError:
            raise ValueError(f"dtype {self.dtype!r} is not a numpy dtype") from None
        if dt.kind != "f" or dt.itemsize not in (2, 4, 8):
            raise ValueError(f"dtype must be float16, float32 or float64, got {self.dtype!r}")
        object.__setattr__(self, "step", float(self.step))
        object.__setattr__(self, "offset", float(self.offset))
        object.__setattr__(self, "dtype", dt.str)

    def quantize(self, x: Any) -> np.ndarray:
        """``rint((x - offset) / step)`` computed in float64, as int64 (same shape).

        Raises ``ValueError`` for NaN or infinities (naming the first) and for values whose
        ``q`` leaves the int64 range.
        """
        x64 = _float_array(x).astype(np.float64)
        _first_nonfinite(x64)
        with np.errstate(over="ignore"):
            t = np.rint((x64 - self.offset) / self.step)
        if t.size and not (np.abs(t).max() < _TWO63):
            raise ValueError(f"step {self.step!r} is too small for these values: rint((x - offset) / step) "
                             "leaves the int64 range; pass a larger step (or fewer bits)")
        return t.astype(np.int64)

    def dequantize(self, q: Any) -> np.ndarray:
        """Floats of ``dtype`` (native byte order, shape of ``q``) for integers ``q``.

        ``w = offset + q * step`` is computed in float64 (``q`` exactly, as every ``q`` that
        :meth:`quantize` returns is a float64 integer), then rounded to nearest in ``dtype``.
        For ``q = quantize(x)`` and finite ``w``:

            ``|w - x| <= (step / 2 + 2**-51 * (|x - offset| + |x|)) * (1 + 2**-50)``

        (rounding ``x / step`` to the nearest integer costs at most ``step / 2``; the float64
        subtraction, division, product and sum at most half an ulp each). For float16/float32
        the result adds the final rounding ``|y - w| <=`` half an ulp of ``dtype`` at ``w``.
        So whenever ``step`` is large against the values' own ulp, the error is ``step / 2``
        to about one part in ``2**50``.
        """
        qa = np.asarray(q)
        if qa.dtype.kind not in "iu":
            raise TypeError(f"q must be an integer array, got dtype {qa.dtype}")
        with np.errstate(over="ignore", invalid="ignore"):
            w = self.offset + qa.astype(np.float64) * self.step
            return w.astype(np.dtype(self.dtype).newbyteorder("="))

    def to_dict(self) -> dict[str, Any]:
        """``{"step": float, "offset": float, "dtype": str}`` (exact: Python floats are float64)."""
        return {"step": self.step, "offset": self.offset, "dtype": self.dtype}

    @classmethod
    def from_dict(cls, d: Any) -> Quantizer:
        """The quantizer of :meth:`to_dict`'s map (TypeError/ValueError for a malformed one)."""
        if not isinstance(d, dict):
            raise TypeError(f"a quantizer is a dict, got {type(d).__name__}")
        if set(d) != {"step", "offset", "dtype"}:
            raise ValueError(f"a quantizer dict has exactly the keys step, offset, dtype; got {sorted(map(str, d))}")
        return cls(d["step"], d["offset"], d["dtype"])


def quantize(x: Any, *, step: float | None = None, bits: int | None = None) -> tuple[np.ndarray, Quantizer]:
    """Quantize floats to integers on a uniform grid: lossy, error bound on :meth:`Quantizer.dequantize`.

    Parameters
    ----------
    x : array_like of float16, float32 or float64, any shape
        Finite values; a NaN or an infinity raises ``ValueError`` naming its position. Empty
        input gives an empty int8 array.
    step : float, optional
        The grid spacing (offset 0): ``q = rint(x / step)``. Finite, ``>= 2**-1022``.
    bits : int, optional
        In ``[1, 64]``: the step and offset are chosen so that the values' range
        ``[min, max]`` fits ``bits``-bit signed integers: offset the range's midpoint, step
        ``(max - min) / (2**bits - 1)`` (at least :data:`MIN_STEP`), grown by factors ``1 + k * 2**-30`` (``k = 1, 2,
        ...``) until every ``q`` is in ``[-2**(bits-1), 2**(bits-1) - 1]`` (rounding can
        put the extremes one level out); step 1 for constant input.
        Exactly one of ``step`` and ``bits``.

    Returns
    -------
    ints : numpy.ndarray
        ``q``, same shape, in the smallest signed integer dtype that holds them (int8 to int64).
    quantizer : Quantizer
        ``quantizer.dequantize(ints)`` gives the values back within about ``step / 2``.

    Raises
    ------
    ValueError
        NaN or infinity; a bad ``step`` or ``bits``; ``q`` beyond int64 (pass a larger step);
        a dequantized value beyond the range of ``x``'s dtype (float16: a smaller step).
    """
    arr = _float_array(x)
    if (step is None) == (bits is None):
        raise ValueError("pass exactly one of step= and bits=")
    x64 = arr.astype(np.float64)
    _first_nonfinite(x64)
    dtype = arr.dtype.str
    if step is not None:
        qz = Quantizer(_step_value(step), 0.0, dtype)
    else:
        if isinstance(bits, (bool, np.bool_)) or not isinstance(bits, numbers.Integral):
            raise TypeError(f"bits must be an integer, got {type(bits).__name__} {bits!r}")
        if not 1 <= int(bits) <= 64:
            raise ValueError(f"bits must be in [1, 64], got {bits}")
        qz = _fit_bits(x64, int(bits), dtype)
    q = qz.quantize(x64)
    ints = q.astype(np.dtype(f"i{_width(int(q.min()), int(q.max())) // 8}")) if q.size else q.astype(np.int8)
    if q.size:
        ends = qz.dequantize(np.array([q.min(), q.max()]))  # monotone in q: the extremes suffice
        if not np.all(np.isfinite(ends)):
            raise ValueError(f"step {qz.step!r} puts dequantized values beyond the range of {arr.dtype}; "
                             "pass a smaller step")
    return ints, qz


def _fit_bits(x64: np.ndarray, bits: int, dtype: str) -> Quantizer:
    """The quantizer of ``quantize(x, bits=bits)``: see there."""
    if x64.size == 0:
        return Quantizer(1.0, 0.0, dtype)
    lo, hi = float(x64.min()), float(x64.max())
    offset = lo / 2 + hi / 2  # halves first: no overflow for ranges wider than the float64 maximum
    if hi == lo:
        return Quantizer(1.0, lo, dtype)
    levels = 2.0 ** bits - 1
    step = (hi / 2 - lo / 2) / (levels / 2)
    qmin, qmax = -(2.0 ** (bits - 1)), 2.0 ** (bits - 1)
    # t = rint((x - offset) / step) is monotone in x: the extremes decide whether every q fits
    for k in range(1, 1 << 12):
        s = max(step, MIN_STEP)
        t_lo, t_hi = np.rint((np.float64(lo) - offset) / s), np.rint((np.float64(hi) - offset) / s)
        if t_lo >= qmin and t_hi < qmax and -t_lo < _TWO63:  # (bits = 64: q = -2**63 is refused)
            return Quantizer(s, offset, dtype)
        step = step * (1 + k * 2.0 ** -30)
    raise AssertionError("unreachable: the step doubles within the loop")  # pragma: no cover


# ============================================================================ exact grid


def exact_grid(x: Any) -> int | None:
    """The exponent ``e`` such that every value of ``x`` is exactly ``k * 2**e``, ``|k| <= 2**53``.

    ``e`` is the smallest exponent of any value's lowest set bit (0 for integers stored as
    floats, ``-3`` for multiples of 1/8); the check is exact and bit for bit: the floats
    rebuilt from ``k`` have the same bytes as ``x`` (``-0.0`` is ``k = 0`` with its sign, which
    the ``"floatgrid"`` stage keeps). ``None`` when there is no such grid: a NaN, an infinity,
    or a ``|k|`` beyond ``2**53`` (values spanning more orders of magnitude than float64's 53
    bits of precision, as most measured or processed floats do). All zeros (and empty input)
    give 0. Cost O(n), vectorised.
    """
    arr = _float_array(x)
    x64 = arr.astype(np.float64).reshape(-1)
    if not np.all(np.isfinite(x64)):
        return None
    # each value is M * 2**E with M its significand (a 53-bit integer, the hidden bit included
    # for normal numbers) and E from the biased exponent field; its lowest set bit is
    # 2**(E + tz(M)), and tz(M) is read from the exponent field of float64(M & -M), a power of two
    bits = x64.view(np.uint64)
    field = (bits >> np.uint64(52)) & np.uint64(0x7FF)
    normal = field != 0
    m = (bits & np.uint64((1 << 52) - 1)) | (normal.astype(np.uint64) << np.uint64(52))
    nonzero = m != 0
    if not nonzero.any():
        return 0
    low = (m & (~m + np.uint64(1))).astype(np.float64)  # M & -M, exact as a float64
    tz = ((low.view(np.uint64) >> np.uint64(52)).astype(np.int64)) - 1023
    lowest = np.maximum(field.astype(np.int64), 1) - 1075 + tz
    e = int(lowest[nonzero].min())
    k = np.ldexp(x64, -e)
    if not np.abs(k).max() <= MAX_GRID_INT:
        return None
    back = np.ldexp(k.astype(np.int64).astype(np.float64), e)
    back = np.copysign(back, x64).astype(arr.dtype)  # the sign of zeros, kept apart by the stage
    same = np.dtype(f"u{arr.dtype.itemsize}")  # the floats' bits, compared as integers
    if not np.array_equal(back.view(same), np.ascontiguousarray(arr).reshape(-1).view(same)):
        return None  # pragma: no cover - the exponent arithmetic above is exact; this proves it
    return e


def _grid_ints(x: np.ndarray, e: int) -> np.ndarray:
    """``k = x / 2**e`` as int64 (exact for ``e = exact_grid(x)``)."""
    return np.ldexp(x.astype(np.float64), -e).astype(np.int64)


# ============================================================================ stages


def _narrow(q: np.ndarray) -> tuple[np.ndarray, int]:
    w = _width(int(q.min()), int(q.max())) if q.size else 8
    return q.astype(np.dtype(f"i{w // 8}")), w


def _check_float_input(dtype: np.dtype, where: str) -> None:
    if dtype.kind != "f" or dtype.itemsize not in (2, 4, 8):
        raise CorruptDataError(f"{where}: takes float16, float32 or float64 values, not {dtype}")


def _field_float(d: dict, key: str, where: str) -> float:
    v = d[key]
    if type(v) is not float or not math.isfinite(v):
        raise CorruptDataError(f"{where}: '{key}' must be a finite float, got {type(v).__name__}")
    return v


@register
class FloatGridStage(Stage):
    """Lossless: floats exactly on the grid ``k * 2**exp`` to the integers ``k``.

    Parameters ``{"exp": e, "width": w}``: ``e`` within the exponent range of the input dtype
    (float16 ``[-24, 15]``, float32 ``[-149, 127]``, float64 ``[-1074, 1023]``), ``w`` in
    ``{8, 16, 32, 64}`` the bits of the signed output. One grid for all channels. Values that
    hold a ``-0.0`` (``np.round`` makes them) add ``"negzero": 1``: the integers are then
    ``2 * k``, and ``-1`` for each ``-0.0`` (any odd integer decodes to ``-0.0``).
    """

    name = "floatgrid"
    number = 7  #: its number on the wire (``ubpe.format.container.STAGES``)
    accepts_float = True

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        e = exact_grid(x)
        if e is None:
            raise ValueError("the values are not on an exact grid k * 2**e (see ubpe.quantize.exact_grid)")
        k = _grid_ints(x, e).reshape(x.shape)
        negzero = (x == 0) & np.signbit(x)
        if negzero.any():
            k = 2 * k
            k[negzero] = -1
            y, w = _narrow(k)
            return y, {"exp": e, "width": w, "negzero": 1}
        y, w = _narrow(k)
        return y, {"exp": e, "width": w}

    def inverse(self, y: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        # float64 holds every k exactly (each was a float64 value); the chain's inverse casts
        # to the container's float dtype, exactly for values that were on the grid
        if not params.get("negzero"):
            return np.ldexp(y.astype(np.float64), params["exp"])
        k = y.astype(np.int64)
        out = np.ldexp((k >> 1).astype(np.float64), params["exp"])  # even: exactly k / 2
        out[(k & 1) != 0] = -0.0
        return out

    def check(self, params: dict[str, Any], dtype: np.dtype, shape: tuple[int, int]) -> dict[str, Any]:
        where = "front: floatgrid"
        expect_map(params, where, ("exp", "width"), ("negzero",))
        _check_float_input(dtype, where)
        if "negzero" in params and (type(params["negzero"]) is not int or params["negzero"] != 1):
            raise CorruptDataError(f"{where}: 'negzero' must be 1 when present, got {params['negzero']!r}")
        lo, hi = _EXP_RANGE[dtype.itemsize]
        field_int(params, "exp", lo, hi, where=where)
        if params["width"] not in WIDTHS or type(params["width"]) is not int:
            raise CorruptDataError(f"{where}: 'width' must be one of {list(WIDTHS)}, got {params['width']!r}")
        return params

    def output_dtype(self, dtype: np.dtype, params: dict[str, Any]) -> np.dtype:
        return np.dtype(f"i{params['width'] // 8}")


@register
class QuantizeStage(Stage):
    """Lossy: ``q = rint((x - offset) / step)`` (:class:`Quantizer`), one quantizer for all
    channels. Parameters ``{"step": s, "offset": o, "width": w}``: ``s`` a finite float64
    ``>= 2**-1022``, ``o`` a finite float64, ``w`` in ``{8, 16, 32, 64}``."""

    name = "quantize"
    number = 8  #: its number on the wire (``ubpe.format.container.STAGES``)
    accepts_float = True

    def __init__(self, step: float | None = None, bits: int | None = None) -> None:
        self.step, self.bits = step, bits

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        q, qz = quantize(x, step=self.step, bits=self.bits)
        y, w = _narrow(q.astype(np.int64))
        return y, {"step": qz.step, "offset": qz.offset, "width": w}

    def inverse(self, y: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        # float64 w = offset + q * step, as Quantizer.dequantize; the chain's inverse rounds it
        # to the container's float dtype (the same rounding as dequantize's)
        # two passes, the second in place: float64(q) * step (the cast inside the multiply,
        # as astype rounds), then + offset (offset + q * step: IEEE addition commutes)
        with np.errstate(over="ignore", invalid="ignore"):
            w = np.multiply(y, params["step"], dtype=np.float64)
            w += params["offset"]
        return w

    def check(self, params: dict[str, Any], dtype: np.dtype, shape: tuple[int, int]) -> dict[str, Any]:
        where = "front: quantize"
        expect_map(params, where, ("step", "offset", "width"))
        _check_float_input(dtype, where)
        if _field_float(params, "step", where) < MIN_STEP:
            raise CorruptDataError(f"{where}: 'step' must be at least 2**-1022, got {params['step']!r}")
        _field_float(params, "offset", where)
        if params["width"] not in WIDTHS or type(params["width"]) is not int:
            raise CorruptDataError(f"{where}: 'width' must be one of {list(WIDTHS)}, got {params['width']!r}")
        return params

    def output_dtype(self, dtype: np.dtype, params: dict[str, Any]) -> np.dtype:
        return np.dtype(f"i{params['width'] // 8}")
