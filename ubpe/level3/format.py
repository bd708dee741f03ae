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

    version (1 byte: 1 to 10, VERSIONS) | dtype code (1 byte, DTYPES) | ndim (1 byte: 1 or 2)
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
0; version 4's over ``N_PRM_V4`` (30), ``nlmsq`` then 0; version 5's over ``N_PRM_V5`` (31),
``xctx`` then 0; version 6's over ``N_PRM_V6`` (32), ``olsr`` then 0; version 7's over ``N_PRM_V7``
(33), ``dcm`` then 0; version 8's over ``N_PRM_V8`` (34), ``vcls`` then 0; version 9's over
``N_PRM_V9`` (35), ``xlags`` then 0; version 10's over all 36;
bit i set: parameter i differs from ``base_params(channels, version)``, a constant of the
format: ``BASE_PARAMS``, version 4's ``BASE_PARAMS_V4``, version 5's ``BASE_PARAMS_V5``, version 6's
``BASE_PARAMS_V6``, version 7's ``BASE_PARAMS_V7``, version 8's ``BASE_PARAMS_V8``, version 9's
``BASE_PARAMS_V9``, version 10's ``BASE_PARAMS_V10``) and then the parameters whose bit is set, in
index order (defaults cost one byte, not 28). Version 6 adds ``xctx``, the exact-value contexts of
the residual coder (``mixctx``'s docstring, its steps in ``mixsignal.run``; 1: hashed contexts and
successor lists, 2: the lists alone); version 7 ``olsr``, rounds
of iterative refinement of the long least squares' solve (``mixsignal._ols_solve_refined``);
version 8 ``dcm``, the least squares on the values minus their running mean (rate 2**-dcm);
version 9 ``vcls``, the value model's code classes (the values' low ``vcls`` bits; an ADC's
unequal code widths), which need ``vmod`` = 1 and let it run on ranges up to ``VM_CLS_RANGE``;
version 10 ``xlags``, the values OLS1 takes of each neighbouring channel (two before; at most
``XLAGS_MAX``, with ``p1 + xlags cross <= MAX_DIM``). ``encode`` writes version 10 only with
``xlags`` > 0, else version 9 only with ``vcls`` > 0, else version 8 only with ``dcm`` > 0, else version 7 only with ``olsr`` > 0, else
version 6 only with ``xctx`` = 1 or 2, else version 5's bytes.

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

from .._validate import check_int
from ..errors import CorruptDataError

VERSION = 10  #: the version ``encode`` writes (``Settings.level3_version``: 1 to 9 write theirs)
VERSIONS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
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
MAX_FRONT_BYTES = 1 << 28
NO_TABLE = np.zeros(0, np.int64)


def _kernels():
    from .._kernels import mixsignal

    return mixsignal


# ---------------------------------------------------------------- byte helpers


#: ``mixsignal.run``'s last argument with version 9's code classes on (any array: numba compiles the
#: kernel with their steps for it, without them for None)
CLASSES_ON = np.zeros(1, np.int64)


def _kernel_run(prm):
    """The kernel that codes a payload of the parameters ``prm``, ``mixsignal.run`` with its arguments
    but the last two: with the exact-value contexts (``xctx`` = 1 or 2, version 6) their state, new
    (as ``mixctx.new_state``: ``xpool`` keeps it between codings), else None (versions 1 to 5's
    kernel, which numba compiles without them); with the code classes (``vcls`` > 0 and ``vmod``,
    version 9) CLASSES_ON, else None (likewise)."""
    k = _kernels()
    V = CLASSES_ON if prm[k.PRM_VCLS] and prm[k.PRM_VMOD] else None
    if prm[k.PRM_XCTX]:
        from . import xpool

        xctx = prm[k.PRM_XCTX]

        def run(y, *args):
            X = xpool.acquire(*y.shape, xctx)  # (as mixctx.new_state, kept between codings: xpool)
            out = k.run(y, *args, X, V)
            xpool.release(X)
            return out

        return run
    return lambda *args: k.run(*args, None, V)


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
                fmix=0, t3=14, lpc=0, p3=0, t4=0, k3=1, apmr=6, lvl=0, vmod=0, mixb=1, nlmsq=1, olsr=0, dcm=0)
#: version 4's defaults that differ from version 3's: name -> (version 4's, version 3's)
V4_MODEL = dict(bias=(0, 1), mixb=(1, 0))
#: version 5's defaults that differ from version 4's: name -> (version 5's, version 4's)
V5_MODEL = dict(nlmsq=(1, 0))


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
#: Version 6's (normative): BASE_PARAMS_V5 and xctx = 1 (a version-6 header is written only with it on).
BASE_PARAMS_V6 = BASE_PARAMS_V5 + (1,)
#: Version 7's (normative): BASE_PARAMS_V5, xctx = 0 and olsr = 2 (a version-7 header is written
#: only with olsr > 0: the refinement ``search.tonal_change`` sets on a sustained tone).
BASE_PARAMS_V7 = BASE_PARAMS_V5 + (0, 2)
#: Version 8's (normative): BASE_PARAMS_V5, xctx = 0, olsr = 0 and dcm = DCM_BASE (a version-8 header
#: is written only with dcm > 0: the least squares on the values minus their running mean; most
#: recordings it suits are not tones, olsr then 0).
DCM_BASE = 10
BASE_PARAMS_V8 = BASE_PARAMS_V5 + (0, 0, DCM_BASE)
#: Version 9's (normative): BASE_PARAMS_V5 with vmod = 1, xctx = 0, olsr = 0, dcm = 0 and vcls =
#: VCLS_BASE (a version-9 header is written only with vcls > 0, which needs the value model on).
VCLS_BASE = 3
BASE_PARAMS_V9 = BASE_PARAMS_V5[:28] + (1,) + BASE_PARAMS_V5[29:] + (0, 0, 0, VCLS_BASE)
#: Version 10's (normative): BASE_PARAMS_V9 and xlags = XLAGS_BASE (a version-10 header is written
#: only with xlags > 0: OLS1 takes that many values of each neighbouring channel, not two).
XLAGS_BASE = 8
BASE_PARAMS_V10 = BASE_PARAMS_V9 + (XLAGS_BASE,)


def base_params(channels: int, version: int | None = None) -> list[int]:
    """The mask's reference in a header of ``version`` (None: ``Settings.level3_version``):
    ``BASE_PARAMS`` (versions 2 and 3), ``BASE_PARAMS_V4``, ``BASE_PARAMS_V5``, ``BASE_PARAMS_V6`` or
    ``BASE_PARAMS_V7``, for ``channels`` channels (the parameters a version lacks read as 0)."""
    version = _version() if version is None else version
    p = list(BASE_PARAMS_V10 if version >= 10 else BASE_PARAMS_V9 if version >= 9 else BASE_PARAMS_V8 if version >= 8 else BASE_PARAMS_V7 if version >= 7 else BASE_PARAMS_V6 if version >= 6 else BASE_PARAMS_V5 if version >= 5 else (
        BASE_PARAMS_V4 if version >= 4 else BASE_PARAMS))
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
    if version in (5, 6, 7, 8, 9) and any(prm[k.N_PRM_V9:]):
        raise ValueError("more values of each neighbour (xlags) need version 10 (Settings.level3_version)")
    if version in (5, 6, 7, 8) and any(prm[k.N_PRM_V8:]):
        raise ValueError("the value model's code classes (vcls) need version 9 (Settings.level3_version)")
    if version in (5, 6, 7) and any(prm[k.N_PRM_V7:]):
        raise ValueError("the least squares' running mean (dcm) needs version 8 (Settings.level3_version)")
    if version in (5, 6) and any(prm[k.N_PRM_V6:]):
        raise ValueError("the refined least-squares solve (olsr) needs version 7 (Settings.level3_version)")
    if version == 5 and any(prm[k.N_PRM_V5:]):
        raise ValueError("the exact-value contexts (xctx) need version 6 (Settings.level3_version)")
    base = base_params(channels, version)
    mask = sum(1 << i for i, (v, b) in enumerate(zip(prm, base)) if v != b)
    return _uleb(mask) + b"".join(_uleb(v) for v, b in zip(prm, base) if v != b)


def _read_params(r: "_Reader", channels: int, version: int) -> list[int]:
    k = _kernels()
    if version == 1:
        return [r.uleb(f"parameter {i}", 1 << 16) for i in range(k.N_PRM_V1)] + list(k.V1_TAIL) + [0] * (
            k.N_PRM - k.N_PRM_V2)
    stored = {2: k.N_PRM_V2, 3: k.N_PRM_V3, 4: k.N_PRM_V4, 5: k.N_PRM_V5, 6: k.N_PRM_V6, 7: k.N_PRM_V7, 8: k.N_PRM_V8,
              9: k.N_PRM_V9}.get(
        version, k.N_PRM)
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
    from ..planner import settings

    return settings.current().level3_version


def default_params(channels: int) -> list[int]:
    """The parameter vector tried first (``mixsignal.PRM_*``)."""
    return _vector(DEFAULTS, channels)


def _check_params(prm: list[int]) -> None:
    k = _kernels()
    for i, (v, (lo, hi)) in enumerate(zip(prm, k.PRM_BOUNDS)):
        if not lo <= v <= hi:
            raise CorruptDataError(f"level-3 data: parameter {i} = {v} outside [{lo}, {hi}]")
    if prm[k.PRM_P1] + (prm[k.PRM_XLAGS] or 2) * prm[k.PRM_CROSS] > k.MAX_DIM:
        raise CorruptDataError("level-3 data: least-squares order above the maximum")
    if prm[k.PRM_VCLS] and not prm[k.PRM_VMOD]:
        raise CorruptDataError("level-3 data: code classes (vcls) without the value model")


def vmod_fits(prm: list[int], C: int, span: int) -> bool:
    """Whether the value model of ``prm`` may run on C channels whose largest symbol range
    ``hi - lo + 1`` is ``span``: at most ``VM_MAX_RANGE``, with code classes (``vcls`` > 0) at most
    ``VM_CLS_RANGE`` and ``C span <= VM_CLS_CELLS`` (the kernel's memory bound)."""
    k = _kernels()
    if prm[k.PRM_VCLS]:
        return span <= k.VM_CLS_RANGE and C * span <= k.VM_CLS_CELLS
    return span <= k.VM_MAX_RANGE


def _dtype_code(dt: np.dtype) -> int:
    return DTYPES.index(f"{'|' if dt.itemsize == 1 else '<'}{dt.kind}{dt.itemsize}")


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
    # (from k = bit_length(max r) on, every r < 2**k codes in k + 1 bits: the sum grows with k, so
    # the first smallest lies at or below it)
    for k in range(0, min(40, int(r.max()).bit_length()) + 1):
        w = r + (1 << k)
        bits = int(sum(2 * int(v).bit_length() - k - 1 for v in w)) if r.size < 64 else int(
            (2 * np.floor(np.log2(w.astype(np.float64))).astype(np.int64) + 1 - k).sum())
        if best is None or bits < best[0]:
            best = (bits, k)
    k = best[1]
    buf = np.zeros((best[0] + 7) // 8 + 16, np.uint8)
    used = _kernels().golomb_pack(r, k, buf)
    return out + _uleb(dmin) + bytes([k]) + buf[:used].tobytes()


LPC_BLOCK = 4096  #: block of the block-LPC predictor (``lpc`` = 1)
NO_LPC = (0, np.zeros((1, 1), np.int64), np.zeros((1, 1), np.int64), np.zeros((1, 1, 1), np.int64))


def _working_values(y: np.ndarray, los: np.ndarray, his: np.ndarray, gs: int, tab: np.ndarray) -> np.ndarray:
    """The kernel's working values v = (value - off) >> gs, (frames, channels) int64."""
    val = tab[y] if tab.size else y
    vlo = tab[los] if tab.size else los
    vhi = tab[his] if tab.size else his
    return (val - ((vlo + vhi) >> 1)) >> gs


def _lpc_arrays(params: list, n: int) -> tuple:
    """(block, orders, shifts, coefs) as the kernel takes them, from checked LPC params."""
    from ..frontend import lpc

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
              buf, False, np.zeros((0, 0), np.int64), 0, NO_TABLE, tables, *NO_LPC, None, None)
        k.relax_counts(tables[1], tables[5], PRIOR_CAP)
        _prior = tables
    return tuple(a.copy() for a in _prior)


def model_params(data: bytes) -> list[int] | None:
    """The parameter vector of the model record in ``encode``'s bytes ``data`` (behind a front-end
    record when there is one; ``data`` trusted: the encoder's own), None for a raw record."""
    r = _Reader(data)
    dt, shape = _head(r, data, MAX_VALUES)
    C = shape[1] if len(shape) == 2 else 1
    mode = r.byte("mode")
    if mode == MODE_FRONT:
        size = r.uleb("front record length", MAX_FRONT_BYTES)
        r.pos += size + 4
        return model_params(data[r.pos:])
    if mode != MODE_MODEL or shape[0] * C == 0:
        return None
    top = (1 << MAX_RANGE_BITS) - 1
    r.zig("lo", 1 << 64)
    r.uleb("step", top)
    if _read_table(r, top) is not None:
        r.byte("table mode")
    r.byte("gs")
    for _ in range(2 * C):
        r.uleb("channel range", top)
    return _read_params(r, C, data[0])


# ---------------------------------------------------------------- front-end chains


def _frontend():
    from .. import frontend

    return frontend


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
    if prm[_kernels().PRM_VMOD] and C and not vmod_fits(prm, C, int((his - los).max()) + 1):
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
    status = _kernel_run(prm)(y, los, his, gs, np.array(prm, np.int64), np.frombuffer(body, np.uint8).copy(), True,
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
