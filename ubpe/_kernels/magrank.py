"""A "mag" stream of ranks' deltas decoded straight to the values (numba): level 1's chain
``"rank"`` then ``"delta"`` of order 1 or 2 (the neural recordings) in one pass.

:func:`mag_rank_decode` decodes the tokens as :func:`ubpe._kernels.residual.mag_decode` does
(the same statuses for the same bytes), maps each token to its residual, sums the residuals
into ranks (order 1: ``r[k] = r[k-1] + d[k]``; order 2: ``r[k] = 2 r[k-1] - r[k-2] + d[k]``,
sample 1 as order 1), wrapped to the ranks' width, and writes each rank's value from its
channel's table of distinct values to the output, frame-major: the int64 signal, its narrowing,
the rank lookup and the transposition of the stage-by-stage decoder are not made.
"""

from __future__ import annotations

import numpy as np

from . import njit
from .intrinsics import bit_length, imin, select
from .residual import (ERR_CONTEXT, ERR_RANGE, ERR_RAW, ERR_SYMBOL, ERR_TRAILING, ERR_TRUNCATED, N_CONTEXTS, OK, RANS_L,
                       SMALL_V, decode_tables)

#: a rank at or past its channel's count of distinct values (reported only when the stream
#: itself decoded without error, as the stage-by-stage decoder reports it)
ERR_RANK = -7
#: the arguments describe no layout the kernel can fill (a caller's error, never the stream's)
ERR_LAYOUT = -8


@njit(cache=True, nogil=True)
def mag_rank_decode(words, raw, nraw, center, rate, freqs, pb, vocab_size, lut, lo, bits, order, values, vstart, dst):
    """Decode ``len(dst)`` tokens of a "mag" stream to values; OK or a negative status.

    ``words``, ``center``, ``rate``, ``freqs``, ``pb``, ``vocab_size``: as
    :func:`ubpe._kernels.residual.mag_decode` takes them (same preconditions, same checks and
    statuses in the same order, never a read out of bounds). ``raw``: the raw bitstream's
    ``nraw`` bytes as little-endian uint32 words, zero past byte ``nraw``, with two whole
    zero words past the data (:func:`ubpe.coders.mag.raw_words`; fewer: ERR_RAW): the bits
    are read 32 at a time whenever fewer than 32 are buffered, without a test of the bytes
    left (the read-ahead stays under 64 bits, within the two zero words; a stream that needs
    more bits than ``nraw`` bytes reads zeros, the last word again, and is ERR_RAW: checked
    at the end and before any other error status, as the byte-wise reader reports it). ``lut`` (uint64, ``vocab_size``
    entries, or none): token ``t`` -> its residual ``lut[t]`` (``lo + t``, uint64, without one). ``bits`` (1..64): the ranks' width; ``order`` 1 or 2.
    ``values``: every channel's distinct values, channel ``c``'s at ``vstart[c]:vstart[c +
    1]`` (``len(vstart) - 1`` channels); ``dst`` (1-D, C-contiguous, ``channels * F`` cells,
    the values' dtype): receives frame ``k`` of channel ``c`` at ``k * channels + c``, the
    stream holding channel 0's ``F`` residuals, then channel 1's, ... A rank outside its
    channel's table reads value 0 of that table and makes the result ERR_RANK, unless the
    stream fails otherwise (its status then). Arguments that describe no such layout (no
    channel, an empty or out-of-range table, ``len(dst)`` not a multiple of the channels, a
    ``lut`` of another length, ``bits`` outside 1..64): ERR_LAYOUT, before anything is read.

    The tables are :func:`~ubpe._kernels.residual.mag_decode`'s (8-byte entries; a one-byte
    bucket table and a bucket -> entry table, the rows four times smaller, were 8 % slower on
    the neural recordings: the extra dependent load costs more than the first-level cache
    saves).
    """
    channels = vstart.shape[0] - 1
    if channels < 1 or vstart[0] != 0 or vstart[channels] > values.shape[0] or dst.shape[0] % channels:
        return ERR_LAYOUT
    for ch in range(channels):
        if vstart[ch + 1] <= vstart[ch]:
            return ERR_LAYOUT
    if lut.shape[0] != 0 and lut.shape[0] != vocab_size or not 1 <= bits <= 64:
        return ERR_LAYOUT
    status, rowoff, table, small = decode_tables(freqs, pb)
    if status != OK:
        return status
    size = 1 << pb
    nw = words.shape[0]
    if nw < 2:
        return ERR_TRUNCATED
    x = (np.uint64(words[0]) << np.uint64(32)) | np.uint64(words[1])
    if x < np.uint64(RANS_L):
        return ERR_RANGE
    wp = 2
    upb = np.uint64(pb)
    mask = np.uint64(size - 1)
    low = np.uint64(RANS_L)
    one = np.uint64(1)
    nrw = raw.shape[0]
    if nrw < (nraw + 3) // 4 + 2:
        return ERR_RAW
    acc = np.uint64(0)
    nacc = 0
    q = 0  # words of raw read
    m = 0
    sh = rate - 2
    wsh = np.uint64(64 - bits)
    frames = dst.shape[0] // channels
    badrank = False
    uselut = lut.shape[0] > 0
    uvocab = np.uint64(vocab_size)
    for ch in range(channels):
        v0 = vstart[ch]
        count = np.uint64(vstart[ch + 1] - v0)
        p1 = np.uint64(0)
        p2 = np.uint64(0)
        last = count - one
        vmax = np.uint64(0)
        di = ch
        for k in range(frames):
            v = m >> sh
            if v < SMALL_V:
                off = np.int64(small[np.uint64(v)])
            else:
                e = bit_length(v)
                c = 2 * e - 2 + ((v >> (e - 2)) & 1)
                off = rowoff[imin(c, N_CONTEXTS - 1)]
            if off < 0:
                return select(32 * q - nacc > 8 * nraw, ERR_RAW, ERR_CONTEXT)
            slot = x & mask
            en = table[np.uint64(off) + slot]
            x = ((en >> np.uint64(51)) + one) * (x >> upb) + ((en >> np.uint64(38)) & np.uint64(8191))
            nb = np.int64((en >> np.uint64(32)) & np.uint64(31))
            need = x < low
            w = np.uint64(words[np.uint64(imin(wp, nw - 1))])
            x = select(need, (x << np.uint64(32)) | w, x)
            wp += np.int64(need)
            refill = nacc < 32  # (no branch: it went either way every few dozen tokens)
            rw = np.uint64(raw[np.uint64(imin(q, nrw - 1))])
            acc |= select(refill, rw << np.uint64(nacc), np.uint64(0))
            q += np.int64(refill)
            nacc += 32 * np.int64(refill)
            zbits = np.int64(acc & ((one << np.uint64(nb)) - one))
            z = np.int64(en & np.uint64(0xFFFFFFFF)) | zbits
            acc >>= np.uint64(nb)
            nacc -= nb
            t = center + ((z >> 1) ^ -(z & 1))
            if np.uint64(t) >= uvocab:  # (t < 0 or t >= vocab_size)
                return select(32 * q - nacc > 8 * nraw, ERR_RAW, ERR_SYMBOL)
            m += z - (m >> rate)
            res = lut[np.uint64(t)] if uselut else lo + np.uint64(t)
            pred = p1  # order 1; order 2 from frame 2 on: 2 r[k-1] - r[k-2] (mod 2**64)
            if order == 2 and k >= 2:
                pred += p1 - p2
            val = (res + pred) << wsh >> wsh  # (the rank, unsigned, wrapped to its width)
            p2 = p1
            p1 = val
            vmax = select(val > vmax, val, vmax)  # (checked once per channel: no test per value)
            dst[np.uint64(di)] = values[np.uint64(v0) + imin(val, last)]
            di += channels
        badrank |= vmax >= count
    used = 32 * q - nacc  # raw bits the tokens took
    if used > 8 * nraw:
        return ERR_RAW
    if wp > nw:
        return ERR_TRUNCATED
    if wp != nw or x != low:
        return ERR_TRAILING
    # the byte-wise reader's end: every raw byte read, the bits past the last token's zero
    if (used + 7) // 8 != nraw or acc != np.uint64(0):
        return ERR_RAW
    return ERR_RANK if badrank else OK
