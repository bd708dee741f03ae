"""What the context-mixing coders ("cms2", ``cmsignal2``; "cmt2", ``cmtext``) share, normative
for their payloads: the hash, the squash and stretch tables, the binary arithmetic coder, the
match model's step and the end of a stream.

Every kernel is total: it never raises, never indexes outside its arrays, and reports malformed
input through a negative status code. All arithmetic that affects the output is integer
(fixed-point tables built by integer code), so the bytes are identical on every machine.

- ``_hash(h, x)``: a 32-bit multiplicative mix (below).
- ``squash(d) = 4096 / (1 + exp(-d / 256))`` for ``d`` in [-2047, 2047], by linear
  interpolation of 33 integer knots; ``stretch`` its inverse (``_stretch_table``).
- The coder: a carry-less binary arithmetic coder on 32-bit bounds (x1, x2): bit 1 keeps
  [x1, xmid], bit 0 [xmid + 1, x2], xmid = x1 + (r >> 12) * p + ((r & 4095) * p >> 12),
  r = x2 - x1, p in [1, 4095] the probability of a 1 in 4096ths; while the top bytes of x1 and
  x2 agree it is output.
- An APM (adaptive probability map) of R rows: 33 uint16 knots a row, knot k of every row
  starting at 16 * squash(clamp((k - 16) * 128, -2047, 2047)). Row j refines a stretched
  prediction d: with dd = d + 2048, lo = dd >> 7 and w = dd & 127, a = (knot[lo] * (128 - w) +
  knot[lo + 1] * w) >> 11 (12 bits); after the bit y the nearer knot (lo + 1 when w >= 64)
  moves: knot += ((y << 16) - knot) >> rate.
- The end of a stream (``_finish``): after the n tokens (when n > 0), 16 check bits at
  p = 2048 (bits 15..0 of the coder's running hash of the tokens); then the shortest k in 0..4
  such that x1 rounded up to a multiple of 2**(32 - 8k) is <= x2 is taken and the top k bytes
  of that value are written. The decoder reads zeros past the end and insists on the check
  bits, exactly that length and those bytes.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from . import njit
from .alloc import empty
from .intrinsics import bit_length, clamp, select

# Status codes of the decoders.
OK = 0
ERR_SYMBOL = -1  # a decoded token is >= V
ERR_LENGTH = -2  # the payload is longer or shorter than the coder's output, or the flush differs
ERR_CHECK = -3  # the 16-bit check of the decoded tokens differs


def _hash(h, x):
    """Mix ``x`` into the 32-bit hash ``h``; returns a value in [0, 2**32).

    Preconditions: 0 <= h < 2**32 and 0 <= x < 2**32 (products stay below 2**63).

    Normative as written here (plain Python: ``NUMBA_DISABLE_JIT`` runs this). Compiled, it is
    the intrinsic below: the same int64 operations emitted straight into the calling kernel,
    which spares numba typing and lowering an inlined copy of this function at each of the
    kernels' call sites (13 in the "cms2" loop).
    """
    v = ((h ^ x) & 0xFFFFFFFF) * 0x5BD1E995
    v = v ^ (v >> 29)
    v = (v & 0xFFFFFFFF) * 0x2F0B3A49
    return (v ^ (v >> 31)) & 0xFFFFFFFF


@intrinsic
def _hash_intrinsic(typingctx, h, x):
    """``_hash`` for integer ``h``, ``x`` (each converted to int64), returning int64."""
    if not isinstance(h, types.Integer) or not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        i64 = ir.IntType(64)
        hv = context.cast(builder, args[0], sig.args[0], types.int64)
        xv = context.cast(builder, args[1], sig.args[1], types.int64)
        low = ir.Constant(i64, 0xFFFFFFFF)
        # subtle: every value shifted is >= 0 and < 2**63, so the logical shift equals numba's
        # arithmetic one and the products cannot wrap
        v = builder.mul(builder.and_(builder.xor(hv, xv), low), ir.Constant(i64, 0x5BD1E995))
        v = builder.xor(v, builder.lshr(v, ir.Constant(i64, 29)))
        v = builder.mul(builder.and_(v, low), ir.Constant(i64, 0x2F0B3A49))
        return builder.and_(builder.xor(v, builder.lshr(v, ir.Constant(i64, 31))), low)

    return types.int64(h, x), codegen


_hash_python = _hash  # the definition, for tests
if not numba.config.DISABLE_JIT:
    _hash = _hash_intrinsic  # noqa: F811


#: The squash knots (``_squash_table``), a module constant: numba freezes a global array into
#: the compiled code (read-only), while a list literal in the kernel compiled a reflected list
#: and np.array's list overload.
_SQUASH_KNOTS = np.array([1, 2, 4, 6, 10, 17, 27, 45, 74, 120, 194, 311, 488, 747, 1102, 1546, 2048,
                           2550, 2994, 3349, 3608, 3785, 3902, 3976, 4022, 4051, 4069, 4079, 4086, 4090,
                           4092, 4094, 4095], dtype=np.int64)


@njit(cache=True, nogil=True, inline="always")
def _squash_table():
    """Integer squash: sq[d + 2047] = 4096 / (1 + exp(-d / 256)) for d in [-2047, 2047].

    Built by linear interpolation (7 fractional bits) of 33 hard-coded integer knots, so it is
    the same everywhere. Values lie in [1, 4095] and never decrease.
    """
    knots = _SQUASH_KNOTS
    sq = empty(4095, np.int64)
    for d in range(-2047, 2048):
        w = d & 127
        i = (d >> 7) + 16
        sq[d + 2047] = (knots[i] * (128 - w) + knots[i + 1] * w + 64) >> 7
    return sq


@njit(cache=True, nogil=True, inline="always")
def _stretch_table(sq):
    """stretch[p] for p in [0, 4096): the smallest d with squash(d) >= p (2047 if none).

    Precondition: ``sq`` from ``_squash_table`` (non-decreasing). Results lie in [-2047, 2047].
    """
    st = empty(4096, np.int64)
    pi = 0
    for d in range(-2047, 2048):
        v = sq[d + 2047]
        for j in range(pi, v + 1):
            st[j] = d
        if v + 1 > pi:
            pi = v + 1
    for j in range(pi, 4096):
        st[j] = 2047
    return st


@njit(cache=True, nogil=True, inline="always")
def _clamp_bits(need, lo, hi):
    """Smallest b in [lo, hi] with 2**b >= need (hi if none), for lo <= hi: bit_length(need - 1)
    clamped to [lo, hi] (lo when need <= 1)."""
    return clamp(select(need > 1, bit_length(need - 1), lo), lo, hi)


@njit(cache=True, nogil=True, inline="always")
def _code_bit(x1, x2, x, pos, buf, nb, p, y, decoding):
    """Code one bit with probability ``p / 4096`` of a 1 in the carry-less 32-bit coder.

    Encoding codes ``y`` and writes settled bytes to ``buf[pos]`` while ``pos < nb``; decoding
    ignores ``y``, decides the bit from ``x`` and reads ``buf`` (zeros past ``nb``). Returns
    ``(x1, x2, x, pos, bit)``. Preconditions: ``0 <= x1 <= x2 < 2**32``, ``1 <= p <= 4095``.
    """
    rng = x2 - x1
    xmid = x1 + (rng >> 12) * p + (((rng & 0xFFF) * p) >> 12)
    if decoding:
        y = np.int64(x <= xmid)
    if y:
        x2 = xmid
    else:
        x1 = xmid + 1
    # subtle: shift out every leading byte on which x1 and x2 agree: it can no longer change
    while ((x1 ^ x2) & 0xFF000000) == 0:
        if decoding:
            q = pos + 4
            x = ((x << 8) & 0xFFFFFFFF) | (np.int64(buf[q]) if q < nb else 0)
        elif pos < nb:
            buf[pos] = np.uint8(x1 >> 24)
        pos += 1
        x1 = (x1 << 8) & 0xFFFFFFFF
        x2 = ((x2 << 8) & 0xFFFFFFFF) | 255
    return x1, x2, x, pos, y


@njit(cache=True, nogil=True, inline="always")
def _match_step(tokens, i, tok, pt, top, mlen, mptr, MT, mmask, min_len, max_len):
    """A match model after token ``i`` (``tok``): the match is extended when it predicted
    ``tok`` (``pt``, its predicted token | ``top``), else dropped; then the last position after
    the newest ``min_len`` tokens is looked up in ``MT`` (hashed, ``mmask``) and, with no match
    running, verified backwards up to ``max_len`` tokens and taken when ``min_len`` agree.
    Returns ``(mlen, mptr)``; ``MT`` is updated to ``i + 1``."""
    if mlen > 0 and (pt ^ top) == tok:
        mlen += 1
        mptr += 1
    else:
        mlen = 0
    if i + 1 >= min_len:
        hm = 0
        for k in range(min_len):
            hm = _hash(hm, np.int64(tokens[i - k]))
        hm &= mmask
        if mlen == 0:
            cand = np.int64(MT[hm])
            if cand > 0:
                L = 0
                while L < max_len and L < cand and tokens[cand - 1 - L] == tokens[i - L]:
                    L += 1
                if L >= min_len:
                    mlen = L
                    mptr = cand  # subtle: cand <= i, so tokens[mptr] is always known
        MT[hm] = i + 1
    return mlen, mptr


@njit(cache=True, nogil=True, inline="always")
def _finish(x1, x2, x, pos, buf, nb, n, chk, decoding):
    """The end of a stream, shared by every context-mixing coder: 16 check bits of ``chk`` at p = 2048 (when
    n > 0), then the flush (the shortest k-byte prefix of a value in [x1, x2]). Encoding returns
    the payload length; decoding OK, ERR_CHECK or ERR_LENGTH."""
    # check: 16 bits of the tokens' hash at probability 1/2 (2 bytes), so that corrupt data
    # decoding to other tokens is refused but for a 2**-16 chance
    for j in range(select(n > 0, 16, 0)):
        yc = (chk >> (15 - j)) & 1
        x1, x2, x, pos, y = _code_bit(x1, x2, x, pos, buf, nb, 2048, yc, decoding)
        if y != yc:
            return ERR_CHECK
    # flush: the shortest k-byte prefix v of a value in [x1, x2] (zeros follow it)
    k = 4
    v = x1
    for kk in range(5):
        sh = 32 - 8 * kk
        vv = ((x1 + (1 << sh) - 1) >> sh) << sh
        if vv <= x2:
            k = kk
            v = vv
            break
    if not decoding:
        for j in range(k):
            if pos < nb:
                buf[pos] = np.uint8((v >> (24 - 8 * j)) & 255)
            pos += 1
        return pos
    if pos + k != nb:
        return ERR_LENGTH
    for j in range(k):
        if np.int64(buf[pos + j]) != ((v >> (24 - 8 * j)) & 255):
            return ERR_LENGTH
    return OK


def text_class(value: int) -> int:
    """The class of a byte value for the text contexts: ``(w << 3) | (c << 1) | newline`` where
    w is the word code (the lower-case ASCII letter, the digit, or the byte itself from 128
    up; 0 for any other byte), c the character class (0 other, 1 word byte, 2 space or line
    feed, 3 ASCII punctuation) and newline 1 for a line feed (10). Values outside [0, 255]
    get 0 (other)."""
    if not 0 <= value <= 255:
        return 0
    ch = chr(value)
    if value >= 128 or ch.isalnum():
        w, c = (ord(ch.lower()) if value < 128 else value), 1
    elif value in (32, 10):
        w, c = 0, 2
    elif 33 <= value <= 126:
        w, c = 0, 3
    else:
        w, c = 0, 0
    return (w << 3) | (c << 1) | (1 if value == 10 else 0)

