"""Channels predicted from other channels, the front-end stage ``"decorrelate"``."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from .._validate import check_int, expect_map, field_bytes, field_int, short
from ..errors import CorruptDataError
from ._stage import Stage, register


def _sign_extended(x: np.ndarray) -> np.ndarray:
    """``(C, F)`` integers as int64 sign extensions of their signed representation."""
    return x.view(f"i{x.dtype.itemsize}").astype(np.int64)


def _wrap(v: np.ndarray, bits: int) -> np.ndarray:
    """int64 values reduced mod ``2**bits`` to the signed range (sign extended again)."""
    return v if bits == 64 else v.astype(f"i{bits // 8}").astype(np.int64)


def _block_bits(z: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Estimated bits of each block of the stream ``z`` (float64): each block's samples times
    ``log2(1 + mean |residual|)`` of the better of the fixed predictors of order 1 and 2 (the
    estimate FLAC uses to pick its fixed predictor), a Laplacian's cost up to a constant."""
    first = np.diff(z, prepend=z[:1])
    d1, d2 = np.abs(first), np.abs(np.diff(first, prepend=0.0))
    s = np.minimum(np.add.reduceat(d1, starts), np.add.reduceat(d2, starts))
    return counts * np.log2(1.0 + s / counts)


@register
class DecorrelateStage(Stage):
    """Channels predicted from other channels, modulo ``2**bits``: FLAC's stereo modes for two
    channels, a reference channel per channel for more. Output: the signed type of the input's
    width (every transform is a bijection of ``(Z / 2**bits)**C``).

    Two channels ``L, R`` (params ``{"block": B, "modes": one byte per block of B frames}``):
    mode 0 ``(L, R)``, 1 ``(L, S)``, 2 ``(S, R)``, 3 ``(M, S)`` with ``S = L - R`` and
    ``M = R + (S >> 1)``, each mode chosen per block by the estimated bits of its two streams.

    Exactness of mid/side within the width: ``S`` is wrapped to ``bits`` and ``M`` is one
    lifting step on it, so the inverse ``R = M - (S >> 1)``, ``L = S + R`` undoes it in the
    ring Z / 2**bits whatever ``S`` is (a lifting step adds a function of the other stream,
    which the inverse knows). When ``L - R`` does not wrap, ``R + floor((L - R) / 2) =
    floor((L + R) / 2)``: ``M`` *is* FLAC's mid ``(L + R) >> 1``, and the bit it drops is
    ``S``'s parity; no extra bit is needed because the side is kept modulo ``2**bits``, and
    a wrapped side costs only compression, never exactness.

    Other channel counts (params ``{"refs": [r_0, ..., r_{C-1}]}``): channel ``c`` becomes
    ``x_c - x_r`` for ``r = refs[c] < c``, or stays itself for ``r = -1``; ``r`` is the earlier
    channel whose first differences are closest (least squares on a sample of frames), taken
    when it lowers the estimated bits by at least :attr:`MARGIN` a sample.
    """

    name = "decorrelate"
    number = 5  #: its number on the wire (``ubpe.format.container.STAGES``)
    BLOCK: ClassVar[int] = 4096
    MAX_BLOCK: ClassVar[int] = 1 << 24
    #: frames of each channel the reference choice measures (evenly spaced windows)
    SAMPLE: ClassVar[int] = 1 << 15
    WINDOW: ClassVar[int] = 4096
    #: estimated bits a frame a joint coding must save over independent channels
    MARGIN: ClassVar[float] = 0.05

    def __init__(self, block: int = BLOCK) -> None:
        self.block = check_int("block", block, 1, self.MAX_BLOCK)

    # ------------------------------------------------------------------ two channels

    def _stereo_forward(self, s: np.ndarray, bits: int,
                        modes: np.ndarray | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """``s``: two sign-extended channels; ``modes``: one per block, or None to choose them."""
        left, right = s[0], s[1]
        side = _wrap(left - right, bits)
        mid = _wrap(right + (side >> 1), bits)
        frames = s.shape[1]
        starts = np.arange(0, frames, self.block)
        counts = np.diff(np.append(starts, frames)).astype(np.float64)
        if modes is not None:
            modes = np.asarray(modes, np.int64)
        elif frames:
            cost = {name: _block_bits(z.astype(np.float64), starts, counts)
                    for name, z in (("L", left), ("R", right), ("S", side), ("M", mid))}
            # a joint mode must save MARGIN bits a frame: two independent channels of equal
            # spread tie with mid/side (the rotation keeps the total), and ties stay independent
            joint = self.MARGIN * counts
            modes = np.argmin(np.stack([cost["L"] + cost["R"], cost["L"] + cost["S"] + joint,
                                        cost["S"] + cost["R"] + joint, cost["M"] + cost["S"] + joint]), axis=0)
        else:
            modes = np.zeros(0, np.int64)
        m = np.repeat(modes, self.block)[:frames]
        out = np.empty_like(s)
        out[0] = np.select([m <= 1, m == 2], [left, side], mid)
        out[1] = np.where(m % 2 == 1, side, right)
        return out, {"block": self.block, "modes": modes.astype(np.uint8).tobytes()}

    @staticmethod
    def _stereo_inverse(y: np.ndarray, params: dict[str, Any], bits: int) -> np.ndarray:
        a, b = y[0], y[1]
        m = np.repeat(np.frombuffer(params["modes"], np.uint8), params["block"])[: y.shape[1]]
        right = np.select([m == 1, m == 3], [_wrap(a - b, bits), _wrap(a - (b >> 1), bits)], b)
        left = np.select([m == 2, m == 3], [_wrap(a + b, bits), _wrap(b + right, bits)], a)
        return np.stack([left, right])

    # ------------------------------------------------------------------ any channel count

    def _refs(self, s: np.ndarray) -> list[int]:
        channels, frames = s.shape
        if channels < 2 or frames < 2:
            return [-1] * channels
        windows = max(1, min(-(-frames // self.WINDOW), self.SAMPLE // self.WINDOW))
        width = min(frames, self.WINDOW)
        starts = np.linspace(0, frames - width, windows).astype(np.int64)
        d = np.concatenate([np.diff(s[:, a:a + width].astype(np.float64), axis=1) for a in starts], axis=1)
        gram = d @ d.T
        energy = np.diag(gram)
        # cost[c, r]: energy of channel c's differences minus channel r's, for r < c only
        cost = energy[:, None] + energy[None, :] - 2.0 * gram
        cost[np.triu_indices(channels)] = np.inf
        best = np.argmin(cost, axis=1)
        # MARGIN bits a sample: half the log2 of the variance ratio
        take = cost[np.arange(channels), best] < energy * 2.0 ** (-2 * self.MARGIN)
        refs = [int(r) if t else -1 for r, t in zip(best, take)]
        return refs

    # ------------------------------------------------------------------ protocol

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        if x.dtype.kind not in "iu":
            raise TypeError(f"the decorrelate stage takes integer values, got dtype {x.dtype}")
        bits = 8 * x.dtype.itemsize
        s = _sign_extended(x)
        if x.shape[0] == 2:
            out, params = self._stereo_forward(s, bits)
        else:
            refs = self._refs(s)
            out = s.copy()
            for c, r in enumerate(refs):
                if r >= 0:
                    out[c] = s[c] - s[r]
            params = {"refs": refs}
        return out.astype(self.output_dtype(x.dtype, params)), params

    def inverse(self, y: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        bits = 8 * y.dtype.itemsize
        s = _sign_extended(y)
        if "modes" in params:
            x = self._stereo_inverse(s, params, bits)
        else:
            x = s
            for c, r in enumerate(params["refs"]):  # refs[c] < c: channel r is already restored
                if r >= 0:
                    x[c] = s[c] + x[r]
        return x.astype(f"i{bits // 8}")

    def check(self, params: dict[str, Any], dtype: np.dtype, shape: tuple[int, int]) -> dict[str, Any]:
        where = "front: decorrelate"
        if dtype.kind not in "iu":
            raise CorruptDataError(f"{where}: not defined for {dtype} values")
        channels, frames = shape
        if channels == 2:
            expect_map(params, where, ("block", "modes"))
            block = field_int(params, "block", 1, self.MAX_BLOCK, where=where)
            modes = field_bytes(params, "modes", where=where, size=-(-frames // block))
            if modes and max(modes) > 3:
                raise CorruptDataError(f"{where}: a mode is outside [0, 3] ({max(modes)})")
            return params
        expect_map(params, where, ("refs",))
        refs = params["refs"]
        if not isinstance(refs, list) or len(refs) != channels:
            raise CorruptDataError(f"{where}: 'refs' must be a list of {channels} ints")
        for c, r in enumerate(refs):
            if type(r) is not int or not -1 <= r < c:
                raise CorruptDataError(f"{where}: channel {c}'s reference must be an int in [-1, {c - 1}], got {short(r)}")
        return params

    def output_dtype(self, dtype: np.dtype, params: dict[str, Any]) -> np.dtype:
        return np.dtype(f"i{np.dtype(dtype).itemsize}")
