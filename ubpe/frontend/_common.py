"""What the per-channel prediction stages share: how a sample is carried, and the per-channel
stage base class.

Why the round trips are bit-exact for every input, 64-bit extremes included
--------------------------------------------------------------------------
A sample of a ``bits``-wide dtype is carried as the int64 sign extension of a *signed*
``bits``-wide value: a signed sample as itself; an unsigned one (``unsigned`` 1) as
``x - 2**(bits-1)``, i.e. its top bit flipped and the bits read as signed, an order-preserving
map, so a signal crossing the middle of the unsigned range stays continuous for the predictors.
A prediction ``p`` is a function of previous samples and of params only; it is summed in uint64,
whose arithmetic is defined to wrap modulo 2**64, then reinterpreted as int64 and shifted
arithmetically. The residual is ``r = (x - p) mod 2**bits`` and the inverse computes
``x = (r + p) mod 2**bits``. The decoder rebuilds the same previous samples before it needs
them, so it computes the very same ``p`` (overflow included: it is deterministic), and
``(x - p) + p = x`` holds in the ring Z / 2**bits. Residuals are returned as the signed integer
type of the input's width; the inverse returns the input's dtype (native byte order).
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar

import numpy as np

from .._validate import expect_map, field_int
from ..errors import CorruptDataError
from ._stage import SIGNED_OF_WIDTH, Stage

#: ``unsigned`` param values: a signed input, or an unsigned one carried offset by ``-2**(bits-1)``.
SIGNED, UNSIGNED = 0, 1


def signed_bits(arr: np.ndarray, unsigned: int) -> np.ndarray:
    """The native integer array ``arr`` as the signed values of its width that the predictors
    see: itself (``unsigned`` 0: the bits reinterpreted) or, for ``unsigned`` 1, with its top
    bit flipped first (``x - 2**(bits-1)`` for an unsigned ``x``). An involution on bits:
    applying it to the signed output of the inverse (as unsigned) restores the input's bits."""
    k = arr.dtype.itemsize
    if unsigned == UNSIGNED:
        return (arr.view(f"u{k}") ^ np.array(1 << (8 * k - 1), f"u{k}")).view(f"i{k}")
    return arr.view(f"i{k}")


def as_signal(x: Any, name: str = "x") -> tuple[np.ndarray, np.dtype, int]:
    """``x`` (1-D integers) as int64 sign extensions of the signed values the predictors see,
    its native dtype, and the ``unsigned`` param recorded (0 signed, 1 unsigned)."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}; call once per channel")
    dtype = arr.dtype.newbyteorder("=")
    mode = UNSIGNED if dtype.kind == "u" else SIGNED
    return signed_bits(np.ascontiguousarray(arr, dtype=dtype), mode).astype(np.int64), dtype, mode


def restore(values: np.ndarray, unsigned: int, bits: int) -> np.ndarray:
    """int64 sign extensions back to the dtype of ``bits`` bits and the ``unsigned`` param."""
    out = signed_bits(values.astype(f"i{bits // 8}"), unsigned)
    return out.view(f"u{bits // 8}") if unsigned else out


def residual_in(y: Any, name: str) -> np.ndarray:
    """A residual (1-D integers) as the int64 sign extensions of its width's signed values."""
    arr = np.asarray(y)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    dtype = arr.dtype.newbyteorder("=")
    return np.ascontiguousarray(arr, dtype=dtype).view(f"i{dtype.itemsize}").astype(np.int64)


def bits_of(dtype: Any) -> int:
    """Bits of an integer dtype (TypeError for anything else)."""
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"dtype must be a numpy integer dtype, got {dtype!r}") from exc
    if dt.kind not in "iu":
        raise TypeError(f"dtype must be an integer dtype, got {dt}")
    return 8 * dt.itemsize


def field_unsigned(params: dict, where: str) -> int:
    """The ``unsigned`` field: 0 (signed input) or 1 (unsigned input)."""
    return field_int(params, "unsigned", 0, 1, where=where)


def ordered(arr: np.ndarray) -> tuple[np.ndarray, int]:
    """Values mapped order-preservingly to uint64 (signed: flip the sign bit), and their width."""
    dtype = arr.dtype.newbyteorder("=")
    bits = 8 * dtype.itemsize
    a = np.ascontiguousarray(arr, dtype=dtype)
    if dtype.kind == "i":
        return (a.view(f"u{bits // 8}").astype(np.uint64) ^ np.uint64(1 << (bits - 1))), bits
    return a.astype(np.uint64), bits


class Checked(list):
    """A checked ``channels`` list (equal to the plain list, and written the same) with
    ``parsed``: each entry as the transform's ``check_*_params`` returned it."""

    __slots__ = ("parsed",)


class PerChannel(Stage):
    """A one-channel transform (``_forward``, ``_inverse``, ``_check``) applied to each channel, params recorded per channel."""

    _forward: ClassVar[Callable[..., tuple[np.ndarray, dict]]]
    _inverse: ClassVar[Callable[[np.ndarray, dict], np.ndarray]]
    _check: ClassVar[Callable[[Any, int, Any], Any]]

    def _options(self) -> dict[str, Any]:
        return {}

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        if x.dtype.kind not in "iu":
            raise TypeError(f"the {self.name} stage takes integer values, got dtype {x.dtype}")
        outs, params = [], []
        for row in x:
            y, p = type(self)._forward(np.ascontiguousarray(row), **self._options())
            outs.append(y)
            params.append(p)
        out_dtype = self.output_dtype(x.dtype, {"channels": params})
        y = np.empty(x.shape, dtype=out_dtype)
        for i, r in enumerate(outs):
            y[i] = r
        return y, {"channels": params}

    def inverse(self, y: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        parsed = getattr(params["channels"], "parsed", None)
        if parsed is not None:  # checked by :meth:`check` for exactly this shape and dtype
            return self._inverse_checked(y, parsed, params["channels"])
        rows = [type(self)._inverse(np.ascontiguousarray(row), p) for row, p in zip(y, params["channels"])]
        if not rows:
            return np.zeros(y.shape, dtype=y.dtype)
        return np.stack(rows)

    def _inverse_checked(self, y: np.ndarray, parsed: list, channels: list) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _where(self) -> str:
        return f"front: {self.name}"

    def check(self, params: dict[str, Any], dtype: np.dtype, shape: tuple[int, int]) -> dict[str, Any]:
        """The params, their ``channels`` list a :class:`Checked` holding what the transform's
        ``check_*_params`` parsed from each entry (inverting then reads nothing twice)."""
        where = self._where()
        expect_map(params, where, ("channels",))
        channels = params["channels"]
        if dtype.kind not in "iu":
            raise CorruptDataError(f"{where}: not defined for {dtype} values")
        if not isinstance(channels, list) or len(channels) != shape[0]:
            raise CorruptDataError(f"{where}: 'channels' must be a list of {shape[0]} params maps")
        checked = Checked(channels)
        checked.parsed = [self._check_channel(p, dtype, shape[1]) for p in channels]
        return {"channels": checked}  # (the only key: checked above)

    def _check_channel(self, p: Any, dtype: np.dtype, frames: int) -> Any:
        parsed = type(self)._check(p, frames, self.output_dtype(dtype, {}))
        if (p["unsigned"] == SIGNED) != (dtype.kind == "i"):
            raise CorruptDataError(f"{self._where()}: 'unsigned' contradicts the {dtype} input")
        return parsed


    def output_dtype(self, dtype: np.dtype, params: dict[str, Any]) -> np.dtype:
        return SIGNED_OF_WIDTH[np.dtype(dtype).itemsize]
