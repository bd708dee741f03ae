"""Prediction stages of the front end: :mod:`ubpe.predict`'s transforms, one per channel.

Each stage applies one of :mod:`ubpe.predict`'s exact transforms to every row (channel) of the
``(channels, frames)`` layout on its own, and records one params map per channel:
``{"stage": name, "channels": [params of channel 0, params of channel 1, ...]}`` with each
entry exactly as the transform returns it. :meth:`check` validates every entry with the
transform's ``check_*_params`` against the channel's length and the stage's input dtype, so
untrusted params raise :class:`~ubpe.CorruptDataError` before any kernel runs.

* ``lpc``: exact block linear prediction (:func:`ubpe.predict.lpc_forward`); output the signed
  integer type of the input's width.
* ``adaptive``: a cascade of sign-sign LMS predictors (:func:`ubpe.predict.adaptive_forward`),
  nothing stored but the stage list; output the signed type of the input's width.
* ``rank``: each value's rank among its channel's distinct values
  (:func:`ubpe.predict.rank_forward`); output the smallest unsigned dtype that holds the
  largest channel's ``count - 1``.

Two stages work across the channel list rather than through a per-channel transform:

* ``grid`` (:class:`GridStage`): each channel's affine grid ``offset + step * k`` to ``k``
  (:func:`ubpe.predict.grid_forward`), params ``{"width", "channels"}``; output ``uint{width}``.
* ``decorrelate`` (:class:`DecorrelateStage`): channels predicted from other channels modulo
  ``2**bits`` (FLAC's stereo modes per block for two channels, one reference channel each for
  more); output the signed type of the input's width.
* ``mult`` (:class:`MultStage`, format version 6): each channel split as ``base * q + offset +
  r`` (codes with skewed low digits: an ADC's noisy extra bits); ``q`` is the output (signed
  type of the input's width), the digits ``r`` are coded in the params.

Importing this module registers the stages (:func:`ubpe.frontend.register`).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from typing import Any, Callable, ClassVar, Iterator

import numpy as np

from . import entropy, predict
from ._validate import check_int, expect_map, field_bytes, field_int, short
from .errors import CorruptDataError
from .frontend import Stage, register

__all__ = ["LpcStage", "AdaptiveStage", "RankStage", "GridStage", "DecorrelateStage", "MultStage"]


class _Checked(list):
    """A checked ``channels`` list (equal to the plain list, and written the same) with
    ``parsed``: each entry as the transform's ``check_*_params`` returned it."""

    __slots__ = ("parsed",)


class _PerChannel(Stage):
    """A transform of :mod:`ubpe.predict` applied to each channel, params recorded per channel."""

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
        """The params, their ``channels`` list a :class:`_Checked` holding what the transform's
        ``check_*_params`` parsed from each entry (inverting then reads nothing twice)."""
        where = self._where()
        expect_map(params, where, ("channels",))
        channels = params["channels"]
        if dtype.kind not in "iu":
            raise CorruptDataError(f"{where}: not defined for {dtype} values")
        if not isinstance(channels, list) or len(channels) != shape[0]:
            raise CorruptDataError(f"{where}: 'channels' must be a list of {shape[0]} params maps")
        checked = _Checked(channels)
        checked.parsed = [self._check_channel(p, dtype, shape[1]) for p in channels]
        return {"channels": checked}  # (the only key: checked above)

    def _check_channel(self, p: Any, dtype: np.dtype, frames: int) -> Any:
        parsed = type(self)._check(p, frames, self.output_dtype(dtype, {}))
        # a predictor's unsigned input: 1 (bits as signed, versions 1 to 5) or 2 (offset, version 6)
        if (p["unsigned"] == predict.SIGNED) != (dtype.kind == "i"):
            raise CorruptDataError(f"{self._where()}: 'unsigned' contradicts the {dtype} input")
        return parsed

    @staticmethod
    def version(params: dict[str, Any]) -> int:
        """The format version the params need: 6 when a channel's ``unsigned`` is 2 (the
        order-preserving offset of an unsigned input), else 0 (any version)."""
        chans = params.get("channels", [])
        return 6 if any(isinstance(p, dict) and p.get("unsigned") == predict.UNSIGNED_OFFSET for p in chans) else 0

    def output_dtype(self, dtype: np.dtype, params: dict[str, Any]) -> np.dtype:
        return _SIGNED[np.dtype(dtype).itemsize]


#: The signed dtype of each width (np.dtype(f"i{w}") costs a microsecond, several per decode).
_SIGNED = {w: np.dtype(f"i{w}") for w in (1, 2, 4, 8)}


def _estimated_bits(r: np.ndarray, block: int) -> float:
    """Bits of the residual ``r`` under a geometric law per block of its zigzag magnitudes (the
    cost :func:`ubpe.predict.lpc_forward`'s analysis minimises)."""
    return predict._local_bits(r, block)


#: LPC block lengths the lpc stage tries on each channel by default (the cheapest by estimated
#: bits wins): FLAC's 4096 for signals whose spectrum moves, and 16384 for steadier ones,
#: whose coefficients then cost a quarter (up to 32 x 15 bits a block). An "adaptive" stage
#: after the LPC tracks what a long block misses. Unseen recordings, default level:
#: seis-ayt-bhz 19 428 -> 19 287 B, bvp-plux 17 652 -> 17 387 B; shared/data ecg
#: (lpc+adaptive) 56 740 -> 56 545 B. Inputs of at most 4096 frames: one block either way,
#: the bytes of (4096,).
LPC_BLOCKS: tuple[int, ...] = (4096, 16384)
#: Test switch: False turns the ``reweight`` option off everywhere (A/B measurements).
LPC_REWEIGHT = True
#: The last few channels the lpc stage analysed, by content and options, kept only within
#: :func:`analysis_cache` (the planner's search: it puts the same channel through several
#: chains that start with the stage, "lpc" and "lpc+adaptive", on the screen's samples and on
#: all the values), and dropped when the last such scope ends, so that nothing outlives a
#: ``compress`` call. Key: the channel's digest, dtype and length, the options, and the module
#: settings the result depends on (``predict.WRITE_UNSIGNED``,
#: :func:`ubpe.predict.reweight_settings`); value: (residual, params), never handed out
#: (copies are).
_ANALYSED: dict[tuple, tuple[np.ndarray, dict]] = {}
_ANALYSED_SCOPES = 0  #: open :func:`analysis_cache` scopes (any thread)
_ANALYSED_MAX = 16
#: Largest residual kept (bytes): the planner's reuse is on inputs of at most planner.FULL_FIT
#: values and on samples; a blocked container's blocks are analysed once each, and keeping
#: them would hold memory its writer bounds to a few blocks per thread.
_ANALYSED_BYTES = 1 << 22
_ANALYSED_LOCK = threading.Lock()  # the planner's threads share the cache


@contextlib.contextmanager
def analysis_cache() -> Iterator[None]:
    """Within it (any thread), the lpc stage keeps its last :data:`_ANALYSED_MAX` analyses by
    content; when the last open scope ends they are dropped. Scopes nest and may overlap
    across threads."""
    global _ANALYSED_SCOPES
    with _ANALYSED_LOCK:
        _ANALYSED_SCOPES += 1
    try:
        yield
    finally:
        with _ANALYSED_LOCK:
            _ANALYSED_SCOPES -= 1
            if _ANALYSED_SCOPES == 0:
                _ANALYSED.clear()


@register
class LpcStage(_PerChannel):
    """Exact block LPC per channel (:func:`ubpe.predict.lpc_forward`).

    Options (the writer's search; the format and the decoder do not depend on them):
    ``window``, one window name or several (each block keeps the cheapest predictor under any),
    ``blocks``, block lengths tried on each channel, which keeps the one whose residual plus
    coefficients costs the fewest estimated bits, and ``reweight``: then refit the blocks
    whose residual's loudness moves by loudness-weighted least squares
    (:func:`ubpe.predict.lpc_reweight`). The defaults: ``"tukey"`` (as
    :func:`ubpe.predict.lpc_forward`), :data:`LPC_BLOCKS` and no reweighting
    (``planner.build_chain`` asks for it when the stage ends the chain; a following "adaptive"
    stage does better on the plain residual). Within :func:`analysis_cache`, results are kept by
    content (:data:`_ANALYSED`).
    """

    name = "lpc"
    _forward = staticmethod(predict.lpc_forward)
    _inverse = staticmethod(predict.lpc_inverse)
    _check = staticmethod(predict.check_lpc_params)

    def __init__(self, window: str | tuple[str, ...] | list[str] = "tukey",
                 blocks: tuple[int, ...] | list[int] | None = None, reweight: bool = False) -> None:
        blocks = LPC_BLOCKS if blocks is None else blocks
        if isinstance(blocks, (str, bytes)) or not hasattr(blocks, "__iter__"):
            raise TypeError(f"blocks must be a sequence of ints, got {type(blocks).__name__}")
        self.blocks = tuple(check_int("blocks[]", b, 1, predict.MAX_BLOCK) for b in blocks)
        if not self.blocks:
            raise ValueError("blocks must name at least one block length")
        self.window = window if isinstance(window, str) else tuple(window)
        self.reweight = bool(reweight)
        if not (isinstance(window, str) and window in predict.WINDOWS):  # (a window's name: valid)
            predict.lpc_forward(np.zeros(0, np.int16), window=self.window)  # the window's errors now

    def _analysed(self, row: np.ndarray, reweight: bool) -> tuple[np.ndarray, dict]:
        """The channel ``row``'s residual and params (cached; the caller must not modify them)."""
        key = None
        if _ANALYSED_SCOPES and row.nbytes <= _ANALYSED_BYTES:  # (the residual is as wide as the input)
            key = (hashlib.blake2b(row.view(np.uint8), digest_size=16).digest(), row.dtype.str, row.shape[0],
                   self.blocks, self.window, predict.WRITE_UNSIGNED, reweight and predict.reweight_settings())
            found = _ANALYSED.get(key)
            if found is not None:
                return found
        if reweight:
            r, p = self._analysed(row, False)
            found = predict.lpc_reweight(row, r, p)
        else:
            best, covered = None, False
            for block in self.blocks:
                if covered:  # a block already tried held the whole channel: the same predictor
                    continue
                covered = block >= row.shape[0]
                r, p = predict.lpc_forward(row, block=block, window=self.window)
                cost = _estimated_bits(r, block) + 8 * len(p["coefs"]) + 24 * len(p["orders"])
                if best is None or cost < best[0]:
                    best = (cost, r, p)
            found = best[1:]
        if key is None:
            return found
        with _ANALYSED_LOCK:
            if not _ANALYSED_SCOPES:  # the scope ended while this analysis ran
                return found
            if len(_ANALYSED) >= _ANALYSED_MAX:
                _ANALYSED.pop(next(iter(_ANALYSED)), None)
            _ANALYSED[key] = found
        return found

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        if x.dtype.kind not in "iu":
            raise TypeError(f"the {self.name} stage takes integer values, got dtype {x.dtype}")
        y = np.empty(x.shape, dtype=self.output_dtype(x.dtype, {}))
        params = []
        for i, row in enumerate(x):
            r, p = self._analysed(np.ascontiguousarray(row), self.reweight and LPC_REWEIGHT)
            y[i] = r
            params.append(dict(p))
        return y, {"channels": params}

    def _inverse_checked(self, y: np.ndarray, parsed: list, channels: list) -> np.ndarray:
        itemsize = y.dtype.itemsize
        out = np.empty(y.shape, dtype=f"i{itemsize}")
        for c, (block, orders, shifts, coefs) in enumerate(parsed):
            r = y[c].view(f"i{itemsize}").astype(np.int64)
            predict._k.lpc_filter(r, block, orders, shifts, coefs, 64 - 8 * itemsize, True, r)  # in place
            out[c] = r  # exact: every reconstruction is wrapped to the width already
            if channels[c]["unsigned"] == predict.UNSIGNED_OFFSET:
                out[c] = predict._signed_bits(out[c], predict.UNSIGNED_OFFSET)  # undo the offset
        return out


@register
class AdaptiveStage(_PerChannel):
    """Sign-sign LMS cascade per channel (:func:`ubpe.predict.adaptive_forward`, its default
    cascade :data:`ubpe.predict.DEFAULT_STAGES`). Channels sharing a cascade (all of them, as
    written) run through one kernel call (:func:`ubpe.predict.adaptive_rows`)."""

    name = "adaptive"
    fast_inverse = False  # the decoder repeats the cascade's arithmetic: ~10 M values/s
    _forward = staticmethod(predict.adaptive_forward)
    _inverse = staticmethod(predict.adaptive_inverse)
    _check = staticmethod(predict.check_adaptive_params)

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        if x.dtype.kind not in "iu":
            raise TypeError(f"the {self.name} stage takes integer values, got dtype {x.dtype}")
        stages = [list(s) for s in predict.DEFAULT_STAGES]
        unsigned = predict.WRITE_UNSIGNED if x.dtype.kind == "u" else predict.SIGNED
        return predict.adaptive_rows(x, stages, unsigned=unsigned), {
            "channels": [{"stages": [list(s) for s in stages], "unsigned": unsigned} for _ in range(x.shape[0])]}

    def inverse(self, y: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        out = np.empty(y.shape, dtype=f"i{y.dtype.itemsize}")
        groups: dict[str, list[int]] = {}
        for c, p in enumerate(params["channels"]):  # checked: lists of [order, shift, rule]
            groups.setdefault(repr((p["stages"], p["unsigned"])), []).append(c)
        for rows in groups.values():
            first = params["channels"][rows[0]]
            out[rows] = predict.adaptive_rows(y[rows], first["stages"], inverse=True, unsigned=first["unsigned"])
        return out


#: The unsigned dtypes by width (np.iinfo per call cost microseconds on every decode).
_UNSIGNED = tuple(np.dtype(f"u{w}") for w in (1, 2, 4, 8))


def _rank_dtype(count: int) -> np.dtype:
    """The smallest unsigned dtype holding ranks ``0 .. count - 1``."""
    return next(t for t in _UNSIGNED if count <= 1 << (8 * t.itemsize))


@register
class RankStage(_PerChannel):
    """Ranks among each channel's distinct values (:func:`ubpe.predict.rank_forward`)."""

    name = "rank"
    _forward = staticmethod(predict.rank_forward)
    _inverse = staticmethod(predict.rank_inverse)
    _check = staticmethod(predict.check_rank_params)

    def output_dtype(self, dtype: np.dtype, params: dict[str, Any]) -> np.dtype:
        counts = [p["count"] for p in params.get("channels", [])]
        return _rank_dtype(max(counts, default=0))

    def _check_channel(self, p: Any, dtype: np.dtype, frames: int) -> np.ndarray:
        where = self._where()
        values = predict.check_rank_params(p, frames, np.dtype(np.uint64))
        if p["bits"] != 8 * dtype.itemsize or p["unsigned"] != int(dtype.kind == "u"):
            raise CorruptDataError(f"{where}: 'bits' or 'unsigned' contradicts the {dtype} input")
        return values

    def _inverse_checked(self, y: np.ndarray, parsed: list, channels: list) -> np.ndarray:
        if not parsed:
            return np.zeros(y.shape, dtype=y.dtype)
        out = np.empty(y.shape, dtype=parsed[0].dtype)  # every channel's: checked against the input
        for c, values in enumerate(parsed):
            k = y[c]
            if k.size and (int(k.max()) >= values.shape[0] or (k.dtype.kind == "i" and int(k.min()) < 0)):
                raise CorruptDataError(f"rank: a rank lies outside [0, {values.shape[0]})")
            np.take(values, k, out=out[c])
        return out


# ============================================================================ value grid


def _width_dtype(kmax: int) -> np.dtype:
    """The smallest unsigned dtype holding ``0 .. kmax``."""
    return next(t for t in _UNSIGNED if kmax < 1 << (8 * t.itemsize))


@register
class GridStage(Stage):
    """Values on a per-channel grid ``offset + step * k`` become ``k``
    (:func:`ubpe.predict.grid_forward` on each channel).

    Parameters: ``{"width": w, "channels": [grid params of each channel]}``; the output is
    ``uint{w}``, the smallest unsigned type that holds every channel's largest ``k``. A channel
    with no grid (step 1) is passed through unchanged (its bits reinterpreted as ``uint{w}``),
    which forces ``w`` to the input's width; a constant channel is ``offset = value, step = 2``
    (all ``k`` zero), so a dead channel does not widen the output.
    """

    name = "grid"

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        if x.dtype.kind not in "iu":
            raise TypeError(f"the grid stage takes integer values, got dtype {x.dtype}")
        bits = 8 * x.dtype.itemsize
        rows, params = [], []
        for row in x:
            k, p = predict.grid_forward(row)
            if p["step"] == 1 and row.size and (row == row[0]).all():
                p = {**p, "offset": int(row[0]), "step": 2}
                k = np.zeros(row.shape[0], np.uint8)
            rows.append(k)
            params.append(p)
        width = max((8 * k.dtype.itemsize if p["step"] > 1 else bits for k, p in zip(rows, params)), default=8)
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
                out[i] = predict.grid_inverse(row, p).view(out.dtype)
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
            offset, step, pbits, unsigned = predict.check_grid_params(p, shape[1], np.dtype(f"u{width // 8}"))
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


# ============================================================================ channel decorrelation


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


# ============================================================================ low digits (IntMult)


class _Low(dict):
    """A checked ``low`` stream map (equal to the plain map, and written the same) with
    ``digits``: the digits it decodes to."""

    __slots__ = ("digits",)


@register
class MultStage(Stage):
    """Codes whose low digits are skewed: each channel split as ``x = base * q + offset + r``
    (``0 <= r < base``, :func:`ubpe.predict.mult_forward`); ``q`` goes on down the chain (it is
    the stage's output, the signed type of the input's width) and the digits ``r`` are coded
    in the params by :func:`ubpe.entropy.encode_stream` with the static coders (the digits of
    an ADC's noisy extra bits are nearly independent of the signal and of each other, so an
    order-0 code is what they need). Format version 6.

    Parameters: ``{"channels": [{"base": m, "offset": c}, ...], "low": stream}``: ``base`` in
    ``[1, MAX_MULT_BASE]`` and ``offset`` in ``[0, base)`` per channel (``base == 1``: the
    channel passes unchanged, its bits reinterpreted as signed, and it has no digits);
    ``low`` one stream over the vocabulary ``max(base)`` holding the digits of every channel
    with ``base > 1``, channel-major (``frames`` each), every digit below its channel's base.
    The writer chooses each channel's split with :func:`ubpe.predict.mult_detect`.
    """

    name = "mult"
    #: Coders the digits are offered (static: they decode at memory speed).
    CODERS: ClassVar[tuple[str, ...]] = ("rans", "packed", "const", "mag")

    @staticmethod
    def version(params: dict[str, Any]) -> int:
        """Format version 6 brought the stage."""
        return 6

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        if x.dtype.kind not in "iu":
            raise TypeError(f"the mult stage takes integer values, got dtype {x.dtype}")
        out = np.empty(x.shape, dtype=self.output_dtype(x.dtype, {}))
        channels, digits = [], []
        for i, row in enumerate(x):
            row = np.ascontiguousarray(row)
            base, offset = predict.mult_detect(row)
            out[i], r = predict.mult_forward(row, base, offset)
            channels.append({"base": base, "offset": offset})
            if base > 1:
                digits.append(r)
        vocab = max((c["base"] for c in channels), default=1)
        r = np.concatenate(digits) if digits else np.zeros(0, np.int64)
        return out, {"channels": channels, "low": entropy.encode_stream(r, vocab, coders=self.CODERS)}

    def inverse(self, y: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        digits = getattr(params["low"], "digits", None)  # decoded and checked by :meth:`check`
        if digits is None:
            digits = self._digits(params, y.shape)
        out = np.empty(y.shape, dtype=self.output_dtype(y.dtype, {}))
        at = 0
        for i, c in enumerate(params["channels"]):
            base, offset = c["base"], c["offset"]
            if base == 1:
                out[i] = y[i].view(out.dtype)
                continue
            r = digits[at:at + y.shape[1]]
            at += y.shape[1]
            out[i] = predict.mult_inverse(y[i], r, base, offset, out.dtype)
        return out

    def _digits(self, params: dict[str, Any], shape: tuple[int, int]) -> np.ndarray:
        where = "front: mult"
        split = [c for c in params["channels"] if c["base"] > 1]
        vocab = max((c["base"] for c in params["channels"]), default=1)
        need = len(split) * shape[1]
        try:
            r = entropy.decode_stream(params["low"], vocab, max_count=need)
        except CorruptDataError as e:
            raise CorruptDataError(f"{where}: 'low': {e}") from None
        if r.shape[0] != need:
            raise CorruptDataError(f"{where}: 'low' holds {r.shape[0]} digits, the channels need {need}")
        at = 0
        for c in split:
            if shape[1] and int(r[at:at + shape[1]].max()) >= c["base"]:
                raise CorruptDataError(f"{where}: a digit is not below its channel's base {c['base']}")
            at += shape[1]
        return r

    def check(self, params: dict[str, Any], dtype: np.dtype, shape: tuple[int, int]) -> dict[str, Any]:
        """The params, their ``low`` a :class:`_Low` holding the decoded digits (int32), every
        field checked."""
        where = "front: mult"
        expect_map(params, where, ("channels", "low"))
        if dtype.kind not in "iu":
            raise CorruptDataError(f"{where}: not defined for {dtype} values")
        channels = params["channels"]
        if not isinstance(channels, list) or len(channels) != shape[0]:
            raise CorruptDataError(f"{where}: 'channels' must be a list of {shape[0]} params maps")
        for c in channels:
            expect_map(c, where, ("base", "offset"))
            base = field_int(c, "base", 1, predict.MAX_MULT_BASE, where=where)
            field_int(c, "offset", 0, base - 1, where=where)
        if not isinstance(params["low"], dict):
            raise CorruptDataError(f"{where}: 'low' must be a stream map")
        low = _Low(params["low"])
        low.digits = self._digits(params, shape)
        return {**params, "low": low}

    @staticmethod
    def scalable(params: dict[str, Any]) -> int:
        """Bytes of the params that grow with the number of values (the digits' payload): the
        planner scales them with the token stream when it sizes a sample."""
        low = params.get("low")
        return len(low.get("payload", b"")) if isinstance(low, dict) else 0

    def output_dtype(self, dtype: np.dtype, params: dict[str, Any]) -> np.dtype:
        return _SIGNED[np.dtype(dtype).itemsize]
