"""Level 3: the strongest (and slowest) lossless coder of integer signals (issue 29).

    encode(values, *, params=None, search=True, front="auto") -> bytes
    decode(data, *, max_values=MAX_VALUES) -> the array: same dtype (native byte order), shape

``values``: (frames,) or (frames, channels), any integer dtype. Prediction is a mix, not a
choice: two least-squares predictors over forgetting windows of different lengths (the first
also over the neighbouring channels of 2-D input; the second may be block LPC; version 2 adds an
optional third, ``p3``, and a level context, ``lvl``, both off by default; version 3 a value
model, ``vmod``, of each symbol's learned weight, chosen by the encoder), a cascade of
NLMS filters on their residual, a mixer of the stages and of bias estimates, all in integer
arithmetic; the residuals are coded by context mixing whose contexts include the recent
magnitudes and the predictors' disagreement, with two mixers and two APMs a decision
(``ubpe._kernels.mixsignal``, normative for the payload). The encoder picks, on samples, a
front-end chain of level 2 (block LPC, the "mult" split; ``front``) and a parameter vector
among physics-motivated candidates (``CANDIDATES``), stored in the header: decoding is one
pass. Speed and memory: ``mixsignal``'s docstring and ``benchmarks/bench_level3.py``.

Bytes (integers LEB128, minimal; ``z`` marks a zigzag-mapped signed one)::

    version (1 byte: 1 to 5, VERSIONS) | dtype code (1 byte, DTYPES) | ndim (1 byte: 1 or 2)
    frames | channels (only when ndim == 2)
    mode (1 byte): 0 model, 1 raw, 2 front
    mode 0: lo (z) | step | table | [table mode (1 byte: 1 values, 2 indices) when a table]
            | gs (1 byte) | per channel: lo_c, hi_c - lo_c | the parameters (below)
            | [LPC params: length, msgpack list of one ``ubpe.frontend.lpc.lpc_forward`` params map
               a channel, when params[PRM_LPC] == 1] | payload (``mixsignal.run``)
    mode 1: the values, little-endian, frames x channels (a range of 2**40 or more)
    mode 2: the record's length | msgpack list of front-end stages (``ubpe.frontend``)
            | CRC-32 of every byte before it (4 bytes, little-endian)
            | the level-3 bytes (any mode but 2) of the chain's output, (frames, channels)

The parameters (``mixsignal.PRM_*``): version 1 stores the first ``N_PRM_V1`` (23), the others
read as ``V1_TAIL`` (the model of version 1); versions 2 to 4 store a mask (version 2's over
the first ``N_PRM_V2`` (28), ``vmod`` then 0; version 3's over ``N_PRM_V3`` (29), ``mixb`` then
0; version 4's over ``N_PRM_V4`` (30), ``nlmsq`` then 0; bit i set: parameter i differs from ``base_params(channels, version)``, a constant of the
format: ``BASE_PARAMS``, version 4's ``BASE_PARAMS_V4``, version 5's ``BASE_PARAMS_V5``) and then the parameters whose bit is
set, in index order (defaults cost one byte, not 28).

``table``: U (0: none), then for U >= 2 the smallest gap between consecutive values, the order k
(1 byte) and the gaps minus the smallest as exponential-Golomb codes of order k (bit-packed,
zero padding). Symbols y (table indices, else the values divided by step) decode to values
``lo + step * (table[y] if table else y)``; every channel's symbols lie in ``[lo_c, hi_c]``
(checked while decoding). The kernel's check bits (16, at the end of the payload) cover a hash
of every symbol seeded with the CRC-32 of the header before the payload. Decoding refuses, with
:class:`ubpe.CorruptDataError`, any field out of its bounds or not minimally encoded, a dtype
the values do not fit, a range of 2**40 or more, more than ``max_values`` values, a front-end
record that ``ubpe.frontend.parse_chain`` refuses, all before a kernel runs, and a payload
whose check bits or length do not match.
"""

from __future__ import annotations

import zlib

import numpy as np

from ._validate import check_int
from .errors import CorruptDataError

__all__ = ["encode", "decode", "describe_head", "CODER", "MAX_VALUES", "MAX_CHANNELS", "DTYPES"]

VERSION = 5  #: the version ``encode`` writes (``Settings.level3_version``: 1 to 4 write theirs)
VERSIONS = (1, 2, 3, 4, 5)
#: dtype codes: the index in this tuple
DTYPES = ("|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8")
MAX_VALUES = 1 << 30  #: decode's default cap on frames x channels
MAX_CHANNELS = 4096
MAX_RANGE_BITS = 40  #: a wider range of values is stored raw (mode 1)
MAX_TABLE = 1 << 16  #: the most distinct values a value table (sparse values) holds
MODE_MODEL, MODE_RAW, MODE_FRONT = 0, 1, 2
#: The stream coder of a ``ubpe.compress(level=3)`` container whose payload is ``encode``'s bytes.
CODER = "mixsignal"
#: the value table's use: none; the model predicts values and codes table indices around the
#: value predicted; the model predicts the indices themselves (a grid nearly regular)
TABLE_NONE, TABLE_VALUES, TABLE_INDICES = 0, 1, 2
#: The front-end chains ``encode(front="auto")`` tries ("mult" ones only where mult_detect splits).
FRONT_CHAINS = ((), ("lpc",), ("mult",), ("mult", "lpc"))
#: the chains are compared on the search's proxy (``_choose_front_proxy``, Settings.level3_front_on_proxy), else
#: on max(Settings.level3_front_frames, n // FRONT_SAMPLE) middle frames
FRONT_SAMPLE = 8
MAX_FRONT_BYTES = 1 << 28
NO_TABLE = np.zeros(0, np.int64)


def _kernels():
    from ._kernels import mixsignal

    return mixsignal


# ---------------------------------------------------------------- byte helpers


def _uleb(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zig(v: int) -> int:
    return 2 * v if v >= 0 else -2 * v - 1


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self, what: str) -> int:
        if self.pos >= len(self.data):
            raise CorruptDataError(f"level-3 data truncated: no {what}")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def uleb(self, what: str, high: int) -> int:
        v = shift = 0
        start = self.pos
        while True:
            b = self.byte(what)
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
            if shift > 70:
                raise CorruptDataError(f"level-3 data: {what} is not a valid LEB128 integer")
        if self.pos - start > 1 and b == 0:
            raise CorruptDataError(f"level-3 data: {what} is not minimally encoded")
        if v > high:
            raise CorruptDataError(f"level-3 data: {what} {v} exceeds {high}")
        return v

    def zig(self, what: str, high: int) -> int:
        u = self.uleb(what, 2 * high + 1)
        return u >> 1 if not u & 1 else -((u + 1) >> 1)


# ---------------------------------------------------------------- parameters


#: The default parameters (``mixsignal.PRM_*`` by name, lower case): a long OLS (order 32,
#: forgetting period 1024, solved every 16 frames, weighted towards least absolute errors), a
#: short one (order 8, period 64), NLMS stages of 256, 32 and 8 taps; version 2's third
#: least-squares predictor off (p3 = 0) and the APMs at rate 2**-6 (apmr), as in version 1;
#: version 4's: no bias estimates among the mixer's inputs (bias = 0) and the mix blended with
#: the plain sums of the stages by their recent errors (mixb = 1); version 5's: the NLMS
#: weights in Q20 with rounded updates (nlmsq = 1). Writing an older version, ``_vector`` reads
#: these as that version's (V4_MODEL, V5_MODEL).
DEFAULTS = dict(p1=32, t1=17, k1=16, cross=2, p2=8, t2=10, k2=2, reg=16, n1=256, n2=32, n3=8,
                mu1=800, mu2=600, mu3=200, mixmu=32, bias=0, limit=255, lr=1, irls=16, powr=19,
                fmix=0, t3=14, lpc=0, p3=0, t4=0, k3=1, apmr=6, lvl=0, vmod=0, mixb=1, nlmsq=1)
#: version 4's defaults that differ from version 3's: name -> (version 4's, version 3's)
V4_MODEL = dict(bias=(0, 1), mixb=(1, 0))
#: version 5's defaults that differ from version 4's: name -> (version 5's, version 4's)
V5_MODEL = dict(nlmsq=(1, 0))

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
#: Sustained, band-limited sources (music at 22-48 kHz, lossy-decoded audio): a long NLMS stage
#: (1 024 taps) and longer least-squares memories follow partials that last thousands of frames
#: (results/level3-music.md: against the defaults, coded whole, music-xblast-intro8 -4.3 %,
#: music-oxygen-login -3.0 %).
LONG_MEMORY = dict(n1=1024, t1=19, t2=12)
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
SEARCH_MIN = 4096  #: the search's sample: at least this many frames (else the whole recording)
SEARCH_CHUNKS = 4  #: the sample's chunks, spread over the recording
# how much smaller on the sample a candidate must be to be chosen: Settings.level3_search_margin


def _vector(named: dict, channels: int) -> list[int]:
    k = _kernels()
    if _version() < 5:  # version 5's defaults read as the older model's
        named = dict(named, **{n: old for n, (new, old) in V5_MODEL.items() if named.get(n, new) == new})
    if _version() < 4:  # version 4's defaults read as the older model's
        named = dict(named, **{n: old for n, (new, old) in V4_MODEL.items() if named.get(n, new) == new})
    p = [0] * k.N_PRM
    for name, v in named.items():
        p[getattr(k, "PRM_" + name.upper())] = v
    p[k.PRM_CROSS] = min(p[k.PRM_CROSS], max(channels - 1, 0))
    return p


#: The parameter vector a version-2 header's mask is relative to (normative: never change it), with
#: ``cross`` = min(2, channels - 1).
BASE_PARAMS = (32, 17, 16, 2, 8, 10, 2, 16, 256, 32, 8, 800, 600, 200, 32, 1, 255, 1, 16, 19, 0, 14, 0,
               0, 0, 1, 6, 0, 0, 0)
#: Version 4's (normative): BASE_PARAMS with bias = 0 and mixb = 1 (its defaults).
BASE_PARAMS_V4 = BASE_PARAMS[:15] + (0,) + BASE_PARAMS[16:29] + (1,)
#: Version 5's (normative): BASE_PARAMS_V4 and nlmsq = 1 (its default).
BASE_PARAMS_V5 = BASE_PARAMS_V4 + (1,)


def base_params(channels: int, version: int | None = None) -> list[int]:
    """The mask's reference in a header of ``version`` (None: ``Settings.level3_version``):
    ``BASE_PARAMS`` (versions 2 and 3), ``BASE_PARAMS_V4`` or ``BASE_PARAMS_V5``, for ``channels``
    channels (the parameters a version lacks read as 0)."""
    version = _version() if version is None else version
    p = list(BASE_PARAMS_V5 if version >= 5 else (BASE_PARAMS_V4 if version >= 4 else BASE_PARAMS))
    p += [0] * (_kernels().N_PRM - len(p))  # parameters the version lacks: 0, its model
    p[_kernels().PRM_CROSS] = min(p[_kernels().PRM_CROSS], max(channels - 1, 0))
    return p


def _params_bytes(prm: list[int], channels: int, version: int) -> bytes:
    """The header's parameter field (version 1: the first N_PRM_V1 as LEB128; version 2: the mask
    against ``base_params``, then the parameters that differ)."""
    k = _kernels()
    if version == 1:
        if tuple(prm[k.N_PRM_V1:k.N_PRM_V2]) != k.V1_TAIL or any(prm[k.N_PRM_V2:]):
            raise ValueError("parameters beyond version 1's need version 2 (Settings.level3_version)")
        return b"".join(_uleb(v) for v in prm[:k.N_PRM_V1])
    if version == 2 and any(prm[k.N_PRM_V2:]):
        raise ValueError("the value model (vmod) needs version 3 (Settings.level3_version)")
    if version == 3 and any(prm[k.N_PRM_V3:]):
        raise ValueError("the blended mix (mixb) needs version 4 (Settings.level3_version)")
    if version == 4 and any(prm[k.N_PRM_V4:]):
        raise ValueError("the NLMS weights in Q20 (nlmsq) needs version 5 (Settings.level3_version)")
    base = base_params(channels, version)
    mask = sum(1 << i for i, (v, b) in enumerate(zip(prm, base)) if v != b)
    return _uleb(mask) + b"".join(_uleb(v) for v, b in zip(prm, base) if v != b)


def _read_params(r: "_Reader", channels: int, version: int) -> list[int]:
    k = _kernels()
    if version == 1:
        return [r.uleb(f"parameter {i}", 1 << 16) for i in range(k.N_PRM_V1)] + list(k.V1_TAIL) + [0] * (
            k.N_PRM - k.N_PRM_V2)
    stored = {2: k.N_PRM_V2, 3: k.N_PRM_V3, 4: k.N_PRM_V4}.get(version, k.N_PRM)
    mask = r.uleb("parameter mask", (1 << stored) - 1)
    base = base_params(channels, version)
    prm = list(base)
    for i in range(stored):
        if mask >> i & 1:
            prm[i] = r.uleb(f"parameter {i}", 1 << 16)
            if prm[i] == base[i]:
                raise CorruptDataError(f"level-3 data: parameter {i} marked as changed holds its base value")
    return prm


def _version() -> int:
    from .planner import settings

    return settings.current().level3_version


def default_params(channels: int) -> list[int]:
    """The parameter vector tried first (``mixsignal.PRM_*``)."""
    return _vector(DEFAULTS, channels)


def _check_params(prm: list[int]) -> None:
    k = _kernels()
    for i, (v, (lo, hi)) in enumerate(zip(prm, k.PRM_BOUNDS)):
        if not lo <= v <= hi:
            raise CorruptDataError(f"level-3 data: parameter {i} = {v} outside [{lo}, {hi}]")
    if prm[k.PRM_P1] + 2 * prm[k.PRM_CROSS] > k.MAX_DIM:
        raise CorruptDataError("level-3 data: least-squares order above the maximum")


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


def _dtype_code(dt: np.dtype) -> int:
    return DTYPES.index(f"{'|' if dt.itemsize == 1 else '<'}{dt.kind}{dt.itemsize}")


def _shifted(x2: np.ndarray, lo: int) -> np.ndarray:
    """x - lo as int64 (the range is below 2**40)."""
    if x2.dtype.kind == "u" and x2.dtype.itemsize == 8:
        return (x2 - np.uint64(lo)).astype(np.int64)
    return x2.astype(np.int64) - np.int64(lo)


def encode(values, *, params: list[int] | None = None, search: bool = True, front="auto",
           _unless_defaults: bool = False, _start: tuple | None = None) -> bytes:
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
        if chains is not None and _front_on_proxy(n, C, len(chains)):
            # the chains compared on the search's proxy, each with its start parameters: the
            # winner's coding is the search's first (``_start``), no sample coded for the chains alone
            chain, start = _choose_front_proxy(x2, chains)
            if chain:
                return _encode_front(x2, ndim, chain, None, True, False, start)
            return encode(values, front=None, _start=start)
        if auto and search and params is None and n < _front_frames():
            # a short recording: each chain coded whole (a sample would be all warm-up), then the
            # parameters searched on the whole recording behind the smallest (level3_search)
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
    head = bytearray([version, _dtype_code(x2.dtype), ndim])
    head += _uleb(n)
    if ndim == 2:
        head += _uleb(C)
    if n * C == 0:
        head.append(MODE_MODEL)
        head += _uleb(0) + _uleb(1) + _uleb(0) + bytes([0])
        return bytes(head) + b"".join(_uleb(0) + _uleb(0) for _ in range(C)) + _params_bytes(
            _fixed(params, C), C, version)
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
    if params is None and search and version >= 3 and not vmod_decided:
        prm = _choose_vmod(y, table if tmode == TABLE_VALUES else None, prm, _vmod_frames(n, C, _start))
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
    if prm[_kernels().PRM_VMOD] and int((his - los).max()) >= _kernels().VM_MAX_RANGE:
        prm = list(prm)  # the value model is for narrow ranges only (the kernel ignores it)
        prm[_kernels().PRM_VMOD] = 0
    head += _params_bytes(prm, C, version)
    lpc = None
    if prm[_kernels().PRM_LPC]:
        fit = _lpc_fit(_working_values(y, los, his, gs, tab))
        rec = _lpc_bytes(fit)
        head += _uleb(len(rec)) + rec
        lpc = _lpc_arrays(fit, n)
    return bytes(head) + _run_encode(y, los, his, gs, prm, tab, zlib.crc32(head), lpc)


def _symbols(x2: np.ndarray) -> tuple | None:
    """What ``encode`` codes of (frames, channels) integers x2 with frames x channels > 0: (lo,
    step, y, table, tmode), y (frames, channels) int64 the values less lo divided by step (table
    mode: still values, ``table`` their increasing distinct values); None: a range of 2**40 or
    more (stored raw)."""
    lo, hi = int(x2.min()), int(x2.max())
    if hi - lo >= 1 << MAX_RANGE_BITS:
        return None
    y = np.ascontiguousarray(_shifted(x2, lo))
    step = int(np.gcd.reduce(y.ravel())) if hi > lo else 1
    if step > 1:
        y //= step
    table = None
    rng = (hi - lo) // step
    if rng >= 3:  # (a count per value is cheaper than a sort where the range is not much wider)
        u = np.flatnonzero(np.bincount(y.ravel(), minlength=rng + 1)) if rng < 4 * y.size else np.unique(y)
        # sparse values: few distinct values, each seen many times, with gaps in the bulk of
        # them, not only in the tails (an ADC scaled by a non-integer factor, a grid that is not
        # exactly regular); a short recording's values have gaps only for want of samples
        if (2 * u.size <= rng + 1 and 4 * u.size <= y.size and u.size <= MAX_TABLE
                and np.median(np.diff(u)) >= 2):
            table = u
    # a regular grid (gaps nearly equal: an ADC scaled by a non-integer factor) is predicted as
    # indices; an irregular set (dense in the middle, sparse in the tails) as values
    tmode = TABLE_NONE
    if table is not None:
        gaps = np.diff(table)
        tmode = TABLE_INDICES if np.percentile(gaps, 90) <= 1.5 * np.median(gaps) else TABLE_VALUES
    return lo, step, y, table, tmode


def _shift_of(rng: int) -> int:
    """The working shift gs of a range of values: |v| <= 2**20 after it."""
    return max(0, rng.bit_length() - 21)


def _table_bytes(table: np.ndarray | None) -> bytes:
    """The value table's header bytes: its size U (0: none), then (U >= 2) the smallest gap
    between consecutive values, the order k (1 byte) and the gaps minus the smallest as
    exponential-Golomb codes of order k (``mixsignal.golomb_pack``)."""
    if table is None:
        return _uleb(0)
    d = np.diff(table)
    out = _uleb(table.size)
    if d.size == 0:
        return out
    dmin = int(d.min())
    r = (d - dmin).astype(np.int64)
    best = None
    for k in range(0, 41):
        w = r + (1 << k)
        bits = int(sum(2 * int(v).bit_length() - k - 1 for v in w)) if r.size < 64 else int(
            (2 * np.floor(np.log2(w.astype(np.float64))).astype(np.int64) + 1 - k).sum())
        if best is None or bits < best[0]:
            best = (bits, k)
    k = best[1]
    buf = np.zeros((best[0] + 7) // 8 + 16, np.uint8)
    used = _kernels().golomb_pack(r, k, buf)
    return out + _uleb(dmin) + bytes([k]) + buf[:used].tobytes()


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


LPC_BLOCK = 4096  #: block of the block-LPC predictor (``lpc`` = 1)
NO_LPC = (0, np.zeros((1, 1), np.int64), np.zeros((1, 1), np.int64), np.zeros((1, 1, 1), np.int64))


def _working_values(y: np.ndarray, los: np.ndarray, his: np.ndarray, gs: int, tab: np.ndarray) -> np.ndarray:
    """The kernel's working values v = (value - off) >> gs, (frames, channels) int64."""
    val = tab[y] if tab.size else y
    vlo = tab[los] if tab.size else los
    vhi = tab[his] if tab.size else his
    return (val - ((vlo + vhi) >> 1)) >> gs


def _lpc_fit(v: np.ndarray) -> list:
    """Each channel's block-LPC params (``ubpe.frontend.lpc.lpc_forward`` of its working values)."""
    from .frontend import lpc

    return [lpc.lpc_forward(np.ascontiguousarray(v[:, c]).astype(np.int32), block=LPC_BLOCK)[1]
            for c in range(v.shape[1])]


def _lpc_arrays(params: list, n: int) -> tuple:
    """(block, orders, shifts, coefs) as the kernel takes them, from checked LPC params."""
    from .frontend import lpc

    C = len(params)
    nb = -(-n // LPC_BLOCK)
    orders = np.zeros((C, nb), np.int64)
    shifts = np.zeros((C, nb), np.int64)
    coefs = np.zeros((C, nb, 32), np.int64)
    for c, p in enumerate(params):
        block, o, sh, cf = lpc.check_lpc_params(p, n, np.dtype(np.int32))
        if block != LPC_BLOCK:
            raise CorruptDataError(f"level-3 data: LPC block {block}, expected {LPC_BLOCK}")
        orders[c] = o
        shifts[c] = sh
        at = 0
        for b in range(nb):
            coefs[c, b, :o[b]] = cf[at:at + o[b]]
            at += o[b]
    return LPC_BLOCK, orders, shifts, coefs


def _lpc_bytes(params: list | None) -> bytes:
    import msgpack

    return msgpack.packb(params, use_bin_type=True) if params is not None else b""


def _run_encode(y: np.ndarray, los: np.ndarray, his: np.ndarray, gs: int, prm: list[int], tab: np.ndarray,
                chk0: int = 0, lpc=None) -> bytes:
    k = _kernels()
    n, C = y.shape
    cap = 64 + n * C * 6 + (n * C * max(1, int((his - los).max()).bit_length())) // 7
    buf = np.zeros(cap, np.uint8)
    lpc = NO_LPC if lpc is None else lpc
    length = k.run(y, los, his, gs, np.array(prm, np.int64), buf, False, np.zeros((0, 0), np.int64), chk0, tab,
                   _prior_tables(), *lpc)
    if length < 0:  # pragma: no cover - the bound above holds for every residual
        raise RuntimeError("level-3 coder: output buffer too small")
    return buf[:length].tobytes()


PRIOR_FRAMES = 6144  #: frames of ``mixsignal.prior_signal`` the coder's prior is trained on
PRIOR_CAP = 4  #: the prior's counts are capped here, so that the data soon outweighs it
_prior: tuple | None = None


def _prior_tables() -> tuple:
    """A copy of the coder's prior: its state after coding ``prior_signal(PRIOR_FRAMES)`` with
    ``base_params(1, 3)`` (normative, as BASE_PARAMS), counts capped at PRIOR_CAP (computed once a
    process; deterministic)."""
    global _prior
    k = _kernels()
    if _prior is None:
        tables = k.new_tables()
        x = k.prior_signal(PRIOR_FRAMES)
        y = (x - x.min()).reshape(-1, 1)
        top = int(y.max())
        buf = np.zeros(PRIOR_FRAMES * 8 + 64, np.uint8)
        k.run(y, np.zeros(1, np.int64), np.full(1, top, np.int64), _shift_of(top), np.array(base_params(1, 3), np.int64),
              buf, False, np.zeros((0, 0), np.int64), 0, NO_TABLE, tables, *NO_LPC)
        k.relax_counts(tables[1], tables[5], PRIOR_CAP)
        _prior = tables
    return tuple(a.copy() for a in _prior)


def _coded_size(y: np.ndarray, prm: list[int], table: np.ndarray | None, skip: int = 0,
                res: np.ndarray | None = None) -> float:
    """Bytes the payload of y (values, or with a table its symbols; bounds from y itself)
    spends on y[skip:] after coding y[:skip] (the models' warm-up, which a short sample would
    overweight, left out), with its share of the LPC params when ``prm`` asks for block LPC."""
    k = _kernels()
    n, C = y.shape
    top = int(y.max())
    tab = NO_TABLE if table is None else table
    gs = _shift_of(int(tab[top]) if table is not None else top)
    los, his = np.zeros(C, np.int64), np.full(C, top, np.int64)
    extra, lpc = 0.0, NO_LPC
    if prm[k.PRM_LPC]:
        fit = _lpc_fit(_working_values(y, los, his, gs, tab))
        extra, lpc = len(_lpc_bytes(fit)) * (n - skip) / n, _lpc_arrays(fit, n)
    buf = np.zeros(64 + n * C * 8, np.uint8)
    if res is None:
        res = np.zeros((n, 2 * C) if skip else (0, 0), np.int64)
    total = k.run(y, los, his, gs, np.array(prm, np.int64), buf, False, res, 0, tab, _prior_tables(), *lpc)
    return extra + total - (int(res[skip - 1, 2 * C - 1]) if skip else 0)


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
    after CANDIDATES and the best two combined go to a descent (``level3_search.greedy``) from
    the best (``level3_search_descent``); a candidate replaces the defaults only when it is
    smaller by ``Settings.level3_search_margin`` (what a sample says within that is noise)."""
    n = y.shape[0]
    if _whole_budget(n * C):
        prm, vmod = _search_whole(y, table, tmode, C, start)
        if vmod is None:
            return prm, False
        prm[_kernels().PRM_VMOD] = vmod
        return prm, True
    from .planner import settings

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

    candidates = _chunk_order(y, chunks, s) if skip else CANDIDATES
    if held:  # held values: the least-squares mix per hold state first (level3_search.HOLD_MOVE)
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
        # a coordinate descent (level3_search.MOVES) from the best, with the codings left
        from .level3_search import greedy

        named, best_size = greedy(lambda named: size({k: v for k, v in named.items() if DEFAULTS[k] != v}),
                                  dict(DEFAULTS, **best), evals - used + 1, margin, start_size=best_size)
        best = {k: v for k, v in named.items() if DEFAULTS[k] != v}
    if best_size > base * (1 - margin):
        return chosen({})
    return chosen(best)


def _chunk_order(y: np.ndarray, chunks: list, s) -> tuple:
    """CANDIDATES in the order the search on chunks tries them: those whose use a cue of the
    recording asks for last unless it does (order 64 over a short window: ``order_gain_db`` of
    the chunks at least ``s.level3_search_order_db``; the least-squares mix per hold state: held
    values, which put it, then block LPC, first; block LPC: held values only, its verdict on a
    chunk biased by the others' warm-up), the others in CANDIDATES' order."""
    from .level3_search import order_gain_db

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

    return tuple(sorted(CANDIDATES, key=lambda c: (not cued(c), "lpc" in c and not held)))


VMOD_HEADER_BYTES = 6  #: what the value model adds to the header (its mask bit and value), at most


def _choose_vmod(y: np.ndarray, table: np.ndarray | None, prm: list[int], limit: int | None = None) -> list[int]:
    """``prm`` with the value model on (``vmod`` = 1, version 3) when the symbols' range is at
    most ``mixsignal.VM_MAX_RANGE`` and it codes the first ``Settings.level3_vmod_sample``
    frames smaller (their second half counted; all of them, exactly, when that is the whole
    recording): an ADC's unequal code widths or a rescaled grid show as uneven counts of
    neighbouring values, which it learns; elsewhere it costs its learning. ``limit``: at most
    this many first frames coded (``_vmod_frames``), the saving scaled to the frames the
    sample above counts."""
    from .planner import settings

    k = _kernels()
    full = settings.current().level3_vmod_sample
    if full <= 0 or int(y.max()) - int(y.min()) + 1 > k.VM_MAX_RANGE or prm[k.PRM_VMOD]:
        return prm
    n = y.shape[0]
    frames = full if limit is None else max(1, min(full, limit))
    sample, skip = (y, 0) if n <= frames else (y[:frames], frames // 2)
    counted = (n if n <= full else full - full // 2) / (sample.shape[0] - skip)
    scale = sample.shape[1] * counted
    sample = _channel_sample(sample)  # (many channels: a few of them, the saving scaled up)
    scale /= sample.shape[1]
    on = list(prm)
    on[k.PRM_VMOD] = 1
    # one coding with the model: the coder's own probabilities (which the model does not change)
    # give the size without it, less the model's saving the kernel counts (1/16 bits)
    res = np.zeros((sample.shape[0], 3 * sample.shape[1]), np.int64)
    _coded_size(sample, on, table, 0, res)
    saved = (int(res[-1, -1]) - (int(res[skip - 1, -1]) if skip else 0)) * scale
    return on if saved > 16 * 8 * VMOD_HEADER_BYTES else prm


def _vmod_on_proxy(sym: np.ndarray, table: np.ndarray | None, tmode: int, s) -> bool:
    """Whether ``_choose_front_proxy`` codes the chain without stages with the value model on,
    its saving deciding it (no coding more: ``Settings.level3_vmod_on_proxy``): version 3 or
    later, ``level3_vmod_sample`` > 0 and at most ``mixsignal.VM_MAX_RANGE`` symbols."""
    symbols = table.size if tmode else int(sym.max()) - int(sym.min()) + 1
    return bool(s.level3_vmod_on_proxy and s.level3_version >= 3 and s.level3_vmod_sample > 0
                and symbols <= _kernels().VM_MAX_RANGE)


def _vmod_saving(res: np.ndarray, n: int, s) -> int:
    """The value model's choice (1: on) from a coding with it on of a recording's first
    ``res.shape[0]`` frames (of ``n``; ``res``: the kernel's record, its last column what the
    model saved, 1/16 bits): its saving on their second half (all of them when they are the
    whole recording), scaled to the frames ``_choose_vmod`` counts, against its header bytes."""
    length = res.shape[0]
    half = 0 if length == n else length // 2
    full = s.level3_vmod_sample
    counted = n if n <= full else full - full // 2
    saved = (int(res[-1, -1]) - (int(res[half - 1, -1]) if half else 0)) * counted / (length - half)
    return int(saved > 16 * 8 * VMOD_HEADER_BYTES)


def _vmod_frames(n: int, C: int, start: tuple | None) -> int | None:
    """The frames ``_choose_vmod`` codes at most for a recording of n frames x C channels: the
    search's prefix (``level3_search.budget_plan``; ``start``: ``_choose_front_proxy``'s, which
    holds it) where ``Settings.level3_vmod_on_proxy`` and the search is on a prefix, else None."""
    from .level3_search import budget_plan
    from .planner import settings

    s = settings.current()
    if not s.level3_vmod_on_proxy or not _whole_budget(n * C):
        return None
    return start[4][0] if start is not None and len(start) > 4 else budget_plan(n, C, s)[0]


def _channel_sample(y: np.ndarray) -> np.ndarray:
    """``y`` (frames, C), or of more than ``Settings.level3_sample_channels`` channels that many
    of them spread evenly (first and last kept, in order): what the front-end chain and value
    model choices code, which a recording's channels decide alike (each channel its own models,
    so a channel needs its frames; fewer channels, not fewer frames)."""
    from .planner import settings

    k = settings.current().level3_sample_channels
    C = y.shape[1]
    if k <= 0 or C <= k:
        return y
    keep = np.unique(np.linspace(0, C - 1, k).round().astype(np.int64))
    return np.ascontiguousarray(y[:, keep])


def _holds(y: np.ndarray) -> bool:
    from .level3_search import hold_share
    from .planner import settings

    return hold_share(y) >= settings.current().level3_search_hold


def _vmod_sample() -> int:
    from .planner import settings

    return settings.current().level3_vmod_sample


def _search_budget() -> float:
    from .planner import settings

    return settings.current().level3_search_budget


def _search_margin() -> float:
    from .planner import settings

    return settings.current().level3_search_margin


def _whole_budget(values: int) -> int:
    """Whether a recording of ``values`` values has its parameters searched by
    ``level3_search.greedy`` (1) or on chunks, or not at all (0: ``Settings.level3_search_floor``
    is 0, or ``values`` exceeds ``level3_search_whole``)."""
    from .planner import settings

    s = settings.current()
    return int(s.level3_search_floor > 0 and 0 < values <= s.level3_search_whole)


def _search_whole(y: np.ndarray, table: np.ndarray | None, tmode: int, C: int,
                  known: tuple | None = None) -> tuple[list[int], int | None]:
    """The parameters that code a prefix of ``y`` smallest, by ``level3_search.greedy`` from
    DEFAULTS (``level3_search.proxy_plan``: the prefix's frames, the codings, the margin; the
    whole of ``y`` when the prefix is all of it, then the sizes are exact and the margin 0).
    ``known``: (start, first move, the start's ``_coded_size`` of the prefix, the symbols,
    the plan, the value model's choice), as ``_choose_front_proxy`` measured them (not measured
    again), or None. Returns (the parameters, the value model's choice: 0 or 1, None when not
    made). Where the start is measured here on a prefix shorter than ``y`` and the value model
    may be used (``_vmod_on_proxy``), it is coded with the model on, which decides it (as
    ``_vmod_saving``) and gives the size without it: no coding more; the search then has
    one coding fewer when the start was measured on part of the prefix only (block LPC, "mult":
    ``level3_search.chain_part``), so that the bound of ``budget_plan`` holds."""
    from .level3_search import budget_plan, greedy, move_order, plan, spare_codings
    from .planner import settings

    s = settings.current()
    planned = known[4] if known is not None and len(known) > 4 else budget_plan(y.shape[0], C, s)
    frames, evals, margin = planned
    start, first, start_size = known[:3] if known is not None else (*plan(y, s, DEFAULTS), None)
    evals = max(1, evals - spare_codings(start, DEFAULTS, s))
    proxy, tab = _proxy_symbols(y, table, tmode, frames)
    decided = known[5] if known is not None and len(known) > 5 else None
    if start_size is None and frames < y.shape[0] and s.level3_search_work > 0:
        if known is not None:  # (measured on the prefix's part: this coding is one the bound did not count)
            evals = max(1, evals - 1)
        if decided is None and _vmod_on_proxy(y, table, tmode, s):
            res = np.zeros((frames, 3 * C), np.int64)
            start_size = _coded_size(proxy, _vector(dict(start, vmod=1), C), tab, 0, res) + int(res[-1, -1]) / 128
            decided = _vmod_saving(res, y.shape[0], s)
    best, _ = greedy(lambda named: _coded_size(proxy, _vector(named, C), tab), start, evals, margin, first,
                     start_size=start_size, order=move_order(y, s))
    return _vector(best, C), decided


def _proxy_symbols(y: np.ndarray, table: np.ndarray | None, tmode: int, frames: int) -> tuple:
    """(the symbols of y[:frames] the search codes, the table the kernel takes or None)."""
    y = y[:frames]
    if tmode:
        y = np.searchsorted(table, y).astype(np.int64)
    return y, (table if tmode == TABLE_VALUES else None)


def _search_codings(n: int, C: int) -> int:
    """The codings ``_search_whole`` spends on a recording of n frames x C channels
    (``level3_search.budget_plan``): 1 measures only its start, which a short recording coded
    whole with each chain at the default parameters has measured."""
    from .level3_search import budget_plan
    from .planner import settings

    return budget_plan(n, C, settings.current())[1]


def _front_on_proxy(n: int, C: int, chains: int = 1) -> bool:
    """Whether a recording of n frames x C channels has its front-end chain chosen (among
    ``chains`` chains) on the search's proxy (``_choose_front_proxy``): its parameters searched
    by ``level3_search.greedy`` on a prefix shorter than it (``level3_search.budget_plan``), and
    n >= ``Settings.level3_front_on_proxy``."""
    from .level3_search import budget_plan
    from .planner import settings

    s = settings.current()
    return bool(_whole_budget(n * C)) and n >= s.level3_front_on_proxy and budget_plan(n, C, s, chains)[0] < n


def _choose_front_proxy(x2: np.ndarray, chains: list | None = None) -> tuple[tuple, tuple | None]:
    """The chain of ``chains`` (None: ``_chains(x2)``) whose output codes the search's proxy (the
    prefix of ``level3_search.budget_plan``) smallest, each with the parameters the search starts
    from on it (``level3_search.plan``), its stage params' share of the prefix added; and for the
    encoding of its output, (the start, the first move, the start's size (None: not measured),
    ``_symbols`` of the output, the plan) (None: the raw mode). The chain without stages (the
    first) is coded on the whole prefix, the others on its first ``Settings.level3_front_proxy_part``
    (the first's payload length frame by frame gives its size there: no coding more)."""
    import msgpack

    from .level3_search import budget_plan, chain_part, plan
    from .planner import settings

    s = settings.current()
    n, C = x2.shape
    chains = _chains(x2) if chains is None else chains
    planned = budget_plan(n, C, s, len(chains))
    frames = planned[0]
    part = max(2, chain_part(frames, s)) if frames > 1 else frames
    best = None
    plain = None  # the chain without stages: its payload's length after each frame of the prefix
    for chain in chains:
        y, record = _forward(x2, chain) if chain else (x2, [])
        symbols = _symbols(y)
        # the chains compared on the prefix (or its part) less its warm-up (block LPC has none: a warm-up counted favours it)
        length = part if chain and plain is not None else frames
        skip = max(1, min(length - 1, int(length * s.level3_front_proxy_skip)))
        if symbols is None:  # raw: no coder, its bytes
            size, known = float(y.size * y.dtype.itemsize), None
        else:
            _, _, sym, table, tmode = symbols
            start, first = plan(sym, s, DEFAULTS)
            proxy, tab = _proxy_symbols(sym, table if tmode else None, tmode, length)
            vmod = not chain and _vmod_on_proxy(sym, table, tmode, s)
            # the payload's length after each frame (and with the value model: what it saved, 1/16 bits)
            res = np.zeros((length, (3 if vmod else 2) * C), np.int64)
            size = _coded_size(proxy, _vector(dict(start, vmod=1) if vmod else start, C), tab, skip, res)
            lengths = res[:, 2 * C - 1].astype(np.float64)
            decided = None
            if vmod:  # its saving counted as _choose_vmod counts it; the sizes without it
                lengths += res[:, -1] / 128
                decided = _vmod_saving(res, n, s)
                size = float(lengths[-1] - lengths[skip - 1]) + (size - (int(res[-1, 2 * C - 1]) - int(res[skip - 1, 2 * C - 1])))
            whole = size + float(lengths[skip - 1])
            known = (start, first, whole if length == frames else None, symbols, planned, decided)
            if not chain:
                plain = lengths
        if chain:  # its params' share; and the margin by which the () chain's models gain after the prefix
            size += len(msgpack.packb(record, use_bin_type=True)) * (length - skip) / n
            size *= 1 + s.level3_front_proxy_margin
        if best is None or (size < best[0] if length == best[3] else
                            size < float(plain[length - 1] - plain[skip - 1])):
            best = (size, chain, known, length)
    return best[1], best[2]


# ---------------------------------------------------------------- front-end chains


def _frontend():
    from . import frontend

    return frontend


def _forward(x2: np.ndarray, chain) -> tuple[np.ndarray, list]:
    fe = _frontend()
    y, record = fe.forward(fe.to_channels(x2), [fe.stage(name) for name in chain])
    return np.ascontiguousarray(y.T), record


def _tail_bytes(y: np.ndarray, skip: int, change: dict | None = None, res: np.ndarray | None = None) -> float:
    """``_coded_size`` of y (any integers) with the default parameters (changed by ``change``),
    y[skip:] only (``res``: the kernel's record of each frame, as ``_coded_size`` takes it)."""
    y = y.astype(np.int64)
    prm = _vector(dict(DEFAULTS, **change), y.shape[1]) if change else default_params(y.shape[1])
    return _coded_size(y - y.min(), prm, None, skip, res)


def _chains(x2: np.ndarray) -> list:
    """FRONT_CHAINS, those with "mult" only when ``mult_detect`` splits a channel; each after
    "grid" when the channels lie on grids of their own (``frontend.grid.channel_grids_finer``:
    two channels of 16-bit audio, one shifted left by 8 and one times 6 less 5 in int32, 12 000
    frames: 21 538 B, level 2's container, against 20 231 B for the audio itself)."""
    from .frontend.mult import mult_detect

    from .frontend.grid import channel_grids_finer

    split = any(mult_detect(np.ascontiguousarray(x2[:, c]))[0] > 1 for c in range(x2.shape[1]))
    chains = [chain for chain in FRONT_CHAINS if split or "mult" not in chain]
    # channels on grids of their own (steps or offsets differ): each divided by its step first
    from .planner import settings

    divided = settings.current().grid_divided and channel_grids_finer(x2)
    return [("grid",) + chain for chain in chains] if divided else chains


def _stages_frames() -> int:
    from .planner import settings

    return settings.current().level3_front_stages_frames


def _front_frames() -> int:
    from .planner import settings

    return max(2, settings.current().level3_front_frames)


def settings_front_share() -> float:
    from .planner import settings

    return settings.current().level3_front_share


def settings_front_long() -> bool:
    from .planner import settings

    return settings.current().level3_front_long


def _choose_front(x2: np.ndarray, search: bool) -> tuple:
    """The chain of FRONT_CHAINS whose output codes smallest (default parameters) on the second
    half of the middle max(``Settings.level3_front_frames``, n // FRONT_SAMPLE) frames; () when
    ``search`` is off or the recording is shorter. The chains with stages are coded on the first
    ``Settings.level3_front_sample_part`` of the sample only (at least ``level3_front_part_min``
    frames), measured on its second half against the chain without on the same frames (that
    chain's payload length frame by frame: no coding more)."""
    from .planner import settings

    n = x2.shape[0]
    if not search or n < _front_frames():
        return ()
    x2 = _channel_sample(x2)
    frames = max(_front_frames(), n // FRONT_SAMPLE)
    frames = max(2, min(frames, int(n * settings_front_share())))
    start = (n - frames) // 2
    s = settings.current()
    part = frames if s.level3_front_sample_part >= 1 else max(
        2, min(frames, max(int(frames * s.level3_front_sample_part), s.level3_front_part_min)))
    best = None
    plain = None  # the chain without stages: its payload's length after each frame of the sample
    for chain in _chains(x2):
        y, record = _forward(x2, chain) if chain else (x2, [])
        length = part if chain and plain is not None else frames
        if not chain and part < frames:
            res = np.zeros((frames, 2 * x2.shape[1]), np.int64)
            size = _tail_bytes(y[start:start + frames], frames // 2, None, res)
            plain = res[:, -1]
        else:
            size = _tail_bytes(y[start:start + length], length // 2)
        if chain:  # the stage's params (LPC coefficients, digits), their share of the sample
            import msgpack

            size += len(msgpack.packb(record, use_bin_type=True)) * (length // 2) / n
        if best is None or (size < best[0] if length == best[2] else
                            size < int(plain[length - 1]) - int(plain[length // 2 - 1])):
            best = (size, chain, length)
    if best[1] and settings_front_long():
        # a front end won against the plain chain at the default parameters: the plain chain
        # with LONG_MEMORY too (block LPC's residual has lost the long partials a 1 024-tap
        # NLMS stage follows: music-oxygen-login, Vorbis-decoded, 3.0 % smaller coded whole)
        length = best[2]
        y = x2[start:start + length]
        if _tail_bytes(y, length // 2, LONG_MEMORY) < best[0]:
            return ()
    return best[1]


def _encode_front(x2: np.ndarray, ndim: int, chain, params, search: bool, unless_defaults: bool = False,
                  start: tuple | None = None) -> bytes:
    """Mode 2: the stage record (msgpack, length first), the CRC-32 of every byte before it, then
    the level-3 bytes of the chain's output (frames, channels) in its own dtype."""
    import msgpack

    y, record = _forward(x2, chain)
    n, C = x2.shape
    head = bytearray([_version(), _dtype_code(x2.dtype), ndim]) + _uleb(n) + (_uleb(C) if ndim == 2 else b"")
    head.append(MODE_FRONT)
    rec = msgpack.packb(record, use_bin_type=True)
    head += _uleb(len(rec)) + rec
    head += zlib.crc32(head).to_bytes(4, "little")
    inner = encode(y, params=params, search=search, front=None, _unless_defaults=unless_defaults, _start=start)
    return bytes(head) + inner if inner else b""


def _decode_front(data: bytes, r: _Reader, dt: np.dtype, ndim: int, n: int, C: int, max_values: int) -> np.ndarray:
    import msgpack

    fe = _frontend()
    size = r.uleb("front record length", MAX_FRONT_BYTES)
    if r.pos + size + 4 > len(data):
        raise CorruptDataError("level-3 data truncated: the front-end record")
    raw = data[r.pos:r.pos + size]
    r.pos += size
    if int.from_bytes(data[r.pos:r.pos + 4], "little") != zlib.crc32(data[:r.pos]):
        raise CorruptDataError("level-3 data: the header's CRC-32 does not match")
    r.pos += 4
    try:
        record = msgpack.unpackb(raw, raw=False, strict_map_key=False, max_bin_len=size, max_str_len=size,
                                 max_array_len=size, max_map_len=size)
    except Exception as e:  # msgpack raises several types on malformed bytes
        raise CorruptDataError(f"level-3 data: the front-end record is not msgpack ({e})") from None
    chain = fe.parse_chain(record, dt, (C, n))
    if not chain:
        raise CorruptDataError("level-3 data: an empty front-end record")
    inner_dt = fe.chain_dtypes(chain, dt)[-1]
    y = decode(data[r.pos:], max_values=max_values, _front=False)
    if y.dtype != inner_dt or y.shape != (n, C):
        raise CorruptDataError(f"level-3 data: the front end's output is {y.dtype} {y.shape}, "
                               f"expected {inner_dt} {(n, C)}")
    x = fe.inverse(np.ascontiguousarray(y.T), chain, dt)
    x = np.ascontiguousarray(x.T)
    return x.reshape((n,) if ndim == 1 else (n, C))


# ---------------------------------------------------------------- decode


def _read_table(r: _Reader, top: int) -> np.ndarray | None:
    """The value table (``_table_bytes``) at the reader, checked: U <= MAX_TABLE values,
    increasing, below 2**40."""
    size = r.uleb("table size", MAX_TABLE)
    if size == 0:
        return None
    table = np.zeros(size, np.int64)
    if size == 1:
        return table
    dmin = r.uleb("table gap", top)
    if dmin < 1:
        raise CorruptDataError("level-3 data: a table gap of 0")
    k = r.byte("table Golomb order")
    if k > 40:
        raise CorruptDataError(f"level-3 data: table Golomb order {k} above 40")
    gaps = np.zeros(size - 1, np.int64)
    used = _kernels().golomb_unpack(np.frombuffer(r.data, np.uint8), r.pos, size - 1, k, top + 1, gaps)
    if used < 0:
        raise CorruptDataError("level-3 data: the value table is truncated or malformed")
    r.pos += used
    if int(gaps.sum()) + (size - 1) * dmin > top:
        raise CorruptDataError("level-3 data: the value table spans more than 2**40")
    table[1:] = np.cumsum(gaps + dmin)
    return table



def _head(r: _Reader, data: bytes, max_values: int) -> tuple[np.dtype, tuple[int, ...]]:
    """Read the version, dtype and shape fields: the dtype (native order) and the shape."""
    if r.byte("version") not in VERSIONS:
        raise CorruptDataError(f"level-3 data: unknown version {data[0]}")
    code = r.byte("dtype")
    if code >= len(DTYPES):
        raise CorruptDataError(f"level-3 data: unknown dtype code {code}")
    dt = np.dtype(DTYPES[code]).newbyteorder("=")
    ndim = r.byte("ndim")
    if ndim not in (1, 2):
        raise CorruptDataError(f"level-3 data: ndim {ndim} is not 1 or 2")
    n = r.uleb("frames", max_values)
    C = r.uleb("channels", MAX_CHANNELS) if ndim == 2 else 1
    if n * C > max_values:
        raise CorruptDataError(f"level-3 data: {n} x {C} values exceed max_values = {max_values}")
    return dt, ((n,) if ndim == 1 else (n, C))


def describe_head(data: bytes, *, max_values: int = MAX_VALUES) -> tuple[np.dtype, tuple[int, ...]]:
    """The dtype (native byte order) and shape ``decode(data)`` returns, from the first bytes
    alone (nothing decoded); :class:`ubpe.CorruptDataError` as ``decode`` for those bytes."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    max_values = check_int("max_values", max_values, 0)
    data = bytes(data[:32])  # version, dtype, ndim and two LEB128 fields
    return _head(_Reader(data), data, max_values)


def decode(data: bytes, *, max_values: int = MAX_VALUES, _front: bool = True) -> np.ndarray:
    """The array ``encode`` was given (dtype in native byte order). Raises
    :class:`ubpe.CorruptDataError` on bytes that ``encode`` cannot have written, or that would
    decode to more than ``max_values`` values, or to more than this machine can allocate (a
    ``MemoryError``: the work array holds ``8 * frames * channels`` bytes; a smaller
    ``max_values`` refuses such data early). (``_front``: whether mode 2 may appear; the chain's
    output, inside a mode-2 record, is never mode 2 again.)"""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    max_values = check_int("max_values", max_values, 0)
    data = bytes(data)
    try:
        return _decode(data, max_values, _front)
    except MemoryError:
        n, C = _declared(data, max_values)
        raise CorruptDataError(
            f"level-3 data: {n} x {C} values declared, more than this machine could allocate: pass a smaller "
            "max_values to refuse such data early") from None


def _declared(data: bytes, max_values: int) -> tuple[int, int]:
    shape = describe_head(data, max_values=max_values)[1]
    return shape[0], (shape[1] if len(shape) == 2 else 1)


def _decode(data: bytes, max_values: int, _front: bool) -> np.ndarray:
    r = _Reader(data)
    dt, shape = _head(r, data, max_values)
    ndim, n, C = len(shape), shape[0], (shape[1] if len(shape) == 2 else 1)
    mode = r.byte("mode")
    info = np.iinfo(dt)
    if mode == MODE_FRONT:
        if not _front:  # (else a record inside a record, ... deep enough for a RecursionError)
            raise CorruptDataError("level-3 data: a front-end record inside a front-end record")
        return _decode_front(data, r, dt, ndim, n, C, max_values)
    if mode == MODE_RAW:
        body = data[r.pos:]
        if n * C == 0 or len(body) != n * C * dt.itemsize:
            raise CorruptDataError(f"level-3 data: raw payload of {len(body)} bytes for {n} x {C} values")
        return np.frombuffer(body, dt.newbyteorder("<")).astype(dt).reshape(shape)
    if mode != MODE_MODEL:
        raise CorruptDataError(f"level-3 data: unknown mode {mode}")
    lo = r.zig("lo", 1 << 64)
    if not info.min <= lo <= info.max:
        raise CorruptDataError(f"level-3 data: lo {lo} outside {dt}")
    top = (1 << MAX_RANGE_BITS) - 1
    step = r.uleb("step", top)
    if step < 1:
        raise CorruptDataError("level-3 data: step 0")
    table = _read_table(r, top)
    tmode = TABLE_NONE
    if table is not None:
        tmode = r.byte("table mode")
        if tmode not in (TABLE_VALUES, TABLE_INDICES):
            raise CorruptDataError(f"level-3 data: table mode {tmode}")
    gs = r.byte("gs")
    los = np.empty(C, np.int64)
    his = np.empty(C, np.int64)
    for c in range(C):
        los[c] = r.uleb("channel low", top)
        his[c] = los[c] + r.uleb("channel range", top)
        if his[c] > top:
            raise CorruptDataError("level-3 data: a channel's range exceeds 2**40")
    prm = _read_params(r, C, data[0])
    _check_params(prm)
    if prm[_kernels().PRM_VMOD] and C and int((his - los).max()) >= _kernels().VM_MAX_RANGE:
        raise CorruptDataError("level-3 data: the value model on a range above its maximum")
    lpc = None
    if prm[_kernels().PRM_LPC] and n * C > 0:
        import msgpack

        size = r.uleb("LPC params length", MAX_FRONT_BYTES)
        if r.pos + size > len(data):
            raise CorruptDataError("level-3 data truncated: the LPC params")
        try:
            fit = msgpack.unpackb(data[r.pos:r.pos + size], raw=False, max_bin_len=size, max_str_len=size,
                                  max_array_len=size, max_map_len=size)
        except Exception as e:
            raise CorruptDataError(f"level-3 data: the LPC params are not msgpack ({e})") from None
        r.pos += size
        if not isinstance(fit, list) or len(fit) != C:
            raise CorruptDataError(f"level-3 data: LPC params for {C} channels expected")
        lpc = _lpc_arrays(fit, n)
    body = data[r.pos:]
    if n * C == 0:
        if lo != 0 or step != 1 or table is not None or gs != 0 or body or (C and (los.any() or his.any())):
            raise CorruptDataError("level-3 data: an empty signal with a payload")
        return np.zeros(shape, dt)
    if int(los.min()) != 0:
        raise CorruptDataError("level-3 data: no channel holds the lowest value")
    rng = int(his.max())
    if table is not None and rng >= table.size:
        raise CorruptDataError(f"level-3 data: a channel's range exceeds the {table.size}-value table")
    span = step * (int(table[rng]) if table is not None else rng)
    if span > top or lo + span > info.max:
        raise CorruptDataError(f"level-3 data: values up to {lo + span} do not fit {dt} or exceed 2**40 apart")
    ktab = table if tmode == TABLE_VALUES else None  # the table the kernel works with
    if gs != _shift_of(int(ktab[rng]) if ktab is not None else rng):
        raise CorruptDataError(f"level-3 data: shift {gs} does not match the range")
    k = _kernels()
    y = np.zeros((n, C), np.int64)
    status = k.run(y, los, his, gs, np.array(prm, np.int64), np.frombuffer(body, np.uint8).copy(), True,
                   np.zeros((0, 0), np.int64), zlib.crc32(data[:r.pos]), NO_TABLE if ktab is None else ktab,
                   _prior_tables(), *(NO_LPC if lpc is None else lpc))
    if status != k.OK:
        what = {k.ERR_RANGE: "a value outside its channel's range", k.ERR_CHECK: "check bits differ",
                k.ERR_LENGTH: "payload length does not match"}.get(status, f"status {status}")
        raise CorruptDataError(f"level-3 data: corrupt payload ({what})")
    if table is not None:
        y = table[y]
    if step > 1:
        y *= step
    if dt.kind == "u" and dt.itemsize == 8:
        out = y.astype(np.uint64) + np.uint64(lo)
    else:
        out = (y + np.int64(lo)).astype(dt)
    return out.reshape(shape)
