"""Numba kernels for the ``"cms2"`` coder: context mixing for signals over a fitted binary code.

Every kernel is total: it never raises, never indexes outside its arrays, and reports
malformed input through a negative status code (``ubpe.coders`` raises ``CorruptDataError``).
All arithmetic that affects the output is integer, so the bytes are identical on every
machine. This text is normative for the ``"cms2"`` payload, with the shared parts of
``ubpe._kernels.cmcore`` (``_hash``, ``_squash_table``, ``_stretch_table``, ``_clamp_bits``,
``_code_bit`` and ``_finish``, normative as that module defines them).

Payload: a header, then the arithmetic coder's bytes. Header: one byte ``mode`` (0 to 2); the
center c (LEB128, minimal: at most 4 bytes, c < V); one byte L (code length bound, 0..30);
then L LEB128 (minimal) counts k_1..k_L; then the flags F (LEB128, minimal, at most 5 bytes,
F < 2**(L + 1)): bit 0 turns the APM on, bit l (1 <= l <= L) makes length l's flat bits bypass
the model (below); bit l may be set only when k_l >= 2 (f_l is even, so then codes f_l and f_l + 1
form an aligned block: the length has flat bits). Valid only when k_L >= 1, sum k_l 2**(L - l) = 2**L (a complete prefix code),
U = sum k_l <= V, and L = 0 exactly when V = 1 (then U = 1). (The window streams of a shared
model use the same loop with the model's code and F = 0: ``ubpe.shared``.)

Binarization. Token ids are alphabet ids in value order. The predicted id is P = c for the
first token and in mode 0, else the previous token. A token t becomes its rank u in [0, V) by
distance from P: u = 0 for P, then P + 1, P - 1, P + 2, P - 2, ..., with m = min(P, V - 1 - P):
u = 2d - 1 for t = P + d and u = 2d for t = P - d (1 <= d <= m), and u = m + |t - P| beyond
(one side only). u is coded by the canonical code of the header: lengths non-decreasing in u,
k_l codes of length l; u in [b_l, b_l + k_l) (b_1 = 0, b_{l+1} = b_l + k_l) has the code
f_l + u - b_l with f_0 = 0, f_{l+1} = 2 (f_l + k_l) (k_0 = 1 if L = 0, else 0), sent most
significant bit first. Each bit is one binary decision; its *node* is (1 << d) | c for the d
bits c already sent. *Flat bits*: before each decision, at depth d with the bits c sent so far,
when c >= lim_d (an inner node) and for some l with bit l of F set every code below the node has
length l (c 2**(l - d) >= f_l and (c + 1) 2**(l - d) <= f_l + k_l), the token's l - d remaining
bits are coded each with p = 2048 (``_code_bit``) and nothing else: no slot lookup, claim,
prediction or update. (The encoder picks the mode and the lengths, not normative: the mode whose
Huffman code of u is shorter, lengths from Huffman on the sorted counts of u, assigned in
increasing order of u; F: ``cms2_encode``.)

Model. Write t1, t2 for the tokens 1 and 2 back (V before the start), ub(m) =
min(bit_length(m), 15); mu (running mean of
the tokens) and en (running mean of |t - t1|), 4 fractional bits each, start at 0 and after each
token t become mu += (16 t - mu) >> 5, en += (16 |t - t1| - en) >> 3 (0 for the first token).

- C = 3 hashed contexts, each its own table: 0. order 1: h1 = ``_hash(0, t1 + 1)``;
  1. order 2: ``_hash(h1 + 0x3779B97F, t2 + 1)``; 2. magnitudes, e = ub(en >> 2), a_k =
  ub(|16 t_k - mu| >> 4): ``_hash(_hash((a1 * 16 + a2) * 16 + e + 0x5555, [16 t1 < mu] + 2
  [16 t2 < mu]), 0x56789AB)``. (lp = 2 t1 - t2 clamped to [-1, V + 1] is mode 2's prediction.)
- tables: context c's table holds 2**SB 16-entry uint16 slots, SB = clamp(bit_length(min(n G,
  4 D_c) - 1), 10, 13), G = max(1, ceil(L / 4)), D_c = 16 (V + 1)**K_c (K = 1, 2, 2;
  saturating once it reaches 2**36). Entry 0 of a slot is a 16-bit check (0 never used), the
  others a 12-bit probability and a 4-bit count (reset: p = 2048, count 0; held in memory as
  (count << 12) | p, ``RESET``). At depths 0, 4, 8, ... the
  slot s = h & mask of h = ``_hash(context, node)`` is looked up for each context, with check
  h >> 16 (1 if 0): when s does not hold the check, s ^ 1 is tried; when neither does, the one
  whose entry 1 has the smaller count (s on ties) is reset and takes the check. The 4 decisions
  from there use entries 1, 2-3, 4-7, 8-15 (1, then 2 e + bit). An entry with count c adapts p
  += ((y << 12) - p) * r >> 16 (clamped to [1, 4095], c up to 15), r = rec[c] for c < 12 and
  rec[16 c - 164] from 12 (rec[k] = 131072 // (2 k + 3));
- order 0: 2**b0 uint32 entries (22-bit probability, 10-bit count, limit 255, rate rec[count]),
  b0 = clamp(bit_length(2 n max(L, 1) - 1), 10, 16), indexed by the node when it is < 2**b0,
  else by ((node * 0x9E3779B1) >> 11) & (2**b0 - 1);
- inputs: stretch of order 0 and of the 3 entries, and the bias 256 (NI = 5); two mixers (int
  weights, 16 fractional bits, start 9362, rate 6 + (32 * 4096) // (4096 + i) while coding token
  i): one selected by (min(depth, 15), confidence of the order-2 entry: 0, 1, 2, 3 for a count
  of 0, 1-2, 3-14, 15), one by node & (2**min(b0, 12) - 1); d = (d1 + d2) >> 1;
- without the APM (F bit 0 clear), p = squash(d) (in [1, 4095]); with it, an APM (``cmcore``,
  rate 7) whose row is ((h1 * 0x9E3 + node * 0x3B9) & (2**ab - 1)), ab = clamp(bit_length(n G -
  1), 10, 12): p = (squash(d) + 3 apm + 2) >> 2 clamped to [1, 4095]. p drives the coder
  (``cmcore``); after the n tokens, its 16 check bits and flush (``_finish``).

Update order after each modelled bit: both mixers, the APM (nearer knot, when on), order 0, the
hashed entries. After each token: the check hash, mu, en.

Memory: at most 3 tables of 2**13 slots x 32 bytes (768 KiB), 256 KiB of order 0, 264 KiB of
APM (when on) and 260 KiB of mixer weights, whatever n: about 1.6 MiB (and, once per process, a
read-only
256 KiB table of the slot entries' updates, ``_adapt_table``).
"""

from __future__ import annotations

import functools

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from . import njit
from .alloc import empty, full, zeros
from .cmcore import _clamp_bits, _code_bit, _finish, _hash
from .intrinsics import bit_length, clamp, imax, imin, select
from .train import _prefetch  # a cache hint only: no effect on any value

#: index cast: an unsigned index spares numba's negative-index wrap-around (every index cast
#: with it is >= 0 by construction)
U = np.uint64

# Status codes (as ubpe._kernels.cmcore).
OK = 0
ERR_SYMBOL = -1
ERR_LENGTH = -2
ERR_CHECK = -3
#: the encoder's loop: its measure set a flag at the stop token (``_code``'s ``cost``; encoder only)
MEASURED = -4

# Model constants (part of the stored format; never change them).
MAX_LEN = 30  #: longest code (nodes stay below 2**31)
N_CONTEXTS = 3
ORDERS = (1, 2, 2)  #: how many tokens each context's table size counts
LIMIT_O0 = 255
SLOW_FROM = 12
MIX_LR = 6
MIX_LR_BOOST = 32
MIX_W0 = 9362
APM_RATE = 7
MIN_APM_BITS = 10
MAX_APM_BITS = 12
#: a mixer's weight row: the NI = 7 weights and an eighth whose input is always 0 (so it never
#: changes), 64 bytes: one vector operation takes the row (not part of the format)
ROW = 8
#: the mixer's inputs before the bias: order 0 and the 3 hashed contexts (NI = NX + 1 = 5)
NX = 4
MIN_SLOT_BITS = 10
#: at most 2**14 slots a table (512 KiB): the five tables fit the caches; with 2**16 decoding was
#: 7-22 % slower and the payloads 0 to 0.011 % smaller (benchmarks/results/level2-decode.md)
MAX_SLOT_BITS = 13
MIN_O0_BITS = 10
MAX_O0_BITS = 16
MU_SHIFT = 5
#: a slot entry in memory: count c in the top 4 bits, probability p in the low 12 ((c << 12) | p;
#: not part of the format). Entries of one count are then contiguous in ``_adapt_table``: the
#: saturated and the young entries that most updates read are a few KiB of it, not lines spread
#: over its 256 KiB (the format's "p then c" order had the 16 counts of each p side by side)
RESET = 2048  #: a reset entry: p = 2048, c = 0


def _frozen_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``cmcore._squash_table()``, ``cmcore._stretch_table`` of it and ``rec`` (``rec[k] = 131072
    // (2 k + 3)``, k < 1024), computed once in numpy (the same integers): module constants,
    which numba freezes into ``_code`` (read-only), where each call built them (about 9 000
    operations, 1 024 of them divisions: a fixed cost of every pass, two or more a stream)."""
    from .cmcore import _SQUASH_KNOTS

    d = np.arange(-2047, 2048, dtype=np.int64)
    w = d & 127
    i = (d >> 7) + 16
    sq = (_SQUASH_KNOTS[i] * (128 - w) + _SQUASH_KNOTS[i + 1] * w + 64) >> 7
    # stretch[p]: the smallest d with sq(d) >= p, 2047 if none (sq non-decreasing)
    st = np.searchsorted(sq, np.arange(4096, dtype=np.int64), side="left") - 2047
    st = np.minimum(st, 2047).astype(np.int64)
    rec = 131072 // (2 * np.arange(1024, dtype=np.int64) + 3)
    for a in (sq, st, rec):
        a.flags.writeable = False
    return sq, st, rec


_SQUASH, _STRETCH, _REC = _frozen_tables()


@njit(cache=True, nogil=True, inline="always")
def _ub(m, cap):
    """min(bit_length(m), cap) for m >= 0: ``cmsignal._ubucket`` (the same value)."""
    return imin(bit_length(m), cap)


@njit(cache=True, nogil=True, inline="always")
def _encode_bit(x1, x2, pos, buf, p, y):
    """``cmcore._code_bit`` encoding ``y`` when ``pos + 4 <= len(buf)``: the same ``(x1, x2,
    pos)`` and bytes in ``buf[:pos]``, its shifts as arithmetic instead of a loop (whose exit,
    decided late and unpredictable, is a mispredicted branch about once a byte). It also writes
    the (up to 3) bytes after ``pos``: later bits and the flush rewrite them, or they lie past
    the payload."""
    rng = x2 - x1
    xmid = x1 + (rng >> 12) * p + (((rng & 0xFFF) * p) >> 12)
    if y:
        x2 = xmid
    else:
        x1 = xmid + 1
    k = (32 - _ub(x1 ^ x2, 32)) >> 3  # the leading bytes on which they agree (0..4): settled
    buf[U(pos)] = np.uint8(x1 >> 24)
    buf[U(pos + 1)] = np.uint8((x1 >> 16) & 255)
    buf[U(pos + 2)] = np.uint8((x1 >> 8) & 255)
    buf[U(pos + 3)] = np.uint8(x1 & 255)
    sh = 8 * k
    return (x1 << sh) & 0xFFFFFFFF, ((x2 << sh) & 0xFFFFFFFF) | ((1 << sh) - 1), pos + k


@njit(cache=True, nogil=True, inline="always")
def _rank(t, P, m):
    """u of token ``t`` for the predicted id ``P`` (module docstring), m = min(P, V - 1 - P)."""
    d = t - P
    ad = abs(d)
    return ad + imin(ad, m) - ((ad <= m) & (d > 0))  # (2d - 1 or -2d within m of P, else m + |d|)


# _contexts, _moments and _claim are called, not inline="always": numba types an inlined copy
# per call site (two, two and five in _code), 0.5 s more cold compile at the same speed
@njit(cache=True, nogil=True, no_cpython_wrapper=True)
def _contexts(t1, t2, mu, en, vocab_size):
    """The 3 context hashes (module docstring; the first is h1) of the token after t1, t2 (V
    before the start) with the running means mu, en, and lp (2 t1 - t2 clamped to [-1, V + 1])."""
    h1 = _hash(0, t1 + 1)  # order 1
    q1 = _hash(h1 + 0x3779B97F, t2 + 1)  # order 2
    lp = 2 * t1 - t2
    lp = clamp(lp, -1, vocab_size + 1)
    eb = _ub(en >> 2, 15)
    a1 = _ub(abs(t1 * 16 - mu) >> 4, 15)
    a2 = _ub(abs(t2 * 16 - mu) >> 4, 15)
    sides = (t1 * 16 < mu) + 2 * (t2 * 16 < mu)
    q2 = _hash(_hash((a1 * 16 + a2) * 16 + eb + 0x5555, sides), 0x56789AB)  # magnitudes
    return h1, q1, q2, lp


@njit(cache=True, nogil=True, no_cpython_wrapper=True)
def _moments(mu, en, tok, t1, i):
    """(mu, en) after token ``i`` = ``tok`` (``t1`` the one before it)."""
    dt = select(i >= 1, tok - t1, 0)
    return mu + (((tok << 4) - mu) >> MU_SHIFT), en + (((abs(dt) << 4) - en) >> 3)


@njit(cache=True, nogil=True, no_cpython_wrapper=True)
def _claim(TH, b, hh, home):
    """Base of the slot of hash ``hh`` in its pair (module docstring): ``b`` (the home slot's
    base, ``home`` its check ``TH[b]``) or ``b ^ 16`` when it holds the check, else the one with
    the smaller entry-1 count (b on ties), reset to the check."""
    ck = hh >> 16
    if ck == 0:
        ck = 1  # subtle: 0 marks a never-used slot, so real checks are 1..65535
    if home == ck:
        return b
    # subtle: s ^ 1 stays inside the table (its size is a power of 2 >= 2)
    b2 = b ^ 16
    if np.int64(TH[U(b2)]) == ck:
        return b2
    if (np.int64(TH[U(b2 + 1)]) >> 12) < (np.int64(TH[U(b + 1)]) >> 12):
        b = b2
    TH[U(b)] = np.uint16(ck)
    for j in range(1, 16):
        TH[U(b + j)] = np.uint16(RESET)
    return b


def _inputs(builder, xs):
    """<8 x i64> of the mixer's inputs: the NI - 1 = 4 int64 values ``xs``, the bias 256, then 0s."""
    i32 = ir.IntType(32)
    v = ir.Constant(ir.VectorType(ir.IntType(64), ROW), [ir.Undefined] * NX + [256] + [0] * (ROW - NX - 1))
    for k, x in enumerate(xs):
        v = builder.insert_element(v, x, i32(k))
    return v


def _row(context, builder, aryty, ary, o):
    """``&W[o]`` (an int64 array) as a pointer to <8 x i64>."""
    data = context.make_array(aryty)(context, builder, ary).data
    return builder.bitcast(builder.gep(data, [o]), ir.VectorType(ir.IntType(64), ROW).as_pointer())


def _row_types(W, o, xs):
    """Whether the arguments are a mixer row's: an int64 array, an integer offset and inputs."""
    return (isinstance(W, types.Array) and W.dtype == types.int64 and isinstance(o, types.Integer)
            and all(isinstance(x, types.Integer) for x in xs))


@intrinsic
def _dot(typingctx, W, o, x0, x1, x2, x3):
    """The mixer row ``W[o:o + 5]`` (int64) times the inputs (x0..x3, the bias 256): the int64
    sum of products, wrapping as numba's (the order of a wrapping sum does not matter), as five
    scalar multiplies and a balanced tree of adds (the other weights' inputs are 0). Scalar, not
    the row's vector multiply and horizontal sum: the mixer's output is on the decoder's
    bit-to-bit dependency chain, and the vector form (operands gathered into a vector, multiply,
    three-step reduction, back to a general register) made that chain longer; decoding ran
    1.02-1.11 times faster scalar, the same bytes (issue 28; benchmarks/results/level2-cms2-asm.md).
    Not bounds-checked: ``o + 8 <= len(W)`` by construction."""
    if not _row_types(W, o, (x0, x1, x2, x3)):
        return None

    def codegen(context, builder, sig, args):
        i64 = ir.IntType(64)
        xs = [context.cast(builder, a, t, types.int64) for a, t in zip(args[2:], sig.args[2:])]
        o = context.cast(builder, args[1], sig.args[1], types.intp)
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        base = builder.gep(data, [o])
        ps = [builder.mul(builder.load(builder.gep(base, [ir.Constant(i64, k)]), align=8), x)
              for k, x in enumerate(xs)]
        ps.append(builder.shl(builder.load(builder.gep(base, [ir.Constant(i64, NX)]), align=8),
                              ir.Constant(i64, 8)))
        while len(ps) > 1:  # a balanced tree of adds: the shortest chain
            ps = [builder.add(ps[k], ps[k + 1]) if k + 1 < len(ps) else ps[k] for k in range(0, len(ps), 2)]
        return ps[0]

    return types.int64(W, o, x0, x1, x2, x3), codegen


@intrinsic
def _train(typingctx, W, o, err, x0, x1, x2, x3):
    """Adapt the mixer row ``W[o:o + 8]`` (int64) by ``err`` (error times rate): w += x err >> 14
    for each input x of ``_dot`` (the last weight, of input 0, stays), as vector operations. Not
    bounds-checked: ``o + 8 <= len(W)`` by construction."""
    if not _row_types(W, o, (err, x0, x1, x2, x3)):
        return None

    def codegen(context, builder, sig, args):
        vec = ir.VectorType(ir.IntType(64), ROW)
        e, *xs = [context.cast(builder, a, t, types.int64) for a, t in zip(args[2:], sig.args[2:])]
        o = context.cast(builder, args[1], sig.args[1], types.intp)
        p = _row(context, builder, sig.args[0], args[0], o)
        ev = builder.insert_element(ir.Constant(vec, ir.Undefined), e, ir.IntType(32)(0))
        ev = builder.shuffle_vector(ev, ir.Constant(vec, ir.Undefined),
                                    ir.Constant(ir.VectorType(ir.IntType(32), ROW), [0] * ROW))
        d = builder.ashr(builder.mul(_inputs(builder, xs), ev), ir.Constant(vec, [14] * ROW))
        builder.store(builder.add(builder.load(p, align=8), d), p, align=8)
        return context.get_dummy_value()

    return types.none(W, o, err, x0, x1, x2, x3), codegen


if numba.config.DISABLE_JIT:  # pure-Python debugging runs: the same sums, element by element

    def _dot(W, o, x0, x1, x2, x3):  # noqa: F811
        return int(sum(int(w) * x for w, x in zip(W[o:o + ROW], (x0, x1, x2, x3, 256))))

    def _train(W, o, err, x0, x1, x2, x3):  # noqa: F811
        for k, x in enumerate((x0, x1, x2, x3, 256)):
            W[o + k] += (x * err) >> 14


@njit(cache=True, nogil=True, inline="always")
def _flags_wanted(cost, maxlen):
    """Whether a measure's ``cost`` (``_code``'s) sets a flat flag: ``flat_flags`` at FLAT_BUDGET
    0 (a length whose flat bits the model coded at a bit each or more) and at least FLAT_WORTH of
    the decisions, as ``cms2_encode`` decides (the same float comparison). Encoder only."""
    flat = 0
    for ll in range(1, maxlen + 1):
        bits = cost[4097 + maxlen + ll]
        if bits > 0 and 256 * bits - cost[4096 + ll] <= 0:
            flat += bits
    return flat > 0 and not flat < FLAT_WORTH * np.float64(cost[4098 + 2 * maxlen])


@njit(cache=True, nogil=True)
def _code(tokens, n, vocab_size, buf, decoding, mode, center, cnt, nxt, flat, cost):
    """Shared encoder/decoder loop of "cms2" over the coder's bytes ``buf`` (the payload after
    its header; ``mode``, ``center`` and ``cnt`` = k_0..k_L from it). Encoding reads
    ``tokens[:n]`` and returns the length of the coder's bytes (possibly > len(buf): then they
    did not fit); decoding writes ``tokens[:n]`` and returns OK, ERR_SYMBOL, ERR_CHECK or
    ERR_LENGTH. ``nxt`` is ``_adapt_table()``. ``flat``: the header's F (bit l - 1: length l's flat
    bits bypass the model, module docstring; 0 for none). ``cost`` (int64): empty, or when
    encoding ``_cost_table()`` followed by 2 L + 3 zeros, which get the coded cost of the bits
    that are flat (whether bypassed or not) per code length l: ``cost[4096 + l]`` in 1/256 bit,
    ``cost[4096 + L + 1 + l]`` their count, and the count of all decisions (the last), encoder
    only, not normative; with an empty ``buf`` nothing is coded (the measure alone: the returned
    length is then meaningless). One more entry after those, m (optional): at token m the loop
    returns MEASURED when the first m tokens' measure sets a flag (``_flags_wanted``), else codes
    on (the payload of F = ``flat``; ``cost`` then counts on and is of no use). Preconditions: len(tokens) >= n, 1 <= V <=
    2**24, a valid header (module docstring; ``parse_header``), and when encoding every token's u
    below U."""
    if nxt.shape[0] != 1 << 17:
        return ERR_LENGTH  # never: the callers pass _adapt_table()
    sq = _SQUASH
    st = _STRETCH
    rec = _REC
    maxlen = cnt.shape[0] - 1
    # canonical code: length l holds the codes fc[l] .. lim[l] - 1, for u = bs[l] ..
    fc = zeros(maxlen + 2, np.int64)
    lim = zeros(maxlen + 2, np.int64)
    bs = zeros(maxlen + 2, np.int64)
    for ll in range(maxlen + 1):
        lim[ll] = fc[ll] + cnt[ll]
        fc[ll + 1] = lim[ll] * 2
        bs[ll + 1] = bs[ll] + cnt[ll]
    # flo[d]: the least inner node at depth d whose subtree holds only codes of one length l
    # with flat bit l - 1 set (every node at depth d from there may start a flat run; others
    # not); BIG when none
    BIG = np.int64(1) << 62
    flo = full(maxlen + 2, BIG, np.int64)
    for d in range(maxlen + 1):
        for ll in range(d + 1, maxlen + 1):
            if (flat >> ll) & 1:
                lo = (fc[ll] + (np.int64(1) << (ll - d)) - 1) >> (ll - d)
                if lo < (lim[ll] >> (ll - d)) and lo < flo[d]:
                    flo[d] = lo
    measuring = not decoding and cost.shape[0] > 0
    # the token at which the measure decides the flags (cost's optional last entry; -1: none)
    mstop = cost[4099 + 2 * maxlen] if measuring and cost.shape[0] > 4099 + 2 * maxlen else -1
    dry = measuring and buf.shape[0] == 0  # the measure alone: nothing coded
    fd = maxlen + 1  # the encoder's depth where the token's flat bits start (measuring only)
    C = N_CONTEXTS
    G = imax((maxlen + 3) // 4, 1)
    o0bits = _clamp_bits(2 * n * imax(maxlen, 1), MIN_O0_BITS, MAX_O0_BITS)
    o0mask = (1 << o0bits) - 1
    T0 = full(1 << o0bits, (1 << 31), np.uint32)
    smask = zeros(C, np.int64)
    toff = zeros(C + 1, np.int64)
    for c in range(C):
        distinct = 16
        for k in range(ORDERS[c]):
            if distinct < (1 << 36):
                distinct *= vocab_size + 1
        need = imin(n * G, 4 * distinct)
        sb = _clamp_bits(need, MIN_SLOT_BITS, MAX_SLOT_BITS)
        smask[c] = (1 << sb) - 1
        toff[c + 1] = toff[c] + (1 << sb) * 16
    # subtle: all zeros, not check 0 and entries 1 << 15: a slot's entries are read only after
    # it took a check (and was reset), except entry 1's count (0 either way) when choosing
    TH = zeros(toff[C] + 32, np.uint16)
    # subtle: from the first 64-byte boundary (numba aligns arrays to 32 bytes), so that each
    # pair of slots (s, s ^ 1) is one cache line, as the prefetches assume (with the pairs
    # across two lines the encoder ran ~5 % slower on audio tokens; same bytes)
    ta = ((-TH.ctypes.data) & 63) >> 1
    TH = TH[ta:ta + toff[C]]
    NSET2 = 1 << imin(o0bits, 12)
    # subtle: filled by these loops, not alloc.full: with full's fill the encoder ran ~4 %
    # slower on audio tokens (same bytes; measured against np.full and these loops)
    # subtle: both mixers' rows in one allocation, from its first 64-byte boundary: a row (64
    # bytes) across two cache lines makes each of its vector loads and stores two (~1-2 % of the
    # encoder on audio tokens; same weights, same bytes)
    WB = empty((16 * 4 + NSET2 + 1) * ROW, np.int64)
    for j in range(WB.shape[0]):
        WB[j] = MIX_W0
    wa = ((-WB.ctypes.data) & 63) >> 3
    W = WB[wa:wa + 16 * 4 * ROW]
    W2 = WB[wa + 16 * 4 * ROW:wa + (16 * 4 + NSET2) * ROW]
    apm = flat & 1
    ab = _clamp_bits(n * G, MIN_APM_BITS, MAX_APM_BITS) if apm else 2
    amask = (1 << ab) - 1
    AP = empty((1 << ab) * 33, np.uint16)
    # every row holds the same 33 knots: the table is 4 rows' pattern (132 entries, 33 whole
    # 8-byte words, so the copies vectorise) repeated
    pat = empty(4 * 33, np.uint16)
    for k in range(33):
        d = (k - 16) * 128
        d = clamp(d, -2047, 2047)
        v = np.uint16(sq[d + 2047] * 16)
        for r in range(4):
            pat[r * 33 + k] = v
    for j in range(1 << (ab - 2)):  # subtle: ab >= 2, so 4 divides the rows
        for k in range(4 * 33):
            AP[U(j * 132 + k)] = pat[k]
    cl = 0  # the coder's interval [cl, ch]
    ch = 0xFFFFFFFF
    x = 0
    pos = 0
    nb = buf.shape[0]
    if decoding:
        for k in range(4):
            x = (x << 8) | (np.int64(buf[pos]) if pos < nb else 0)
            pos += 1
        pos = 0  # subtle: pos counts shifted-out bytes, exactly as the encoder's output position
    o0, o1, o2 = toff[0], toff[1], toff[2]
    m0, m1, m2 = smask[0], smask[1], smask[2]
    chk = 0
    # subtle: np.int64, not 0: typed Literal[int](0) at first, they had _contexts and _moments
    # compiled twice (a literal specialisation too), 0.3 s more cold compile
    mu = np.int64(0)
    en = np.int64(0)
    vm1 = vocab_size - 1
    code = 0
    ln = 0
    tok = 0
    # the encoder's contexts of the next token (computed, and their first slots prefetched, one
    # token ahead)
    nq0 = nq1 = nq2 = nlp = 0
    # the decoder's hashes of the next group's node for either bit (at depth 3, 7, ..)
    pa0 = pa1 = pa2 = pb0 = pb1 = pb2 = np.int64(0)
    for i in range(n):
        t1 = np.int64(tokens[i - 1]) if i >= 1 else vocab_size
        t2 = np.int64(tokens[i - 2]) if i >= 2 else vocab_size
        if decoding or i == 0:
            q0, q1, q2, lp = _contexts(t1, t2, mu, en, vocab_size)
        else:
            q0, q1, q2, lp = nq0, nq1, nq2, nlp
        if mode == 0 or i == 0:
            P = center
        elif mode == 1 or i == 1:
            P = t1
        else:
            P = clamp(lp, 0, vm1)
        m = imin(P, vm1 - P)
        if not decoding:
            # the flags' measure is done (nothing of token i coded yet); with no flag the pass goes
            # on as the payload (subtle: counting on, into entries no one reads then: a
            # ``measuring`` that changed in the loop made the decoder's path slower)
            if i == mstop and _flags_wanted(cost, maxlen):
                return MEASURED
            tok = np.int64(tokens[i])
            u = _rank(tok, P, m)
            ln = 0
            while u >= bs[ln + 1]:
                ln += 1
            code = fc[ln] + u - bs[ln]
            if measuring:
                fd = 0
                while fd < ln and not (((code >> (ln - fd)) << (ln - fd)) >= fc[ln]
                                       and (((code >> (ln - fd)) + 1) << (ln - fd)) <= lim[ln]):
                    fd += 1
            # subtle: the moments after token i are due only after its coding; nothing codes
            # with them before
            mu, en = _moments(mu, en, tok, t1, i)
            if i + 1 < n:
                nq0, nq1, nq2, nlp = _contexts(tok, t1, mu, en, vocab_size)
                _prefetch(TH, o0 + (_hash(nq0, 1) & m0) * 16)
                _prefetch(TH, o1 + (_hash(nq1, 1) & m1) * 16)
                _prefetch(TH, o2 + (_hash(nq2, 1) & m2) * 16)
        depth = 0
        cv = 0
        sub = 1
        b0 = b1 = b2 = 0
        lr = MIX_LR + (MIX_LR_BOOST * 4096) // (4096 + i)  # faster at first
        while cv >= lim[depth]:  # an inner node
            if cv >= flo[depth]:  # a flat run may start here (rare: a cheap test a decision)
                ll = depth + 1  # the length of the subtree's leftmost code
                while ll < maxlen and (cv << (ll - depth)) >= lim[ll]:
                    ll += 1
                if (flat >> ll) & 1 and ((cv + 1) << (ll - depth)) <= lim[ll]:
                    # a flat run: the last ll - depth bits, each with p = 1/2, no model
                    while depth < ll:
                        if decoding:
                            cl, ch, x, pos, y = _code_bit(cl, ch, x, pos, buf, nb, 2048, 0, True)
                        else:
                            y = (code >> (ln - 1 - depth)) & 1
                            if pos + 4 <= nb:
                                cl, ch, pos = _encode_bit(cl, ch, pos, buf, 2048, y)
                            else:
                                cl, ch, x, pos, y = _code_bit(cl, ch, x, pos, buf, nb, 2048, y, False)
                        cv = cv * 2 + y
                        depth += 1
                    break
            node = (1 << depth) | cv
            if (depth & 3) == 0:
                if decoding and depth > 0:  # hashed at depth - 1 for either bit (below)
                    g0 = select(cv & 1, pb0, pa0)
                    g1 = select(cv & 1, pb1, pa1)
                    g2 = select(cv & 1, pb2, pa2)
                else:
                    g0 = _hash(q0, node)  # first every slot's address (their loads overlap)
                    g1 = _hash(q1, node)
                    g2 = _hash(q2, node)
                b0 = o0 + (g0 & m0) * 16
                b1 = o1 + (g1 & m1) * 16
                b2 = o2 + (g2 & m2) * 16
                _prefetch(TH, b0)
                _prefetch(TH, b1)
                _prefetch(TH, b2)
                # subtle: the five checks loaded before the first claim's branches (a third of
                # them mispredicted: new contexts), so that no load waits on one; each context
                # has its own table, so no claim changes another's check
                k0 = np.int64(TH[U(b0)])
                k1 = np.int64(TH[U(b1)])
                k2 = np.int64(TH[U(b2)])
                b0 = _claim(TH, b0, g0, k0)
                b1 = _claim(TH, b1, g1, k1)
                b2 = _claim(TH, b2, g2, k2)
                sub = 1
            if decoding:
                if (depth & 3) == 3:  # the next group's slots, for either bit
                    nc = 2 * node
                    pa0 = _hash(q0, nc)
                    pa1 = _hash(q1, nc)
                    pa2 = _hash(q2, nc)
                    pb0 = _hash(q0, nc + 1)
                    pb1 = _hash(q1, nc + 1)
                    pb2 = _hash(q2, nc + 1)
                    _prefetch(TH, o0 + (pa0 & m0) * 16)
                    _prefetch(TH, o1 + (pa1 & m1) * 16)
                    _prefetch(TH, o2 + (pa2 & m2) * 16)
                    _prefetch(TH, o0 + (pb0 & m0) * 16)
                    _prefetch(TH, o1 + (pb1 & m1) * 16)
                    _prefetch(TH, o2 + (pb2 & m2) * 16)
            elif (depth & 3) == 0 and depth + 4 < ln:  # the encoder knows the next group's node
                n4 = (1 << (depth + 4)) | (code >> (ln - depth - 4))
                _prefetch(TH, o0 + (_hash(q0, n4) & m0) * 16)
                _prefetch(TH, o1 + (_hash(q1, n4) & m1) * 16)
                _prefetch(TH, o2 + (_hash(q2, n4) & m2) * 16)
            i0 = select(node <= o0mask, node, ((node * 0x9E3779B1) >> 11) & o0mask)
            nc = node * 2
            _prefetch(T0, select(nc <= o0mask, nc, ((nc * 0x9E3779B1) >> 11) & o0mask))
            _prefetch(W2, (nc & (NSET2 - 1)) * ROW)
            _prefetch(W2, ((nc + 1) & (NSET2 - 1)) * ROW)
            # subtle: each entry is read once and written back once below: the six tables'
            # entries are distinct (disjoint tables), so no update changes another's input
            z = np.int64(T0[U(i0)])
            e0 = np.int64(TH[U(b0 + sub)])
            e1 = np.int64(TH[U(b1 + sub)])
            e2 = np.int64(TH[U(b2 + sub)])
            x0 = st[U(z >> 20)]
            x1 = st[U(e0 & 4095)]
            x2 = st[U(e1 & 4095)]
            x3 = st[U(e2 & 4095)]
            cn = e1 >> 12
            # 0, 1, 2, 3 for 0, 1-2, 3-14, 15 (np.int64 each: numpy's bool + bool is a logical or)
            conf = np.int64(cn > 0) + np.int64(cn >= 3) + np.int64(cn >= 15)
            ms1 = (imin(depth, 15) * 4 + conf) * ROW
            ms2 = (node & (NSET2 - 1)) * ROW
            dot1 = _dot(W, ms1, x0, x1, x2, x3) >> 16
            dot1 = clamp(dot1, -2047, 2047)
            dot2 = _dot(W2, ms2, x0, x1, x2, x3) >> 16
            dot2 = clamp(dot2, -2047, 2047)
            dot = (dot1 + dot2) >> 1
            p = sq[U(dot + 2047)]  # in [1, 4095]
            if apm:
                dd = dot + 2048
                lo = dd >> 7
                wt = dd & 127
                ai = ((q0 * 0x9E3 + node * 0x3B9) & amask) * 33
                pa = (np.int64(AP[U(ai + lo)]) * (128 - wt) + np.int64(AP[U(ai + lo + 1)]) * wt) >> 11
                p = (p + 3 * pa + 2) >> 2
                p = clamp(p, 1, 4095)
            if decoding:
                cl, ch, x, pos, y = _code_bit(cl, ch, x, pos, buf, nb, p, 0, True)
            else:
                y = (code >> (ln - 1 - depth)) & 1
            if measuring:
                cost[4098 + 2 * maxlen] += 1
                if depth >= fd:
                    cost[4096 + ln] += cost[select(y, p, 4096 - p)]
                    cost[4097 + maxlen + ln] += 1
            # updates
            _train(W, ms1, ((y << 12) - sq[U(dot1 + 2047)]) * lr, x0, x1, x2, x3)
            _train(W2, ms2, ((y << 12) - sq[U(dot2 + 2047)]) * lr, x0, x1, x2, x3)
            if apm:
                near = ai + lo + (wt >> 6)  # (the upper knot when wt >= 64)
                # subtle: a knot moves 1/128 of the way to 0 or 65536: it stays in [0, 65520]
                aj = np.int64(AP[U(near)])
                AP[U(near)] = np.uint16(aj + (((y << 16) - aj) >> APM_RATE))
            pr = z >> 10
            cn = z & 1023
            pr += (((y << 22) - pr) * rec[U(cn)]) >> 16
            if cn < LIMIT_O0:
                cn += 1
            T0[U(i0)] = np.uint32((pr << 10) | cn)
            TH[U(b0 + sub)] = nxt[U((y << 16) | e0)]
            TH[U(b1 + sub)] = nxt[U((y << 16) | e1)]
            TH[U(b2 + sub)] = nxt[U((y << 16) | e2)]
            # subtle: the encoder codes its known bit after the updates, which do not depend on
            # the coder: a mispredicted branch in the coder then discards none of them
            if decoding or dry:
                pass
            elif pos + 4 <= nb:
                cl, ch, pos = _encode_bit(cl, ch, pos, buf, p, y)
            else:
                cl, ch, x, pos, y = _code_bit(cl, ch, x, pos, buf, nb, p, y, False)
            sub = sub * 2 + y
            cv = cv * 2 + y
            depth += 1
            if depth > maxlen:
                return ERR_SYMBOL  # subtle: unreachable for a complete code (checked by the caller)
        if decoding:
            u = bs[depth] + cv - fc[depth]
            if u <= 2 * m:
                tok = select(u & 1, P + ((u + 1) >> 1), P - (u >> 1))
            else:
                tok = select(P < vm1 - P, P + (u - m), P - (u - m))
            if tok < 0 or tok >= vocab_size:
                return ERR_SYMBOL
            tokens[i] = tok
            mu, en = _moments(mu, en, tok, t1, i)
        chk = _hash(chk, tok + 1)
    return _finish(cl, ch, x, pos, buf, nb, n, chk, decoding)


@njit(cache=True, nogil=True)
def _huff_lengths(w):
    """Huffman code lengths of the weights ``w`` (sorted ascending, >= 0), longest first:
    Moffat and Katajainen's in-place algorithm on a copy. Encoder only (not normative). Every
    index is in [0, n) by construction (node indices and depths): the unsigned casts spare
    numba's negative-index wrap-around, ~1/3 of the time on a wide alphabet's 7 000 ranks."""
    n = w.shape[0]
    a = empty(n, np.int64)  # a copy of w (alloc's empty: w.copy() compiled numba's array allocation)
    for i in range(n):
        a[U(i)] = w[U(i)]
    if n == 1:
        a[0] = 0
        return a
    s = 0
    r = 0
    for t in range(n - 1):  # build: a[t] = weight of internal node t, leaves' parents in a[r]
        if s >= n or (r < t and a[U(r)] < a[U(s)]):
            a[U(t)] = a[U(r)]
            a[U(r)] = t
            r += 1
        else:
            a[U(t)] = a[U(s)]
            s += 1
        if s >= n or (r < t and a[U(r)] < a[U(s)]):
            a[U(t)] += a[U(r)]
            a[U(r)] = t
            r += 1
        else:
            a[U(t)] += a[U(s)]
            s += 1
    a[n - 2] = 0
    for t in range(n - 3, -1, -1):  # internal node depths
        a[U(t)] = a[U(a[U(t)])] + 1
    avail = 1
    used = 0
    dpt = 0
    r = n - 2
    nxt = n - 1
    while avail > 0:  # leaf depths
        while r >= 0 and a[U(r)] == dpt:
            used += 1
            r -= 1
        while avail > used:
            a[U(nxt)] = dpt
            nxt -= 1
            avail -= 1
        avail = 2 * used
        dpt += 1
        used = 0
    return a


def _ranks(tokens: np.ndarray, P, V: int) -> np.ndarray:
    """u of each token (module docstring) for the predicted ids P (an array like ``tokens``, or
    one id for all), in their integer type: 2|d| - [d > 0] within m = min(P, V - 1 - P) of P,
    else m + |d| (d = t - P)."""
    m = np.minimum(P, V - 1 - P)
    d = tokens - P
    ad = np.abs(d)
    u = ad + np.minimum(ad, m)
    u -= (ad <= m) & (d > 0)
    return u


@njit(cache=True, nogil=True)
def _rank_counts(t, vocab_size, center):
    """Histograms of the ranks u of the tokens ``t`` (int32, ids in [0, V), n >= 1) in modes 0,
    1 and 2 (module docstring; the first token's prediction is ``center`` in each): three int64
    arrays, each as long as its mode's largest u plus one (``np.bincount`` of ``_ranks``). Encoder
    only (not normative)."""
    n = t.shape[0]
    vm1 = vocab_size - 1
    u = empty((3, n), np.int32)  # subtle: u < V <= 2**24
    top0 = top1 = top2 = 0
    for i in range(n):
        tk = np.int64(t[i])
        p1 = np.int64(t[i - 1]) if i >= 1 else center
        p2 = p1
        if i >= 2:
            p2 = 2 * p1 - np.int64(t[i - 2])
            p2 = clamp(p2, 0, vm1)
        u0 = _rank(tk, center, imin(center, vm1 - center))
        u1 = _rank(tk, p1, imin(p1, vm1 - p1))
        u2 = _rank(tk, p2, imin(p2, vm1 - p2))
        u[0, i] = u0
        u[1, i] = u1
        u[2, i] = u2
        top0 = imax(u0, top0)
        top1 = imax(u1, top1)
        top2 = imax(u2, top2)
    c0 = zeros(top0 + 1, np.int64)
    c1 = zeros(top1 + 1, np.int64)
    c2 = zeros(top2 + 1, np.int64)
    for i in range(n):  # subtle: the unsigned tests skip the negative u of ids outside [0, V)
        if U(u[0, i]) <= U(top0):
            c0[U(u[0, i])] += 1
        if U(u[1, i]) <= U(top1):
            c1[U(u[1, i])] += 1
        if U(u[2, i]) <= U(top2):
            c2[U(u[2, i])] += 1
    return c0, c1, c2


def _code_lengths(w: np.ndarray) -> np.ndarray:
    """Code lengths for u = 0 .. U - 1 (non-decreasing, at most MAX_LEN): Huffman on the counts
    ``w`` (int64, sorted ascending; halved, plus one, until the longest fits)."""
    while True:
        a = _huff_lengths(w)
        if int(a[0]) <= MAX_LEN:
            return a[::-1].copy()
        w = (w >> 1) + 1  # subtle: converges to equal weights, at most 24 bits for U <= 2**24


#: :func:`plan` takes :func:`_plan_compiled` up to ``PLAN_HISTOGRAM_SPAN * n + PLAN_HISTOGRAM_MIN``
#: ids (its histograms of V cells a mode; a wider alphabet: the numpy path, the same header)
PLAN_HISTOGRAM_SPAN = 8
PLAN_HISTOGRAM_MIN = 1 << 16


@njit(cache=True, nogil=True)
def _sorted_counts(counts, size, top_count):
    """``counts[:size]`` (int64, each in [0, top_count]) sorted ascending, as a new array of
    ``size``: a counting sort (the same values as any sort; O(size + top_count), where a heap
    sort of a wide alphabet's 2 000-3 500 distinct ranks took most of a plan's 0.2-0.5 ms)."""
    hist = zeros(top_count + 1, np.int64)
    for j in range(size):
        hist[U(counts[U(j)])] += 1
    w = zeros(size, np.int64)  # (the zeros first)
    k = hist[0]
    for c in range(1, top_count + 1):
        for _ in range(hist[U(c)]):
            w[U(k)] = c
            k += 1
    return w


@njit(cache=True, nogil=True, inline="always")
def _entropy_floor(counts, size, n, logs):
    """A lower bound of the bits of any prefix code of the counts ``counts[:size]`` (summing to
    ``n`` >= 1): their entropy n log2 n - sum c log2 c (Shannon: no prefix code, nor a
    length-limited one, costs less), less a bound of its float error (each of the size + 2 terms
    and sums within 2 ulp of the magnitudes summed: (size + 4) 4.5e-16 of them) and a bit.
    ``logs[c]``: c log2 c for c < 64. Encoder only (not normative)."""
    total = 0.0
    for j in range(size):
        c = counts[j]
        if c > 0:
            total += logs[c] if c < 64 else np.float64(c) * np.log2(np.float64(c))
    nf = np.float64(n)
    whole = nf * np.log2(nf)
    return whole - total - (whole + total) * np.float64(size + 4) * 4.5e-16 - 1.0


@njit(cache=True, nogil=True)
def _plan_compiled(t, vocab_size):
    """:func:`plan`'s header (mode, center, k_0..k_L) for ``t`` (int32, n >= 1, 2 <= V <= 2**24)
    in one compiled call, and the bits of ``t`` under its static code (:func:`_static_bits`): the
    same integers as its numpy path (the lower median from a histogram of the ids, the k-th
    smallest; the ranks' histograms of :func:`_rank_counts` counted directly, without the (3, n)
    ranks; each sorted (:func:`_sorted_counts`), :func:`_huff_lengths` halved until it fits, the
    cost, the first mode of least cost). Returns mode -1 (nothing else meaningful) when an id
    is outside [0, V): the numpy path handles them. Encoder only (not normative)."""
    n = t.shape[0]
    vm1 = vocab_size - 1
    h = zeros(vocab_size, np.int64)
    for i in range(n):
        v = np.int64(t[i])
        if v < 0 or v > vm1:
            return -1, 0, zeros(1, np.int64), np.int64(0)
        h[v] += 1
    k = (n - 1) // 2  # the lower median: the k-th smallest (from 0)
    center = 0
    seen = 0
    for v in range(vocab_size):
        seen += h[v]
        if seen > k:
            center = v
            break
    # the ranks' histograms (h reused for mode 0's): u of every id is in [0, V)
    c0 = h
    for v in range(vocab_size):
        c0[v] = 0
    c1 = zeros(vocab_size, np.int64)
    c2 = zeros(vocab_size, np.int64)
    top0 = top1 = top2 = 0
    mc = imin(center, vm1 - center)
    for i in range(n):
        tk = np.int64(t[i])
        p1 = np.int64(t[i - 1]) if i >= 1 else np.int64(center)
        p2 = p1
        if i >= 2:
            p2 = clamp(2 * p1 - np.int64(t[i - 2]), 0, vm1)
        u0 = _rank(tk, np.int64(center), mc)
        u1 = _rank(tk, p1, imin(p1, vm1 - p1))
        u2 = _rank(tk, p2, imin(p2, vm1 - p2))
        c0[u0] += 1
        c1[u1] += 1
        c2[u2] += 1
        top0 = imax(u0, top0)
        top1 = imax(u1, top1)
        top2 = imax(u2, top2)
    best_cost = np.int64(-1)
    best_mode = 0
    logs = empty(64, np.float64)  # c log2 c of the counts below 64 (_entropy_floor's)
    for c in range(64):
        logs[c] = c * np.log2(np.float64(imax(c, 1)))
    best_lengths = zeros(1, np.int64)
    best_counts = c0
    for mode in range(3):
        if mode == 0:
            counts, top = c0, top0
        elif mode == 1:
            counts, top = c1, top1
        else:
            counts, top = c2, top2
        size = imax(top + 1, 2)  # subtle: V >= 2 needs a code of >= 1 bit (L >= 1): a count 0 appended
        if best_cost >= 0 and _entropy_floor(counts, imin(size, top + 1), n, logs) >= best_cost:
            continue  # (its cost is at least the best's: never the first of least cost)
        # sorted (subtle: no np.sort, whose numba overload added about 4 s of cold compile)
        w = _sorted_counts(counts, size, n)  # (counts[top + 1] is 0 when size > top + 1)
        hw = w
        while True:
            a = _huff_lengths(hw)
            if a[0] <= MAX_LEN:
                break
            hw = (hw >> 1) + 1
        lengths = empty(size, np.int64)
        for j in range(size):
            lengths[j] = a[size - 1 - j]
        cost = np.int64(0)
        for j in range(size):
            cost += w[size - 1 - j] * lengths[j]
        if best_cost < 0 or cost < best_cost:
            best_cost, best_mode, best_lengths, best_counts = cost, mode, lengths, counts
    cnt = zeros(best_lengths[best_lengths.shape[0] - 1] + 1, np.int64)
    for j in range(best_lengths.shape[0]):
        cnt[best_lengths[j]] += 1
    # the static code's bits (:func:`_static_bits`): rank u's code has length best_lengths[u]
    # (lengths non-decreasing in u), so its histogram gives them
    bits = np.int64(0)
    for j in range(best_lengths.shape[0]):
        bits += best_counts[j] * best_lengths[j]
    return best_mode, center, cnt, bits


def plan(tokens: np.ndarray, vocab_size: int) -> tuple[int, int, np.ndarray]:
    """The encoder's header for ``tokens`` (n >= 1): (mode, center, k_0..k_L). Up to
    ``PLAN_HISTOGRAM_SPAN * n + PLAN_HISTOGRAM_MIN`` ids, :func:`_plan_compiled` (the same header)."""
    return planned(tokens, vocab_size)[:3]


def planned(tokens: np.ndarray, vocab_size: int) -> tuple[int, int, np.ndarray, int]:
    """:func:`plan`'s header and the bits of ``tokens`` under its static code
    (:func:`_static_bits`, from the plan's histogram where :func:`_plan_compiled` ran)."""
    t = np.ascontiguousarray(tokens, dtype=np.int32)  # subtle: ids < 2**24
    n = t.size
    if 2 <= vocab_size <= PLAN_HISTOGRAM_SPAN * n + PLAN_HISTOGRAM_MIN:
        mode, center, cnt, bits = _plan_compiled(t, vocab_size)
        if mode >= 0:
            return int(mode), int(center), cnt, int(bits)
    center = int(np.partition(t, (n - 1) // 2)[(n - 1) // 2])  # the lower median
    if vocab_size == 1:
        cnt = np.ones(1, np.int64)
        return 0, 0, cnt, int(_static_bits(t, vocab_size, 0, 0, cnt))
    best = None
    for mode, counts in enumerate(_rank_counts(t, vocab_size, center)):
        if counts.size == 1:
            counts = np.append(counts, 0)  # subtle: V >= 2 needs a code of >= 1 bit (L >= 1)
        w = np.sort(counts)
        lengths = _code_lengths(w)
        cost = int((w[::-1] * lengths).sum())
        if best is None or cost < best[0]:
            best = (cost, mode, lengths)
    _, mode, lengths = best
    cnt = np.bincount(lengths, minlength=int(lengths[-1]) + 1).astype(np.int64)
    return mode, center, cnt, int(_static_bits(t, vocab_size, mode, center, cnt))


@functools.cache
def _adapt_table() -> np.ndarray:
    """A slot entry after a bit, for every entry: ``[(y << 16) | e]`` is entry e (12-bit
    probability p, 4-bit count c: any 16 bits) after bit y (module docstring: p += ((y << 12) -
    p) r >> 16 clamped to [1, 4095], r = rec[c] for c < 12 and rec[16 c - 164] from 12, c up to
    15). Read-only uint16, 2**17 entries (256 KiB), built once: the loop looks an update up
    instead of computing it (five per decision)."""
    rate = np.array([131072 // (2 * (k if k < SLOW_FROM else 16 * k - 164) + 3) for k in range(16)])
    e = np.arange(1 << 16, dtype=np.int64)
    p, c = e & 4095, e >> 12
    out = np.empty(1 << 17, np.uint16)
    for y in (0, 1):
        # subtle: probabilities stay inside [1, 4095], so stretch stays finite
        q = np.clip(p + ((((y << 12) - p) * rate[c]) >> 16), 1, 4095)
        out[y << 16:(y + 1) << 16] = (np.minimum(c + 1, 15) << 12) | q
    out.flags.writeable = False
    return out


@functools.cache
def _cost_table() -> np.ndarray:
    """[p] = -log2(p / 4096) in 1/256 bit, rounded (p in [1, 4096); [0] is unused): the cost of a
    decision coded with probability p / 4096. Encoder only (not normative)."""
    p = np.arange(1, 4096, dtype=np.float64)
    out = np.zeros(4096, np.int64)
    out[1:] = np.rint(-np.log2(p / 4096) * 256).astype(np.int64)
    out.flags.writeable = False
    return out


#: the encoder's flat flags (not normative): a length whose flat bits cost the model at least a
#: bit each (the first pass, no flag set) is bypassed, since there each costs exactly 1 bit; then
#: more lengths, those whose flat bits the model codes the least below a bit first, while the
#: first pass's estimate of the bits lost stays within FLAT_BUDGET of the payload's bits
FLAT_BUDGET = 0.0


def flat_flags(cost: np.ndarray, maxlen: int, payload: int, budget: float = FLAT_BUDGET) -> int:
    """The header's F from a first pass's ``cost`` (``_code``'s) of a ``payload``-byte stream
    (module docstring, ``FLAT_BUDGET``). Encoder only."""
    f = 0
    spare = budget * payload * 8 * 256  # in 1/256 bit, as cost
    loss = []
    for ll in range(1, maxlen + 1):
        bits = int(cost[4097 + maxlen + ll])
        lost = 256 * bits - int(cost[4096 + ll])  # what bypassing them would cost
        if bits and lost <= 0:
            f |= 1 << ll
        elif bits:
            loss.append((lost / bits, lost, ll))
    for _rate, lost, ll in sorted(loss):
        if lost > spare:
            continue
        spare -= lost
        f |= 1 << ll
    return f


def _leb128(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 127
        v >>= 7
        if not v:
            out.append(b)
            return bytes(out)
        out.append(b | 128)


def header_bytes(mode: int, center: int, cnt: np.ndarray) -> bytes:
    """The payload's header (module docstring)."""
    ks = cnt[1:].tolist()
    # (counts below 128 are one LEB128 byte each, their own value: one bytes() call, where a
    # _leb128 call a count took about 10 us a header of 20 lengths, two headers an encode)
    body = bytes(ks) if max(ks, default=0) < 128 and min(ks, default=0) >= 0 else b"".join(_leb128(k) for k in ks)
    return bytes([mode]) + _leb128(center) + bytes([cnt.size - 1]) + body


def parse_header(data: bytes, vocab_size: int, flags: bool = False):
    """(mode, center, k_0..k_L as int64, header length), or None when ``data`` does not start
    with a valid header for ``vocab_size`` (module docstring). With ``flags`` (a payload's
    header), the flat flags F follow (LEB128, minimal, F < 2**L): (mode, center, counts, F,
    header length)."""
    pos = 0

    def leb(most=4):
        nonlocal pos
        v = 0
        for j in range(most):  # subtle: every count is < 2**25, so 4 bytes at most (F: 5)
            if pos >= len(data):
                return -1
            b = data[pos]
            pos += 1
            v |= (b & 127) << (7 * j)
            if not b & 128:
                return v if (b or j == 0) else -1  # minimal: no trailing zero byte
        return -1

    if len(data) < 1 or data[0] > 2:
        return None
    mode = data[0]
    pos = 1
    center = leb()
    if not 0 <= center < vocab_size or pos >= len(data):
        return None
    maxlen = data[pos]
    pos += 1
    if maxlen > MAX_LEN or (maxlen == 0) != (vocab_size == 1):
        return None
    cnt = [1 if maxlen == 0 else 0]
    for _ in range(maxlen):
        k = leb()
        if k < 0 or k > vocab_size:
            return None
        cnt.append(k)
    if cnt[maxlen] == 0 or sum(cnt) > vocab_size:
        return None
    if sum(k << (maxlen - ll) for ll, k in enumerate(cnt)) != 1 << maxlen:
        return None  # not a complete prefix code
    if not flags:
        return mode, center, np.array(cnt, dtype=np.int64), pos
    f = leb(5)
    if f < 0 or f >= 2 << maxlen:
        return None
    if any((f >> ll) & 1 and cnt[ll] < 2 for ll in range(1, maxlen + 1)):
        return None  # a flat flag of a length without flat bits (fewer than 2 codes): canonical F
    return mode, center, np.array(cnt, dtype=np.int64), f, pos


#: longest header: mode, 4-byte center, L, 30 counts of at most 4 bytes, F of at most 5
MAX_HEADER = 2 + 4 + 4 * MAX_LEN + 5


# plain functions over the compiled loop (as ``cmtext``'s entry points): one compilation of
# ``_code`` serves both directions, and no wrapper is compiled
def cms2_encode(tokens, vocab_size, buf, budget=FLAT_BUDGET, optimistic=None, whole=False):
    """Encode all of ``tokens`` (int32, each in [0, vocab_size)) into ``buf`` (uint8). Returns
    the payload length L (the payload is ``buf[:L]`` when L <= len(buf); otherwise it did not
    fit). Preconditions: 1 <= vocab_size <= 2**24. n = 0 gives the empty payload. The flat
    flags come from a first pass without them (``flat_flags``, ``budget``) over the first
    ``_prefix(n, whole)`` tokens: when that is all of them and no flag is set, it is the
    payload; else a second pass codes all with the flags. ``whole``: the tokens are a stream
    coded whole (a container's, not a planner's sample of windows: ``_prefix``).

    The same payload, whichever way the first pass runs (``optimistic``: None, the encoder's
    guess, ``_optimistic``): measured alone (nothing coded), or, where the tables of the prefix
    and of all the tokens are alike (``_table_bits``), coded into ``buf`` on past the prefix when
    its measure sets no flag, so that then it is the payload (no second pass)."""
    n = tokens.shape[0]
    if n == 0:
        return 0
    mode, center, cnt, bits = planned(tokens, vocab_size)
    maxlen = cnt.size - 1
    header = header_bytes(mode, center, cnt)  # (the same for every pass)
    cost = np.zeros(4096 + 2 * maxlen + 4, np.int64)  # (the last: the stop token, optimistic)
    cost[:4096] = _cost_table()
    apm = int(APM_BELOW * n >= bits)
    m = _prefix(n, whole)
    if optimistic is None:
        optimistic = _optimistic(mode)
    optimistic = optimistic and m < n and budget == 0 and \
        _table_bits(m, maxlen, vocab_size, apm) == _table_bits(n, maxlen, vocab_size, apm)
    if optimistic:  # the first pass on past the prefix when its measure sets no flag
        cost[-1] = m
        size = _encode_pass(tokens, vocab_size, buf, mode, center, cnt, apm, cost, header)
        if size >= 0:
            return size  # (no flag: the payload of F = apm, coded all along)
    elif m == n:
        size = _encode_pass(tokens, vocab_size, buf, mode, center, cnt, apm, cost[:-1], header)
    else:  # the prefix measured; coded (into a scratch buffer) only when the flags weigh its size
        scratch = np.zeros(0 if budget == 0 else 8 * m + 256, np.uint8)
        size = _encode_pass(tokens[:m], vocab_size, scratch, mode, center, cnt, apm, cost[:-1], header)
    f = flat_flags(cost, maxlen, size, budget)
    flat = sum(int(cost[4097 + maxlen + ll]) for ll in range(1, maxlen + 1) if (f >> ll) & 1)
    if flat < FLAT_WORTH * int(cost[4098 + 2 * maxlen]):
        f = 0  # too few to pay for a second pass
    f |= apm
    if m == n and f == apm:
        return size
    return _encode_pass(tokens, vocab_size, buf, mode, center, cnt, f, NO_COST, header)


def _optimistic(mode: int) -> bool:
    """The encoder's guess that a stream's measure sets no flat flag (``cms2_encode``; either way
    the same payload): a stream predicted by the previous tokens (mode 1 or 2: neural
    recordings' raw values, whose flat bits, the residual's sign, the model codes below a bit),
    not one of residuals around a center (mode 0: a front end's output, flags set in nearly all:
    there the measure alone, nothing coded, is cheaper). Not normative."""
    return mode != 0


def _table_bits(n: int, maxlen: int, vocab_size: int, apm: int) -> tuple:
    """The sizes (bits) of ``_code``'s tables for n tokens (module docstring): order 0, each
    hashed context, the APM (when on); a prefix of m tokens models them as all n do exactly
    when these are the same."""
    def clamp_bits(need, lo, hi):
        return min(max((need - 1).bit_length() if need > 1 else lo, lo), hi)

    g = max((maxlen + 3) // 4, 1)
    out = [clamp_bits(2 * n * max(maxlen, 1), MIN_O0_BITS, MAX_O0_BITS)]
    for order in ORDERS:
        distinct = 16
        for _ in range(order):
            if distinct < 1 << 36:
                distinct *= vocab_size + 1
        out.append(clamp_bits(min(n * g, 4 * distinct), MIN_SLOT_BITS, MAX_SLOT_BITS))
    out.append(clamp_bits(n * g, MIN_APM_BITS, MAX_APM_BITS) if apm else 0)
    return tuple(out)


#: the encoder sets flat flags only when they bypass at least this share of the first pass's
#: decisions (else the first pass is the payload, when it coded all tokens); not normative
FLAT_WORTH = 0.02
#: the encoder's first pass (the flat flags' measure) codes the first max(FLAT_PREFIX, n //
#: FLAT_PREFIX_DIV) tokens (all when fewer), not normative. The flags are set in nearly every
#: stream, so every "cms2" coding is two passes; 2 048 rather than 8 192 made level 2 compress
#: 1.08-1.18 times as fast on ECG, seismic and audio for +0.006 % of its bytes (32 768 -> 8 192 had
#: given 1.07-1.12; FLAT_PREFIX_DIV 8 as well cost neural120-concat +1.7 %;
#: benchmarks/results/level2-early.md)
FLAT_PREFIX = 2048
FLAT_PREFIX_DIV = 4
#: a stream coded whole of at most WHOLE_SHORT_UPTO tokens: the first pass codes max(WHOLE_PREFIX,
#: n // WHOLE_PREFIX_DIV) of them (not normative). A flag is a count per code length, which a
#: thousand contiguous tokens estimate about as well as a quarter of a short stream: audio's 32
#: files' first passes 102 382 -> 60 951 tokens, level 2 1.04 times as fast (1.01-1.07), bytes
#: +0.004 % (held-out sets within +0.04 %). Never a planner's sample: its 16 windows of 2 048
#: would be 2 windows measured, and the flags so set misranked its chains (neural120-concat
#: +1.66 %; benchmarks/results/level2-short.md, level2-whole.md)
WHOLE_SHORT_UPTO = 32768
WHOLE_PREFIX = 1024
WHOLE_PREFIX_DIV = 8


def _prefix(n: int, whole: bool = False) -> int:
    """How many tokens of an n-token stream the flags' first pass codes (``whole``: a stream
    coded whole, ``cms2_encode``)."""
    if whole and n <= WHOLE_SHORT_UPTO:
        return min(n, max(WHOLE_PREFIX, n // WHOLE_PREFIX_DIV))
    return min(n, max(FLAT_PREFIX, n // FLAT_PREFIX_DIV))


#: the encoder turns the APM on (F's bit 0) for a stream whose static code costs less than
#: APM_BELOW bits a token (not normative): slow, smooth signals (respiration, PPG at 0.5-1 bit a
#: token: 0.8-1.4 % smaller with it; hourly weather readings at 1.5-4 bits: 0.1-0.5 %); ECG,
#: seismic, audio and neural streams (4.1-7 bits) are not, and skip its work (with it, ECG's
#: payload was 0.08 % larger and its decoding 3-18 % slower; level2-cms2-bound.md)
APM_BELOW = 4.0


@njit(cache=True, nogil=True)
def _static_bits(tokens, vocab_size, mode, center, cnt):
    """The bits of ``tokens`` (each in [0, V)) under the header's static code (mode, center,
    k_0..k_L): the sum of their code lengths. Encoder only (not normative)."""
    maxlen = cnt.shape[0] - 1
    bs = zeros(maxlen + 2, np.int64)  # bs[l]: the first u of length l
    for ll in range(maxlen + 1):
        bs[ll + 1] = bs[ll] + cnt[ll]
    vm1 = vocab_size - 1
    total = 0
    for i in range(tokens.shape[0]):
        P = np.int64(center)
        if mode >= 1 and i >= 1:
            P = np.int64(tokens[i - 1])
        if mode == 2 and i >= 2:
            P = clamp(2 * P - np.int64(tokens[i - 2]), 0, vm1)
        u = _rank(np.int64(tokens[i]), P, imin(P, vm1 - P))
        ln = 0
        while ln < maxlen and u >= bs[ln + 1]:
            ln += 1
        total += ln
    return total


def _encode_pass(tokens, vocab_size, buf, mode, center, cnt, f, cost, header=None):
    """The payload of ``tokens`` with the flat flags ``f`` into ``buf``: its length (MEASURED when
    ``cost`` asks the loop to stop at a token and its measure set a flag: ``_code``). ``header``:
    ``header_bytes(mode, center, cnt)`` when the caller made it already (None: made here)."""
    if header is None:
        header = header_bytes(mode, center, cnt)
    head = np.frombuffer(header + _leb128(f), dtype=np.uint8)
    k = min(head.size, buf.size)
    buf[:k] = head[:k]
    out = int(_code(tokens, tokens.shape[0], vocab_size, buf[k:], False, mode, center, cnt, _adapt_table(), f, cost))
    return out if out == MEASURED else head.size + out


#: ``_code``'s ``cost`` when nothing is measured
NO_COST = np.zeros(0, np.int64)


def cms2_decode(buf, vocab_size, out):
    """Decode len(out) tokens from ``buf`` (uint8, any content; writable, never written) into
    ``out`` (int32). Returns OK, ERR_SYMBOL, ERR_CHECK or ERR_LENGTH as ``cm.cm_decode`` (an
    invalid header: ERR_LENGTH). Preconditions as ``cms2_encode``."""
    if out.shape[0] == 0:
        return OK if buf.shape[0] == 0 else ERR_LENGTH
    head = parse_header(buf[:MAX_HEADER].tobytes(), vocab_size, flags=True)
    if head is None:
        return ERR_LENGTH
    mode, center, cnt, f, hl = head
    return _code(out, out.shape[0], vocab_size, buf[hl:], True, mode, center, cnt, _adapt_table(), f, NO_COST)
