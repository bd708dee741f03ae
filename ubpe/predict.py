"""Prediction front ends for sensor signals: exact block LPC, sign-sign LMS cascades, value grids.

Each transform is a pure, reversible pair ``*_forward(x) -> (y, params)`` /
``*_inverse(y, params) -> x`` whose ``params`` is a plain dict of ints, lists of ints and bytes
(msgpack-ready) holding everything the inverse needs, plus a ``check_*_params(params, n, dtype)``
that refuses untrusted params with :class:`~ubpe.CorruptDataError` before any kernel runs
(``n`` and ``dtype``: the length and integer dtype of the transformed values ``y``; the
original dtype is recorded in the params). Every transform takes one channel, a 1-D array.

Why the round trips are bit-exact for every input, 64-bit extremes included
--------------------------------------------------------------------------
A sample of a ``bits``-wide dtype is carried as the int64 sign extension of a *signed*
``bits``-wide value: a signed sample as itself; an unsigned one (``unsigned`` 2, what
:func:`lpc_forward` and :func:`adaptive_forward` write) as ``x - 2**(bits-1)``, i.e. its top bit
flipped and the bits read as signed, an order-preserving map, so a signal crossing the middle
of the unsigned range stays continuous for the predictors. Format versions 1 to 5 knew only
``unsigned`` 1: the unsigned bits reinterpreted as signed, which puts a jump of ``2**bits``
where the signal crosses ``2**(bits-1)`` (a predictor then mispredicts around each crossing;
still exact, only larger); readers keep decoding it. A prediction
``p`` is a function of previous samples and of params only; it is summed in uint64, whose
arithmetic is defined to wrap modulo 2**64, then reinterpreted as int64 and shifted
arithmetically. The residual is ``r = (x - p) mod 2**bits`` and the inverse computes
``x = (r + p) mod 2**bits``. The decoder rebuilds the same previous samples before it needs
them, so it computes the very same ``p`` (overflow included: it is deterministic), and
``(x - p) + p = x`` holds in the ring Z / 2**bits. Residuals are returned as the signed integer
type of the input's width; the inverse returns the input's dtype (native byte order).

* :func:`lpc_forward`: per block (default 4096 samples) windowed autocorrelation, Levinson-Durbin,
  coefficients quantized with a shift as FLAC does, order (up to 32) and precision chosen by the
  bits they cost. A block's first samples are predicted from the previous block's tail; only the
  signal's first ``order`` samples fall back to the previous sample.
* :func:`lpc_reweight` (writer only): :func:`lpc_forward`'s result with the blocks whose
  residual's loudness moves refitted by loudness-weighted least squares (the analysis
  minimises residual energy, which bursts dominate; the coders pay for the log of the local
  scale); same params, same decoder.
* :func:`adaptive_forward`: a cascade of sign-sign LMS stages that stores no coefficients;
  decoding repeats the same integer adaptation.
* :func:`grid_forward`: values on ``offset + step * k`` become ``k`` in the smallest unsigned dtype.
* :func:`rank_forward`: each value becomes its rank among the distinct values, which are stored
  gap-coded. For signals on an inexact grid (an ADC whose levels are ~64 apart with 65 now and
  then) this is the grid that exists: prediction then works on levels, not on raw codes.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ._kernels import predict as _k
from ._validate import check_choice, check_int, expect_map, field_bytes, field_int, short
from .errors import CorruptDataError

__all__ = [
    "lpc_forward",
    "lpc_inverse",
    "check_lpc_params",
    "lpc_reweight",
    "adaptive_forward",
    "adaptive_inverse",
    "check_adaptive_params",
    "grid_forward",
    "grid_inverse",
    "check_grid_params",
    "rank_forward",
    "rank_inverse",
    "check_rank_params",
    "DEFAULT_STAGES",
]

MAX_ORDER = 32
MAX_PRECISION = 16
MAX_SHIFT = 31
MAX_BLOCK = 1 << 24
MAX_STAGES = 8
MAX_STAGE_ORDER = 1024
MAX_STAGE_SHIFT = 28
#: rank_forward counts values with a table over the whole dtype (<= 16 bits) when it has at
#: least 2**bits / RANK_TABLE values; shorter inputs are sorted instead (same result)
RANK_TABLE = 16
WINDOWS = {"none": 0, "welch": 1, "tukey": 2, "hann": 3, "tukey25": 4}
# Default cascade (normalized rule): a long, slowly adapting stage for the spectrum's shape
# (resonances, long correlations), then short, fast stages for what changes from moment to moment.
DEFAULT_STAGES: tuple[tuple[int, int, int], ...] = ((256, 17, 1), (32, 14, 1), (4, 11, 1))


# ============================================================================ shared helpers


#: ``unsigned`` param values: a signed input; an unsigned input whose bits are read as signed
#: (format versions 1 to 5, still decoded); an unsigned input offset by ``-2**(bits-1)``
#: (order-preserving, format version 6, what the writer uses)
SIGNED, UNSIGNED_VIEW, UNSIGNED_OFFSET = 0, 1, 2
#: The ``unsigned`` mode the forward transforms write for an unsigned input when not told
#: (``unsigned_mode=None``); tests/fixtures/make_fixtures.py sets it to 1 to reproduce the
#: containers of format versions 2 to 5.
WRITE_UNSIGNED = UNSIGNED_OFFSET


def _signed_bits(arr: np.ndarray, unsigned: int) -> np.ndarray:
    """The native integer array ``arr`` as the signed values of its width that the predictors
    see: itself (``unsigned`` 0 or 1: the bits reinterpreted) or, for ``unsigned`` 2, with its
    top bit flipped first (``x - 2**(bits-1)`` for an unsigned ``x``). An involution on bits:
    applying it to the signed output of the inverse (as unsigned) restores the input's bits."""
    k = arr.dtype.itemsize
    if unsigned == UNSIGNED_OFFSET:
        return (arr.view(f"u{k}") ^ np.array(1 << (8 * k - 1), f"u{k}")).view(f"i{k}")
    return arr.view(f"i{k}")


def _signal(x: Any, name: str = "x", unsigned_mode: int | None = None) -> tuple[np.ndarray, np.dtype, int]:
    """``x`` as int64 sign extensions of the signed values the predictors see, its dtype, and
    the ``unsigned`` param recorded: 0 for a signed ``x``, else ``unsigned_mode`` (1 or 2;
    None: :data:`WRITE_UNSIGNED`)."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}; call once per channel")
    unsigned_mode = check_int("unsigned_mode", WRITE_UNSIGNED if unsigned_mode is None else unsigned_mode,
                              UNSIGNED_VIEW, UNSIGNED_OFFSET)
    dtype = arr.dtype.newbyteorder("=")
    mode = unsigned_mode if dtype.kind == "u" else SIGNED
    return _signed_bits(np.ascontiguousarray(arr, dtype=dtype), mode).astype(np.int64), dtype, mode


def _restore(values: np.ndarray, unsigned: int, bits: int) -> np.ndarray:
    """int64 sign extensions back to the dtype of ``bits`` and the ``unsigned`` mode (0, 1, 2)."""
    out = _signed_bits(values.astype(f"i{bits // 8}"), unsigned)
    return out.view(f"u{bits // 8}") if unsigned else out


def _residual_in(y: Any, name: str) -> np.ndarray:
    arr = np.asarray(y)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    dtype = arr.dtype.newbyteorder("=")
    return np.ascontiguousarray(arr, dtype=dtype).view(f"i{dtype.itemsize}").astype(np.int64)


def _bits_of(dtype: Any, where: str) -> int:
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"dtype must be a numpy integer dtype, got {dtype!r}") from exc
    if dt.kind not in "iu":
        raise TypeError(f"dtype must be an integer dtype, got {dt}")
    return 8 * dt.itemsize


def _field_unsigned(params: dict, where: str, modes: int = UNSIGNED_VIEW) -> int:
    """The ``unsigned`` field: 0 or 1 for the value stages (rank, grid: signedness only); up
    to ``modes`` = 2 for the predictors (lpc, adaptive), whose 1 and 2 differ (see SIGNED)."""
    return field_int(params, "unsigned", 0, modes, where=where)


# ============================================================================ coefficient packing


def _pack_coefs(coefs: np.ndarray, widths: np.ndarray) -> bytes:
    """Each coefficient as ``width`` bits of two's complement, little-endian bit order."""
    if coefs.size == 0:
        return b""
    t = np.arange(MAX_PRECISION, dtype=np.int64)
    raw = coefs.astype(np.int64) & ((np.int64(1) << widths) - 1)
    bits = ((raw[:, None] >> t) & 1).astype(np.uint8)
    return np.packbits(bits[t[None, :] < widths[:, None]], bitorder="little").tobytes()


# ============================================================================ block LPC


def lpc_forward(
    x: Any,
    *,
    block: int = 4096,
    max_order: int = MAX_ORDER,
    window: str | tuple[str, ...] = "tukey",
    precisions: tuple[int, ...] = (12, 15),
    unsigned_mode: int | None = None,
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
    unsigned_mode : int or None
        How an unsigned ``x`` is carried (see :data:`UNSIGNED_OFFSET`): 2, offset to signed
        (order-preserving; format version 6); 1, bits reinterpreted (what versions 1 to 5
        wrote; kept to reproduce them); None (default), :data:`WRITE_UNSIGNED` (2). Ignored
        for a signed ``x``.

    Returns
    -------
    residual : ndarray of the signed integer type of ``x``'s width, same length
        ``(x - prediction) mod 2**bits``.
    params : dict
        ``block``, ``unsigned`` (0 signed, else ``unsigned_mode``), ``orders``, ``shifts``, ``precisions`` (one byte per
        block) and ``coefs`` (each block's ``order`` coefficients, ``precision`` bits each,
        two's complement, bit-packed little-endian).
    """
    s, dtype, mode = _signal(x, unsigned_mode=unsigned_mode)
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
    bits = 8 * dtype.itemsize
    n = s.shape[0]
    nb = -(-n // block)
    orders = np.zeros(nb, np.int64)
    shifts = np.zeros(nb, np.int64)
    pbits = np.zeros(nb, np.int64)
    coefs = np.zeros(nb * max_order, np.int64)
    used = _k.lpc_analyze(s, block, max_order, kinds, np.array(precs, np.int64), 64 - bits,
                          orders, shifts, pbits, coefs)
    coefs = coefs[:used]
    res = np.empty(n, np.int64)
    _k.lpc_filter(s, block, orders, shifts, coefs, 64 - bits, False, res)
    params = {
        "block": block,
        "unsigned": mode,
        "orders": orders.astype(np.uint8).tobytes(),
        "shifts": shifts.astype(np.uint8).tobytes(),
        "precisions": pbits.astype(np.uint8).tobytes(),
        "coefs": _pack_coefs(coefs, np.repeat(pbits, orders)),
    }
    return res.astype(f"i{bits // 8}"), params


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
        _bits_of(dtype, where)
    # the usual case, every field as it must be, in one test; else field by field (their messages)
    if type(params) is dict and params.keys() == _LPC_KEYSET:
        block, mode = params["block"], params["unsigned"]
        orders, shifts, precs, data = params["orders"], params["shifts"], params["precisions"], params["coefs"]
        nb = -(-n // block) if type(block) is int and 1 <= block <= MAX_BLOCK else -1
        ok = (type(mode) is int and 0 <= mode <= UNSIGNED_OFFSET and type(orders) is bytes and len(orders) == nb
              and type(shifts) is bytes and len(shifts) == nb and type(precs) is bytes and len(precs) == nb
              and type(data) is bytes and len(data) <= nb * MAX_ORDER * 2)
    else:
        ok = False
    if ok:
        head = orders + shifts + precs
    else:
        p = expect_map(params, where, _LPC_KEYS)
        block = field_int(p, "block", 1, MAX_BLOCK, where=where)
        _field_unsigned(p, where, UNSIGNED_OFFSET)
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
    r = _residual_in(residual, "residual")
    bits = 8 * np.asarray(residual).dtype.itemsize
    block, orders, shifts, coefs = check_lpc_params(params, r.shape[0], f"i{bits // 8}")
    _k.lpc_filter(r, block, orders, shifts, coefs, 64 - bits, True, r)  # in place (see lpc_filter)
    return _restore(r, params["unsigned"], bits)


# ============================================================================ loudness-weighted LPC

#: :func:`lpc_reweight`: a residual's coded cost is estimated with one geometric law per
#: LOCAL_SPAN samples (the coders follow its loudness: "mag"'s running mean, "cms2"'s loudness
#: context), and its local scale for the weights is its mean magnitude over REWEIGHT_SPAN
#: samples (centred), plus one.
LOCAL_SPAN = 64
REWEIGHT_SPAN = 16
#: Weighted least-squares passes per block (each weighs by the previous pass's residual).
REWEIGHT_ITERATIONS = 2
#: Equations a weighted fit takes at most (every ``step``-th sample's of a longer block).
REWEIGHT_EQUATIONS = 1024
#: A block is refitted only when the loudness of its residual moves: its cost per LOCAL_SPAN
#: samples is below its cost under one geometric law for the whole block by at least
#: REWEIGHT_GATE bits a sample. The refit is kept when its cost per LOCAL_SPAN samples
#: (coefficients included) is lower by more than REWEIGHT_MARGIN bits a sample.
REWEIGHT_GATE = 0.05
REWEIGHT_MARGIN = 0.05


def reweight_settings() -> tuple:
    """The module settings :func:`lpc_reweight`'s result depends on (a cache's key)."""
    return (LOCAL_SPAN, REWEIGHT_SPAN, REWEIGHT_ITERATIONS, REWEIGHT_EQUATIONS, REWEIGHT_GATE, REWEIGHT_MARGIN)


def _geometric(total: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Bits of ``counts`` zigzag magnitudes summing to ``total``, under the geometric law of
    their mean (elementwise)."""
    m = total / np.maximum(counts, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        bits = (1 + m) * np.log2(1 + m) - np.where(m > 0, m * np.log2(np.where(m > 0, m, 1)), 0.0)
    return counts * bits


def _local_bits(r: np.ndarray, span: int = LOCAL_SPAN) -> float:
    """Bits of the residual ``r`` under one geometric law per ``span`` samples of its zigzag
    magnitudes (from ``r[0]``): with LOCAL_SPAN, its cost to a coder that follows the
    residual's loudness; with the LPC block, the cost the analysis minimises."""
    n = r.shape[0]
    if n == 0:
        return 0.0
    starts = np.arange(0, n, span)
    counts = np.full(starts.shape[0], float(span))
    counts[-1] = n - starts[-1]
    z = np.abs(r, dtype=np.float64)
    z *= 2.0
    return float(_geometric(np.add.reduceat(z, starts), counts).sum())


def _block_costs(r: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """Per block of ``block`` samples of the residual ``r``: its bits under one geometric law
    for the whole block (what :func:`ubpe._kernels.predict.lpc_analyze` minimises) and under one
    per LOCAL_SPAN samples from the block's start (:func:`_local_bits` of the block)."""
    n = r.shape[0]
    z = 2.0 * np.abs(r.astype(np.float64))
    bstarts = np.arange(0, n, block)
    bcounts = np.diff(np.append(bstarts, n)).astype(np.float64)
    whole = _geometric(np.add.reduceat(z, bstarts), bcounts)
    offsets = np.arange(0, min(block, n), LOCAL_SPAN)
    starts = (bstarts[:, None] + offsets[None, :]).ravel()
    starts = starts[starts < n]  # (spans never cross a block's end: each block starts one)
    starts.sort()
    counts = np.diff(np.append(starts, n)).astype(np.float64)
    local = np.bincount(starts // block, _geometric(np.add.reduceat(z, starts), counts), minlength=bstarts.shape[0])
    return whole, local


def lpc_reweight(x: Any, residual: Any, params: dict, *, max_order: int = MAX_ORDER,
                 precisions: tuple[int, ...] = (12, 15)) -> tuple[np.ndarray, dict]:
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

    Only blocks whose residual's loudness moves (REWEIGHT_GATE) are refitted, and a refit is
    kept when its cost per LOCAL_SPAN samples (:func:`_local_bits`, coefficients included) is
    lower than the block's own by more than REWEIGHT_MARGIN bits a sample. Unchanged blocks
    keep their bytes. Each refit is one compiled call (:func:`ubpe._kernels.predict.reweight_fit`:
    its own Gram matrix and Cholesky factor, no BLAS, so the same predictors on any machine and
    thread count). ``x``, ``residual`` and ``params``: exactly as :func:`lpc_forward` took and
    returned them; ``max_order`` and ``precisions`` as its own.
    """
    s, dtype, mode = _signal(x, unsigned_mode=params["unsigned"] or None)
    r = _residual_in(residual, "residual")
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
    if n == 0 or max_order == 0:
        return residual, params
    pbits = np.frombuffer(params["precisions"], np.uint8).astype(np.int64)
    whole, local = _block_costs(r, block)
    counts = np.minimum(block, n - np.arange(0, n, block))
    moving = np.flatnonzero(whole - local >= REWEIGHT_GATE * counts)
    if moving.size == 0:
        return residual, params
    starts = np.concatenate(([0], np.cumsum(orders)))
    per_block = [coefs[starts[b]:starts[b + 1]] for b in range(orders.shape[0])]
    orders, shifts, pbits = orders.copy(), shifts.copy(), pbits.copy()
    q = np.zeros(max_order, np.int64)
    changed = False
    for b in moving.tolist():
        lo, hi = b * block, min(n, (b + 1) * block)
        fit_bits, k, shift = _k.reweight_fit(s, r, lo, hi, max_order, precision, 64 - bits, REWEIGHT_ITERATIONS,
                                             REWEIGHT_SPAN, REWEIGHT_EQUATIONS, LOCAL_SPAN, q)
        if k and fit_bits < local[b] + orders[b] * pbits[b] - REWEIGHT_MARGIN * (hi - lo):
            orders[b], shifts[b], per_block[b], pbits[b] = k, shift, q[:k].copy(), precision
            changed = True
    if not changed:
        return residual, params
    coefs = np.concatenate(per_block)
    res = np.empty(n, np.int64)
    _k.lpc_filter(s, block, orders, shifts, coefs, 64 - bits, False, res)
    out = dict(params, orders=orders.astype(np.uint8).tobytes(), shifts=shifts.astype(np.uint8).tobytes(),
               precisions=pbits.astype(np.uint8).tobytes(), coefs=_pack_coefs(coefs, np.repeat(pbits, orders)))
    return res.astype(f"i{bits // 8}"), out


# ============================================================================ adaptive cascade


def _check_stages(stages: Any) -> list[list[int]]:
    if isinstance(stages, (str, bytes)) or not hasattr(stages, "__iter__"):
        raise TypeError(f"stages must be a sequence of (order, shift[, rule]) tuples, got {type(stages).__name__}")
    out = []
    for st in stages:
        if isinstance(st, (str, bytes)) or not hasattr(st, "__len__") or len(st) not in (2, 3):
            raise TypeError(f"each stage must be an (order, shift[, rule]) tuple, got {st!r}")
        out.append([check_int("stage order", st[0], 1, MAX_STAGE_ORDER),
                    check_int("stage shift", st[1], 1, MAX_STAGE_SHIFT),
                    check_int("stage rule", st[2], 0, 1) if len(st) == 3 else 1])
    if len(out) > MAX_STAGES:
        raise ValueError(f"at most {MAX_STAGES} stages are allowed, got {len(out)}")
    return out


def adaptive_forward(x: Any, *, stages: Any = DEFAULT_STAGES,
                     unsigned_mode: int | None = None) -> tuple[np.ndarray, dict]:
    """Residual of a cascade of sign-sign LMS predictors (backward-adaptive, no coefficients stored).

    Stage ``m`` predicts its input (the residual of stage ``m - 1``; ``x`` for the first) as
    ``(sum_j w[j] * u[i-1-j] + 2**(shift-1)) >> shift`` with integer weights that start at 0 and
    move after each sample by ``sign(e)`` times an adaptation value of ``u[i-1-j]`` (its sign,
    or its magnitude relative to the running mean, quantized);
    it outputs ``(u - prediction) mod 2**bits``. The larger ``shift``, the slower and finer the
    adaptation.

    Parameters
    ----------
    x : 1-D integer array, any dtype int8..uint64
    stages : sequence of (order, shift) or (order, shift, rule)
        0 to 8 stages, order in [1, 1024], shift in [1, 28], rule 0 (sign-sign) or 1 (sign-error
        with power-of-two normalization, the default); see ``ubpe._kernels.predict.lms_stage``.
        Default :data:`DEFAULT_STAGES`.
    unsigned_mode : int or None
        As :func:`lpc_forward`'s: how an unsigned ``x`` is carried (2 order-preserving, 1 the
        bits reinterpreted as versions 1 to 5 wrote).

    Returns
    -------
    residual : ndarray of the signed integer type of ``x``'s width
    params : dict
        ``stages`` (a list of ``[order, shift, rule]``) and ``unsigned`` (0 signed, else
        ``unsigned_mode``).
    """
    s, dtype, mode = _signal(x, unsigned_mode=unsigned_mode)
    st = _check_stages(stages)
    bits = 8 * dtype.itemsize
    cur = s
    for order, shift, rule in st:
        nxt = np.empty_like(cur)
        _k.lms_stage(cur, order, shift, rule, 64 - bits, False, nxt)
        cur = nxt
    return cur.astype(f"i{bits // 8}"), {"stages": st, "unsigned": mode}


def check_adaptive_params(params: Any, n: int, dtype: Any) -> list[tuple[int, int, int]]:
    """Validate untrusted adaptive params; the stage list as (order, shift, rule) triples."""
    where = "adaptive params"
    _bits_of(dtype, where)
    p = expect_map(params, where, ("stages", "unsigned"))
    _field_unsigned(p, where, UNSIGNED_OFFSET)
    stages = p["stages"]
    if not isinstance(stages, list) or len(stages) > MAX_STAGES:
        raise CorruptDataError(f"{where}: 'stages' must be a list of at most {MAX_STAGES} stages, got {short(stages)}")
    out = []
    for st in stages:
        if not isinstance(st, list) or len(st) != 3:
            raise CorruptDataError(f"{where}: a stage must be an [order, shift, rule] list, got {short(st)}")
        triple = {"order": st[0], "shift": st[1], "rule": st[2]}
        out.append((field_int(triple, "order", 1, MAX_STAGE_ORDER, where=where),
                    field_int(triple, "shift", 1, MAX_STAGE_SHIFT, where=where),
                    field_int(triple, "rule", 0, 1, where=where)))
    return out


def adaptive_inverse(residual: Any, params: Any) -> np.ndarray:
    """Undo :func:`adaptive_forward`: the stages inverted last to first, bit-exact."""
    r = _residual_in(residual, "residual")
    bits = 8 * np.asarray(residual).dtype.itemsize
    stages = check_adaptive_params(params, r.shape[0], f"i{bits // 8}")
    cur = r
    for order, shift, rule in reversed(stages):
        nxt = np.empty_like(cur)
        _k.lms_stage(cur, order, shift, rule, 64 - bits, True, nxt)
        cur = nxt
    return _restore(cur, params["unsigned"], bits)


def adaptive_rows(x: np.ndarray, stages: list, inverse: bool = False, unsigned: int = SIGNED) -> np.ndarray:
    """The cascade ``stages`` (checked ``[order, shift, rule]`` triples) over every row of the
    2-D integer array ``x`` in one kernel call: residuals (forward) in the signed type of
    ``x``'s width, or (inverse, ``x`` residuals) the bits of the values as the signed type,
    which the caller views as its dtype. ``unsigned`` is the rows' ``unsigned`` param (2: the
    values offset by ``-2**(bits-1)``, undone by the inverse; 0 or 1: the bits as they are).
    Row by row what :func:`adaptive_forward` / :func:`adaptive_inverse` compute, without their
    per-call overhead on many short channels."""
    bits = 8 * x.dtype.itemsize
    x = np.ascontiguousarray(x)
    s = (x.view(f"i{bits // 8}") if inverse else _signed_bits(x, unsigned)).astype(np.int64)
    st = np.array(stages, np.int64).reshape(-1, 3)
    out = np.empty_like(s)
    _k.lms_cascade_rows(s, st[:, 0].copy(), st[:, 1].copy(), st[:, 2].copy(), 64 - bits, inverse, out)
    out = out.astype(f"i{bits // 8}")
    return _signed_bits(out, unsigned) if inverse else out


# ============================================================================ value grid


def _ordered(arr: np.ndarray) -> tuple[np.ndarray, int]:
    """Values mapped order-preservingly to uint64 (signed: flip the sign bit), and their width."""
    dtype = arr.dtype.newbyteorder("=")
    bits = 8 * dtype.itemsize
    a = np.ascontiguousarray(arr, dtype=dtype)
    if dtype.kind == "i":
        return (a.view(f"u{bits // 8}").astype(np.uint64) ^ np.uint64(1 << (bits - 1))), bits
    return a.astype(np.uint64), bits


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
    u, bits = _ordered(arr)
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


def check_grid_params(params: Any, n: int, dtype: Any) -> tuple[int, int, int, int]:
    """Validate untrusted grid params; ``(offset, step, bits, unsigned)``."""
    where = "grid params"
    _bits_of(dtype, where)
    p = expect_map(params, where, ("offset", "step", "bits", "unsigned"))
    bits = field_int(p, "bits", 8, 64, where=where)
    if bits not in (8, 16, 32, 64):
        raise CorruptDataError(f"{where}: 'bits' must be 8, 16, 32 or 64, got {bits}")
    unsigned = _field_unsigned(p, where)
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


# ============================================================================ value ranks


def _varints(values: np.ndarray) -> bytes:
    """LEB128 of each uint64 (7 bits a byte, low group first, high bit = more bytes follow)."""
    v = values.astype(np.uint64)
    nbytes = np.ones(v.shape[0], np.int64)
    for j in range(1, 10):
        nbytes += (v >> np.uint64(7 * j)) > 0
    pos = np.repeat(np.arange(v.shape[0]), nbytes)
    grp = np.arange(pos.shape[0]) - np.repeat(np.cumsum(nbytes) - nbytes, nbytes)
    out = ((v[pos] >> (np.uint64(7) * grp.astype(np.uint64))) & np.uint64(0x7F)).astype(np.uint8)
    out[grp < nbytes[pos] - 1] |= 0x80
    return out.tobytes()


def _unvarints(data: bytes, count: int, where: str) -> np.ndarray:
    """Exactly ``count`` canonical LEB128 uint64 values filling ``data``, or CorruptDataError."""
    b = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(b < 0x80)
    if ends.shape[0] != count or (count and ends[-1] != b.shape[0] - 1):
        raise CorruptDataError(f"{where}: 'values' does not hold exactly {count} varints")
    starts = np.concatenate(([0], ends[:-1] + 1)) if count else ends
    lengths = ends - starts + 1
    if count and (lengths.max() > 10 or ((lengths > 1) & (b[ends] == 0)).any()
                  or ((lengths == 10) & (b[ends] > 1)).any()):
        raise CorruptDataError(f"{where}: 'values' has an overlong or non-canonical varint")
    grp = np.arange(b.shape[0]) - np.repeat(starts, lengths)
    parts = (b & 0x7F).astype(np.uint64) << (np.uint64(7) * grp.astype(np.uint64))
    return np.add.reduceat(parts, starts) if count else np.zeros(0, np.uint64)


def rank_forward(x: Any) -> tuple[np.ndarray, dict]:
    """Each value's rank among the distinct values of ``x``, and the distinct values.

    Returns
    -------
    k : ndarray of the smallest unsigned dtype that holds ``count - 1``, same length as ``x``
    params : dict
        ``count`` (distinct values), ``bits`` (8, 16, 32 or 64) and ``unsigned`` (0 or 1) of the
        original dtype, and ``values``: the distinct values in increasing order as LEB128
        varints, the first as its distance to the dtype's minimum, then each gap minus one.
    """
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"x must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"x must be 1-D, got shape {arr.shape}")
    u, bits = _ordered(arr)  # order-preserving uint64: the first value is its distance to the minimum
    if bits <= 16 and u.shape[0] * RANK_TABLE >= 1 << bits:  # a table over the dtype beats sorting
        present = np.bincount(u.astype(np.intp), minlength=1 << bits) > 0
        values = np.flatnonzero(present).astype(np.uint64)
        k = (np.cumsum(present) - 1)[u.astype(np.intp)]
    else:
        values, k = np.unique(u, return_inverse=True)
    gaps = np.concatenate((values[:1], values[1:] - values[:-1] - np.uint64(1)))
    kdtype = next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if values.shape[0] <= np.iinfo(t).max + 1)
    params = {"count": int(values.shape[0]), "bits": bits, "unsigned": int(arr.dtype.kind == "u"),
              "values": _varints(gaps)}
    return k.reshape(-1).astype(kdtype), params


def check_rank_params(params: Any, n: int, dtype: Any) -> np.ndarray:
    """Validate untrusted rank params for ``n`` ranks; the distinct values in the original dtype.

    Checked: the field set, ``bits`` in {8, 16, 32, 64}, ``count`` in [1, n] (0 only when n is
    0), ``values`` exactly ``count`` canonical varints whose running sum stays in the dtype.
    """
    where = "rank params"
    _bits_of(dtype, where)
    p = expect_map(params, where, ("count", "bits", "unsigned", "values"))
    bits = field_int(p, "bits", 8, 64, where=where)
    if bits not in (8, 16, 32, 64):
        raise CorruptDataError(f"{where}: 'bits' must be 8, 16, 32 or 64, got {bits}")
    unsigned = _field_unsigned(p, where)
    count = field_int(p, "count", 1 if n else 0, max(n, 0), where=where)
    data = field_bytes(p, "values", where=where, max_size=10 * count)
    gaps = _unvarints(data, count, where)
    # the exact sum (Python ints) only when a float64 sum cannot tell (its relative error is
    # below count * 2**-53: a sum under half the range is certainly in it)
    if count and (float(gaps.sum(dtype=np.float64)) + count >= 2.0 ** (bits - 1)
                  and int(gaps.astype(object).sum()) + count - 1 > (1 << bits) - 1):
        raise CorruptDataError(f"{where}: the values run past the {bits}-bit range")
    u = np.cumsum(gaps + np.uint64(1), dtype=np.uint64) - np.uint64(1)
    if not unsigned:
        u ^= np.uint64(1 << (bits - 1))
    return u.astype(f"u{bits // 8}").view(f"{'u' if unsigned else 'i'}{bits // 8}")


def rank_inverse(k: Any, params: Any) -> np.ndarray:
    """Undo :func:`rank_forward`: ``values[k]``; CorruptDataError for a rank >= count."""
    arr = np.asarray(k)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"k must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"k must be 1-D, got shape {arr.shape}")
    values = check_rank_params(params, arr.shape[0], arr.dtype)
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= values.shape[0]):
        raise CorruptDataError(f"rank: a rank lies outside [0, {values.shape[0]})")
    return values[arr.astype(np.intp)]


# ============================================================================ low digits (IntMult)

#: Largest base a ``mult`` split may declare (its low digits are one coded symbol each).
MAX_MULT_BASE = 1 << 16
#: Every base :func:`mult_detect` considers divides this (2**6 * 3**2 * 5 * 7): one histogram of
#: ``x mod MULT_MODULUS`` gives the histogram of ``x mod m`` for all of them at once.
MULT_MODULUS = 20160
#: Bases :func:`mult_detect` considers: the divisors of MULT_MODULUS from 2 to 64.
MULT_BASES = tuple(m for m in range(2, 65) if MULT_MODULUS % m == 0)
#: :func:`mult_detect` measures at most this many values (MULT_WINDOWS evenly spaced windows).
MULT_SAMPLE = 1 << 16
MULT_WINDOWS = 8
#: Estimated bits a value the split must save (first differences' empirical entropy) to be proposed.
MULT_MIN_GAIN = 0.1
#: Among the bases that pay, the smallest whose gain is within this fraction of the best one's
#: (a larger base also "gains" from the shape of the values' distribution at its scale, which
#: the digits' order-0 code cannot keep).
MULT_NEAR = 0.9


def _entropy_of(v: np.ndarray, own: bool = False) -> float:
    """Order-0 entropy, bits a value, of the values ``v``: the empirical one plus the
    Miller-Madow correction ``(K - 1) / (2 N ln 2)`` for ``K`` distinct values in ``N`` (a short
    sample of widely spread values underrates its entropy far more than one of few values).
    ``own``: ``v`` (int64) may be overwritten (one temporary the size of ``v`` less)."""
    if v.size == 0:
        return 0.0
    lo, hi = int(v.min()), int(v.max())
    if hi - lo < 4 * v.size + 1024:  # a histogram is cheaper than sorting
        counts = np.bincount(np.subtract(v, lo, out=v) if own else v - lo)
        counts = counts[counts > 0]
    else:
        _, counts = np.unique(v, return_counts=True)
    p = counts / v.size
    return float(-(p * np.log2(p)).sum()) + (counts.size - 1) / (2.0 * v.size * np.log(2.0))


def _digit_entropy(h: np.ndarray) -> float:
    p = h[h > 0] / h.sum()
    return float(-(p * np.log2(p)).sum())


def _mult_offset(h: np.ndarray) -> int:
    """The offset ``c`` in ``[0, m)`` of the cut between digit classes for the digit histogram
    ``h`` (``h[s]``: values with ``x mod m == s``): a value whose digit lies within ``m / 2`` of the
    most common digit ``p`` (circularly) keeps the same quotient as that digit when the cut does
    not fall between them; the cut that separates the fewest values from ``p`` wins (ties: the
    smallest ``c``, so 0 for bits that only flip away from a constant pattern). All ``m`` cuts
    are counted at once (an ``m x m`` table of which digits each cut separates; integers)."""
    m = h.shape[0]
    p = int(np.argmax(h))
    s = np.arange(m)
    dev = (s - p + m // 2) % m - m // 2  # signed circular distance of each digit from p
    pos = ((p - s) % m)[:, None] + dev[None, :]  # row c: each digit's position past cut c
    cost = ((pos < 0) | (pos >= m)).astype(np.int64) @ h.astype(np.int64)
    return int(np.argmin(cost))  # (the first of equal costs: the smallest c)


def _mult_offset_reference(h: np.ndarray) -> int:
    """:func:`_mult_offset` as a loop over the cuts (its definition; kept for the tests)."""
    m = h.shape[0]
    p = int(np.argmax(h))
    s = np.arange(m)
    dev = (s - p + m // 2) % m - m // 2
    best, best_cost = 0, None
    for c in range(m):
        pos = (p - c) % m + dev
        cost = int(h[(pos < 0) | (pos >= m)].sum())
        if best_cost is None or cost < best_cost:
            best, best_cost = c, cost
    return best


#: Multiples of the bases (divisors of MULT_MODULUS): each base divides one of them, so its digit
#: histogram folds from theirs (:func:`_digit_histograms`).
_MULT_FOLDS = (576, 320, 2880, 4032, 2240)
_MULT_FOLD_OF = tuple(next(f for f in _MULT_FOLDS if f % m == 0) for m in MULT_BASES)
#: How much an estimated digit entropy may differ from :func:`_digit_entropy`'s (the same sum,
#: in another order: about 1e-15 bits) for the screen to stay exact.
_SCREEN_MARGIN = 1e-6


#: The bases of MULT_BASES that divide no other (their digits fold from _MULT_FOLDS), as
#: (row, fold); every other base's digits fold from one of theirs (:func:`_digit_folds`).
_MULT_TOPS = tuple((i, f) for i, (m, f) in enumerate(zip(MULT_BASES, _MULT_FOLD_OF))
                   if not any(b != m and b % m == 0 for b in MULT_BASES))


def _digit_folds() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The other bases' digit histograms from the top bases' (:data:`_MULT_TOPS`) in one
    gather and sum: ``(take, starts, put)``, indices into the ``(len(MULT_BASES), 64)`` table
    flattened: ``add.reduceat(table[take], starts)`` are the digits' counts, written at ``put``
    (a base's digit ``s`` sums its top's digits ``s, s + m, ...``: every group non-empty)."""
    take, starts, put = [], [], []
    for i, m in enumerate(MULT_BASES):
        row, top = next((r, MULT_BASES[r]) for r, _ in _MULT_TOPS if MULT_BASES[r] % m == 0)
        if row == i:
            continue
        for s in range(m):
            starts.append(len(take))
            take.extend(row * 64 + j for j in range(s, top, m))
            put.append(i * 64 + s)
    return np.array(take, np.int64), np.array(starts, np.int64), np.array(put, np.int64)


_DIGIT_TAKE, _DIGIT_STARTS, _DIGIT_PUT = _digit_folds()


def _digit_histograms(hist: np.ndarray) -> np.ndarray:
    """The digit histogram of every base of MULT_BASES from ``hist`` (the histogram of
    ``x mod MULT_MODULUS``): row i, int64, the first ``MULT_BASES[i]`` of 64 columns (the rest 0)."""
    folds = {f: hist.reshape(-1, f).sum(axis=0) for f in _MULT_FOLDS}
    out = np.zeros((len(MULT_BASES), 64), dtype=np.int64)
    for i, f in _MULT_TOPS:
        out[i, :MULT_BASES[i]] = folds[f].reshape(-1, MULT_BASES[i]).sum(axis=0)
    flat = out.reshape(-1)
    flat[_DIGIT_PUT] = np.add.reduceat(flat[_DIGIT_TAKE], _DIGIT_STARTS)
    return out


def _digit_entropies(hists: np.ndarray) -> np.ndarray:
    """:func:`_digit_entropy` of each row of ``hists`` (non-zero rows), all at once: the same
    terms summed in another order, so within :data:`_SCREEN_MARGIN` of it (a screen only)."""
    p = hists / hists.sum(axis=1, keepdims=True)
    return -(p * np.log2(np.where(hists > 0, p, 1.0))).sum(axis=1)


#: The last few splits :func:`mult_detect` chose, by the channel's bytes (the planner puts the
#: same channel through several chains that start with the stage): digest -> (base, offset).
_DETECTED: dict[tuple, tuple[int, int]] = {}
_DETECTED_MAX = 16


def mult_detect(x: Any) -> tuple[int, int]:
    """The split ``x = base * q + offset + r`` (``0 <= r < base``) that pays for a channel, or
    ``(1, 0)`` (none).

    Physics: an ADC of fewer bits than its 16-bit word (or a calibrated one) writes codes whose
    low digits mostly take one value, the few noisy extra bits flipping now and then,
    independently of the signal. Predicting such codes spends ``log2(base)`` bits a value on
    digits that are almost constant; split, the quotient ``q`` is predicted as the signal and
    the digits ``r`` cost their own (small) entropy.

    Exact and cheap: one histogram of ``x mod MULT_MODULUS`` on at most :data:`MULT_SAMPLE`
    values (:data:`MULT_WINDOWS` windows) gives the digit histogram of every base of
    :data:`MULT_BASES`; each base whose digits are neither uniform nor constant (a constant
    digit is an exact grid: the ``grid`` stage's case) is scored by the bits a value it saves:
    the order-0 entropy (Miller-Madow corrected, :func:`_entropy_of`) of the first differences
    of ``x``, minus that of ``q``'s plus the digits' entropy. When the best score is at least
    :data:`MULT_MIN_GAIN` bits a value, the smallest base scoring within :data:`MULT_NEAR` of
    it is returned, with the offset of :func:`_mult_offset`.
    The writer measures the result by size like any other candidate; this only proposes it.
    The last :data:`_DETECTED_MAX` results are kept by the channel's content (a digest of its
    bytes), so the chains that share the stage detect once.
    """
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"x must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"x must be 1-D, got shape {arr.shape}")
    n = arr.shape[0]
    if n < 2 * MULT_WINDOWS:
        return 1, 0
    key = (arr.dtype.str, n, hashlib.blake2b(np.ascontiguousarray(arr).view(np.uint8), digest_size=16).digest())
    found = _DETECTED.get(key)
    if found is None:
        found = _mult_detect(arr)
        if len(_DETECTED) >= _DETECTED_MAX:
            _DETECTED.pop(next(iter(_DETECTED)), None)
        _DETECTED[key] = found
    return found


def _floor_div(v: np.ndarray, m: int, itemsize: int) -> np.ndarray:
    """``v // m`` (int64) for ``v`` int64 and ``m`` in [1, MULT_MODULUS]; through float64 (about
    twice as fast as numpy's integer division) when ``itemsize <= 4`` promises ``|v| < 2**33``:
    exact then, as a quotient that is not an integer lies at least ``1/m`` (relatively more
    than 2**-34) from the integers, far beyond float64's rounding (2**-53)."""
    if itemsize > 4:
        return v // m
    return np.floor(v / float(m)).astype(np.int64)


def _mult_detect(arr: np.ndarray) -> tuple[int, int]:
    """:func:`mult_detect` without its cache (``arr`` 1-D integers of at least 16 values)."""
    n = arr.shape[0]
    if n > MULT_SAMPLE:
        length = MULT_SAMPLE // MULT_WINDOWS
        starts = (np.arange(MULT_WINDOWS, dtype=np.int64) * (n - length)) // (MULT_WINDOWS - 1)
        windows = [arr[s:s + length] for s in starts.tolist()]
    else:
        windows = [arr]
    # the windows joined: differences within a window only (:func:`steps_of`), quotients of all at once
    sample = windows[0] if len(windows) == 1 else np.concatenate(windows)
    if arr.dtype == np.uint64:
        t = (sample % np.uint64(MULT_MODULUS)).astype(np.int64)
        wide = sample.view(np.int64)  # differences modulo 2**64: the same entropy
    else:
        wide = sample.astype(np.int64)
        t = wide - _floor_div(wide, MULT_MODULUS, arr.dtype.itemsize) * MULT_MODULUS
    hist = np.bincount(t, minlength=MULT_MODULUS)
    digits = _digit_histograms(hist)
    # the screen: a base whose estimated gain bound is below MULT_MIN_GAIN by more than the
    # estimate's error cannot pass the exact test below (most bases of most signals)
    bound = np.log2(np.array(MULT_BASES, dtype=np.float64)) - _digit_entropies(digits)
    maybe = bound >= MULT_MIN_GAIN - _SCREEN_MARGIN
    if not maybe.any():
        return 1, 0
    # every base tried puts its quotients and their differences in the same buffers: fresh
    # arrays of a sample's size cost more than the arithmetic (page faults)
    q, quot = np.empty_like(wide), np.empty(wide.shape[0])
    steps = np.empty(wide.shape[0] - len(windows), np.int64)
    ends = np.cumsum([w.shape[0] for w in windows]).tolist()
    spans = [(a, b, a - k) for k, (a, b) in enumerate(zip([0] + ends[:-1], ends))]  # (from, to, at)

    def steps_of(v: np.ndarray) -> np.ndarray:
        """The differences of ``v`` (int64, the sample's) within each window, in ``steps``
        (modulo 2**64)."""
        with np.errstate(over="ignore"):
            for a, b, at in spans:
                np.subtract(v[a + 1:b], v[a:b - 1], out=steps[at:at + b - a - 1])
        return steps

    raw = _entropy_of(steps_of(wide), own=True)
    gains: dict[tuple[int, int], float] = {}
    for i, m in enumerate(MULT_BASES):
        if not maybe[i]:
            continue
        h = digits[i, :m]
        hr = _digit_entropy(h)
        if hr == 0.0 or np.log2(m) - hr < MULT_MIN_GAIN:  # constant digits, or no gain possible
            continue
        c = _mult_offset(h)
        if arr.dtype.itemsize <= 4:  # mult_forward's quotient: floor((x - c) / m), as _floor_div's floats
            np.subtract(wide, c, out=q)
            np.floor(np.divide(q, float(m), out=quot), out=quot)
            np.copyto(q, quot, casting="unsafe")  # exact: integers below 2**33
        else:
            q[:] = mult_forward(sample, m, c)[0]
        gains[(m, c)] = raw - _entropy_of(steps_of(q), own=True) - hr
    top = max(gains.values(), default=0.0)
    if top < MULT_MIN_GAIN:
        return 1, 0
    return min(k for k, g in gains.items() if g >= MULT_NEAR * top)


def mult_forward(x: Any, base: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """``x = base * q + offset + r`` with ``0 <= r < base`` (floor division of ``x - offset``,
    exact for every value of every integer dtype): ``q`` as the signed integer type of the
    input's width (it always fits for ``base >= 2``; ``base == 1`` gives ``x``'s bits
    reinterpreted), ``r`` as int64 in ``[0, base)``.

    ``base`` in ``[1, MAX_MULT_BASE]``, ``offset`` in ``[0, base)``."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        raise TypeError(f"x must be a 1-D integer array, got {arr.dtype} of shape {arr.shape}")
    if not 1 <= base <= MAX_MULT_BASE or not 0 <= offset < base:
        raise ValueError(f"base must be in [1, {MAX_MULT_BASE}] and offset in [0, base), got {base}, {offset}")
    arr = arr.astype(arr.dtype.newbyteorder("="), copy=False)
    signed = np.dtype(f"i{arr.dtype.itemsize}")
    if base == 1:
        return arr.view(signed) if arr.dtype.kind == "u" else arr.astype(signed), np.zeros(arr.shape[0], np.int64)
    if arr.dtype == np.uint64:
        q0, r0 = np.divmod(arr, np.uint64(base))
        q0, r0 = q0.astype(np.int64), r0.astype(np.int64)  # q0 < 2**63 for base >= 2
    else:
        q0, r0 = np.divmod(arr.astype(np.int64), base)
    below = r0 < offset  # x - offset lies in the quotient below: never overflows (q0 > int64 min)
    q = q0 - below
    r = r0 - offset + base * below
    return q.astype(signed), r


def mult_inverse(q: Any, r: np.ndarray, base: int, offset: int, dtype: Any) -> np.ndarray:
    """``base * q + offset + r`` modulo ``2**bits``, as ``dtype`` (the input's): exact inverse of
    :func:`mult_forward` (int64 arithmetic wraps modulo 2**64, and the true value fits the
    width). Untrusted ``q`` (any value) wraps and cannot fault."""
    dtype = np.dtype(dtype)
    qa = np.asarray(q).astype(np.int64)
    with np.errstate(over="ignore"):
        v = qa * np.int64(base) + (np.asarray(r, np.int64) + np.int64(offset))
    signed = np.dtype(f"i{dtype.itemsize}")
    return v.astype(signed).view(dtype)
