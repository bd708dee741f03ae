"""Exact block linear prediction, the front-end stage ``"lpc"``.

* :func:`lpc_forward`: per block (default 4096 samples) windowed autocorrelation, Levinson-Durbin,
  coefficients quantized with a shift as FLAC does, order (up to 32) and precision chosen by the
  bits they cost. A block's first samples are predicted from the previous block's tail; only the
  signal's first ``order`` samples fall back to the previous sample.
* :func:`lpc_reweight` (writer only): :func:`lpc_forward`'s result with the blocks whose
  residual's loudness moves refitted by loudness-weighted least squares (the analysis
  minimises residual energy, which bursts dominate; the coders pay for the log of the local
  scale); same params, same decoder.
* :class:`LpcStage`: either, per channel, with a search over block lengths.

How samples are carried and why the round trip is exact: :mod:`ubpe.frontend._common`.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import numpy as np

from .. import _memo
from .._kernels import level1 as _fast
from .._kernels import predict as _k
from .._kernels import tally as _tally
from .._validate import check_choice, check_int, expect_map, field_bytes, field_int
from ..errors import CorruptDataError
from ._common import (
    UNSIGNED,
    PerChannel,
    as_signal,
    bits_of,
    field_unsigned,
    residual_in,
    restore,
    signed_bits,
)
from ._stage import register

MAX_ORDER = 32


MAX_PRECISION = 16


MAX_SHIFT = 31


MAX_BLOCK = 1 << 24


WINDOWS = {"none": 0, "welch": 1, "tukey": 2, "hann": 3, "tukey25": 4}


#: The coefficient precisions :func:`lpc_forward` and :func:`lpc_reweight` try by default (the
#: stage's, :class:`LpcStage`).
_PRECISIONS = (12, 15)


def _pack_coefs(coefs: np.ndarray, widths: np.ndarray) -> bytes:
    """Each coefficient as ``width`` bits of two's complement, little-endian bit order."""
    if coefs.size == 0:
        return b""
    # (one compiled pass, _tally.pack_bits: the same bytes as np.packbits of the bit matrix
    # ``(coefs[:, None] >> arange(16)) & 1`` masked to each width, bitorder="little")
    widths = np.ascontiguousarray(widths, dtype=np.int64)
    out = np.zeros((int(widths.sum()) + 7) // 8, np.uint8)
    _tally.pack_bits(np.ascontiguousarray(coefs, dtype=np.int64), widths, out)
    return out.tobytes()


def lpc_forward(
    x: Any,
    *,
    block: int = 4096,
    max_order: int = MAX_ORDER,
    window: str | tuple[str, ...] = "tukey",
    precisions: tuple[int, ...] = _PRECISIONS,
    candidates: int = 3,
    costed_every: int = 1,
    high_gain: float = 0.0,
) -> tuple[np.ndarray, dict]:
    """Residual of exact block linear prediction, and the params that invert it.

    Parameters
    ----------
    x : 1-D integer array, any dtype int8..uint64 and byte order
    block : int, default 4096
        Samples per block (each block has its own order and coefficients); 1 to 2**24.
    max_order : int, default 32
        Highest prediction order tried, 0 to 32 (0 gives the identity but for the type).
    window : str or sequence of str, default "tukey"
        Window applied to each block before its autocorrelation (analysis only): "tukey"
        (Tukey 0.5), "tukey25" (Tukey 0.25), "welch", "hann" or "none"; given several, each
        block takes the cheapest predictor found under any of them (FLAC's apodization
        search; slower analysis, same decoder).
    precisions : tuple of int
        Coefficient precisions in bits (2 to 16) tried on the best orders; the cheapest wins.
    candidates : int, default 3
        The orders (1 to 32) of smallest estimated cost (from the analysis) whose residual is
        costed exactly, under each window and precision.
    costed_every : int, default 1
        Cost them on one chunk of 256 samples in ``costed_every`` (1 to 64), the bits scaled to
        the block: a search that costs less, for the fast level (signals of at most 32 bits;
        wider ones are costed on every sample).
    high_gain : float, default 0.0
        In [0, 1). Each block's Levinson recursion has a white-noise floor of 1e-9 of the
        block's energy; where it predicts the block to below ``high_gain`` of its energy, it
        is solved again without the floor, and those orders are costed too (0: never). Level 1
        sets it (``Settings.fast_lpc_high_gain``).

    Returns
    -------
    residual : ndarray of the signed integer type of ``x``'s width, same length
        ``(x - prediction) mod 2**bits``.
    params : dict
        ``block``, ``unsigned`` (0 signed, 1 unsigned), ``orders``, ``shifts``, ``precisions`` (one byte per
        block) and ``coefs`` (each block's ``order`` coefficients, ``precision`` bits each,
        two's complement, bit-packed little-endian).
    """
    s, dtype, mode = as_signal(x)
    block = check_int("block", block, 1, MAX_BLOCK)
    max_order = check_int("max_order", max_order, 0, MAX_ORDER)
    names = (window,) if isinstance(window, str) else window
    if isinstance(names, bytes) or not hasattr(names, "__iter__"):
        raise TypeError(f"window must be a window name or a sequence of names, got {type(window).__name__}")
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"window names must be strings, got {type(name).__name__} {name!r}")
    kinds = np.array([WINDOWS[check_choice("window", name, WINDOWS)] for name in names], np.int64)
    if not kinds.size:
        raise ValueError("window must name at least one window")
    if isinstance(precisions, (str, bytes)) or not hasattr(precisions, "__iter__"):
        raise TypeError(f"precisions must be a sequence of ints, got {type(precisions).__name__}")
    precs = [check_int("precisions[]", p, 2, MAX_PRECISION) for p in precisions]
    if not precs:
        raise ValueError("precisions must not be empty")
    candidates = check_int("candidates", candidates, 1, MAX_ORDER)
    costed_every = check_int("costed_every", costed_every, 1, 64)
    high_gain = check_high_gain(high_gain)
    return _forward_signal(s, dtype, mode, block, max_order, kinds, precs, candidates, costed_every, high_gain)[:2]


def check_high_gain(high_gain: Any) -> float:
    """:func:`lpc_forward`'s ``high_gain``, a real number in [0, 1), as a float."""
    if isinstance(high_gain, bool) or not isinstance(high_gain, (int, float, np.integer, np.floating)):
        raise TypeError(f"high_gain must be a number, got {type(high_gain).__name__}")
    if not 0.0 <= float(high_gain) < 1.0:
        raise ValueError(f"high_gain must be in [0, 1), got {high_gain!r}")
    return float(high_gain)


#: Each thread's windows kept for :func:`ubpe._kernels.level1.lpc_analyze` (its ``kept`` and
#: ``kept_len``), by (length, the windows' numbers): the last :data:`_KEPT_WINDOWS_MAX` of them.
#: Per thread: the kernel writes a window into them the first time, so no two calls may share them.
_KEPT_WINDOWS = threading.local()


_KEPT_WINDOWS_MAX = 4  #: (at most 4 x 16 384 x 8 bytes a window kind a thread)


def _kept_windows(length: int, kinds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """This thread's ``(kept, kept_len)`` for windows of ``length`` samples of each of ``kinds``
    (float64 ``(len(kinds), length)``, int64 ``len(kinds)``; new ones hold none yet)."""
    table = getattr(_KEPT_WINDOWS, "table", None)
    if table is None:
        table = _KEPT_WINDOWS.table = {}
    key = (length, kinds.tobytes())
    found = table.get(key)
    if found is None:
        if len(table) >= _KEPT_WINDOWS_MAX:
            table.pop(next(iter(table)))
        found = table[key] = (np.empty((kinds.shape[0], length), np.float64), np.full(kinds.shape[0], -1, np.int64))
    return found


def _forward_signal(s: np.ndarray, dtype: np.dtype, mode: int, block: int, max_order: int, kinds: np.ndarray,
                    precs: list[int], candidates: int, costed_every: int, high_gain: float = 0.0, span: int = 0
                    ) -> tuple[np.ndarray, dict, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                               tuple[np.ndarray, np.ndarray] | None]:
    """:func:`lpc_forward` of the signal ``s, dtype, mode`` (:func:`as_signal`'s) with its
    arguments checked (``kinds``: the windows' numbers): the residual, the params, the
    params as arrays ``(orders, shifts, precisions, coefs)`` (int64; :func:`check_lpc_params`'
    orders, shifts and coefs), and, for ``span`` >= 1 and a signal of at most 32 bits, the
    residual's magnitudes summed by spans of ``span`` samples from each block's start and by
    block (two int64 arrays, :func:`ubpe._kernels.level1.lpc_residual_spans`' sums, made with
    the residual: what :func:`_span_totals` sums, a pass less; else None). The LPC stage analyses a channel at
    several block lengths and refits it from one int64 signal (:meth:`LpcStage._analysed`:
    ECG's, 864 KB, was made for each call)."""
    bits = 8 * dtype.itemsize
    n = s.shape[0]
    nb = -(-n // block)
    orders = np.zeros(nb, np.int64)
    shifts = np.zeros(nb, np.int64)
    pbits = np.zeros(nb, np.int64)
    coefs = np.zeros(nb * max_order, np.int64)
    # at most 32 bits in blocks below 2**20: the faster kernel (with candidates=3 and costed_every=1,
    # the same choices as the other); wider: the other, every sample costed (its sums are floats)
    if bits <= 32 and block < 1 << 20:
        kept, kept_len = _kept_windows(max(1, min(block, n)), kinds)
        used = _fast.lpc_analyze(s, block, max_order, kinds, np.array(precs, np.int64), 64 - bits, orders, shifts,
                                 pbits, coefs, candidates, costed_every, -1, high_gain, kept, kept_len)
    else:
        used = _k.lpc_analyze(s, block, max_order, kinds, np.array(precs, np.int64), 64 - bits, orders, shifts,
                              pbits, coefs, high_gain)
    coefs = coefs[:used]
    # written in the signal's width (each residual is wrapped to it: the int64 astype's values),
    # where an int64 residual and its copy took 8 + 2 bytes a value (ECG: 864 KB of fresh pages)
    res = np.empty(n, f"i{bits // 8}")
    spans = None
    if span >= 1 and bits <= 32:
        spans = (np.empty(_fast.span_count(n, block, span), np.int64), np.empty(nb, np.int64))
        _fast.lpc_residual_spans(s, block, orders, shifts, coefs, 64 - bits, res, span, *spans)
    else:
        _fast.lpc_residual(s, block, orders, shifts, coefs, 64 - bits, res)
    params = {
        "block": block,
        "unsigned": mode,
        "orders": orders.astype(np.uint8).tobytes(),
        "shifts": shifts.astype(np.uint8).tobytes(),
        "precisions": pbits.astype(np.uint8).tobytes(),
        "coefs": _pack_coefs(coefs, np.repeat(pbits, orders)),
    }
    return res, params, (orders, shifts, pbits, coefs), spans


def check_lpc_params(params: Any, n: int, dtype: Any) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """Validate untrusted LPC params for ``n`` residuals of ``dtype``; raise CorruptDataError.

    Returns ``(block, orders, shifts, coefs)`` as the kernel takes them. Checked: the field set
    and types, ``block`` in [1, 2**24], one byte per block in each header array, orders <= 32,
    a precision in [2, 16] for each order > 0 (0 for order 0), shifts <= 31 (0 for order 0),
    and ``coefs`` exactly as long as the orders and precisions say, with zero padding. Any
    coefficient of at most 16 bits is safe: the accumulator wraps identically on both sides.
    """
    where = "lpc params"
    if not isinstance(dtype, np.dtype) or dtype.kind not in "iu":  # (a dtype object: checked at once)
        bits_of(dtype)
    # the usual case, every field as it must be, in one test; else field by field (their messages)
    if type(params) is dict and params.keys() == _LPC_KEYSET:
        block, mode = params["block"], params["unsigned"]
        orders, shifts, precs, data = params["orders"], params["shifts"], params["precisions"], params["coefs"]
        nb = -(-n // block) if type(block) is int and 1 <= block <= MAX_BLOCK else -1
        ok = (type(mode) is int and 0 <= mode <= UNSIGNED and type(orders) is bytes and len(orders) == nb
              and type(shifts) is bytes and len(shifts) == nb and type(precs) is bytes and len(precs) == nb
              and type(data) is bytes and len(data) <= nb * MAX_ORDER * 2)
    else:
        ok = False
    if ok:
        head = orders + shifts + precs
    else:
        p = expect_map(params, where, _LPC_KEYS)
        block = field_int(p, "block", 1, MAX_BLOCK, where=where)
        field_unsigned(p, where)
        nb = -(-n // block)
        head = (field_bytes(p, "orders", where=where, size=nb) + field_bytes(p, "shifts", where=where, size=nb)
                + field_bytes(p, "precisions", where=where, size=nb))
        data = field_bytes(p, "coefs", where=where, max_size=nb * MAX_ORDER * 2)
    head_arr = np.frombuffer(head, np.uint8).reshape(3, nb)
    coefs = np.empty(sum(head[:nb]), np.int64)
    status = _k.lpc_unpack(head_arr, np.frombuffer(data, np.uint8), coefs)
    if status:
        raise CorruptDataError(f"{where}: " + {
            -1: f"an order exceeds {MAX_ORDER} ({max(head[:nb])})",
            -2: "a block of order 0 has a precision or shift",
            -3: f"a precision is outside [2, {MAX_PRECISION}]",
            -4: f"a shift exceeds {MAX_SHIFT}",
            -5: f"'coefs' has {len(data)} bytes, expected {(int(np.dot(head_arr[0], head_arr[2].astype(np.int64))) + 7) // 8}",
            -6: "'coefs' has non-zero padding bits"}[status])
    both = head_arr[:2].astype(np.int64)
    return block, both[0], both[1], coefs  # (rows by index: unpacking the array iterates it, ~1.5 us)


_LPC_KEYS = ("block", "unsigned", "orders", "shifts", "precisions", "coefs")


_LPC_KEYSET = frozenset(_LPC_KEYS)


def lpc_inverse(residual: Any, params: Any) -> np.ndarray:
    """Undo :func:`lpc_forward`: the original samples, bit-exact, in the original dtype."""
    r = residual_in(residual, "residual")
    bits = 8 * np.asarray(residual).dtype.itemsize
    block, orders, shifts, coefs = check_lpc_params(params, r.shape[0], f"i{bits // 8}")
    _k.lpc_filter(r, block, orders, shifts, coefs, 64 - bits, True, r)  # in place (see lpc_filter)
    return restore(r, params["unsigned"], bits)


def _reweight_defaults() -> dict[str, int | float]:
    """:func:`lpc_reweight`'s tuning as the planner's default settings give it
    (``Settings.lpc_reweight_options``; imported here, not at the top: the planner imports this
    module)."""
    from ..planner.settings import DEFAULT

    return DEFAULT.lpc_reweight_options()


_REWEIGHT_KEYS = ("local_span", "span", "iterations", "equations", "gate", "margin")


def _reweight_tuning(local_span: Any, span: Any, iterations: Any, equations: Any, gate: Any,
                     margin: Any) -> tuple[int, int, int, int, float, float]:
    """:func:`lpc_reweight`'s tuning checked, each None replaced by its default. The tunings of
    plain ints and floats already checked are kept (:data:`_TUNINGS`: level 1 checked the
    same six numbers about three times a ``compress``; a None takes its default first)."""
    args = (local_span, span, iterations, equations, gate, margin)
    if any(v is None for v in args):  # the defaults in their place first: kept like other numbers
        # (an "lpc" stage built with no tuning checked the defaults' six numbers each time:
        # about 20 us, a stage a short file's chains)
        defaults = _reweight_defaults()
        args = tuple(defaults[k] if v is None else v for k, v in zip(_REWEIGHT_KEYS, args))
    key = None
    if all(type(v) in _PLAIN for v in args):
        key = tuple((type(v), v) for v in args)
        found = _TUNINGS.get(key)
        if found is not None:
            return found
    found = _reweight_tuning_checked(*args)
    if key is not None and len(_TUNINGS) < 64:
        _TUNINGS[key] = found
    return found


#: :func:`_reweight_tuning`'s checked tunings, by their arguments' types and values (ints and floats
#: only: their checks depend on nothing else); at most 64 kept
_TUNINGS: dict[tuple, tuple[int, int, int, int, float, float]] = {}


_PLAIN = (int, float)  #: (a None is the default settings' number by then)


def _reweight_tuning_checked(local_span: Any, span: Any, iterations: Any, equations: Any, gate: Any,
                             margin: Any) -> tuple[int, int, int, int, float, float]:
    """:func:`_reweight_tuning` without its cache."""
    given = {"local_span": local_span, "span": span, "iterations": iterations, "equations": equations,
             "gate": gate, "margin": margin}
    if any(v is None for v in given.values()):
        defaults = _reweight_defaults()
        given = {k: defaults[k] if v is None else v for k, v in given.items()}
    ints = [check_int(k, given[k], 1, 1 << 30) for k in ("local_span", "span", "iterations", "equations")]
    floats = []
    for k in ("gate", "margin"):
        v = given[k]
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"{k} must be a number, got {type(v).__name__}")
        if np.isnan(v):
            raise ValueError(f"{k} must not be NaN")
        floats.append(float(v))
    return (*ints, *floats)


def _geometric(total: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Bits of ``counts`` zigzag magnitudes summing to ``total``, under the geometric law of
    their mean (elementwise)."""
    m = total / np.maximum(counts, 1)
    # the same floats as ``(1 + m) * log2(1 + m) - where(m > 0, m * log2(where(m > 0, m, 1)), 0)``
    # in half the numpy calls (about 20 -> 11 us on a short file's 80 spans, 144 calls a pass
    # over the 32 audio files): 1 + m made once; at m == 0 the product m * log2(1) is +0.0, the
    # value the outer where gave; m >= 0 and finite (sums of magnitudes over counts >= 1), so no
    # division by zero or invalid value to silence
    p = 1 + m
    return counts * (p * np.log2(p) - m * np.log2(np.where(m > 0, m, 1.0)))


def _local_bits(r: np.ndarray, span: int) -> float:
    """Bits of the residual ``r`` under one geometric law per ``span`` samples of its zigzag
    magnitudes (from ``r[0]``): with the refit's ``local_span``, its cost to a coder that follows the
    residual's loudness; with the LPC block, the cost the analysis minimises."""
    n = r.shape[0]
    if n == 0:
        return 0.0
    starts = np.arange(0, n, span)
    counts = np.full(starts.shape[0], float(span))
    counts[-1] = n - starts[-1]
    return float(_geometric(_span_totals(r, n, span, starts.shape[0]), counts).sum())


def _block_bits(totals: np.ndarray, n: int, block: int) -> float:
    """:func:`_local_bits` ``(r, block)`` of the residual ``r`` of ``n`` samples whose magnitudes
    summed by block are ``totals`` (int64, :func:`_forward_signal`'s: the same integers, so the
    same float)."""
    if n == 0:
        return 0.0
    counts = np.full(totals.shape[0], float(block))
    counts[-1] = n - (totals.shape[0] - 1) * block
    return float(_geometric(2.0 * totals.astype(np.float64), counts).sum())


def _span_totals(r: np.ndarray, block: int, span: int, spans: int, narrow: bool = False) -> np.ndarray:
    """The sum of the zigzag magnitudes 2 |r| (float64) of each span of ``span`` samples from
    each block's start (``spans`` of them): as ``np.add.reduceat`` of 2 |r| gives them (every
    partial sum exact), by a compiled pass of integer sums for residuals of at most 32 bits:
    a dtype of at most 4 bytes, or ``narrow`` (the caller's int64 residual of a signal of at
    most 32 bits: each |r| below 2**32, every sum exact either way; the refit's block costs on
    ECG's 108 000 values took three 864 KB float64 temporaries and a reduceat)."""
    if r.dtype.itemsize <= 4 or narrow:
        out = np.empty(spans, np.int64)
        _fast.span_magnitudes(r, block, span, out)
        return 2.0 * out.astype(np.float64)
    z = 2.0 * np.abs(r.astype(np.float64))
    n = r.shape[0]
    starts = (np.arange(0, n, block)[:, None] + np.arange(0, min(block, n), span)[None, :]).ravel()
    starts = starts[starts < n]
    starts.sort()
    return np.add.reduceat(z, starts)


def _block_costs(r: np.ndarray, block: int, local_span: int, narrow: bool = False,
                 spans: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per block of ``block`` samples of the residual ``r``: its bits under one geometric law
    for the whole block (what :func:`ubpe._kernels.predict.lpc_analyze` minimises) and under one
    per ``local_span`` samples from the block's start (:func:`_local_bits` of the block);
    ``narrow``: as :func:`_span_totals`'; ``spans``: ``r``'s magnitudes summed by those spans
    when the caller has them (int64, :func:`_forward_signal`'s; the same integers)."""
    n = r.shape[0]
    bcounts, counts, block_of = _block_layout(n, block, local_span)
    if spans is not None:
        totals = 2.0 * spans.astype(np.float64)  # (_span_totals' floats of the same integers)
    else:
        totals = _span_totals(r, block, local_span, counts.shape[0], narrow)
    whole = _geometric(np.bincount(block_of, totals, minlength=bcounts.shape[0]), bcounts)
    local = np.bincount(block_of, _geometric(totals, counts), minlength=bcounts.shape[0])
    return whole, local


def _block_layout(n: int, block: int, local_span: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_block_costs`' spans of ``n`` samples: each block's samples and each span's (float64)
    and each span's block (every block cut into spans of ``local_span`` from its start), kept
    by ``(n, block, local_span)`` (:data:`_LAYOUTS`: a refit's costs made the same arrays each
    time, a dozen numpy calls). Not to be written to."""
    key = (n, block, local_span)
    found = _LAYOUTS.get(key)
    if found is not None:
        return found
    bstarts = np.arange(0, n, block)
    bcounts = np.diff(np.append(bstarts, n)).astype(np.float64)
    offsets = np.arange(0, min(block, n), local_span)
    starts = (bstarts[:, None] + offsets[None, :]).ravel()
    starts = starts[starts < n]  # (spans never cross a block's end: each block starts one)
    starts.sort()
    counts = np.diff(np.append(starts, n)).astype(np.float64)
    found = (bcounts, counts, starts // block)
    for a in found:
        a.flags.writeable = False
    if len(_LAYOUTS) >= 32:
        _LAYOUTS.pop(next(iter(_LAYOUTS)), None)
    _LAYOUTS[key] = found
    return found


#: :func:`_block_layout`'s arrays by ``(n, block, local_span)`` (at most 32, the oldest dropped)
_LAYOUTS: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def lpc_reweight(x: Any, residual: Any, params: dict, *, max_order: int = MAX_ORDER,
                 precisions: tuple[int, ...] = _PRECISIONS, local_span: int | None = None, span: int | None = None,
                 iterations: int | None = None, equations: int | None = None, gate: float | None = None,
                 margin: float | None = None) -> tuple[np.ndarray, dict]:
    """:func:`lpc_forward`'s result for ``x`` with the predictors of some blocks refitted for
    a signal whose loudness moves within a block (same params layout, decoded alike).

    Why: the analysis minimises a block's residual *energy*, which the loudest samples
    dominate: on a signal of bursts (a tone switched on and off over EEG noise, events over a
    seismometer's background) the predictor fits the bursts and whitens the quiet stretches
    badly, although the coders pay about ``log2`` of the residual's *local* scale a sample
    (they follow its loudness). The refit minimises the residual energy with each sample's
    equation weighted by the inverse square of the residual's local scale (iteratively
    reweighted least squares: the local scale of the previous fit), which approximately
    minimises that cost.

    Only blocks whose residual's loudness moves (``gate``) are refitted, and a refit is
    kept when its cost per ``local_span`` samples (:func:`_local_bits`, coefficients included) is
    lower than the block's own by more than ``margin`` bits a sample. Unchanged blocks
    keep their bytes. Each refit is one compiled call (:func:`ubpe._kernels.predict.reweight_fit`:
    its own Gram matrix and Cholesky factor, no BLAS, so the same predictors on any machine and
    thread count). ``x``, ``residual`` and ``params``: exactly as :func:`lpc_forward` took and
    returned them; ``max_order`` and ``precisions`` as its own. The tuning, ``local_span``, ``span``,
    ``iterations``, ``equations``, ``gate`` and ``margin``: the planner's (``lpc_local_span`` and
    ``lpc_reweight_*`` of :class:`ubpe.planner.settings.Settings`, documented there), its
    defaults for each one not given.
    """
    s, dtype, mode = as_signal(x)
    r = residual_in(residual, "residual")
    bits = 8 * dtype.itemsize
    n = s.shape[0]
    if r.shape[0] != n or np.asarray(residual).dtype.itemsize != dtype.itemsize:
        raise ValueError(f"residual must be lpc_forward's for x: {n} values of {bits} bits")
    block, orders, shifts, coefs = check_lpc_params(params, n, np.dtype(f"i{bits // 8}"))
    max_order = check_int("max_order", max_order, 0, MAX_ORDER)
    if isinstance(precisions, (str, bytes)) or not hasattr(precisions, "__iter__"):
        raise TypeError(f"precisions must be a sequence of ints, got {type(precisions).__name__}")
    precs = [check_int("precisions[]", p, 2, MAX_PRECISION) for p in precisions]
    if not precs:
        raise ValueError("precisions must not be empty")
    precision = max(precs)  # a narrow notch (zeros near the unit circle) needs fine coefficients
    tuning = _reweight_tuning(local_span, span, iterations, equations, gate, margin)
    pbits = np.frombuffer(params["precisions"], np.uint8).astype(np.int64)
    return _reweight_signal(s, dtype, r, residual, params, (block, orders, shifts, pbits, coefs), max_order,
                            precision, tuning)


def _reweight_signal(s: np.ndarray, dtype: np.dtype, r: np.ndarray | None, residual: np.ndarray, params: dict,
                     parsed: tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray], max_order: int,
                     precision: int, tuning: tuple[int, int, int, int, float, float],
                     spans: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """:func:`lpc_reweight` of the signal ``s, dtype`` (:func:`as_signal`'s) with its arguments
    checked: ``residual`` and ``params`` :func:`lpc_forward`'s, ``r`` the residual as int64
    (:func:`residual_in`; None: made here when a block is refitted), ``parsed`` the params as
    ``(block, orders, shifts, precisions, coefs)`` (int64 arrays, :func:`check_lpc_params`'),
    ``precision`` the largest of the precisions, ``tuning`` :func:`_reweight_tuning`'s, ``spans``
    the residual's magnitudes summed by spans of ``local_span`` samples from each block's start
    (:func:`_forward_signal`'s, or None)."""
    local_span, span, iterations, equations, gate, margin = tuning
    block, orders, shifts, pbits, coefs = parsed
    bits = 8 * dtype.itemsize
    n = s.shape[0]
    if n == 0 or max_order == 0:
        return residual, params
    # (the residual in its width where it is at most 32 bits: the same sums as of its int64 values)
    narrow = np.asarray(residual)
    if r is None and not (narrow.dtype.itemsize <= 4 and narrow.dtype.isnative and narrow.dtype.kind == "i"
                          and narrow.ndim == 1):
        r = residual_in(residual, "residual")
    whole, local = _block_costs(r if r is not None else narrow, block, local_span, bits <= 32, spans)
    counts = np.minimum(block, n - np.arange(0, n, block))
    moving = np.flatnonzero(whole - local >= gate * counts)
    if moving.size == 0:
        return residual, params
    starts = np.concatenate(([0], np.cumsum(orders)))
    per_block = [coefs[starts[b]:starts[b + 1]] for b in range(orders.shape[0])]
    orders, shifts, pbits = orders.copy(), shifts.copy(), pbits.copy()
    q = np.zeros(max_order, np.int64)
    changed = False
    fast = bits <= 32 and block < 1 << 20
    if r is None and not fast:
        r = residual_in(residual, "residual")
    # (the fast kernel reads the residual in its width where it is at most 32 bits: ECG's int64
    # copy took 864 KB of fresh pages a refit)
    fit_r = r if r is not None else narrow
    refitted = []
    # the fast kernel's residual of each refit kept (its last cost's: the block's lpc_residual),
    # in the signal's width (a block's worth of bytes at most as many as the output's)
    kept: dict[int, np.ndarray] = {}
    for b in moving.tolist():
        lo, hi = b * block, min(n, (b + 1) * block)
        if fast:
            fitted = np.empty(hi - lo, f"i{bits // 8}")
            fit_bits, k, shift = _fast.reweight_fit(s, fit_r, lo, hi, max_order, precision, 64 - bits, iterations,
                                                    span, equations, local_span, q, fitted)
        else:  # (the same result, no residual kept)
            fit_bits, k, shift = _k.reweight_fit(s, fit_r, lo, hi, max_order, precision, 64 - bits, iterations,
                                                 span, equations, local_span, q)
        if k and fit_bits < local[b] + orders[b] * pbits[b] - margin * (hi - lo):
            orders[b], shifts[b], per_block[b], pbits[b] = k, shift, q[:k].copy(), precision
            changed = True
            refitted.append(b)
            if fast:
                kept[b] = fitted
    if not changed:
        return residual, params
    coefs = np.concatenate(per_block)
    res = np.empty(n, f"i{bits // 8}")  # (in the signal's width, as lpc_forward's)
    if narrow.dtype == res.dtype and narrow.ndim == 1 and len(kept) == len(refitted):
        # the residual as it was but in the refitted blocks, each the refit's own
        res[:] = narrow
        for b in refitted:
            res[b * block:min(n, (b + 1) * block)] = kept[b]
    elif narrow.dtype == res.dtype and narrow.ndim == 1 and 2 * len(refitted) <= orders.shape[0]:
        # the residual as it was but in the refitted blocks, each from its samples and the
        # MAX_ORDER before it (lpc_residual of that stretch as one block: the samples it predicts
        # from are the signal's, so the same residuals; from the signal's start, as it is)
        res[:] = narrow
        for b in refitted:
            lo, hi = b * block, min(n, (b + 1) * block)
            pad = min(lo, MAX_ORDER)
            part = np.empty(hi - lo + pad, res.dtype)
            first = int(orders[:b].sum())  # (the refitted orders: coefs is the new one)
            _fast.lpc_residual(s[lo - pad:hi], hi - lo + pad, orders[b:b + 1], shifts[b:b + 1],
                               coefs[first:first + orders[b]], 64 - bits, part)
            res[lo:hi] = part[pad:]
    else:
        _fast.lpc_residual(s, block, orders, shifts, coefs, 64 - bits, res)
    out = dict(params, orders=orders.astype(np.uint8).tobytes(), shifts=shifts.astype(np.uint8).tobytes(),
               precisions=pbits.astype(np.uint8).tobytes(), coefs=_pack_coefs(coefs, np.repeat(pbits, orders)))
    return res, out



#: LPC block lengths the lpc stage tries on each channel by default (the cheapest by estimated
#: bits wins): FLAC's 4096 for signals whose spectrum moves, and 16384 for steadier ones,
#: whose coefficients then cost a quarter (up to 32 x 15 bits a block). An "adaptive" stage
#: after the LPC tracks what a long block misses. Unseen recordings, default level:
#: seis-ayt-bhz 19 428 -> 19 287 B, bvp-plux 17 652 -> 17 387 B; shared/data ecg
#: (lpc+adaptive) 56 740 -> 56 545 B. Inputs of at most 4096 frames: one block either way,
#: the bytes of (4096,).
LPC_BLOCKS: tuple[int, ...] = (4096, 16384)


#: The last few channels the lpc stage analysed, by content and options, kept only within
#: :func:`analysis_cache` (the planner's search: it puts the same channel through several
#: chains that start with the stage, "lpc" and "lpc+adaptive", on the screen's samples and on
#: all the values), and dropped when the last such scope ends, so that nothing outlives a
#: ``compress`` call. Key: (the channel's dtype and length, the options (the refit's tuning
#: included); j = 0, 1, ... for channels alike in those); value: (a copy of the channel, or its
#: digest beyond :data:`_ANALYSED_HELD` bytes of copies; (residual, params), never handed out:
#: copies are). One entry an analysis.
_ANALYSIS = _memo.CallScope()
_ANALYSED: dict[tuple, tuple[np.ndarray | bytes, tuple[np.ndarray, dict]]] = _ANALYSIS.entries


_ANALYSED_MAX = 16


#: The channels' bytes the cache keeps copies of (to compare a channel with: ``np.array_equal``,
#: about 15 us for ECG's 108 000 values); beyond, it keeps their digests (:mod:`ubpe._memo`; a
#: BLAKE2b of those values took about 0.25 ms, 2.5 ms of ECG's level-2 compress when every
#: analysis hashed)
_ANALYSED_HELD = 1 << 25


#: Largest residual kept (bytes): the planner's reuse is on inputs of at most ``Settings.full_fit``
#: values and on samples; a blocked container's blocks are analysed once each, and keeping
#: them would hold memory its writer bounds to a few blocks per thread.
_ANALYSED_BYTES = 1 << 22


def analysis_cache() -> contextlib.AbstractContextManager[None]:
    """Within it (any thread), the lpc stage keeps its last :data:`_ANALYSED_MAX` analyses by
    content; when the last open scope ends they are dropped. Scopes nest and may overlap
    across threads (:class:`ubpe._memo.CallScope`)."""
    return _ANALYSIS.open()


@register
class LpcStage(PerChannel):
    """Exact block LPC per channel (:func:`lpc_forward`).

    Options (the writer's search; the format and the decoder do not depend on them):
    ``window``, one window name or several (each block keeps the cheapest predictor under any),
    ``blocks``, block lengths tried on each channel, which keeps the one whose residual plus
    coefficients costs the fewest estimated bits, and ``reweight``: then refit the blocks
    whose residual's loudness moves by loudness-weighted least squares
    (:func:`lpc_reweight`), with ``reweight_options``, its tuning (keywords of
    :func:`lpc_reweight`; the planner passes its settings', ``Settings.lpc_reweight_options``),
    ``candidates``, ``costed_every`` and ``high_gain``, :func:`lpc_forward`'s search
    (the fast level costs fewer orders on fewer samples, and solves smooth blocks without the
    white-noise floor too). The defaults: ``"tukey"`` (as
    :func:`lpc_forward`), :data:`LPC_BLOCKS`, 3 orders on every sample and no reweighting
    (``planner.build_chain`` asks for it when the stage ends the chain; a following "adaptive"
    stage does better on the plain residual), the default settings' tuning. Within :func:`analysis_cache`, results are kept by
    content (:data:`_ANALYSED`).
    """

    name = "lpc"
    number = 1  #: its number on the wire (``ubpe.format.container.STAGES``)
    _forward = staticmethod(lpc_forward)
    _inverse = staticmethod(lpc_inverse)
    _check = staticmethod(check_lpc_params)

    def __init__(self, window: str | tuple[str, ...] | list[str] = "tukey",
                 blocks: tuple[int, ...] | list[int] | None = None, reweight: bool = False,
                 candidates: int = 3, costed_every: int = 1, reweight_options: dict | None = None,
                 high_gain: float = 0.0) -> None:
        blocks = LPC_BLOCKS if blocks is None else blocks
        self.candidates = check_int("candidates", candidates, 1, MAX_ORDER)
        self.costed_every = check_int("costed_every", costed_every, 1, 64)
        self.high_gain = check_high_gain(high_gain)
        if isinstance(blocks, (str, bytes)) or not hasattr(blocks, "__iter__"):
            raise TypeError(f"blocks must be a sequence of ints, got {type(blocks).__name__}")
        self.blocks = tuple(check_int("blocks[]", b, 1, MAX_BLOCK) for b in blocks)
        if not self.blocks:
            raise ValueError("blocks must name at least one block length")
        self.window = window if isinstance(window, str) else tuple(window)
        self.reweight = bool(reweight)
        options = {} if reweight_options is None else reweight_options
        if not isinstance(options, dict):
            raise TypeError(f"reweight_options must be a dict, got {type(options).__name__}")
        unknown = set(options) - set(_REWEIGHT_KEYS)
        if unknown:
            raise TypeError(f"reweight_options: unknown option {sorted(unknown)[0]!r} (known: {', '.join(_REWEIGHT_KEYS)})")
        #: the refit's tuning, every keyword of :func:`lpc_reweight` given (checked)
        self.reweight_options = dict(zip(_REWEIGHT_KEYS, _reweight_tuning(*(options.get(k) for k in _REWEIGHT_KEYS))))
        if not (isinstance(window, str) and window in WINDOWS):  # (a window's name: valid)
            lpc_forward(np.zeros(0, np.int16), window=self.window)  # the window's errors now

    def _kinds(self) -> np.ndarray:
        """The numbers of the stage's windows (int64), as :func:`lpc_forward` checks them."""
        names = (self.window,) if isinstance(self.window, str) else self.window
        return np.array([WINDOWS[check_choice("window", name, WINDOWS)] for name in names], np.int64)

    def _analysed(self, row: np.ndarray, reweight: bool, signal: tuple | None = None,
                  out: list | None = None) -> tuple[np.ndarray, dict]:
        """The channel ``row``'s residual and params (cached; the caller must not modify them).
        ``signal``: the row's :func:`as_signal`, when the caller has it; ``out`` (the plain
        analysis, not from the cache): given the block length, the params as arrays and the
        residual's span sums by the refit's ``local_span`` (:func:`_forward_signal`'s)."""
        key = None
        if _ANALYSIS.depth and row.nbytes <= _ANALYSED_BYTES:  # (the residual is as wide as the input)
            key = (row.dtype.str, row.shape[0], self.blocks, self.window, self.candidates,
                   self.costed_every, self.high_gain, reweight and tuple(self.reweight_options.values()))
            found = _memo.lookup(_ANALYSED, key, row)
            if found is not None:
                return found
        # the channel as int64 once for every block length and the refit (as_signal; ECG's 864 KB
        # were made by each call), the windows' numbers once (lpc_forward's checks)
        signal = as_signal(row) if signal is None else signal
        if reweight:
            parsed: list = []
            r, p = self._analysed(row, False, signal, parsed)
            if parsed:
                block, (orders, shifts, pbits, coefs), spans = parsed
                tuning = _reweight_tuning(*(self.reweight_options[k] for k in _REWEIGHT_KEYS))
                found = _reweight_signal(signal[0], signal[1], None, r, p, (block, orders, shifts, pbits, coefs),
                                         MAX_ORDER, max(_PRECISIONS), tuning, None if spans is None else spans[0])
            else:  # (the plain analysis from the cache: its params parsed again)
                found = lpc_reweight(row, r, p, **self.reweight_options)
        else:
            best, covered = None, False
            kinds = self._kinds()
            # (each residual's magnitudes by the refit's spans, summed as it is made: the block
            # cost below and the refit's block costs from them, two passes over it less)
            span = self.reweight_options["local_span"]
            last = len(self.blocks) - 1
            for k, block in enumerate(self.blocks):
                if covered:  # a block already tried held the whole channel: the same predictor
                    continue
                covered = block >= row.shape[0]
                r, p, arrays, spans = _forward_signal(*signal, block, MAX_ORDER, kinds, list(_PRECISIONS),
                                                      self.candidates, self.costed_every, self.high_gain, span)
                if best is None and (covered or k == last):
                    # the only block length tried (no other runs after it): its cost is compared
                    # with none, so not estimated (the screen's 4096-value windows: a block held
                    # each; ECG's four estimates were about 75 us of a 4.2 ms compress)
                    best = (None, r, p, (block, arrays, spans))
                    continue
                bits = _local_bits(r, block) if spans is None else _block_bits(spans[1], r.shape[0], block)
                cost = bits + 8 * len(p["coefs"]) + 24 * len(p["orders"])
                if best is None or cost < best[0]:
                    best = (cost, r, p, (block, arrays, spans))
            found = best[1:3]
            if out is not None:
                out.extend(best[3])
        if key is None:
            return found
        with _ANALYSIS.lock:
            if not _ANALYSIS.depth:  # the scope ended while this analysis ran
                return found
            if len(_ANALYSED) >= _ANALYSED_MAX:
                _ANALYSED.pop(next(iter(_ANALYSED)), None)
            _memo.store(_ANALYSED, key, row, found, _ANALYSED_HELD, copy=True)
        return found

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        if x.dtype.kind not in "iu":
            raise TypeError(f"the {self.name} stage takes integer values, got dtype {x.dtype}")
        y = np.empty(x.shape, dtype=self.output_dtype(x.dtype, {}))
        params = []
        for i, row in enumerate(x):
            r, p = self._analysed(np.ascontiguousarray(row), self.reweight)
            y[i] = r
            params.append(dict(p))
        return y, {"channels": params}

    def _inverse_checked(self, y: np.ndarray, parsed: list, channels: list) -> np.ndarray:
        itemsize = y.dtype.itemsize
        out = np.empty(y.shape, dtype=f"i{itemsize}")
        for c, (block, orders, shifts, coefs) in enumerate(parsed):
            r = y[c].view(f"i{itemsize}").astype(np.int64)
            _k.lpc_filter(r, block, orders, shifts, coefs, 64 - 8 * itemsize, True, r)  # in place
            out[c] = r  # exact: every reconstruction is wrapped to the width already
            if channels[c]["unsigned"] == UNSIGNED:
                out[c] = signed_bits(out[c], UNSIGNED)  # undo the offset
        return out


def fused_params(entry: dict) -> tuple[list[tuple[int, np.ndarray, np.ndarray, np.ndarray]], int] | None:
    """For a decoder that inverts the stage itself (``ubpe.coders.mag.decode_with_lpc``): an
    ``"lpc"`` entry of a checked chain (:func:`ubpe.frontend.parse_chain`) as each channel's
    ``(block, orders, shifts, coefs)`` (what :func:`check_lpc_params` returns) and the ``unsigned``
    param they share; None when the entry was not checked or its channels differ in it."""
    channels = entry["channels"]
    parsed = getattr(channels, "parsed", None)
    if parsed is None:
        return None
    modes = {p["unsigned"] for p in channels}
    return (parsed, modes.pop()) if len(modes) == 1 else None


def reconstruct_rows(rows: np.ndarray, parsed: list, bits: int) -> None:
    """Invert the stage in place on int64 residuals ``rows`` ``(C, F)`` (C-contiguous; any
    integers congruent to the residuals modulo ``2**bits``) of a checked entry: ``parsed`` its
    channels as :func:`fused_params` gives them (one per row, checked for ``F`` frames), each
    reconstruction wrapped to a signed integer of ``bits`` bits (the kernel's arithmetic is
    modulo ``2**64``, so wrapped residuals give the same samples)."""
    for c, (block, orders, shifts, coefs) in enumerate(parsed):
        row = rows[c]
        _k.lpc_filter(row, block, orders, shifts, coefs, 64 - bits, True, row)  # in place


#: Delta orders as the LPC a fused decoder runs (shift 0; coefficients of lags 1, 2, ...): order
#: 1 predicts x[i-1], order 2 2 x[i-1] - x[i-2], and the kernel's first samples (0 as is, 1
#: predicted by sample 0) are those of the running sums. (Order 3 differs at sample 2.)
DELTA_AS_LPC = {1: np.array([1], np.int64), 2: np.array([2, -1], np.int64)}
