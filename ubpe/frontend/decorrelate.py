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

    Other channel counts (params ``{"refs": [[r, ...] per channel], "weights": [[w, ...] per
    channel]}``): channel ``c`` is predicted from up to :attr:`MAX_REFS` earlier channels,
    ``p = (sum_j w_j * x[r_j] + 2**11) >> 12`` (weights in units of ``2**-12``; the sum in
    int64, modulo ``2**64``), and written as ``x[c] - p`` modulo ``2**bits`` (no references:
    unchanged). Decoding restores the channels in increasing order, each from channels already
    restored. The references and weights come from a least-squares fit of the channels' first
    differences on a sample of frames (what the temporal predictor after this stage sees):
    greedy, each reference taken among the channel's most correlated earlier ones while it
    lowers the estimated bits by at least :attr:`MARGIN` a frame (and pays for its params).
    This models what electrode arrays record: interference common to every channel (weights
    near 1 on a neighbour, or spread over several) and fields that decay with distance
    (weights below 1); channels that share nothing keep no reference. Memory: the output (the
    input's width), one int64 row at a time, and a ``C x C`` matrix.
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
    #: C != 2: references a channel may have, and how many of its most correlated earlier
    #: channels are candidates for them (bounds the choice's cost at C x CANDIDATES)
    MAX_REFS: ClassVar[int] = 4
    CANDIDATES: ClassVar[int] = 32
    #: weights are integers in units of 2**-WEIGHT_SHIFT, in [-2**15, 2**15 - 1]
    WEIGHT_SHIFT: ClassVar[int] = 12
    WEIGHT_LIMIT: ClassVar[int] = 1 << 15
    #: estimated param bytes of one reference (its channel and weight, msgpack)
    REF_BYTES: ClassVar[int] = 4

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

    def _difference_gram(self, x: np.ndarray) -> np.ndarray:
        """``G[i, j]``: the mean product of channels ``i`` and ``j``'s first differences over
        evenly spaced windows of frames (float64 ``(C, C)``), accumulated a few hundred frames
        at a time: memory ``C**2`` plus a window slice, whatever the input."""
        channels, frames = x.shape
        total = min(frames, self.SAMPLE)
        width = min(total, self.WINDOW)
        windows = max(1, total // width)
        starts = np.linspace(0, frames - width, windows).astype(np.int64)
        step = max(16, (1 << 20) // (8 * channels))  # ~1 MB of float64 differences at a time
        gram = np.zeros((channels, channels))
        count = 0
        for a in starts.tolist():
            for lo in range(a, a + width - 1, step):
                hi = min(lo + step + 1, a + width)
                d = np.diff(x[:, lo:hi].astype(np.float64), axis=1)
                gram += d @ d.T
                count += d.shape[1]
        return gram / max(count, 1)

    def _choose(self, x: np.ndarray) -> tuple[list[list[int]], list[list[int]]]:
        """References and quantized weights of every channel of ``x`` (``(C, F)`` signed): the
        greedy least-squares choice of the class docstring, every channel at once (each step
        one batched solve over channels x candidates)."""
        channels, frames = x.shape
        refs: list[list[int]] = [[] for _ in range(channels)]
        weights: list[list[int]] = [[] for _ in range(channels)]
        if channels < 2 or frames < 2:
            return refs, weights
        if x.dtype.itemsize == 8 and (int(x.max(initial=0)) >= 1 << 47 or int(x.min(initial=0)) < -(1 << 47)):
            return refs, weights  # weights times values could leave int64: no prediction
        gram = self._difference_gram(x)
        energy = np.diag(gram).copy()
        rows = np.arange(channels)
        # candidates: each channel's most correlated earlier channels (of nonzero energy)
        corr = np.abs(gram) / np.sqrt(np.maximum(np.outer(energy, energy), 1e-300))
        corr[np.triu_indices(channels)] = -1.0
        corr[:, energy <= 0] = -1.0
        k_pool = min(self.CANDIDATES, channels - 1)
        pool = np.argsort(-corr, axis=1, kind="stable")[:, :k_pool]
        pool_ok = np.take_along_axis(corr, pool, axis=1) >= 0
        # bits a frame a reference must save: the margin plus its params spread over the frames
        need = self.MARGIN + 8.0 * self.REF_BYTES / frames
        chosen = np.zeros((channels, self.MAX_REFS), np.int64)
        counts = np.zeros(channels, np.int64)  # references chosen per channel
        current = energy.copy()
        active = (energy > 0) & (rows > 0) & pool_ok.any(axis=1)
        for k in range(self.MAX_REFS):
            if not active.any():
                break
            ok = pool_ok & active[:, None]
            for j in range(k):
                ok &= pool != chosen[:, j:j + 1]
            sets = np.concatenate([np.broadcast_to(chosen[:, None, :k], (channels, k_pool, k)), pool[:, :, None]], axis=2)
            a = gram[sets[..., :, None], sets[..., None, :]]
            b = gram[sets, rows[:, None, None]]
            a += np.eye(k + 1) * (1e-9 * np.trace(a, axis1=2, axis2=3)[..., None, None] + 1e-12)
            w = np.linalg.solve(a, b[..., None])[..., 0]
            left = energy[:, None] - np.einsum("ckj,ckj->ck", w, b)
            left[~ok] = np.inf
            pick = np.argmin(left, axis=1)
            best = np.maximum(left[rows, pick], energy * 1e-12)
            with np.errstate(divide="ignore", invalid="ignore"):
                gain = 0.5 * np.log2(current / best)
            take = active & np.isfinite(best) & (gain >= need)
            chosen[take, k] = pool[take, pick[take]]
            current = np.where(take, best, current)
            counts[take] = k + 1
            active = take
        scale = 1 << self.WEIGHT_SHIFT
        for size in range(1, self.MAX_REFS + 1):  # the final weights, channels grouped by count
            group = np.flatnonzero(counts == size)
            if not group.size:
                continue
            sets = np.sort(chosen[group, :size], axis=1)
            a = gram[sets[:, :, None], sets[:, None, :]] + np.eye(size) * 1e-12
            b = gram[sets, group[:, None]]
            w = np.linalg.solve(a, b[..., None])[..., 0]
            q = np.clip(np.round(w * scale), -self.WEIGHT_LIMIT, self.WEIGHT_LIMIT - 1)
            wq = q / scale
            left = energy[group] - 2.0 * np.einsum("gj,gj->g", wq, b) + np.einsum("gi,gij,gj->g", wq, a, wq)
            with np.errstate(divide="ignore", invalid="ignore"):
                gain = 0.5 * np.log2(energy[group] / left)
            # the quantized weights must still save the margin against no reference
            keep = (left <= 0) | (gain >= self.MARGIN + size * 8.0 * self.REF_BYTES / frames)
            for c, r, qc, kept in zip(group.tolist(), sets.tolist(), q.astype(np.int64).tolist(), keep.tolist()):
                if kept:
                    pairs = [(rr, ww) for rr, ww in zip(r, qc) if ww != 0]
                    refs[c], weights[c] = [rr for rr, _ in pairs], [ww for _, ww in pairs]
        return refs, weights

    def _prediction(self, x: np.ndarray, refs: list[int], weights: list[int]) -> np.ndarray:
        """``(sum_j w_j * x[r_j] + 2**(shift - 1)) >> shift`` in int64 (modulo 2**64), cast
        (modulo ``2**bits``) to ``x``'s dtype: one channel's prediction."""
        acc = np.zeros(x.shape[1], np.int64)
        with np.errstate(over="ignore"):
            for r, w in zip(refs, weights):
                acc += np.int64(w) * x[r].astype(np.int64)
            acc += np.int64(1 << (self.WEIGHT_SHIFT - 1))
        acc >>= self.WEIGHT_SHIFT
        return acc.astype(x.dtype)

    # ------------------------------------------------------------------ protocol

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        if x.dtype.kind not in "iu":
            raise TypeError(f"the decorrelate stage takes integer values, got dtype {x.dtype}")
        bits = 8 * x.dtype.itemsize
        if x.shape[0] == 2:
            out, params = self._stereo_forward(_sign_extended(x), bits)
            return out.astype(self.output_dtype(x.dtype, params)), params
        signed = x.view(f"i{x.dtype.itemsize}")
        refs, weights = self._choose(signed)
        out = signed.copy()
        with np.errstate(over="ignore"):
            for c in range(signed.shape[0]):
                if refs[c]:
                    out[c] -= self._prediction(signed, refs[c], weights[c])
        return out, {"refs": refs, "weights": weights}

    def inverse(self, y: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        bits = 8 * y.dtype.itemsize
        if "modes" in params:
            return self._stereo_inverse(_sign_extended(y), params, bits).astype(f"i{bits // 8}")
        x = y.view(f"i{bits // 8}").copy()
        with np.errstate(over="ignore"):
            for c, (refs, weights) in enumerate(zip(params["refs"], params["weights"])):
                if refs:  # every reference < c: restored already
                    x[c] += self._prediction(x, refs, weights)
        return x

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
        expect_map(params, where, ("refs", "weights"))
        refs, weights = params["refs"], params["weights"]
        for key, v in (("refs", refs), ("weights", weights)):
            if not isinstance(v, list) or len(v) != channels:
                raise CorruptDataError(f"{where}: '{key}' must be a list of {channels} lists")
        for c, (r, w) in enumerate(zip(refs, weights)):
            if not isinstance(r, list) or not isinstance(w, list) or len(r) != len(w) or len(r) > self.MAX_REFS:
                raise CorruptDataError(f"{where}: channel {c} must have lists of equal length of at most "
                                       f"{self.MAX_REFS} references and weights, got {short(r)} and {short(w)}")
            if any(type(v) is not int for v in r) or any(not 0 <= v < c for v in r) or r != sorted(set(r)):
                raise CorruptDataError(f"{where}: channel {c}'s references must be increasing ints in "
                                       f"[0, {c - 1}], got {short(r)}")
            if any(type(v) is not int or not -self.WEIGHT_LIMIT <= v < self.WEIGHT_LIMIT or v == 0 for v in w):
                raise CorruptDataError(f"{where}: channel {c}'s weights must be nonzero ints in "
                                       f"[{-self.WEIGHT_LIMIT}, {self.WEIGHT_LIMIT - 1}], got {short(w)}")
        return params

    def output_dtype(self, dtype: np.dtype, params: dict[str, Any]) -> np.dtype:
        return np.dtype(f"i{np.dtype(dtype).itemsize}")
