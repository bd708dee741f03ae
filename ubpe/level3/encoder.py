"""Level 3's encoder: ``encode`` and the choices it makes on samples (the front-end chain, the
parameter vector, the value model), within the work budgets of :mod:`ubpe.level3.search`.

A recording of at most ``Settings.level3_search_whole`` values has its parameters searched on a
prefix from ``search.plan``'s start, which cues of the signal set without a coding: order 64
over a short window for many resonances (``search.order_gain_db``), the long NLMS cascade
(``Settings.level3_long_cascade``: 512/256/32 taps, recent-past power) for a sustained tone
whose period exceeds the first stage's 256 taps (``search.long_period``; the longer stages cost
such a recording about a quarter of its decode speed: klavichord-4 0.51 -> 0.39 M values/s).
Where no cue fires, the bytes are those of the encoder before the cue.

The front-end chain is chosen by :mod:`ubpe.level3.front`, and every size compared is measured
by :mod:`ubpe.level3.measure`. The bytes it writes are :mod:`ubpe.level3.format`'s (normative,
with the decoder); every tuning constant is a field of :class:`ubpe.planner.settings.Settings`
(``level3_*``).
"""

from __future__ import annotations

import zlib

import msgpack
import numpy as np

from ..errors import CorruptDataError
from ..planner import settings
from .format import (
    DEFAULTS,
    MAX_CHANNELS,
    MODE_FRONT,
    MODE_MODEL,
    MODE_RAW,
    NO_LPC,
    NO_TABLE,
    TABLE_VALUES,
    _check_params,
    _dtype_code,
    _kernel_run,
    _kernels,
    _lpc_arrays,
    _lpc_bytes,
    _params_bytes,
    _prior_tables,
    _shift_of,
    _table_bytes,
    _uleb,
    _vector,
    _version,
    _working_values,
    _zig,
    default_params,
    vmod_fits,
)
from .front import (
    LONG_MEMORY,
    _chains,
    _choose_front,
    _choose_front_proxy,
    _forward,
    _front_frames,
    _front_on_proxy,
    _stages_frames,
)
from .measure import (
    VMOD_HEADER_BYTES,
    _channel_sample,
    _choice_sample,
    _coded_size,
    _lpc_fit,
    _dnl_cue,
    _proxy_symbols,
    _symbols,
    _vmod_on_proxy,
    _vmod_saving,
    _whole_budget,
)
from .cost import ENC_MARGIN, FLOOR, coder_ns, encode_ns, search_share
from .search import (
    DC_MIN_EVALS,
    MOVES,
    ORDER_MOVE,
    budget_plan,
    dc_change,
    dc_trial,
    greedy,
    cascade_steps,
    held_cascade,
    held_lag,
    held_period,
    hold_share,
    move_order,
    order_gain_db,
    plan,
    proxy_plan,
    spare_codings,
    tonal,
    tonal_change,
    tonal_stats,
    tonal_trial,
)


#: What the encoder's search tries, as changes to DEFAULTS, in order of use (each one a reason
#: from the physics of signals, none from a file): smooth, low-noise biosignals fit best with
#: near least-absolute errors and a steady NLMS step; stationary noise-like signals (seismic
#: background) with plain least squares; longer or shorter memories for slowly or quickly
#: changing spectra; faster or slower NLMS for strongly or weakly periodic sources (voiced
#: speech, music); a low order for short or simple recordings; a high order over a short
#: window for sources rich in harmonics (brass, voice); the predictions mixed by least squares,
#: one mix per hold state (frames since the value last changed), for held or upsampled
#: values and slow staircase signals; block LPC (forward-adaptive) in the place of the short
#: OLS for spectra that change abruptly.
CANDIDATES = (
    dict(lpc=1),
    LONG_MEMORY,
    dict(irls=24, powr=0),
    dict(p1=64, k1=64, t1=12, irls=0),
    dict(fmix=1, t3=14),
    dict(t1=19, t2=12),
    dict(mu1=1600, mu2=1200, mu3=400),
    dict(t1=15, t2=8),
    dict(irls=0),
    dict(mu1=400, mu2=300, mu3=100),
    dict(p1=16, k1=8),
)
# values coded by the search on chunks per value of the input: Settings.level3_search_budget
#: The search on chunks tries this after CANDIDATES where its plan has codings for it and one more
#: for its descent (a recording of at least about 610 000 frames): a broadband, noise-like background (a seismometer's microseisms)
#: has well-conditioned normal equations, where the ridge's bias (16 times smaller here) costs more
#: than it steadies, and no period for a first NLMS stage of 256 taps to span (128 here): on the
#: chunks of seis-sts2 and seis-0438 -0.43 % and -0.44 %, coded whole -0.39 % and -0.25 %
#: (results/level3-sac-gap-6.md). Kept, as any candidate, only when smaller by the margin.
QUIET_BACKGROUND = dict(reg=20, n1=128)
SEARCH_MIN = 4096  #: the search's sample: at least this many frames (else the whole recording)
SEARCH_CHUNKS = 4  #: the sample's chunks, spread over the recording


# ---------------------------------------------------------------- encode


def _as_2d(values) -> tuple[np.ndarray, int]:
    x = np.asarray(values)
    if x.dtype.kind not in "iu" or x.dtype == np.bool_:
        raise TypeError(f"level 3 takes integer values, got dtype {x.dtype}")
    if x.ndim not in (1, 2):
        raise ValueError(f"level 3 takes (frames,) or (frames, channels) values, got shape {x.shape}")
    ndim = x.ndim
    x2 = x.reshape(-1, 1) if ndim == 1 else x
    if x2.shape[1] > MAX_CHANNELS:
        raise ValueError(f"level 3 takes at most {MAX_CHANNELS} channels, got {x2.shape[1]}")
    return x2, ndim


def encode(values, *, params: list[int] | None = None, search: bool = True, front="auto",
           _unless_defaults: bool = False, _start: tuple | None = None, _together: bool | None = None) -> bytes:
    """Compress an integer signal, (frames,) or (frames, channels), losslessly.

    ``params`` fixes the parameter vector (``mixsignal.PRM_*``, checked against its bounds);
    else the encoder searches a few on a sample (``search=False``: the default vector).
    ``front``: a list of front-end stage names (``ubpe.frontend``: "lpc", "mult", ...) applied
    first, None for none, or "auto": the chain among FRONT_CHAINS whose output codes smallest
    on a sample (block LPC, forward-adaptive, wins where the spectrum changes faster than the
    least-squares windows follow; "mult" where an ADC's low digits are nearly constant)."""
    x2, ndim = _as_2d(values)
    n, C = x2.shape
    if front is not None and n * C > 0:
        auto = isinstance(front, str) and front == "auto"
        chains = _chains(x2) if auto and search and params is None and _whole_budget(n * C) else None
        if chains is not None and n < _stages_frames():  # (a short recording: the chain without stages)
            chains = chains[:1]
        if chains is not None and len(chains) > 1 and _held_tone(x2):
            chains = chains[:1]  # a held tone: no forward-adaptive stage (its held-part sample instead)
        share, sample_share = _search_shares(x2) if chains is not None else (None, None)
        if chains is not None and _front_on_proxy(n, C, len(chains), share):
            # the chains compared on the search's proxy, each with its start parameters: the
            # winner's coding is the search's first (``_start``), no sample coded for the chains alone
            chain, start = _choose_front_proxy(x2, chains, share, sample_share)
            if chain:
                return _encode_front(x2, ndim, chain, None, True, False, start)
            return encode(values, front=None, _start=start)
        if auto and search and params is None and n < _front_frames():
            # a short recording: each chain coded whole (a sample would be all warm-up), then the
            # parameters searched on the whole recording behind the smallest (:mod:`ubpe.level3.search`)
            coded = [(encode(values, search=False, front=list(chain) or None), chain)
                     for chain in (chains if chains is not None else _chains(x2))]
            best, chain = min(coded, key=lambda t: len(t[0]))
            if _whole_budget(n * C) and _search_codings(n, C) > 1:  # (b"": the search kept the defaults)
                tuned = encode(values, search=True, front=list(chain) or None, _unless_defaults=True)
                best = tuned if tuned and len(tuned) < len(best) else best
            return best
        chain = _choose_front(x2, search) if auto else list(front)
        if chain:
            return _encode_front(x2, ndim, chain, params, search, _unless_defaults)
    version = _version()
    head = bytearray([_header_version(), _dtype_code(x2.dtype), ndim])
    head += _uleb(n)
    if ndim == 2:
        head += _uleb(C)
    if n * C == 0:
        prm = _fixed(params, C)
        head[0] = _payload_version(version, prm)
        head.append(MODE_MODEL)
        head += _uleb(0) + _uleb(1) + _uleb(0) + bytes([0])
        return bytes(head) + b"".join(_uleb(0) + _uleb(0) for _ in range(C)) + _params_bytes(prm, C, head[0])
    symbols = _start[3] if _start is not None else _symbols(x2)
    if symbols is None:
        head.append(MODE_RAW)
        return bytes(head) + np.ascontiguousarray(x2).astype(x2.dtype.newbyteorder("<")).tobytes()
    lo, step, y, table, tmode = symbols
    if params is not None or not search:
        prm = _fixed(params, C)
    else:
        prm, vmod_decided = _search(y, table if tmode else None, tmode, C, _start)
        if _unless_defaults and prm == default_params(C):
            return b""
    if tmode:
        y = np.searchsorted(table, y).astype(np.int64)
    if params is None and search and version >= 10:
        prm = _with_cross_lags(prm, C, _move_together(x2) if _together is None else _together)
    if params is None and search and version >= 3 and not vmod_decided:
        prm = _choose_vmod(y, table if tmode == TABLE_VALUES else None, prm, _vmod_frames(n, C, _start))
    if params is None and search and version >= 9:
        prm = _choose_vcls(y, table if tmode == TABLE_VALUES else None, prm, _vmod_frames(n, C, _start))
    if params is None and search and version >= 6:
        limit = _vmod_frames(n, C, _start, True)
        if _xctx_in_final(n, C, limit):
            data, prm = _encode_xctx_final(head, y, lo, step, table, tmode, prm, version, limit)
            if data is not None:
                return data
        else:
            prm = _choose_xctx(y, table if tmode == TABLE_VALUES else None, prm, limit)
    alt = _ridge_trial(y, prm) if params is None and search else None
    data = _model_payload(bytearray(head), y, lo, step, table, tmode, prm, version)
    if alt is not None:
        other = _model_payload(head, y, lo, step, table, tmode, alt, version)
        return other if len(other) < len(data) else data
    return data


def _move_together(x2: np.ndarray) -> bool:
    """Whether the (frames, 2) ``x2`` has two channels that move together: one group of
    ``ubpe.api.groups``' correlated channels (stereo music, two leads of one source). Other
    shapes: False."""
    from ..api.groups import _components

    if x2.ndim != 2 or x2.shape[1] != 2 or x2.shape[0] < 3 or settings.current().level3_cross_lags <= 2:
        return False
    comps, _ = _components(x2, settings.current())
    return bool(comps) and len(comps[0]) == 2


def _with_cross_lags(prm: list[int], C: int, together: bool) -> list[int]:
    """``prm`` with version 10's ``xlags`` = ``Settings.level3_cross_lags`` (at most what keeps
    ``p1 + xlags cross <= MAX_DIM``) for two channels that move together (``together``:
    :func:`_move_together` of the recording, before any front-end chain) when ``prm`` predicts
    each from the other (``cross`` >= 1); else ``prm``. Their shared signal spans many lags: two
    values of the other channel capture its mix now, not its dynamics
    (results/level3-cross-lags.md)."""
    k = _kernels()
    if not together or C != 2 or prm[k.PRM_CROSS] < 1 or prm[k.PRM_XLAGS]:
        return prm
    lags = min(settings.current().level3_cross_lags, k.XLAGS_MAX, (k.MAX_DIM - prm[k.PRM_P1]) // prm[k.PRM_CROSS])
    if lags <= 2:
        return prm
    out = list(prm)
    out[k.PRM_XLAGS] = lags
    return out


def _model_payload(head: bytearray, y: np.ndarray, lo: int, step: int, table, tmode: int, prm: list[int],
                   version: int, res: np.ndarray | None = None) -> bytes:
    """A model record (mode 1) of the symbols ``y`` ((frames, C) int64; with a table, indices or
    values as ``tmode`` says) with the parameters ``prm``: ``head`` (the header's first bytes, up
    to the frames and channels; extended in place) completed, then the payload. ``res``: the
    kernel's record of each frame (``mixsignal.run``), or None."""
    n, C = y.shape
    head[0] = _payload_version(version, prm)  # (version 5's bytes without xctx and olsr)
    version = head[0]
    head.append(MODE_MODEL)
    head += _uleb(_zig(lo)) + _uleb(step)
    head += _table_bytes(table if tmode else None)
    if tmode:
        head.append(tmode)
    los = y.min(axis=0).astype(np.int64)
    his = y.max(axis=0).astype(np.int64)
    tab = table if tmode == TABLE_VALUES else NO_TABLE
    gs = _shift_of(int(tab[his.max()]) if tab.size else int(his.max()))
    head.append(gs)
    for c in range(C):
        head += _uleb(int(los[c])) + _uleb(int(his[c] - los[c]))
    if prm[_kernels().PRM_VMOD] and not vmod_fits(prm, C, int((his - los).max()) + 1):
        prm = list(prm)  # the value model is for narrow ranges only (the kernel ignores it)
        prm[_kernels().PRM_VMOD] = 0
        prm[_kernels().PRM_VCLS] = 0
    head += _params_bytes(prm, C, version)
    lpc = None
    if prm[_kernels().PRM_LPC]:
        fit = _lpc_fit(_working_values(y, los, his, gs, tab))
        rec = _lpc_bytes(fit)
        head += _uleb(len(rec)) + rec
        lpc = _lpc_arrays(fit, n)
    return bytes(head) + _run_encode(y, los, his, gs, prm, tab, zlib.crc32(head), lpc, res)


def _ridge_trial(y: np.ndarray, prm: list[int]) -> list[int] | None:
    """The vector ``encode`` codes the whole of ``y`` ((frames, C) symbols) with once more, the
    smaller record kept, or None: where the search was on chunks (more than
    ``Settings.level3_search_whole`` values, at most ``level3_ridge_values``), of one channel
    whose symbols span more than ``XCTX_MAX_RANGE`` (no value model, no exact-value contexts: their
    samples are not coded, the encode's work is the chunk search's and two codings), and ``prm`` is
    the defaults but for ``dcm`` (the chunks said nothing), and the order-32 prediction gains at
    least ``level3_ridge_gain`` decibels (``search.tonal_stats``: a well-predicted source, whose
    covariance has small pivots that the ridge biases): ``prm`` with the long least squares'
    solve refined (``olsr`` = ``level3_tonal_olsr``, version 7 or more), its ridge
    2**-``level3_ridge_reg`` times as large and its memory's code ``t1`` ``level3_ridge_t1`` lower
    (2 lower halves it). A chunk of n / 16 frames, half of it warm-up, misjudges both: once
    refined, a smaller ridge and a shorter memory pay where the source is well predicted and
    changes (speech at 48 kHz; results/level3-sac-gap-8.md). Cost: one coding of ``y`` more."""
    s = settings.current()
    k = _kernels()
    n, C = y.shape
    if (s.level3_ridge_values <= 0 or C != 1 or _version() < 7 or _whole_budget(n * C)
            or n * C > s.level3_ridge_values or s.level3_tonal_olsr <= 0):
        return None
    if int(y.max()) - int(y.min()) + 1 <= XCTX_MAX_RANGE:
        return None
    base = list(prm)
    base[k.PRM_DCM] = 0
    if base != default_params(C) or tonal_stats(y)[0] < s.level3_ridge_gain:
        return None
    alt = list(prm)
    alt[k.PRM_OLSR] = s.level3_tonal_olsr
    alt[k.PRM_REG] = min(24, prm[k.PRM_REG] + s.level3_ridge_reg)
    alt[k.PRM_T1] = max(0, prm[k.PRM_T1] - s.level3_ridge_t1)
    return alt


def _xctx_in_final(n: int, C: int, limit: int | None) -> bool:
    """Whether ``encode`` decides the exact-value contexts on its final coding (``_encode_xctx_final``)
    rather than on a sample of their own (``_choose_xctx``) for n frames x C channels, ``limit``
    the sample's cap (``_vmod_frames``): where that sample would be at least
    ``Settings.level3_xctx_in_final`` of the frames (a short recording coded on a prefix: its
    sample is most of the final coding, which then costs little more than the sample alone), of
    at most ``level3_sample_channels`` channels (the sample keeps them all)."""
    s = settings.current()
    share = s.level3_xctx_in_final
    if share <= 0 or s.level3_xctx_sample <= 0 or n <= 0 or 0 < s.level3_sample_channels < C:
        return False
    frames = s.level3_xctx_sample if limit is None else max(1, min(s.level3_xctx_sample, limit))
    return min(frames, n) >= share * n


def _encode_xctx_final(head: bytearray, y: np.ndarray, lo: int, step: int, table, tmode: int, prm: list[int],
                       version: int, limit: int | None) -> tuple[bytes | None, list[int]]:
    """``_choose_xctx``'s choice made on the final coding itself: where its gates that need no
    coding pass, ``y`` is coded whole with ``xctx`` = 2 (the record ``_model_payload`` writes), and
    the kernel's record of its first frames, those ``_choose_xctx`` would have coded as a sample
    (``_choice_sample``), gives the saving, the gain and the bits a value that choice compares.
    Returns (that record, ``prm`` with ``xctx`` = 2) where they choose ``xctx`` = 2, else (None, the
    parameters chosen: ``xctx`` 0 or 1, coded afresh by the caller). The estimate differs from the
    sample's only by the bounds (the recording's, per channel, not the sample's) and by counting the
    payload's bytes as the coder has written them after the sample's last frame."""
    k = _kernels()
    gated = _xctx_gates(y, prm, limit)
    if gated is None:
        return None, prm
    sample, skip, scale = gated
    n, C = y.shape
    on = list(prm)
    on[k.PRM_XCTX] = 2
    res = np.zeros((n, 4 * C), np.int64)
    data = _model_payload(bytearray(head), y, lo, step, table, tmode, on, version, res)
    last = sample.shape[0] - 1
    size = float(res[last, 2 * C - 1])
    chosen = _xctx_verdict(y, prm, sample, skip, scale, size, res[:last + 1, 3 * C:])
    return (data if chosen[k.PRM_XCTX] == 2 else None), chosen


def _xctx_gates(y: np.ndarray, prm: list[int], limit: int | None) -> tuple | None:
    """``_choose_xctx``'s gates that need no coding: (the sample, skip, scale of ``_choice_sample``)
    where they pass, else None."""
    k = _kernels()
    full = settings.current().level3_xctx_sample
    if full <= 0 or int(y.max()) - int(y.min()) + 1 > XCTX_MAX_RANGE or prm[k.PRM_XCTX]:
        return None
    sample, skip, scale = _choice_sample(y, full, limit)
    if pair_recurrence(sample) < settings.current().level3_xctx_recur:
        return None
    if successor_recurrence(sample) < settings.current().level3_xctx_successor:
        return None
    return sample, skip, scale


def _xctx_verdict(y: np.ndarray, prm: list[int], sample: np.ndarray, skip: int, scale: float, size: float,
                  saving: np.ndarray) -> list[int]:
    """``_choose_xctx``'s choice from a coding of ``sample`` with ``xctx`` = 2: ``size`` its bytes,
    ``saving`` the kernel's record of the contexts' estimated saving (1/16 bits, cumulative; its
    last column, one row a frame of the sample)."""
    k = _kernels()
    whole = int(saving[-1, -1]) / 128  # bytes saved on the whole sample
    saved = (int(saving[-1, -1]) - (int(saving[skip - 1, -1]) if skip else 0)) * scale
    gain = whole / max(1.0, size + whole)
    if saved <= 16 * 8 * XCTX_HEADER_BYTES or gain < settings.current().level3_xctx_gain:
        return prm
    on = list(prm)
    on[k.PRM_XCTX] = 2
    bpv = 8.0 * size / sample.size
    if xctx_decode_ns(bpv, *y.shape) * XCTX_FLOOR * XCTX_MARGIN <= 1e9 and (
            not settings.current().level3_xctx_encode_floor
            or _full_contexts_encode_ns(bpv, *y.shape, sample.size) * FLOOR * ENC_MARGIN <= 1e9):
        on[k.PRM_XCTX] = 1
    return on


def _fixed(params, C: int) -> list[int]:
    if params is None:
        return default_params(max(C, 1))
    prm = [int(v) for v in params]
    if len(prm) != _kernels().N_PRM:
        raise ValueError(f"params must have {_kernels().N_PRM} entries, got {len(prm)}")
    try:
        _check_params(prm)
    except CorruptDataError as e:
        raise ValueError(str(e).replace("level-3 data: ", "")) from None
    return prm


def _header_version() -> int:
    """The version byte of a header before its parameters are known: ``Settings.level3_version``,
    but 5 for 6 and 7 (version 6 is written only with the exact-value contexts on, version 7 only
    with the refined solve: a raw, empty or front-end record and a model without them keep
    version 5's bytes)."""
    version = _version()
    return 5 if version in (6, 7, 8, 9, 10) else version


def _payload_version(version: int, prm: list[int]) -> int:
    """The version byte of a model record of ``prm`` under ``Settings.level3_version`` = ``version``:
    7 with ``olsr`` > 0, else 6 with ``xctx`` = 1, else ``_header_version()``."""
    k = _kernels()
    if version >= 10 and prm[k.PRM_XLAGS]:
        return 10
    if version >= 9 and prm[k.PRM_VCLS]:
        return 9
    if version >= 8 and prm[k.PRM_DCM]:
        return 8
    if version >= 7 and prm[k.PRM_OLSR]:
        return 7
    if version >= 6 and prm[k.PRM_XCTX]:
        return 6
    return _header_version()


def _run_encode(y: np.ndarray, los: np.ndarray, his: np.ndarray, gs: int, prm: list[int], tab: np.ndarray,
                chk0: int = 0, lpc=None, res: np.ndarray | None = None) -> bytes:
    n, C = y.shape
    cap = 64 + n * C * 6 + (n * C * max(1, int((his - los).max()).bit_length())) // 7
    buf = np.zeros(cap, np.uint8)
    lpc = NO_LPC if lpc is None else lpc
    res = np.zeros((0, 0), np.int64) if res is None else res
    length = _kernel_run(prm)(y, los, his, gs, np.array(prm, np.int64), buf, False, res,
                              chk0, tab, _prior_tables(), *lpc)
    if length < 0:  # pragma: no cover - the bound above holds for every residual
        raise RuntimeError("level-3 coder: output buffer too small")
    return buf[:length].tobytes()


def _search(y: np.ndarray, table: np.ndarray | None, tmode: int, C: int,
            start: tuple | None = None) -> tuple[list[int], bool]:
    """The parameters that code a sample of ``y`` smallest (with the table mode given):
    DEFAULTS, then as many of CANDIDATES as ``Settings.level3_search_budget`` allows, then the
    best two combined; and whether it chose the value model (version 3, a range of at most
    VM_MAX_RANGE symbols: the defaults' coding of the chunks is with it, the kernel counting
    what it saved, so that the choice costs no coding; else ``_choose_vmod`` decides).

    The sample is SEARCH_CHUNKS chunks spread over the recording (a recording changes: one
    middle piece misjudged speech and respiration), each of n / 16 frames but at most
    ``Settings.level3_search_chunk`` (a longer recording buys more codings of them), each
    measured on its second half (the models' warm-up left out); the candidates in
    ``_chunk_order``; block LPC measured ``level3_search_lpc_margin`` larger; the codings left
    after CANDIDATES and the best two combined go to a descent (``search.greedy``) from
    the best (``level3_search_descent``); a candidate replaces the defaults only when it is
    smaller by ``Settings.level3_search_margin`` (what a sample says within that is noise). (The
    chunks are coded without version 9's code classes, which ``_choose_vcls`` decides after: with
    them every chunk's coding would cost about twice as much.)"""
    n = y.shape[0]
    if _whole_budget(n * C):
        prm, vmod = _search_whole(y, table, tmode, C, start)
        if vmod is None:
            return prm, False
        prm[_kernels().PRM_VMOD] = vmod
        return prm, True
    s = settings.current()
    held = _holds(y)  # (the mix per hold state learns each state on its share of a chunk: longer ones)
    cap = s.level3_search_chunk_held if held else s.level3_search_chunk
    length = max(SEARCH_MIN // 2, min(n // (4 * SEARCH_CHUNKS), cap))
    if SEARCH_CHUNKS * length >= n:
        chunks, skip = [y], 0
    else:
        starts = [(2 * i + 1) * n // (2 * SEARCH_CHUNKS) - length // 2 for i in range(SEARCH_CHUNKS)]
        chunks, skip = [y[a:a + length] for a in starts], length // 2
    frames = sum(len(c) for c in chunks)
    evals = max(0, int(_search_budget() * n / frames))
    if evals < 2:
        return default_params(C), False
    if tmode:
        chunks = [np.searchsorted(table, c).astype(np.int64) for c in chunks]
    tab = table if tmode == TABLE_VALUES else None
    symbols = table.size if tmode else int(y.max()) - int(y.min()) + 1
    saved = 0
    narrow = _version() >= 3 and _vmod_sample() > 0 and symbols <= _kernels().VM_MAX_RANGE
    # block LPC has no warm-up: on chunks it looks level3_search_lpc_margin better than on the whole
    lpc_factor = 1 + (s.level3_search_lpc_margin if skip else 0.0)

    # a stage of LONG_MEMORY's length or more: on chunks it looks level3_long_margin better than on
    # the whole (ecg-systole, a quasi-periodic biosignal: results/level3-music.md)
    long_factor = 1 + (s.level3_long_margin if skip else 0.0)

    def size(change: dict) -> float:
        named = dict(DEFAULTS, **change)
        got = sum(_coded_size(c, _vector(named, C), tab, skip) for c in chunks)
        got = got * long_factor if named["n1"] >= LONG_MEMORY["n1"] else got
        return got * lpc_factor if named["lpc"] else got

    if narrow:  # the defaults coded with the value model: the size without it and its saving
        base = 0.0
        on = _vector(dict(DEFAULTS, vmod=1), C)
        for chunk in chunks:
            res = np.zeros((chunk.shape[0], 3 * C), np.int64)
            base += _coded_size(chunk, on, tab, skip, res)
            saved += int(res[-1, -1]) - (int(res[skip - 1, -1]) if skip else 0)
        base += saved / 128
    else:
        base = size({})
    vmod = int(saved > 16 * 8 * VMOD_HEADER_BYTES)

    def chosen(named: dict) -> tuple[list[int], bool]:
        return _vector(dict(DEFAULTS, **named, vmod=vmod), C), narrow

    candidates = _chunk_order(y, chunks, s, evals) if skip else CANDIDATES
    if held:  # held values: the least-squares mix per hold state first (search.HOLD_MOVE)
        candidates = tuple(sorted(candidates, key=lambda c: "fmix" not in c))
    tried = sorted(((size(change), change) for change in candidates[:evals - 1]), key=lambda t: t[0])
    used = 1 + len(tried)
    best_size, best = tried[0] if tried else (base, {})
    margin = _search_margin()
    if best_size > base * (1 - margin):
        best_size, best = base, {}
    if used < evals and len(tried) > 1 and tried[1][0] <= base * (1 - margin) \
            and not set(best) & set(tried[1][1]):
        both = dict(best, **tried[1][1])
        used += 1
        got = size(both)
        if got < best_size:
            best, best_size = both, got
    if used < evals and s.level3_search_descent:
        # a coordinate descent (search.MOVES) from the best, with the codings left
        named, best_size = greedy(lambda named: size({k: v for k, v in named.items() if DEFAULTS[k] != v}),
                                  dict(DEFAULTS, **best), evals - used + 1, margin, start_size=best_size)
        best = {k: v for k, v in named.items() if DEFAULTS[k] != v}
    if best_size > base * (1 - margin):
        best, best_size = {}, base
    centred = dc_change(best, y, s) if evals >= DC_MIN_EVALS else best  # a skewed range: the least
    # squares centred (version 8), when smaller
    if centred != best:
        if size(centred) < best_size * (1 - margin):
            best = centred
    elif (trial := dc_trial(best, y, s) if evals >= DC_MIN_EVALS else None) is not None \
            and size(trial) < best_size * (1 - margin):  # a broadband, noise-like signal: the
        best = trial  # least squares centred (version 8), when smaller
    return chosen(_piece_choice(y, table, tmode, C, best, s))




#: The moves (``search.MOVES``' names) ``_piece_choice`` judges on a long piece, in this order:
#: what converges or remembers over more frames than a chunk's warm-up.
PIECE_MOVES = ("long NLMS x2", "long window x2")


def _piece_choice(y: np.ndarray, table: np.ndarray | None, tmode: int, C: int, best: dict, s) -> dict:
    """``best`` (the chunk search's changes to DEFAULTS) with PIECE_MOVES tried in turn on one piece of
    ``y`` ((frames, C) integers, before the table): the 2 x ``s.level3_piece`` frames around its
    middle, coded from cold, the first half a warm-up (not counted); a move is kept when it codes
    the piece smaller by ``s.level3_piece_margin`` (a first stage beyond LONG_MEMORY's length is not
    tried: decode speed). Three codings of the piece at most, only where they are at most
    ``s.level3_piece_share`` of the frames of ``y``; else ``best`` itself, no coding."""
    n = y.shape[0]
    half = s.level3_piece
    if half <= 0 or 3 * 2 * half > s.level3_piece_share * n:
        return best
    lo = n // 2 - half
    piece = y[lo:lo + 2 * half]
    if tmode:
        piece = np.searchsorted(table, piece).astype(np.int64)
    tab = table if tmode == TABLE_VALUES else None
    moves = dict(MOVES)
    cur = dict(DEFAULTS, **best)
    got = None
    for name in PIECE_MOVES:
        alt = dict(cur, **moves[name](cur))
        if alt == cur or alt["n1"] > LONG_MEMORY["n1"]:
            continue
        if got is None:
            got = _coded_size(piece, _vector(cur, C), tab, half)
        size = _coded_size(piece, _vector(alt, C), tab, half)
        if size < got * (1 - s.level3_piece_margin):
            cur, got = alt, size
    return {k: v for k, v in cur.items() if DEFAULTS[k] != v}


def _chunk_order(y: np.ndarray, chunks: list, s, evals: int | None = None) -> tuple:
    """CANDIDATES in the order the search on chunks tries them: those whose use a cue of the
    recording asks for last unless it does (order 64 over a short window: ``order_gain_db`` of
    the chunks at least ``s.level3_search_order_db``; the least-squares mix per hold state: held
    values, which put it, then block LPC, first; block LPC: held values only, its verdict on a
    chunk biased by the others' warm-up), the others in CANDIDATES' order; then QUIET_BACKGROUND
    where ``s.level3_search_quiet`` and the plan's ``evals`` codings (None: any) cover the
    defaults, every candidate, it, and one coding of the descent after."""
    held = _holds(y)
    many = order_gain_db(np.concatenate(chunks)) >= s.level3_search_order_db

    def cued(c: dict) -> bool:
        if "lpc" in c:
            return held
        if "fmix" in c:
            return held
        if c.get("p1", 0) > DEFAULTS["p1"]:
            return many
        return True

    # (only where the plan codes every candidate and it, with a coding left for the descent after:
    # taking the descent's last coding cost speech-allison 0.16 %)
    spare = evals is None or evals - 1 >= len(CANDIDATES) + 2
    quiet = (QUIET_BACKGROUND,) if s.level3_search_quiet and spare else ()
    return tuple(sorted(CANDIDATES, key=lambda c: (not cued(c), "lpc" in c and not held))) + quiet


def _choose_vmod(y: np.ndarray, table: np.ndarray | None, prm: list[int], limit: int | None = None) -> list[int]:
    """``prm`` with the value model on (``vmod`` = 1, version 3) when the symbols' range is at
    most ``mixsignal.VM_MAX_RANGE`` and it codes the first ``Settings.level3_vmod_sample``
    frames smaller (their second half counted; all of them, exactly, when that is the whole
    recording): an ADC's unequal code widths or a rescaled grid show as uneven counts of
    neighbouring values, which it learns; elsewhere it costs its learning. ``limit``: at most
    this many first frames coded (``_vmod_frames``), the saving scaled to the frames the
    sample above counts."""
    k = _kernels()
    full = settings.current().level3_vmod_sample
    if full <= 0 or int(y.max()) - int(y.min()) + 1 > k.VM_MAX_RANGE or prm[k.PRM_VMOD]:
        return prm
    sample, skip, scale = _choice_sample(y, full, limit)
    on = list(prm)
    on[k.PRM_VMOD] = 1
    # one coding with the model: the coder's own probabilities (which the model does not change)
    # give the size without it, less the model's saving the kernel counts (1/16 bits)
    res = np.zeros((sample.shape[0], 3 * sample.shape[1]), np.int64)
    _coded_size(sample, on, table, 0, res)
    saved = (int(res[-1, -1]) - (int(res[skip - 1, -1]) if skip else 0)) * scale
    return on if saved > 16 * 8 * VMOD_HEADER_BYTES else prm


def _choose_vcls(y: np.ndarray, table: np.ndarray | None, prm: list[int], limit: int | None = None) -> list[int]:
    """``prm`` with version 9's code classes on (the value model, ``vmod`` = 1, with ``vcls`` =
    ``Settings.level3_vcls_bits``) where ``_dnl_cue`` fires on the values, ``_xctx_gates`` do not
    pass (values that recur: the exact-value contexts' case), their range fits
    (``format.vmod_fits``) and they code ``_choice_sample``'s frames (of ``Settings.level3_vcls_sample``) smaller by
    ``level3_vcls_margin`` of its bytes and 16 bytes (two codings of the sample, with and
    without, where ``prm`` has the value model; else one, with, the kernel counting what the
    model saved); else ``prm``."""
    k = _kernels()
    s = settings.current()
    vals = table[y] if table is not None else y
    on = list(prm)
    on[k.PRM_VMOD] = 1
    on[k.PRM_VCLS] = s.level3_vcls_bits
    span = int((y.max(axis=0) - y.min(axis=0)).max()) + 1
    if prm[k.PRM_VCLS] or s.level3_vcls_sample <= 0 or not vmod_fits(on, y.shape[1], int(y.max()) + 1) or (
            not vmod_fits(on, y.shape[1], span)) or not _dnl_cue(vals) or _xctx_gates(y, prm, limit) is not None:
        return prm  # (where the exact-value contexts may be kept, values that recur: the classes on top
        # cost the speed floor, weather-pvgis-tmy 0.29 -> 0.18 M values/s encode, for 1.5 %)
    sample, skip, scale = _choice_sample(y, s.level3_vcls_sample, limit)
    if prm[k.PRM_VMOD]:  # against the value model without classes: two codings
        before = _coded_size(sample, prm, table, skip)
        after = _coded_size(sample, on, table, skip)
    else:  # without the value model: one coding, the kernel counting what the model saved (1/16 bits)
        res = np.zeros((sample.shape[0], 3 * sample.shape[1]), np.int64)
        after = _coded_size(sample, on, table, skip, res)
        before = after + (int(res[-1, -1]) - (int(res[skip - 1, -1]) if skip else 0)) / 128
    return on if (before - after) * scale > 16 + s.level3_vcls_margin * before * scale else prm


#: The widest symbol range on which ``_choose_xctx`` tries the exact-value contexts (a cue of the
#: encoder's, no bound of the format: a 16-bit audio range, where values rarely recur, is not tried)
XCTX_MAX_RANGE = 1 << 14
XCTX_HEADER_BYTES = 2  #: what the exact-value contexts add to the header (a mask bit and a value), at most
#: Issue 29's speed floor: level 3 decodes at least this many values a CPU second (one core)
XCTX_FLOOR = 200_000
#: ``_choose_xctx`` keeps the full contexts (``xctx`` = 1) only where ``xctx_decode_ns`` predicts at
#: least this multiple of the floor (room for a busy machine and for the model's error)
XCTX_MARGIN = 1.5
#: ``xctx_decode_ns``'s model: ns a value, ns a bit a value of the sample's coding, ns more where the
#: hashed contexts' table outgrows the caches (fitted to 8 weather recordings, level 3's defaults,
#: one core: benchmarks/results/level3-xctx-speed.md)
XCTX_NS = (2450.0, 300.0, 1600.0)
XCTX_BIG = 1 << 14  #: values (frames x channels) from which the hashed contexts' table exceeds 2**20 entries


def xctx_decode_ns(bits_per_value: float, n: int, C: int) -> float:
    """A deterministic model (no timing) of the CPU nanoseconds a value that level 3's decoder
    spends with the full exact-value contexts (``xctx`` = 1) on n frames of C channels coded at
    ``bits_per_value``: a base, a cost per coded bit (a wider residual takes more binary decisions,
    each refined by the contexts) and, from ``XCTX_BIG`` values on, the misses of the 2**21- to
    2**22-entry hashed table (``mixctx.new_state``). Above 1e9 / (XCTX_FLOOR XCTX_MARGIN), the
    encoder takes the lighter set (``xctx`` = 2)."""
    base, per_bit, big = XCTX_NS
    return base + per_bit * max(0.0, bits_per_value) + (big if n * C >= XCTX_BIG else 0.0)


def _choose_xctx(y: np.ndarray, table: np.ndarray | None, prm: list[int], limit: int | None = None) -> list[int]:
    """``prm`` with the exact-value contexts on (``xctx`` = 1 or 2, version 6) when the symbols' range
    is at most ``XCTX_MAX_RANGE`` and, on the frames ``_choose_vmod`` codes (the same sample,
    the same scaling), the kernel's estimate of what they save (the cost of the coder's
    probabilities less that of the final stage's, 1/16 bits) exceeds their header bytes:
    readings on a coarse grid whose exact values recur (hourly weather, irradiance at night, a
    saturated humidity); elsewhere they cost their learning and the encoder leaves them off
    (version 5's bytes). One coding of the sample, with ``prm`` as chosen and ``xctx`` = 2 (the
    successor lists alone), where its ``pair_recurrence`` reaches ``Settings.level3_xctx_recur``
    (no coding elsewhere); kept only when it saves at least ``Settings.level3_xctx_gain`` of the
    sample's bytes (the contexts slow the coder 2- to 3-fold: a smaller gain is not worth it).
    The full set (``xctx`` = 1, the hashed contexts too) where ``xctx_decode_ns`` of the sample's
    bits a value and y's shape keeps the decoder above ``XCTX_MARGIN`` times ``XCTX_FLOOR``,
    else ``xctx`` = 2 (within 0.3 % of its bytes on weather, often smaller: the hashed contexts
    add little where the lists hold the recurring values)."""
    k = _kernels()
    gated = _xctx_gates(y, prm, limit)
    if gated is None:
        return prm
    sample, skip, scale = gated
    on = list(prm)
    on[k.PRM_XCTX] = 2
    res = np.zeros((sample.shape[0], 4 * sample.shape[1]), np.int64)
    size = _coded_size(sample, on, table, 0, res)
    return _xctx_verdict(y, prm, sample, skip, scale, size, res[:, 3 * sample.shape[1]:])


def _full_contexts_encode_ns(bits_per_value: float, n: int, C: int, sample: int) -> float:
    """A deterministic model (no timing) of the encoder's CPU ns a value on n frames x C channels
    with the full contexts (``xctx`` = 1): ``cost.encode_ns`` with the search at its least
    (``Settings.level3_search_model_least`` codings) and the contexts' sample of ``sample``
    values, its final coding at ``xctx_decode_ns``' ns (the decoder runs the same kernel) in place
    of a plain coding's. ``_choose_xctx`` keeps the full set only where this keeps
    ``cost.ENC_MARGIN`` times issue 29's floor."""
    s = settings.current()
    return (encode_ns(n, C, s.level3_search_model_least, sample) - coder_ns(C)
            + xctx_decode_ns(bits_per_value, n, C))


def _search_shares(x2: np.ndarray) -> tuple[float, float]:
    """(the search's work bound for ``x2`` ((frames, C) integers, before any front-end chain), in
    codings of the recording (``cost.search_share``, the final coding's contexts counted on at most
    ``Settings.level3_search_model_final`` frames); the bound that sizes the contexts' sample, the
    same without them counted: cutting the search does not shorten that sample), with the values
    of the sample ``_choose_xctx`` will likely code: its gates that need no coding (version, the
    symbols' range, a grid's step the gcd of the first frames', ``pair_recurrence``) on ``x2``'s
    first frames (as many as ``search.proxy_plan``'s prefix, at most ``level3_xctx_sample``), else
    none."""
    s = settings.current()
    n, C = x2.shape
    final = 0 < n <= s.level3_search_model_final
    sample = 0
    if s.level3_search_model and s.level3_version >= 6 and s.level3_xctx_sample > 0 and n * C > 0:
        frames = min(n, s.level3_xctx_sample, proxy_plan(n, C, s)[0])
        head = _channel_sample(np.ascontiguousarray(x2[:frames]).astype(np.int64))
        if search_share(n, C, head.size, s, final) == search_share(n, C, 0, s, False):
            share = search_share(n, C, 0, s, False)  # (the sample changes nothing: no cue computed)
            return share, share
        lo = int(x2.min())
        span = int(x2.max()) - lo
        if span >= XCTX_MAX_RANGE:  # (a grid's step: the range of its symbols)
            span //= max(1, int(np.gcd.reduce((head - lo).ravel())))
        if span < XCTX_MAX_RANGE and pair_recurrence(head) >= s.level3_xctx_recur:
            sample = head.size
    return search_share(n, C, sample, s, final), search_share(n, C, sample, s, False)


def pair_recurrence(y: np.ndarray) -> float:
    """The largest share, over the channels of ``y`` ((frames, C) integers), of the frames whose
    value followed the same value before (a pair of consecutive values seen earlier); 0 for fewer
    than 2 frames. Hourly weather readings score 0.36 to 1, most audio below 0.1."""
    if y.shape[0] < 2:
        return 0.0
    best = 0.0
    for c in range(y.shape[1]):
        v = y[:, c].astype(np.int64)
        a = v - v.min()
        w = int(a.max()) + 1
        if w < 1 << 31:  # each pair as one key, a * w + b (distinct pairs, distinct keys): a sort of
            # integers, not of rows (np.unique with axis=0 sorts a structured view: 4-25 times slower)
            keys = np.sort(a[:-1] * w + a[1:])  # (sorted, the changes counted: np.unique hashes, 4-8 times slower)
            distinct = 1 + int(np.count_nonzero(keys[1:] != keys[:-1]))
        else:
            distinct = np.unique(np.stack([v[:-1], v[1:]], 1), axis=0).shape[0]
        best = max(best, 1.0 - distinct / (v.shape[0] - 1))
    return best


def successor_recurrence(y: np.ndarray) -> float:
    """The largest share, over the channels of ``y`` ((frames, C) integers), of the frames whose
    value is the one that followed the previous value when it last occurred (what the contexts'
    successor lists, ``xctx`` = 2, predict); 0 for fewer than 2 frames. Hourly and minutely weather
    and its channels alone 0.072 to 1; seismic, EEG and chime records whose values recur
    (``pair_recurrence`` 0.4 to 0.8) 0.019 to 0.054, where the contexts save nothing
    (results/level3-floor-5.md)."""
    if y.shape[0] < 2:
        return 0.0
    best = 0.0
    for c in range(y.shape[1]):
        v = y[:, c]
        prev, nxt = v[:-1], v[1:]
        order = np.argsort(prev, kind="stable")  # (each previous value's occurrences in time order)
        ps, ns = prev[order], nxt[order]
        hits = int(np.count_nonzero((ps[1:] == ps[:-1]) & (ns[1:] == ns[:-1])))
        best = max(best, hits / (v.shape[0] - 1))
    return best


def _vmod_frames(n: int, C: int, start: tuple | None, contexts: bool = False) -> int | None:
    """The frames ``_choose_vmod`` codes at most for a recording of n frames x C channels: the
    search's prefix (``search.budget_plan``; ``start``: ``_choose_front_proxy``'s, which
    holds it) where ``Settings.level3_vmod_on_proxy`` and the search is on a prefix, else None.
    ``contexts``: those ``_choose_xctx`` codes, the prefix of the plan before the final coding's
    contexts were counted (``_search_shares``; ``start``'s seventh entry) where they differ."""
    s = settings.current()
    if not s.level3_vmod_on_proxy or not _whole_budget(n * C):
        return None
    if contexts and start is not None and len(start) > 6:
        return start[6]
    return start[4][0] if start is not None and len(start) > 4 else budget_plan(n, C, s)[0]


def _holds(y: np.ndarray) -> bool:
    return hold_share(y) >= settings.current().level3_search_hold


def _vmod_sample() -> int:
    return settings.current().level3_vmod_sample


def _search_budget() -> float:
    return settings.current().level3_search_budget


def _search_margin() -> float:
    return settings.current().level3_search_margin


def _search_whole(y: np.ndarray, table: np.ndarray | None, tmode: int, C: int,
                  known: tuple | None = None) -> tuple[list[int], int | None]:
    """The parameters that code a prefix of ``y`` smallest, by ``search.greedy`` from
    DEFAULTS (``search.proxy_plan``: the prefix's frames, the codings, the margin; the
    whole of ``y`` when the prefix is all of it, then the sizes are exact and the margin 0).
    ``known``: (start, first move, the start's ``_coded_size`` of the prefix, the symbols,
    the plan, the value model's choice), as ``_choose_front_proxy`` measured them (not measured
    again), or None. Returns (the parameters, the value model's choice: 0 or 1, None when not
    made). Where the start is measured here on a prefix shorter than ``y`` and the value model
    may be used (``_vmod_on_proxy``), it is coded with the model on, which decides it (as
    ``_vmod_saving``) and gives the size without it: no coding more; the search then has
    one coding fewer when the start was measured on part of the prefix only (block LPC, "mult":
    ``search.chain_part``), so that the bound of ``budget_plan`` holds. Where ``search.tonal`` finds a
    sustained tone, the parameters chosen then take ``search.tonal_change`` (the refined solve,
    version 7, and a smaller ridge; no coding); where ``search.dc_ratio`` finds the working zero
    far from the mean, ``search.dc_change`` (the least squares centred, version 8) is coded once
    on the prefix and kept when smaller by the margin, else, where the search ended with
    ORDER_MOVE's short least squares, ``_fast_parts`` likewise (``Settings.level3_order_trial``);
    then for a sustained tone whose search kept the default NLMS power, Sac's recent-past power and least-squares memory
    (``search.tonal_trial``: ``Settings.level3_tonal_powr``, ``level3_tonal_t1``,
    ``level3_tonal_trial_reg``) likewise, in one coding; then for a held tone (``search.held_lag``,
    as ``held_period``) the NLMS cascade fitted to its period (``search.held_cascade``) likewise,
    and where kept, its steps (``search.cascade_steps``) judged with the first stage's length on the
    held part's sample (``_held_choice``). (Version 9's code classes are decided after it,
    ``_choose_vcls``: moves judged with them lost where the classes were then not kept, acc-plux
    +4.8 %, ecg-plux-1k +6.3 %, results/level3-codes.md.)"""
    s = settings.current()
    planned = known[4] if known is not None and len(known) > 4 else budget_plan(y.shape[0], C, s)
    frames, evals, margin = planned
    start, first, start_size = known[:3] if known is not None else (*plan(y, s, DEFAULTS), None)
    evals = max(1, evals - spare_codings(start, DEFAULTS, s))
    tone = tonal(y, s)  # (decided on the recording, not on the prefix: no coding spared for it)
    lag, peak = (held_lag(y, s) if tone and s.level3_held_n1 > 0 and s.level3_held_spans > 0
                 and planned[1] >= DC_MIN_EVALS and start.get("n1", DEFAULTS["n1"]) == DEFAULTS["n1"] else (0, 0.0))
    held = lag * s.level3_held_spans > DEFAULTS["n1"] and peak >= s.level3_period_residual  # (``held_period``)
    if held:  # (the held part's two codings: the search gives up level3_held_spare of its own)
        evals = max(1, evals - s.level3_held_spare)
    proxy, tab = _proxy_symbols(y, table, tmode, frames)
    decided = known[5] if known is not None and len(known) > 5 else None
    if start_size is None and frames < y.shape[0] and s.level3_search_work > 0:
        if known is not None:  # (measured on the prefix's part: this coding is one the bound did not count)
            evals = max(1, evals - 1)
        if decided is None and _vmod_on_proxy(y, table, tmode, s):
            res = np.zeros((frames, 3 * C), np.int64)
            start_size = _coded_size(proxy, _vector(dict(start, vmod=1), C), tab, 0, res) + int(res[-1, -1]) / 128
            decided = _vmod_saving(res, y.shape[0], s)
    if start_size is None and evals <= 1 and planned[1] < DC_MIN_EVALS:
        # (the start alone, its size read by nothing after: ``front._start_unmeasured``, no coding)
        best, best_size = dict(start), None
    else:
        best, best_size = greedy(lambda named: _coded_size(proxy, _vector(named, C), tab), start, evals, margin,
                                 first, start_size=start_size, order=move_order(y, s))
    centred = dc_change(best, y, s) if planned[1] >= DC_MIN_EVALS else best  # a skewed range: the
    # least squares centred (version 8), when smaller
    if centred != best:
        got = _coded_size(proxy, _vector(centred, C), tab)
        if got < best_size * (1 - margin):
            best, best_size = centred, got
    elif (fast := _fast_parts(best) if planned[1] >= DC_MIN_EVALS and s.level3_order_trial else None):
        # (in the centred coding's place) many resonances: the short least squares solved twice as
        # often, the second NLMS stage twice as long, when smaller
        got = _coded_size(proxy, _vector(fast, C), tab)
        if got < best_size * (1 - margin):
            best, best_size = fast, got
    elif (trial := dc_trial(best, y, s) if planned[1] >= DC_MIN_EVALS else None) is not None:
        # (in the centred coding's place, where ``_fast_parts`` has none) a broadband, noise-like
        # signal: the least squares centred, when smaller
        got = _coded_size(proxy, _vector(trial, C), tab)
        if got < best_size * (1 - margin):
            best, best_size = trial, got
    if tone and s.level3_tonal_powr and best.get("powr", DEFAULTS["powr"]) == DEFAULTS["powr"] \
            and planned[1] >= DC_MIN_EVALS:  # a tone's NLMS power from its recent past and Sac's
        alt = tonal_trial(best, s, tonal_stats(y)[0])  # least-squares memory, when smaller
        got = _coded_size(proxy, _vector(alt, C), tab)
        if got < best_size * (1 - margin):
            best, best_size = alt, got
    fitted = False
    if held and (cascade := held_cascade(best, lag, s, peak)) is not None:  # its cascade fitted to the
        got = _coded_size(proxy, _vector(cascade, C), tab)  # held period, when smaller
        if got < best_size * (1 - margin):
            best, fitted = cascade, True
    if tone:  # a sustained tone: the refined solve and a smaller ridge (version 7)
        best = tonal_change(best, s)
        if held:  # its held part's period: a longer first NLMS stage (and the fitted cascade's steps), judged there
            best = _held_choice(y, table, tmode, C, best, s, fitted)
    return _vector(best, C), decided


def _fast_parts(named: dict) -> dict | None:
    """``named`` (parameters by name) with its fast-following parts made stronger, where it has
    ORDER_MOVE's short least squares (order 32 solved every 32 frames, for speed: a source rich in
    harmonics whose spectrum changes slowly): that solved every 16 frames and the second NLMS stage
    twice as long (spanning a high note's period: trumpet-12's 48 frames against 32 taps); else
    None. The search on a prefix tries it once, after its descent, where the range is not skewed
    (``search.dc_change`` codes nothing: the trial takes the centred coding's place, so no recording
    codes its prefix more often than one with a skewed range), and keeps it when smaller by the
    margin (``_search_whole``; results/level3-sac-gap-7.md)."""
    order = dict(MOVES)[ORDER_MOVE](DEFAULTS)
    if named.get("p2") != order["p2"] or named.get("k2") != order["k2"] or named.get("p1") != order["p1"]:
        return None
    return dict(named, k2=order["k2"] // 2, n2=min(2 * named["n2"], 256))


def _held_tone(x2: np.ndarray) -> bool:
    """Whether ``x2`` ((frames, C) integers, before any front-end chain) is a sustained tone whose
    held part's period a first NLMS stage of the default length spans fewer than
    ``Settings.level3_held_spans`` times (``search.tonal``, ``search.held_period``), where
    ``Settings.level3_held_chains`` is off: the front-end chains with stages are not compared (block
    LPC, forward-adaptive, is for spectra that change faster than the least squares follow, a held
    tone's the opposite; it won on none of the 32 audio files) and the search codes a sample of the
    held part instead (``_held_choice``)."""
    s = settings.current()
    if s.level3_held_n1 <= 0 or s.level3_held_chains:
        return False
    return tonal(x2, s) and held_period(x2, s, DEFAULTS["n1"])


def _held_choice(y: np.ndarray, table: np.ndarray | None, tmode: int, C: int, best: dict, s,
                 cascade: bool = False) -> dict:
    """``best`` (parameters by name, a sustained tone's, ``tonal_change`` applied) or the same with
    a first NLMS stage of ``s.level3_held_n1`` taps, whichever codes a sample of the held part of
    ``y`` (the symbols, (frames, C)) smaller: the frames from ``level3_held_end`` less twice
    ``level3_held_part`` of the recording to ``level3_held_end``, each vector coded from cold, the
    first half the models' warm-up (not counted). Two codings of that sample; the longer stage only
    where it is smaller (results/level3-sac-gap-6.md). ``cascade``: ``best`` has the cascade fitted to
    the held period (``search.held_cascade``); then the choice with its NLMS steps moved from the
    first stage to the last (``search.cascade_steps``) is coded on the same sample too (one coding
    more) and kept when smaller (results/level3-tone.md)."""
    n = y.shape[0]
    part = int(n * s.level3_held_part)
    end = min(n, int(n * s.level3_held_end))
    lo = max(0, end - 2 * part)
    if part < 1 or end - lo <= part or best.get("n1", DEFAULTS["n1"]) != DEFAULTS["n1"]:
        return best
    sample, tab = _proxy_symbols(y[lo:end], table, tmode, end - lo)
    skip = end - lo - part
    alt = dict(best, n1=s.level3_held_n1)
    got, was = _coded_size(sample, _vector(alt, C), tab, skip), _coded_size(sample, _vector(best, C), tab, skip)
    best, got = (alt, got) if got < was else (best, was)
    steps = cascade_steps(best, s) if cascade else None
    if steps is not None and _coded_size(sample, _vector(steps, C), tab, skip) < got:
        return steps
    return best


def _search_codings(n: int, C: int) -> int:
    """The codings ``_search_whole`` spends on a recording of n frames x C channels
    (``search.budget_plan``): 1 measures only its start, which a short recording coded
    whole with each chain at the default parameters has measured."""
    return budget_plan(n, C, settings.current())[1]


def _encode_front(x2: np.ndarray, ndim: int, chain, params, search: bool, unless_defaults: bool = False,
                  start: tuple | None = None) -> bytes:
    """Mode 2: the stage record (msgpack, length first), the CRC-32 of every byte before it, then
    the level-3 bytes of the chain's output (frames, channels) in its own dtype."""
    y, record = _forward(x2, chain)
    n, C = x2.shape
    head = bytearray([_header_version(), _dtype_code(x2.dtype), ndim]) + _uleb(n) + (_uleb(C) if ndim == 2 else b"")
    head.append(MODE_FRONT)
    rec = msgpack.packb(record, use_bin_type=True)
    head += _uleb(len(rec)) + rec
    head += zlib.crc32(head).to_bytes(4, "little")
    inner = encode(y, params=params, search=search, front=None, _unless_defaults=unless_defaults, _start=start,
                   _together=params is None and search and _move_together(x2))  # (the chain's input: its outputs are residuals)
    return bytes(head) + inner if inner else b""
