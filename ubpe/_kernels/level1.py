"""Kernels of the fast level (``compress(level=1)``): the same results as the kernels they stand for,
in less time, and the statistics the planner's estimates read (numba).

* :func:`lpc_analyze`: :func:`ubpe._kernels.predict.lpc_analyze`'s choices, integer for integer, for
  signals of at most 32 bits. Its exact residual costings (every candidate predictor's zigzagged
  residual magnitudes, summed) add the magnitudes as integers, a vector of samples at a time,
  where the other added floats one after the other (each addition waiting for the one before:
  about a third of its time): the same sums, since every partial sum of integers below 2**53 is
  exact in float64, so the same float is handed to the same cost formula.
* :func:`lpc_residual`: :func:`ubpe._kernels.predict.lpc_filter`'s forward residual, the
  predictions summed a chunk of samples at a time (lag by lag: loops LLVM vectorizes) instead
  of one horizontal sum per sample; sums modulo 2**64, the same in any order. Where a
  predictor's shift and the values' width leave the residual depending on the low 32 bits of
  the sums only (``shift + bits <= 32``: int16 values and shifts up to 16, the usual case), in
  32-bit products and sums (:func:`_predict_chunk_narrow`), as the analysis's and the refit's
  residual costings are.
* :func:`mag_stats`: the counts of the "mag" coder's plain statistics pass (kept as the tests'
  reference, ``tests/reference_mag.py``), the magnitude classes found by a leading-zero count
  instead of a 64 KB bit-length table, two running means a pass kept in registers.
* :func:`mag_encode`: the plain encoder's words and raw bits (``tests/reference_mag.py``), the
  raw bits leaving the accumulator 32 at a time (15 % faster on the neural recordings).
* :func:`layout_stats`: the statistics of the planner's estimate of the "mag" coder on two id
  layouts at once.
* :func:`reweight_fit`: :func:`ubpe._kernels.predict.reweight_fit`'s refit, the same result.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from . import njit
from .alloc import empty, zeros
from .intrinsics import bit_length, emit_bit_length, imax, imin, mulhi, select
from .predict import _quantize, _window, wrap

#: Samples per pass of the chunked predictions (a buffer that stays in L1).
CHUNK = 256

#: Where :func:`_predict_chunk_narrow`'s sums start in its scratch (after the chunk's values).
NARROW = CHUNK + 32

#: The magnitude-class layout of :mod:`ubpe._kernels.residual` (repeated: that module is the
#: definition; ``tests/test_level1_kernels.py`` checks they agree).
N_BUCKETS = 50
N_CONTEXTS = 56

_I64 = ir.IntType(64)


def _bucket(z):
    """The "mag" bucket (:mod:`ubpe._kernels.residual`) of ``z`` (int64, 0 <= z < 2**62) by a leading-zero
    count: z itself below 2, else 2e - 2 + the bit below the top one (e = bit length)."""
    if z < 2:
        return z
    e = bit_length(z)
    return 2 * e - 2 + ((z >> (e - 2)) & 1)


def _context(m, sh):
    """The "mag" context of a running magnitude ``m``: the bucket of ``m >> sh``, capped."""
    c = _bucket(m >> sh)
    return c if c < N_CONTEXTS else N_CONTEXTS - 1


# Compiled, _bucket and _context are intrinsics: the same int64 operations emitted into the
# calling kernel, where an inlined copy of each was typed and lowered at every call site (six
# buckets in layout_stats; about 0.3 s of cold compile in all, benchmarks/bench_compile.py). Their
# definitions above run under NUMBA_DISABLE_JIT.
def _emit_bucket(context, builder, z):
    """LLVM of ``_bucket`` of the int64 ``z``: a branch on z < 2, as the inlined Python function
    was (LLVM keeps it a branch; as a select the kernels' loops ran 2-5 % slower)."""
    small = builder.icmp_signed("<", z, ir.Constant(_I64, 2))
    with builder.if_else(small, likely=False) as (then, otherwise):
        with then:
            from_small = builder.basic_block
        with otherwise:
            e = emit_bit_length(context, builder, z, types.int64)
            bit = builder.and_(builder.ashr(z, builder.sub(e, ir.Constant(_I64, 2))), ir.Constant(_I64, 1))
            big = builder.add(builder.sub(builder.shl(e, ir.Constant(_I64, 1)), ir.Constant(_I64, 2)), bit)
            from_big = builder.basic_block
    bucket = builder.phi(_I64)
    bucket.add_incoming(z, from_small)
    bucket.add_incoming(big, from_big)
    return bucket


@intrinsic
def _bucket_intrinsic(typingctx, z):
    if not isinstance(z, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return _emit_bucket(context, builder, context.cast(builder, args[0], sig.args[0], types.int64))

    return types.int64(types.unliteral(z)), codegen


@intrinsic
def _context_intrinsic(typingctx, m, sh):
    if not isinstance(m, types.Integer) or not isinstance(sh, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        mv, shv = [context.cast(builder, v, t, types.int64) for v, t in zip(args, sig.args)]
        c = _emit_bucket(context, builder, builder.ashr(mv, shv))
        cap = ir.Constant(_I64, N_CONTEXTS - 1)
        return builder.select(builder.icmp_signed(">", c, cap), cap, c)

    return types.int64(types.unliteral(m), types.unliteral(sh)), codegen


if not numba.config.DISABLE_JIT:
    _bucket, _context = _bucket_intrinsic, _context_intrinsic  # noqa: F811


def bucket_select(z):
    """``_bucket(z)`` (the same value, ``0 <= z < 2**62``), compiled without a branch: both arms
    computed (the bit length of ``z | 2``, the same for ``z >= 2``) and one selected, for loops
    where no token depends on another (LLVM vectorizes them; :func:`mag_encode`'s first pass)."""
    return _bucket(z)


@intrinsic
def _bucket_select_intrinsic(typingctx, z):
    if not isinstance(z, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        v = context.cast(builder, args[0], sig.args[0], types.int64)
        two = ir.Constant(_I64, 2)
        e = emit_bit_length(context, builder, builder.or_(v, two), types.int64)
        bit = builder.and_(builder.ashr(v, builder.sub(e, two)), ir.Constant(_I64, 1))
        big = builder.add(builder.sub(builder.shl(e, ir.Constant(_I64, 1)), two), bit)
        return builder.select(builder.icmp_signed("<", v, two), v, big)

    return types.int64(types.unliteral(z)), codegen


if not numba.config.DISABLE_JIT:
    bucket_select = _bucket_select_intrinsic  # noqa: F811


@njit(cache=True, nogil=True)
def mag_stats(tokens, center, rates, counts):
    """``tests/reference_mag.py``'s ``mag_stats`` (the same counts, added to ``counts``, int64
    ``(len(rates), N_CONTEXTS, N_BUCKETS)``, and the same return value: the raw bits). Each
    token's zigzagged magnitude (uint32) and class first, in a pass without a branch
    (:func:`_magnitudes`; the neural recordings' 45 calls a compress 9.4 -> 8.3 ms), then two
    rates a pass over them (:func:`_rate_passes`). The magnitudes kept from the first pass, not
    zigzagged again from the tokens in every rates' pass: ECG's 108 000 tokens at two rates
    428 -> 371 us. Preconditions: tokens and center in [0, 2**24) (a magnitude below 2**25);
    rates in [2, 8]."""
    n = tokens.shape[0]
    bk = empty(n, np.uint8)
    zs = empty(n, np.uint32)
    raw = _magnitudes(tokens, center, zs, bk)
    _rate_passes(zs, bk, rates, counts, empty((2, 0), np.uint8), False)
    return raw


@njit(cache=True, nogil=True)
def mag_stats_kept(tokens, center, rates, counts, zs, bk, ctx):
    """:func:`mag_stats` (the same counts, added to ``counts``, and the same return value) that
    keeps, per token ``i``, what :func:`mag_encode_kept` codes from: ``zs[i]`` (uint32) its
    zigzagged magnitude about ``center``, ``bk[i]`` (uint8) its class and ``ctx[r, i]`` (uint8)
    its context under ``rates[r]`` (``zs``, ``bk``: ``len(tokens)`` cells; ``ctx``: C-contiguous
    ``(len(rates), len(tokens))``; all written). The coder's counts and its encoder's contexts
    in one pass (:func:`mag_encode` makes them again); a byte stored a token and rate more than
    :func:`mag_stats` (seismic's 32 768 tokens at five rates about 3 % slower). Preconditions:
    :func:`mag_stats`'."""
    raw = _magnitudes(tokens, center, zs, bk)
    _rate_passes(zs, bk, rates, counts, ctx, True)
    return raw


@njit(cache=True, nogil=True)
def mag_stats_rows(windows, center, rates, counts):
    """:func:`mag_stats` of each row of ``windows`` (2-D integers, any strides: each row a stream
    of its own, its running means starting at zero), all added to ``counts``; returns the raw
    bits of them all. One call for the "mag" coder's rate sample, where a call a window (and a
    contiguous copy of each) took eight. Preconditions: :func:`mag_stats`'."""
    w = windows.shape[1]
    bk = empty(w, np.uint8)
    zs = empty(w, np.uint32)
    raw = 0
    for k in range(windows.shape[0]):
        raw += _magnitudes(windows[k], center, zs, bk)
        _rate_passes(zs, bk, rates, counts, empty((2, 0), np.uint8), False)
    return raw


@njit(cache=True, nogil=True, no_cpython_wrapper=True)
def _magnitudes(tokens, center, zs, bk):
    """Each token's zigzagged magnitude ``zs[i]`` (uint32) about ``center`` and its class ``bk[i]``
    (uint8), in a loop without a branch (:func:`bucket_select`: vectorized); returns the raw
    bits, their sum."""
    raw = 0
    for i in range(tokens.shape[0]):
        d = np.int64(tokens[i]) - center
        z = (d << 1) ^ (d >> 63)
        b = bucket_select(z)
        bk[i] = b
        zs[i] = z
        raw += select(b >= 4, (b >> 1) - 1, 0)
    return raw


@njit(cache=True, nogil=True, no_cpython_wrapper=True)
def _rate_passes(zs, bk, rates, counts, ctx, keep):
    """The counts of the magnitudes ``zs`` of classes ``bk`` (:func:`_magnitudes`) under each
    rate of ``rates``, added to ``counts[r]``; with ``keep``, each token's context under
    ``rates[r]`` stored at ``ctx[r, i]``. Two rates a pass: each running mean stays in a register
    (a mean per rate in an array went through memory, a store and a load on the serial chain of
    every token and rate)."""
    n = zs.shape[0]
    nr = rates.shape[0]
    r = 0
    while r < nr:
        ra = rates[r]
        rb = rates[r + 1] if r + 1 < nr else ra
        two = r + 1 < nr
        ca = counts[r]
        cb = counts[r + 1] if two else counts[r]
        xa = ctx[r if keep else 0]
        xb = ctx[r + 1 if keep and two else 0]
        ma = np.int64(0)
        mb = np.int64(0)
        sa = ra - 2
        sb = rb - 2
        for i in range(n):
            b = np.uint64(bk[i])
            z = np.int64(zs[i])
            c = _context(ma, sa)
            ca[np.uint64(c), b] += 1
            if keep:
                xa[i] = c
            if two:
                c2 = _context(mb, sb)
                cb[np.uint64(c2), b] += 1
                if keep:
                    xb[i] = c2
            ma = ma + z - (ma >> ra)
            mb = mb + z - (mb >> rb)
        r += 2


_U64_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(cache=True, nogil=True)
def mag_encode(tokens, center, rate, freqs, pb, words, raw):
    """``tests/reference_mag.py``'s ``mag_encode`` (the same arguments but its bit-length table,
    the same words, raw bytes and return value; ``words`` before the returned start as well), in
    passes with no branch on the data: (1) each token's zigzagged magnitude and class, no
    dependence between tokens (vectorized; the class by a select, :func:`bucket_select`); (2) the
    contexts from the running mean; (3) :func:`mag_encode_kept`'s: the raw bits forward and rANS
    backward in one loop. ECG's 108 000 tokens: 0.99 ms with a branch on a full raw word, 0.78
    ms with the raw bits beside the contexts and rANS alone, 0.70 ms so; the neural recordings'
    1 048 576 9.5 -> 7.6 ms at the second of those (this machine, one thread).
    Preconditions: its own (tokens and center in [0, 2**24): at most 23 raw bits a token);
    ``MIN_PB <= pb <= MAX_PB``; ``raw`` at least the raw bits' bytes (``mag_stats``' return);
    ``words`` at least ``len(tokens) + 2``."""
    n = tokens.shape[0]
    zs = empty(n, np.uint32)
    bk = empty(n, np.uint8)
    ctx = empty(n, np.uint8)
    _magnitudes(tokens, center, zs, bk)
    m = np.int64(0)
    sh = rate - 2
    for i in range(n):
        ctx[i] = _context(m, sh)
        m += np.int64(zs[i]) - (m >> rate)
    return mag_encode_kept(zs, bk, ctx, freqs, pb, words, raw)


@njit(cache=True, nogil=True)
def mag_encode_kept(zs, bk, ctx, freqs, pb, words, raw):
    """:func:`mag_encode`'s words and raw bytes (the same, and the same return value) from each
    token's zigzagged magnitude ``zs`` (uint32), class ``bk`` and context ``ctx`` under the coded
    rate (uint8), as :func:`mag_stats_kept` keeps them. The raw bits forward and rANS backward
    in one loop, two independent chains a step (token ``t``'s raw bits, token ``n - 1 - t``'s
    state), where a loop each left the rANS state's latency alone (ECG 565 -> 485 us): the raw
    bits leave the accumulator 32 at a time, a 32-bit word stored at every token and kept (its
    index advanced) when full, where a branch on a full word was mispredicted every few tokens;
    rANS divides ``x // f`` by a multiply with ``floor(2**64 / f)`` and one correction
    (:func:`rans_reciprocals`; the quotient exact for every 64-bit ``x``), the renormalization's
    word stored always and kept when due, and a certain bucket (``f == 2**pb``) updated by the
    same formula, which leaves ``x`` as it is, as the reference skips it. ``freqs``, ``pb``,
    ``words`` and ``raw`` as :func:`mag_encode`'s."""
    n = zs.shape[0]
    w32 = zeros(raw.shape[0] // 4 + 2, np.uint32)  # (raw's words: at most len(raw) // 4 + 1 of them)
    tables = empty((5, N_CONTEXTS * N_BUCKETS), np.uint64)
    rans_reciprocals(freqs, pb, tables)
    fq, rcp, lim, cum, cmp = tables[0], tables[1], tables[2], tables[3], tables[4]
    mask32 = np.uint64(0xFFFFFFFF)
    x = np.uint64(1 << 32)  # RANS_L
    pos = words.shape[0]
    acc = np.uint64(0)
    nacc = np.int64(0)
    p = 0
    for t in range(n):
        b = np.int64(bk[t])  # token t's raw bits
        nb = select(b >= 4, (b >> 1) - 1, 0)
        acc |= np.uint64(np.int64(zs[t]) & ((np.int64(1) << nb) - 1)) << np.uint64(nacc)
        nacc += nb
        w32[p] = np.uint32(acc & mask32)
        full = nacc >= 32
        acc = select(full, acc >> np.uint64(32), acc)
        nacc = select(full, nacc - 32, nacc)
        p += select(full, 1, 0)
        i = n - 1 - t  # token n - 1 - t's rANS step
        k = np.int64(ctx[i]) * N_BUCKETS + np.int64(bk[i])
        out = x > lim[k]  # x >= f << (64 - pb): a word out (never for a certain bucket)
        words[pos - 1] = np.uint32(x & mask32)  # (overwritten later unless kept)
        pos -= select(out, 1, 0)
        x = select(out, x >> np.uint64(32), x)
        # x // f * 2**pb + x % f + cum = x + cum + q * (2**pb - f), q = x // f: the estimate
        # mulhi(x, floor(2**64 / f)) is q or q - 1 (one more when the remainder it leaves is >= f)
        q = mulhi(x, rcp[k])
        f = fq[k]
        x = x + cum[k] + q * cmp[k] + select(x - q * f >= f, cmp[k], np.uint64(0))
    w32[p] = np.uint32(acc & mask32)  # (acc < 2**32 here)
    for j in range(raw.shape[0]):  # LSB first, as the reference's bytes
        raw[j] = np.uint8((w32[j >> 2] >> np.uint32(8 * (j & 3))) & np.uint32(255))
    pos -= 1
    words[pos] = np.uint32(x & mask32)
    pos -= 1
    words[pos] = np.uint32(x >> np.uint64(32))
    return pos


@njit(cache=True, nogil=True)
def rans_reciprocals(freqs, pb, tables):
    """The tables of :func:`mag_encode`'s rANS, a cell ``k = c * N_BUCKETS + b`` of ``freqs``
    (int64, ``(N_CONTEXTS, N_BUCKETS)``, each used row summing to ``2**pb``, ``1 <= pb <= 32``)
    a column of ``tables`` (uint64, ``(5, N_CONTEXTS * N_BUCKETS)``): ``f``; its reciprocal
    ``floor(2**64 / f)`` (``2**64 - 1`` for ``f = 1``): for any uint64 ``x``, ``mulhi(x, rcp)`` is
    ``x // f`` or one less, since ``x * rcp / 2**64`` lies in ``(x / f - 1, x / f]``; the
    renormalization bound ``(f << (64 - pb)) - 1`` (``2**64 - 1`` for ``f = 2**pb``: never
    exceeded); the cumulative frequency before the cell in its row; and ``2**pb - f``. Cells of
    ``f = 0`` (never coded) get zeros but the cumulative frequency."""
    top = np.int64(1) << pb
    shift = np.uint64(64 - pb)
    for c in range(N_CONTEXTS):
        a = np.int64(0)
        for b in range(N_BUCKETS):
            f = freqs[c, b]
            k = c * N_BUCKETS + b
            tables[3, k] = np.uint64(a)
            a += f
            uf = np.uint64(f)
            tables[0, k] = uf
            if f <= 0:
                tables[1, k] = 0
                tables[2, k] = 0
                tables[4, k] = 0
                continue
            if f == 1:
                tables[1, k] = _U64_ONES
            elif f & (f - 1) == 0:  # a power of two: 2**64 / f exactly
                tables[1, k] = _U64_ONES // uf + np.uint64(1)
            else:  # f does not divide 2**64: floor((2**64 - 1) / f) = floor(2**64 / f)
                tables[1, k] = _U64_ONES // uf
            tables[2, k] = (uf << shift) - np.uint64(1) if f < top else _U64_ONES
            tables[4, k] = np.uint64(top - f)


@njit(cache=True, nogil=True, no_cpython_wrapper=True)
def _predict_chunk(s, c0, c1, order, q, acc):
    """``acc[t] = sum_j q[j] * s[c0 + t - 1 - j]`` (uint64, modulo 2**64) for the samples
    ``i = c0 + t`` of ``[max(c0, order), c1)``, zero below ``order``: four lags a pass over the
    chunk, each a loop over samples that LLVM vectorizes."""
    start = imax(c0, order)
    for t in range(c1 - c0):
        acc[t] = 0
    dst = acc[start - c0:c1 - c0]  # slices: no wrap-around checks in the loops
    j = 0
    while j + 4 <= order:
        q0, q1, q2, q3 = np.uint64(q[j]), np.uint64(q[j + 1]), np.uint64(q[j + 2]), np.uint64(q[j + 3])
        s0 = s[start - 1 - j:c1 - 1 - j]
        s1 = s[start - 2 - j:c1 - 2 - j]
        s2 = s[start - 3 - j:c1 - 3 - j]
        s3 = s[start - 4 - j:c1 - 4 - j]
        for t in range(c1 - start):
            dst[t] += q0 * np.uint64(s0[t]) + q1 * np.uint64(s1[t]) + q2 * np.uint64(s2[t]) + q3 * np.uint64(s3[t])
        j += 4
    for j in range(j, order):
        qj = np.uint64(q[j])
        sj = s[start - 1 - j:c1 - 1 - j]
        for t in range(c1 - start):
            dst[t] += qj * np.uint64(sj[t])


@njit(cache=True, nogil=True, no_cpython_wrapper=True)
def _predict_chunk_narrow(s, c0, c1, order, q, buf):
    """:func:`_predict_chunk` modulo 2**32: ``buf[NARROW + t]`` (int32) = the low 32 bits of
    ``sum_j q[j] * s[i - 1 - j]`` for the samples ``i = max(c0, order) + t`` of ``[max(c0, order),
    c1)`` (``c1 - c0 <= CHUNK``, ``order <= 32``). ``buf``: int32 scratch of ``2 * CHUNK + 32``
    values (below :data:`NARROW` the low 32 bits of the chunk's values and the ``order`` before
    them, from :data:`NARROW` the sums). The products and sums are int32, wrapping (a 32-bit
    vector multiply: twice the lanes of the 64-bit one and a cheaper instruction; the chunk's
    predictions 0.70 -> 0.38, 1.20 -> 0.73, 2.59 -> 1.30 ns a sample at orders 8, 16, 32 on
    this machine's AVX-512, znver4).

    Exact where it is used: a residual ``wrap(s - (sum >> shift), sh)`` of ``bits = 64 - sh``
    bits depends only on bits ``shift .. shift + bits - 1`` of the sum (modulo 2**64), which are
    those of its low 32 bits, sign-extended (``np.int64(sum32) >> shift``), when ``shift + bits
    <= 32`` (``shift <= sh - 32``): the same residuals as :func:`_predict_chunk`'s sums give, for
    any coefficients and values."""
    start = imax(c0, order)
    base = start - order  # buf[v] holds s[base + v]
    vals = buf[:c1 - base]
    src = s[base:c1]  # (a slice: a loop LLVM vectorizes, no wrap-around checks)
    for v in range(c1 - base):
        vals[v] = np.int32(src[v])  # the low 32 bits (a truncation)
    sums = buf[NARROW:NARROW + c1 - start]
    for t in range(c1 - start):
        sums[t] = 0
    j = 0
    while j + 4 <= order:
        q0, q1, q2, q3 = np.int32(q[j]), np.int32(q[j + 1]), np.int32(q[j + 2]), np.int32(q[j + 3])
        s0 = buf[order - 1 - j:c1 - base - 1 - j]  # lag j + 1
        s1 = buf[order - 2 - j:c1 - base - 2 - j]
        s2 = buf[order - 3 - j:c1 - base - 3 - j]
        s3 = buf[order - 4 - j:c1 - base - 4 - j]
        for t in range(c1 - start):  # (each step truncated to int32: LLVM keeps 32-bit lanes)
            sums[t] = np.int32(sums[t] + np.int32(q0 * s0[t]) + np.int32(q1 * s1[t]) + np.int32(q2 * s2[t])
                               + np.int32(q3 * s3[t]))
        j += 4
    for lag in range(j, order):
        qj = np.int32(q[lag])
        sj = buf[order - 1 - lag:c1 - base - 1 - lag]
        for t in range(c1 - start):
            sums[t] = np.int32(sums[t] + np.int32(qj * sj[t]))


@njit(cache=True, nogil=True, no_cpython_wrapper=True)
def _residual_magnitude_every(s, lo, hi, order, q, shift, sh, acc, buf32, every, narrow_max):
    """The sum of |r| (int64) of the residuals ``r`` of ``s[lo:hi]`` under one quantized
    predictor, as :func:`ubpe._kernels.predict.lpc_filter` computes them, over the chunks ``lo +
    j * CHUNK`` with ``j % every == 0`` only (all of them when ``every == 1``), and the samples
    it covered (``acc``: uint64 scratch of CHUNK values; ``buf32``: int32, ``2 * CHUNK + 32``).
    The predictions by :func:`_predict_chunk_narrow` when ``shift <= narrow_max`` (exact up to
    ``sh - 32``), else by :func:`_predict_chunk`: the same residuals.
    Precondition: the sum fits in int64 (``sh`` >= 32 with fewer than 2**31 samples)."""
    total = np.int64(0)
    count = 0
    ush = np.int64(shift)
    narrow = shift <= narrow_max
    for c0 in range(lo, hi, CHUNK * every):
        c1 = imin(hi, c0 + CHUNK)
        count += c1 - c0
        if narrow:
            _predict_chunk_narrow(s, c0, c1, order, q, buf32)
        else:
            _predict_chunk(s, c0, c1, order, q, acc)
        i = c0
        while i < c1 and i < order:  # the signal's first samples: the previous one, or none
            p = s[i - 1] if i >= 1 else np.int64(0)
            r = wrap(np.int64(np.uint64(s[i]) - np.uint64(p)), sh)
            total += r if r >= 0 else -r
            i += 1
        src = s[i:c1]
        part = np.int64(0)
        if narrow:  # (i is max(c0, order) here, or c1: the sums' first sample)
            pred32 = buf32[NARROW:NARROW + c1 - i]
            for t in range(c1 - i):  # branch-free: vectorized
                r = wrap(np.int64(np.uint64(src[t]) - np.uint64(np.int64(pred32[t]) >> ush)), sh)
                part += r if r >= 0 else -r
        else:
            pred = acc[i - c0:c1 - c0]
            for t in range(c1 - i):
                r = wrap(np.int64(np.uint64(src[t]) - np.uint64(np.int64(pred[t]) >> ush)), sh)
                part += r if r >= 0 else -r
        total += part
    return total, count


@njit(cache=True, nogil=True, no_cpython_wrapper=True)
def _geometric_bits(total, n):
    """:func:`ubpe._kernels.predict._geometric_bits` (the same formula)."""
    if n == 0:
        return 0.0
    m = total / n
    if m <= 0.0:
        return 0.0
    return n * ((1.0 + m) * np.log2(1.0 + m) - m * np.log2(m))


@njit(cache=True, nogil=True)
def lpc_residual(src, block, orders, shifts, coefs, sh, dst, narrow_max=-1):
    """:func:`ubpe._kernels.predict.lpc_filter`'s forward residual (``inverse=False``): the same
    integers, under its preconditions (``dst`` not ``src``; a block's coefficients lag 1 first;
    ``dst`` int64 or signed integers of the signal's ``64 - sh`` bits: each residual is wrapped to
    that width, so storing it there keeps its value, as ``astype`` of the int64 residual did);
    a block of shift at most ``sh - 32`` predicted in 32 bits (:func:`_predict_chunk_narrow`),
    the others in 64. ``narrow_max``: the tests' hook, the largest shift predicted in 32 bits
    (-1, the default: ``sh - 32``, the largest at which that is exact; a larger one gives wrong
    residuals beyond it)."""
    none = empty(0, np.int64)
    _residual_blocks(src, block, orders, shifts, coefs, sh, dst, narrow_max, 0, none, none)


@njit(cache=True, nogil=True)
def lpc_residual_spans(src, block, orders, shifts, coefs, sh, dst, span, spans, totals):
    """:func:`lpc_residual` (the same ``dst``, the default ``narrow_max``) that also sums each
    block's residual magnitudes by spans, as it goes: ``spans[k]`` (int64) = the sum of ``|dst|``
    over the k-th span of ``span`` samples from each block's start (a block's last span ends
    with it), :func:`span_magnitudes` of ``dst`` (the same integers), and ``totals[b]`` (int64,
    a cell a block) the sum of block ``b``'s spans, its ``|dst|`` summed; each block read again
    while it is in cache, where that took a pass of its own over the residual (and the lpc
    stage's cost of each block length and the refit's block costs took one each). Returns the
    spans' count. Preconditions: :func:`lpc_residual`'s; ``span >= 1``; ``spans`` holds every
    span (:func:`span_count`); signals of at most 32 bits (the sums within int64)."""
    return _residual_blocks(src, block, orders, shifts, coefs, sh, dst, -1, span, spans, totals)


def span_count(n, block, span):
    """How many spans :func:`span_magnitudes` and :func:`lpc_residual_spans` sum for ``n``
    samples: ``ceil(block / span)`` a whole block of ``block`` samples, ``ceil(rest / span)``
    for a last, shorter one (Python ints)."""
    whole, rest = divmod(n, block)
    return whole * (-(-block // span)) + -(-rest // span)



@njit(cache=True, nogil=True, no_cpython_wrapper=True)
def _residual_blocks(src, block, orders, shifts, coefs, sh, dst, narrow_max, span, spans, totals):
    """:func:`lpc_residual`'s pass; with ``span`` > 0, :func:`lpc_residual_spans`' sums too
    (returns their count; 0 without)."""
    n = src.shape[0]
    if narrow_max < 0:
        narrow_max = sh - 32
    acc = empty(CHUNK, np.uint64)
    buf32 = empty(2 * CHUNK + 32, np.int32)
    c0 = 0
    k = 0
    for b in range(orders.shape[0]):
        order = np.int64(orders[b])
        shift = np.int64(shifts[b])
        q = coefs[c0:c0 + order]
        c0 += order
        lo = b * block
        hi = imin(n, lo + block)
        narrow = shift <= narrow_max
        for k0 in range(lo, hi, CHUNK):
            k1 = imin(hi, k0 + CHUNK)
            if narrow:
                _predict_chunk_narrow(src, k0, k1, order, q, buf32)
            else:
                _predict_chunk(src, k0, k1, order, q, acc)
            i = k0
            while i < k1 and i < order:  # the signal's first samples: the previous one, or none
                p = src[i - 1] if i >= 1 else np.int64(0)
                dst[i] = wrap(np.int64(np.uint64(src[i]) - np.uint64(p)), sh)
                i += 1
            s = src[i:k1]
            d = dst[i:k1]
            if narrow:  # (i is max(k0, order) here, or k1: the sums' first sample)
                pred32 = buf32[NARROW:NARROW + k1 - i]
                for t in range(k1 - i):
                    d[t] = wrap(np.int64(np.uint64(s[t]) - np.uint64(np.int64(pred32[t]) >> shift)), sh)
            else:
                pred = acc[i - k0:k1 - k0]
                for t in range(k1 - i):
                    d[t] = wrap(np.int64(np.uint64(s[t]) - np.uint64(np.int64(pred[t]) >> shift)), sh)
        if span > 0:  # (the block's residual, just written: in cache)
            whole = np.int64(0)
            for s0 in range(lo, hi, span):
                s1 = imin(hi, s0 + span)
                part = dst[s0:s1]
                total = np.int64(0)
                for t in range(s1 - s0):
                    v = np.int64(part[t])
                    total += v if v >= 0 else -v
                spans[k] = total
                whole += total
                k += 1
            totals[b] = whole
    return k


@njit(cache=True, nogil=True)
def lpc_analyze(s, block, max_order, windows, precisions, sh, orders, shifts, precs, coefs, ncand=3, every=1,
                narrow_max=-1, high_gain=0.0, kept=None, kept_len=None):
    """:func:`ubpe._kernels.predict.lpc_analyze` (the same arguments, the same choices and
    return value) for signals of at most 32 bits (``sh >= 32``) in blocks of fewer than 2**20
    samples: its residual costings sum the magnitudes as integers (:func:`_residual_magnitude_every`),
    the float it costs being the same (see the module docstring), those of predictors of shift
    at most ``narrow_max`` in 32 bits (-1, the default: ``sh - 32``, where that is exact; below
    -1, none: the tests' hook).

    ``kept``, ``kept_len`` (both or neither): the windows of ``min(block, len(s))`` samples, one
    row of ``kept`` (float64, ``(len(windows), >= that)``) a window of ``windows``, and the length
    each row holds (int64, -1: none yet). A block of that length takes its window from its row
    where the row holds it, else computes it here and keeps it there (the window computed by this
    kernel's own code, so the same floats; a caller's analyses of one length, such as the "lpc"
    stage's on a screen's sample and then on all the values, compute each window once: ECG's
    16 384-sample Tukey window is 4 096 cosines, about 4 us a call, vectorized; 137 us when this
    was written: benchmarks/results/l1speed.md). Not to be shared by threads
    calling at once."""
    n = s.shape[0]
    if narrow_max == -1:
        narrow_max = sh - 32
    nb = orders.shape[0]
    c0 = 0
    wlen = imax(1, imin(block, n))
    w = empty(wlen, np.float64)
    xw = empty(wlen, np.float64)
    r = zeros(max_order + 1, np.float64)
    a = zeros(max_order + 1, np.float64)
    tmp = zeros(max_order + 1, np.float64)
    lps = zeros((max_order + 1, max_order), np.float64)
    errs = zeros(max_order + 1, np.float64)
    q = zeros(max_order, np.int64)
    best_q = zeros(max_order, np.int64)
    pred = empty(CHUNK, np.uint64)
    buf32 = empty(2 * CHUNK + 32, np.int32)  # (sh >= 32: the predictions of shift <= sh - 32 in 32 bits)
    w_len, w_kind = np.int64(-1), np.int64(-1)
    for b in range(nb):
        lo = b * block
        hi = imin(n, lo + block)
        m = hi - lo
        zero = np.int64(0)
        # one call site a costing (every == 1: the magnitudes of all the chunks, the same sum)
        total, cnt = _residual_magnitude_every(s, lo, hi, zero, q, zero, sh, pred, buf32, every, narrow_max)
        if every == 1:
            best_bits = _geometric_bits(2.0 * float(total), m)
        else:
            best_bits = _geometric_bits(2.0 * float(total), cnt) * m / cnt
        best_order = 0
        best_shift = 0
        best_prec = 0
        for wi in range(windows.shape[0]):
            if kept is not None and m == wlen and kept_len[wi] == m:
                wv = kept[wi, :m]  # (this kernel's own window, kept by an earlier call)
            else:
                if m != w_len or windows[wi] != w_kind:
                    _window(w, m, windows[wi])
                    w_len, w_kind = m, windows[wi]
                    if kept is not None and m == wlen:
                        kept[wi, :m] = w[:m]
                        kept_len[wi] = m
                wv = w[:m]
            for i in range(m):
                xw[i] = float(s[lo + i]) * wv[i]
            kmax = imin(max_order, m - 1) if m > 1 else 0
            for k in range(kmax + 1):
                r[k] = 0.0
            # r[k] = sum_i xw[i] xw[i + k], each summed over i in order: eight samples a pass over
            # the lags (an eighth of the loads and stores of r, one slice a pass), the same float
            # additions (0.39 -> 0.25 ms on 108 000 samples at 32 lags; four a pass before)
            i = 0
            rv = r[:kmax + 1]
            while i + kmax + 7 < m:
                v0, v1, v2, v3 = xw[i], xw[i + 1], xw[i + 2], xw[i + 3]
                v4, v5, v6, v7 = xw[i + 4], xw[i + 5], xw[i + 6], xw[i + 7]
                h = xw[i:i + kmax + 8]
                for k in range(kmax + 1):
                    t = rv[k] + h[k] * v0
                    t = t + h[k + 1] * v1
                    t = t + h[k + 2] * v2
                    t = t + h[k + 3] * v3
                    t = t + h[k + 4] * v4
                    t = t + h[k + 5] * v5
                    t = t + h[k + 6] * v6
                    rv[k] = t + h[k + 7] * v7
                i += 8
            for i in range(i, m):
                v0 = xw[i]
                h0 = xw[i:i + imin(kmax, m - 1 - i) + 1]
                for k in range(h0.shape[0]):
                    r[k] += h0[k] * v0
            # the Levinson recursion with a white-noise floor of 1e-9 of the energy (stable); then,
            # where that predicts the block to below high_gain of its energy (a smooth, oversampled
            # signal whose spectrum spans more than the floor), again without it, its orders costed too
            for floor_pass in range(2):
                white = 1e-9 if floor_pass == 0 else 0.0
                errs[0] = r[0]
                for j in range(max_order + 1):
                    a[j] = 0.0
                usable = 0
                if r[0] > 0.0 and np.isfinite(r[0]):
                    err = r[0] * (1.0 + white)  # the white-noise floor of this pass
                    for k in range(1, kmax + 1):
                        acc = r[k]
                        for j in range(1, k):
                            acc -= a[j] * r[k - j]
                        refl = acc / err
                        if not np.isfinite(refl) or abs(refl) >= 1.0:
                            break
                        for j in range(1, k):
                            tmp[j] = a[j] - refl * a[k - j]
                        for j in range(1, k):
                            a[j] = tmp[j]
                        a[k] = refl
                        err *= 1.0 - refl * refl
                        errs[k] = err
                        for j in range(k):
                            lps[k, j] = a[j + 1]
                        usable = k
                        if err <= 0.0:
                            break
                if usable == 0:
                    break
                p0 = precisions[0]
                est = empty(usable, np.float64)
                e0 = errs[0]  # (max(errs[0], 1e-300) and max(e, 1e-12) as numba's max: b if b > a else a)
                if 1e-300 > e0:
                    e0 = 1e-300
                for k in range(1, usable + 1):
                    e = errs[k] / e0
                    if 1e-12 > e:
                        e = 1e-12
                    est[k - 1] = 0.5 * m * np.log2(e) + k * p0
                for c in range(imin(ncand, usable)):
                    k = np.int64(1)
                    for j in range(1, usable):
                        if est[j] < est[k - 1]:
                            k = j + 1
                    est[k - 1] = np.inf
                    for pi in range(precisions.shape[0]):
                        prec = precisions[pi]
                        shift = _quantize(lps[k], k, prec, q)
                        total, cnt = _residual_magnitude_every(s, lo, hi, k, q, np.int64(shift), sh, pred, buf32, every,
                                                               narrow_max)
                        if every == 1:
                            bits = _geometric_bits(2.0 * float(total), m) + k * prec + 10
                        else:
                            bits = _geometric_bits(2.0 * float(total), cnt) * m / cnt + k * prec + 10
                        if bits < best_bits:
                            best_bits = bits
                            best_order = k
                            best_shift = shift
                            best_prec = prec
                            for j in range(k):
                                best_q[j] = q[j]
                if not (high_gain > 0.0 and errs[usable] < high_gain * errs[0]):
                    break
        orders[b] = best_order
        shifts[b] = best_shift
        precs[b] = best_prec
        for j in range(best_order):
            coefs[c0 + j] = best_q[j]
        c0 += best_order
    return c0


@njit(cache=True, nogil=True)
def reweight_gram_padded(x, first, step, u, W, G):
    """:func:`ubpe._kernels.predict.reweight_gram` (the same lower triangle, the same floats: each
    element's products added in the same order) with each row of ``G`` updated up to the next
    multiple of 8 columns past its diagonal: vector loops without a scalar remainder (75 -> 65 us
    on 1024 equations of 33). ``G`` float64 ``(p, P)`` and ``W`` ``(len(u), P)``, ``P`` a multiple
    of 8 of at least ``p`` (``W``'s columns from ``p`` on are zeroed; ``G``'s past each row's
    diagonal are scratch). Its other preconditions as ``reweight_gram``'s.

    Two rows of ``G`` and two quads of equations a pass: each ``W`` column
    loaded once for both rows and each ``G`` cell once for both quads, an element's sum the same
    (its quads' sums added to it one after the other; 52 -> 41 us on 1024 equations of 33, the
    refit's size)."""
    p = G.shape[0]
    wide = G.shape[1]
    rows = u.shape[0]
    for t in range(rows):
        j = first - p + 1 + t * step
        xt = x[j:j + p]
        wt = W[t]
        ut = u[t]
        for b in range(p):
            wt[b] = ut * xt[b]
        for b in range(p, wide):
            wt[b] = 0.0
    for a in range(p):
        for b in range(wide):
            G[a, b] = 0.0
    p2 = p & ~1
    t = 0
    while t + 8 <= rows:  # two quads a pass
        j = first - p + 1 + t * step
        x0 = x[j:j + p]
        x1 = x[j + step:j + step + p]
        x2 = x[j + 2 * step:j + 2 * step + p]
        x3 = x[j + 3 * step:j + 3 * step + p]
        x4 = x[j + 4 * step:j + 4 * step + p]
        x5 = x[j + 5 * step:j + 5 * step + p]
        x6 = x[j + 6 * step:j + 6 * step + p]
        x7 = x[j + 7 * step:j + 7 * step + p]
        w0, w1, w2, w3 = W[t], W[t + 1], W[t + 2], W[t + 3]
        w4, w5, w6, w7 = W[t + 4], W[t + 5], W[t + 6], W[t + 7]
        for a in range(0, p2, 2):  # (rows a and a + 1: the same columns, (a + 8) & ~7 for even a)
            y0, y1, y2, y3, y4, y5, y6, y7 = x0[a], x1[a], x2[a], x3[a], x4[a], x5[a], x6[a], x7[a]
            z0, z1, z2, z3 = x0[a + 1], x1[a + 1], x2[a + 1], x3[a + 1]
            z4, z5, z6, z7 = x4[a + 1], x5[a + 1], x6[a + 1], x7[a + 1]
            g = G[a]
            h = G[a + 1]
            for b in range((a + 8) & ~7):
                v0, v1, v2, v3, v4, v5, v6, v7 = w0[b], w1[b], w2[b], w3[b], w4[b], w5[b], w6[b], w7[b]
                g[b] = (g[b] + (y0 * v0 + y1 * v1 + y2 * v2 + y3 * v3)) + (y4 * v4 + y5 * v5 + y6 * v6 + y7 * v7)
                h[b] = (h[b] + (z0 * v0 + z1 * v1 + z2 * v2 + z3 * v3)) + (z4 * v4 + z5 * v5 + z6 * v6 + z7 * v7)
        for a in range(p2, p):  # (an odd last row alone)
            y0, y1, y2, y3, y4, y5, y6, y7 = x0[a], x1[a], x2[a], x3[a], x4[a], x5[a], x6[a], x7[a]
            g = G[a]
            for b in range((a + 8) & ~7):
                g[b] = ((g[b] + (y0 * w0[b] + y1 * w1[b] + y2 * w2[b] + y3 * w3[b]))
                        + (y4 * w4[b] + y5 * w5[b] + y6 * w6[b] + y7 * w7[b]))
        t += 8
    if t < rows:  # (a last quad)
        j = first - p + 1 + t * step
        x0 = x[j:j + p]
        x1 = x[j + step:j + step + p]
        x2 = x[j + 2 * step:j + 2 * step + p]
        x3 = x[j + 3 * step:j + 3 * step + p]
        w0, w1, w2, w3 = W[t], W[t + 1], W[t + 2], W[t + 3]
        for a in range(p):
            z0, z1, z2, z3 = x0[a], x1[a], x2[a], x3[a]
            g = G[a]
            for b in range((a + 8) & ~7):  # (columns 0 .. a, and on to a multiple of 8)
                g[b] += z0 * w0[b] + z1 * w1[b] + z2 * w2[b] + z3 * w3[b]


@njit(cache=True, nogil=True)
def reweight_fit(s, r, lo, hi, order, precision, sh, passes, span, equations, local, q, kept=None):
    """:func:`ubpe._kernels.predict.reweight_fit` (the same arguments, the same result) for
    signals of at most 32 bits (``sh >= 32``) and blocks below 2**20 samples: the residual's
    local magnitudes (the weights' windows, the cost's spans) summed as integers, from one
    residual pass a chunk of samples at a time (:func:`_predict_chunk`), where the other summed
    floats one after the other; every such sum is of integers below 2**53, exact either way.
    ``r`` may also be the residual in its own signed width (the same values as its int64 copy).
    ``kept`` (int64 or signed integers of the signal's ``64 - sh`` bits, at least ``hi - lo``
    cells, or None): given the returned predictor's residual of the block, the integers
    :func:`lpc_residual` gives for it (each pass computes it for its cost; the refit kept then
    made it again), where a predictor is returned (its order above 0); its contents otherwise
    unspecified."""
    fit_lo = max(lo, order)
    m = hi - fit_lo
    if m <= 2 * order or order == 0:
        return 0.0, 0, 0
    step = (m + equations - 1) // equations
    rows = ((m + step - 1) // step + 3) // 4 * 4
    p = order + 1
    base = fit_lo - order
    x = zeros(max(order + m, order + (rows - 1) * step + 1), np.float64)
    for i in range(base, hi):
        x[i - base] = float(s[i])
    u = zeros(rows, np.float64)
    wide = (p + 7) // 8 * 8  # (reweight_gram_padded's columns)
    W = empty((rows, wide), np.float64)
    H = empty((p, wide), np.float64)
    G = empty((p, p), np.float64)
    L = zeros((order, order), np.float64)
    z = empty(order, np.float64)
    c = empty(order, np.float64)
    qk = empty(order, np.int64)
    # |residual| of the samples fitted, and its running sums (prefix[j] = sum of the first j)
    mag = empty(m, np.int64)
    prefix = empty(m + 1, np.int64)
    for j in range(m):
        v = np.int64(r[fit_lo + j])  # (r int64, or the residual in its width: the same values)
        mag[j] = v if v >= 0 else -v
    res = empty(hi - lo, np.int64)
    acc = empty(CHUNK, np.uint64)
    buf32 = empty(2 * CHUNK + 32, np.int32)
    best_bits, best_k, best_shift = np.inf, 0, 0
    for _ in range(passes):
        prefix[0] = 0
        for j in range(m):
            prefix[j + 1] = prefix[j] + mag[j]
        for j in range((m + step - 1) // step):  # reweight_scales, its windows' sums exact
            i = j * step
            t = float(prefix[min(i + (span - 1) // 2 + 1, m)] - prefix[max(i - span // 2, 0)])
            scale = t / span + 1.0
            u[j] = 1.0 / (scale * scale)
        reweight_gram_padded(x, order, step, u, W, H)
        for a in range(p):
            for b in range(a + 1):
                G[a, b] = H[order - b, order - a]
        e0 = G[0, 0]
        if not e0 > 0.0:
            break
        trace = 0.0
        for a in range(1, p):
            trace += G[a, a]
        floor = 1e-9 * trace / order + 1e-300
        ok = True
        for j in range(order):
            d = G[j + 1, j + 1] + floor
            for v in range(j):
                d -= L[j, v] * L[j, v]
            if not d > 0.0:
                ok = False
                break
            d = math.sqrt(d)
            L[j, j] = d
            for i in range(j + 1, order):
                w = G[i + 1, j + 1]
                for v in range(j):
                    w -= L[i, v] * L[j, v]
                L[i, j] = w / d
        if not ok:
            break
        k, cost, explained = np.int64(0), np.inf, 0.0
        for i in range(order):
            w = G[i + 1, 0]
            for v in range(i):
                w -= L[i, v] * z[v]
            z[i] = w / L[i, i]
            explained += z[i] * z[i]
            here = 0.5 * m * math.log2(max(e0 - explained, e0 * 1e-12) / e0) + (i + 1) * precision
            if here < cost:
                k, cost = i + 1, here
        finite = True
        for i in range(k - 1, -1, -1):
            w = z[i]
            for v in range(i + 1, k):
                w -= L[v, i] * c[v]
            c[i] = w / L[i, i]
            finite &= math.isfinite(c[i])
        if not finite:
            break
        shift = _quantize(c, k, precision, qk)
        # the block's residual as lpc_filter computes it, a chunk of samples at a time
        for c0 in range(lo, hi, CHUNK):
            c1 = min(hi, c0 + CHUNK)
            narrow = shift <= sh - 32
            if narrow:
                _predict_chunk_narrow(s, c0, c1, k, qk, buf32)
            else:
                _predict_chunk(s, c0, c1, k, qk, acc)
            i = c0
            while i < c1 and i < k:
                pred = s[i - 1] if i >= 1 else np.int64(0)
                res[i - lo] = wrap(np.int64(np.uint64(s[i]) - np.uint64(pred)), sh)
                i += 1
            src = s[i:c1]
            dst = res[i - lo:c1 - lo]
            if narrow:  # (i is max(c0, k) here, or c1: the sums' first sample)
                pr32 = buf32[NARROW:NARROW + c1 - i]
                for t in range(c1 - i):
                    dst[t] = wrap(np.int64(np.uint64(src[t]) - np.uint64(np.int64(pr32[t]) >> np.int64(shift))), sh)
            else:
                pr = acc[i - c0:c1 - c0]
                for t in range(c1 - i):
                    dst[t] = wrap(np.int64(np.uint64(src[t]) - np.uint64(np.int64(pr[t]) >> np.int64(shift))), sh)
        bits = 0.0
        for a in range(0, hi - lo, local):  # one geometric law per ``local`` samples from lo
            b = min(a + local, hi - lo)
            total = np.int64(0)
            for t in range(a, b):
                v = res[t]
                total += v if v >= 0 else -v
            bits += _geometric_bits(2.0 * float(total), b - a)
        for j in range(m):
            v = res[fit_lo - lo + j]
            mag[j] = v if v >= 0 else -v
        bits += k * precision
        if bits < best_bits:
            best_bits, best_k, best_shift = bits, k, shift
            for j in range(k):
                q[j] = qk[j]
            if kept is not None:
                kept[:hi - lo] = res
    return best_bits, best_k, best_shift


@njit(cache=True, nogil=True)
def layout_stats(d, rank, center, middle, rate_a, rate_b, dense, counts):
    """The "mag" coder's counts of two id layouts of the same values, at two rates, in one pass:
    ``counts[0]``, ``counts[1]``: :func:`mag_stats` of the bare ids ``rank[d]`` around ``center``
    at ``rate_a`` and ``rate_b``; with ``dense``, ``counts[2]``, ``counts[3]``: of the dense ids
    ``d`` around ``middle`` (``counts`` int64 ``(4, N_CONTEXTS, N_BUCKETS)``, zeros). Returns
    (raw bits of the bare ids, raw bits of the dense ids: 0 without ``dense``). Preconditions: ``d``
    int64 in [0, len(rank)), ``rank`` and ``center``, ``middle`` in [0, 2**24), rates in [2, 8]."""
    raw_b = 0
    raw_d = 0
    ma = np.int64(0)
    mb = np.int64(0)
    na = np.int64(0)
    nb = np.int64(0)
    sa = rate_a - 2
    sb = rate_b - 2
    for i in range(d.shape[0]):
        dv = d[i]
        t = np.int64(rank[dv]) - center
        z = (t << 1) if t >= 0 else ((-t << 1) - 1)
        b = np.uint64(_bucket(z))
        raw_b += (np.int64(b) >> 1) - 1 if b >= 4 else 0
        counts[0, np.uint64(_context(ma, sa)), b] += 1
        counts[1, np.uint64(_context(mb, sb)), b] += 1
        ma = ma + z - (ma >> rate_a)
        mb = mb + z - (mb >> rate_b)
        if dense:
            t = dv - middle
            z = (t << 1) if t >= 0 else ((-t << 1) - 1)
            b = np.uint64(_bucket(z))
            raw_d += (np.int64(b) >> 1) - 1 if b >= 4 else 0
            counts[2, np.uint64(_context(na, sa)), b] += 1
            counts[3, np.uint64(_context(nb, sb)), b] += 1
            na = na + z - (na >> rate_a)
            nb = nb + z - (nb >> rate_b)
    return raw_b, raw_d


@njit(cache=True, nogil=True)
def span_magnitudes(r, block, span, out):
    """``out[k]`` = the sum of |r| (int64) over the k-th span: spans of ``span`` samples from
    the start of each block of ``block`` samples (a block's last span ends with it); returns
    the spans' count. Preconditions: block, span >= 1; ``out`` holds every span
    (sum over blocks of ceil(block length / span)); |r| sums within int64."""
    n = r.shape[0]
    k = 0
    for b0 in range(0, n, block):
        b1 = imin(n, b0 + block)
        for s0 in range(b0, b1, span):
            s1 = imin(b1, s0 + span)
            total = np.int64(0)
            for i in range(s0, s1):
                v = np.int64(r[i])
                total += v if v >= 0 else -v
            out[k] = total
            k += 1
    return k


@njit(cache=True, nogil=True, no_cpython_wrapper=True)
def _nonzero_counts(table, out, k):
    """Write the non-zero cells of ``table`` (int64), in index order, as float64 (exact: counts
    below 2**53) to ``out`` from ``k`` on; returns the index after the last written."""
    for i in range(table.shape[0]):
        v = table[i]
        if v != 0:
            out[k] = float(v)
            k += 1
    return k


@njit(cache=True, nogil=True)
def pair_counts(ids, a, cells, out):
    """The counts :func:`ubpe.planner.fast.pair_information` takes its plug-in information from,
    in one pass over ``ids`` (1-D integers in ``[0, a)``, at least 2): of the consecutive pairs
    ``(ids[i], ids[i + 1])`` by cell ``(ids[i] * a + ids[i + 1]) % cells`` (``cells`` = a * a: a
    cell a pair), of the first ids ``ids[:-1]`` and of the second ``ids[1:]``; each as its
    non-zero counts in cell (id) order, float64 (``np.bincount(...)``'s non-zero cells, as numpy's
    ``c[c > 0].astype(np.float64)`` gives them), one after the other in ``out`` (float64, at least
    ``min(cells, len(ids) - 1) + 2 * a``: at most one cell a pair is used). Returns how many of
    each: (pairs, firsts, seconds). (Written to the caller's array, not returned: three arrays
    boxed cost about 25 us a call.) Preconditions: ``a * a`` below 2**62, ``1 <= cells <= a *
    a``, fewer than 2**31 ids (the pairs' table counts in int32: 65 521 cells, 256 KB where int64
    took 512 KB of fresh pages a call)."""
    table = zeros(cells, np.int32)
    left = zeros(a, np.int64)
    right = zeros(a, np.int64)
    hashed = cells < a * a  # (else every code is below cells: no division a pair)
    for i in range(ids.shape[0] - 1):
        f = np.int64(ids[i])
        s = np.int64(ids[i + 1])
        code = f * a + s
        if hashed:
            code %= cells
        table[code] += 1
        left[f] += 1
        right[s] += 1
    k2 = _nonzero_counts(table, out, 0)
    kl = _nonzero_counts(left, out, k2)
    kr = _nonzero_counts(right, out, kl)
    return k2, kl - k2, kr - kl
