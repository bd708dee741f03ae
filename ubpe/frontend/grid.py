"""Values on an affine grid ``offset + step * k`` as ``k``, the front-end stage ``"grid"``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validate import expect_map, field_int
from ..errors import CorruptDataError
from ._common import bits_of, field_unsigned, ordered
from ._stage import UNSIGNED_OF_WIDTH, Stage, register


def grid_forward(x: Any) -> tuple[np.ndarray, dict]:
    """Values on an affine grid ``offset + step * k`` as ``k`` in the smallest unsigned dtype.

    ``offset`` is the minimum and ``step`` the gcd of the differences to it, computed exactly
    (uint64 after an order-preserving map, so nothing overflows). When ``step`` is 1, or the
    input is empty or constant, the transform is the identity: ``k`` is ``x`` itself with
    ``offset = 0, step = 1``.

    Returns
    -------
    k : ndarray (uint8, uint16, uint32 or uint64), or ``x`` unchanged for the identity
    params : dict
        ``offset`` (a Python int in the dtype's range), ``step`` (int >= 1), ``bits`` (8, 16, 32,
        64) and ``unsigned`` (0 or 1) of the original dtype.
    """
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"x must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"x must be 1-D, got shape {arr.shape}")
    u, bits = ordered(arr)
    unsigned = int(arr.dtype.kind == "u")
    identity = {"offset": 0, "step": 1, "bits": bits, "unsigned": unsigned}
    if u.size == 0:
        return np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("=")), identity
    lo = u.min()
    d = u - lo
    step = int(np.gcd.reduce(d))
    if step <= 1:
        return np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("=")), identity
    k = d // np.uint64(step)
    kmax = int(k.max())
    kdtype = next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if kmax <= np.iinfo(t).max)
    offset = int(lo) - (0 if unsigned else 1 << (bits - 1))
    return k.astype(kdtype), {"offset": offset, "step": step, "bits": bits, "unsigned": unsigned}


def channel_grids_finer(x: Any) -> bool:
    """Whether the values ``x`` (``(frames, channels)`` integers, two or more channels) lie on
    per-channel grids that all the channels together do not share, and every channel is on a
    grid (each channel's step, the gcd of its differences to its least value, above 1, or the
    channel constant) with some channel's step above the joint one (the gcd of every value's
    difference to the least of all): the "grid" stage then gives each channel its own step,
    where a coder that divides by the joint step (level 3) keeps part of it. Exact (Python
    integers via the order-preserving uint64 map)."""
    arr = np.asarray(x)
    if arr.ndim != 2 or arr.shape[1] < 2 or arr.shape[0] == 0 or arr.dtype.kind not in "iu":
        return False
    steps = []
    for c in range(arr.shape[1]):
        # (a channel off any grid would be passed through as unsigned bits: no; most channels
        # show it in their first values, decided before the whole channel is converted)
        head, _ = ordered(np.ascontiguousarray(arr[:256, c]))
        if arr.shape[0] > 256 and int(np.gcd.reduce(head - head.min())) == 1:
            return False
        u, _ = ordered(np.ascontiguousarray(arr[:, c]))
        steps.append(int(np.gcd.reduce(u - u.min())))
        if steps[-1] == 1:
            return False
    u, _ = ordered(np.ascontiguousarray(arr).reshape(-1))
    joint = int(np.gcd.reduce(u - u.min()))
    return any(step > joint for step in steps)


def check_grid_params(params: Any, n: int, dtype: Any) -> tuple[int, int, int, int]:
    """Validate untrusted grid params; ``(offset, step, bits, unsigned)``."""
    where = "grid params"
    bits_of(dtype)
    p = expect_map(params, where, ("offset", "step", "bits", "unsigned"))
    bits = field_int(p, "bits", 8, 64, where=where)
    if bits not in (8, 16, 32, 64):
        raise CorruptDataError(f"{where}: 'bits' must be 8, 16, 32 or 64, got {bits}")
    unsigned = field_unsigned(p, where)
    lo, hi = (0, (1 << bits) - 1) if unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    offset = field_int(p, "offset", lo, hi, where=where)
    step = field_int(p, "step", 1, (1 << bits) - 1, where=where)
    if step == 1 and offset != 0:
        raise CorruptDataError(f"{where}: a step of 1 must come with offset 0 (the identity)")
    return offset, step, bits, unsigned


def grid_inverse(k: Any, params: Any) -> np.ndarray:
    """Undo :func:`grid_forward`: ``offset + step * k`` in the original dtype.

    Raises CorruptDataError when a ``k`` would land outside the original dtype's range.
    """
    arr = np.asarray(k)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"k must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"k must be 1-D, got shape {arr.shape}")
    offset, step, bits, unsigned = check_grid_params(params, arr.shape[0], arr.dtype)
    out_dtype = np.dtype(f"{'u' if unsigned else 'i'}{bits // 8}")
    if step == 1:
        if arr.dtype.itemsize != bits // 8:
            raise CorruptDataError(f"grid params: identity params for {bits}-bit values, got {arr.dtype}")
        return np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("=")).view(out_dtype)
    if arr.dtype.kind == "i" and arr.size and int(arr.min()) < 0:
        raise CorruptDataError("grid: a grid index is negative")
    kmax = int(arr.max()) if arr.size else 0
    dtype_lo = 0 if unsigned else -(1 << (bits - 1))
    if offset + step * kmax > dtype_lo + (1 << bits) - 1:
        raise CorruptDataError(f"grid: index {kmax} lands outside the {out_dtype} range")
    base = np.uint64(offset - dtype_lo)  # offset in the order-preserving uint64 map
    u = arr.astype(np.uint64) * np.uint64(step) + base
    if not unsigned:
        u ^= np.uint64(1 << (bits - 1))
    return u.astype(f"u{bits // 8}").view(out_dtype)



def _centered(row: np.ndarray, k: np.ndarray, p: dict, width: int) -> tuple[np.ndarray, dict]:
    """``k`` and the grid params ``p`` of ``row`` moved so that the stages after the grid see
    ``row // step`` itself, or as near to it as ``uint{width}`` and the dtype allow. Predictors
    read an unsigned ``k`` as ``k - 2**(width - 1)``, and an unsigned row of ``bits`` bits as
    ``row - 2**(bits - 1)``: a signed row's indices are put about ``2**(width - 1)`` (offset
    ``row % step - step * 2**(width - 1)``), an unsigned row's about ``2**(width - 1) -
    2**(bits - 1)`` (``row // step`` when ``width == bits``); where that offset would leave the
    dtype or ``k`` the width, the nearest offset that does not. The divided values' own zero
    matters to the predictors (an LPC predictor has no constant term): shared/data's trumpet-1
    shifted left by 16 into int64, level 2, 19 216 B with the least value as offset, 19 040 B
    centered (the int16 audio itself: 19 016 B; level 1 20 207, 20 055 and 20 031 B). (Until
    this was written, an unsigned row's indices were put at ``row // step`` whatever the width:
    half the width away from the divided values as the predictors see them when ``width <
    bits``.)"""
    step, offset, bits = p["step"], p["offset"], p["bits"]
    dtype_lo = 0 if p["unsigned"] else -(1 << (bits - 1))
    # k's shift to the divided values, as the predictors read both
    wanted = offset // step + (1 << (width - 1)) - ((1 << (bits - 1)) if p["unsigned"] else 0)
    shift = max(0, min(wanted, (1 << width) - 1 - int(k.max()), (offset - dtype_lo) // step))
    if shift == 0:
        return k, p
    return k.astype(f"u{width // 8}") + np.array(shift, f"u{width // 8}"), {**p, "offset": offset - shift * step}


def _width_dtype(kmax: int) -> np.dtype:
    """The smallest unsigned dtype holding ``0 .. kmax``."""
    return next(t for t in UNSIGNED_OF_WIDTH.values() if kmax < 1 << (8 * t.itemsize))


@register
class GridStage(Stage):
    """Values on a per-channel grid ``offset + step * k`` become ``k``
    (:func:`grid_forward` on each channel).

    Parameters: ``{"width": w, "channels": [grid params of each channel]}``; the output is
    ``uint{w}``, the smallest unsigned type that holds every channel's largest ``k``. A channel
    with no grid (step 1) is passed through unchanged (its bits reinterpreted as ``uint{w}``),
    which forces ``w`` to the input's width; a constant channel is ``offset = value, step = 2``
    (all ``k`` zero), so a dead channel does not widen the output.
    """

    name = "grid"
    number = 4  #: its number on the wire (``ubpe.format.container.STAGES``)

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        if x.dtype.kind not in "iu":
            raise TypeError(f"the grid stage takes integer values, got dtype {x.dtype}")
        bits = 8 * x.dtype.itemsize
        rows, params, constant = [], [], set()
        for row in x:
            k, p = grid_forward(row)
            if p["step"] == 1 and row.size and (row == row[0]).all():
                p = {**p, "offset": int(row[0]), "step": 2}
                k = np.zeros(row.shape[0], np.uint8)
                constant.add(len(rows))
            rows.append(k)
            params.append(p)
        width = max((8 * k.dtype.itemsize if p["step"] > 1 else bits for k, p in zip(rows, params)), default=8)
        from ..planner.settings import current  # (here, not at the top: the planner imports this)

        for i, (row, p) in enumerate(zip(x, params)):
            if p["step"] > 1 and row.size and i not in constant and current().grid_divided:
                rows[i], params[i] = _centered(row, rows[i], p, width)
        out = np.empty(x.shape, dtype=f"u{width // 8}")
        for i, (k, p) in enumerate(zip(rows, params)):
            out[i] = k.view(f"u{k.dtype.itemsize}") if p["step"] == 1 else k
        return out, {"width": width, "channels": params}

    def inverse(self, y: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        chans = params["channels"]
        if not chans:  # no channels: nothing to map (the chain casts the empty array)
            return y.copy()
        bits = chans[0]["bits"]
        out = np.empty(y.shape, dtype=f"u{bits // 8}")
        for i, (row, p) in enumerate(zip(y, chans)):
            if p["step"] == 1:
                out[i] = row.view(out.dtype)  # identity: same width, checked
            else:
                out[i] = grid_inverse(row, p).view(out.dtype)
        return out

    def check(self, params: dict[str, Any], dtype: np.dtype, shape: tuple[int, int]) -> dict[str, Any]:
        where = "front: grid"
        expect_map(params, where, ("width", "channels"))
        if dtype.kind not in "iu":
            raise CorruptDataError(f"{where}: not defined for {dtype} values")
        bits = 8 * dtype.itemsize
        width = field_int(params, "width", 8, bits, where=where)
        if width not in (8, 16, 32, 64):
            raise CorruptDataError(f"{where}: 'width' must be 8, 16, 32 or 64, got {width}")
        channels = params["channels"]
        if not isinstance(channels, list) or len(channels) != shape[0]:
            raise CorruptDataError(f"{where}: 'channels' must be a list of {shape[0]} params maps")
        need = 8
        for p in channels:
            offset, step, pbits, unsigned = check_grid_params(p, shape[1], np.dtype(f"u{width // 8}"))
            if pbits != bits or unsigned != int(dtype.kind == "u"):
                raise CorruptDataError(f"{where}: 'bits' or 'unsigned' contradicts the {dtype} input")
            if step == 1:
                if width != bits:
                    raise CorruptDataError(f"{where}: a channel without a grid needs 'width' {bits}, got {width}")
                need = bits
            else:  # the largest k that lands in the dtype: the output can never need more
                lo = 0 if unsigned else -(1 << (bits - 1))
                need = max(need, 8 * _width_dtype((lo + (1 << bits) - 1 - offset) // step).itemsize)
        if width > need:
            raise CorruptDataError(f"{where}: 'width' {width} exceeds what the channels' grids can index")
        return params

    def output_dtype(self, dtype: np.dtype, params: dict[str, Any]) -> np.dtype:
        return np.dtype(f"u{params.get('width', 8 * np.dtype(dtype).itemsize) // 8}")
