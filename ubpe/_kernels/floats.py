"""Kernels of the lossless float stages (:mod:`ubpe.floatstages`): bit packing and the inverses.

Self-contained (numba caches per file): nothing is imported from the other kernel files.

Bitstreams are little-endian and LSB-first: value ``i`` of ``k_i`` bits occupies bits
``sum(k_0 .. k_{i-1})`` onwards, its low bit first. The readers load 8 bytes at a time, so
every stream they read is padded with 8 zero bytes by its Python wrapper (:func:`padded`),
and no field read is wider than :data:`MAX_FIELD_BITS`.

Every function here is called only by the wrappers of :mod:`ubpe.floatstages`, which check the
lengths and ranges stated in each docstring first.
"""

from __future__ import annotations

import math

import numpy as np

from . import njit
from .intrinsics import bit_length

#: Widest field a reader extracts from one 8-byte load at any bit offset (64 - 7).
MAX_FIELD_BITS = 57

OK = 0
ERR_SHORT = -1  #: a bitstream holds fewer bits than its values need
ERR_LONG = -2  #: a bitstream holds whole bytes more than its values need


def padded(raw: bytes) -> np.ndarray:
    """``raw`` as uint8 with 8 zero bytes appended (the readers' unaligned 8-byte loads)."""
    out = np.zeros(len(raw) + 8, dtype=np.uint8)
    out[:len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    return out


@njit(cache=True, nogil=True, inline="always")
def _load64(buf, byte):
    """8 bytes of ``buf`` from ``byte`` on, little-endian (``byte + 8 <= buf.size``)."""
    w = np.uint64(0)
    for j in range(8):
        w |= np.uint64(buf[byte + j]) << np.uint64(8 * j)
    return w


@njit(cache=True, nogil=True)
def pack_bits(values, nbits, out):
    """Write ``values[i]`` (uint64, ``< 2**nbits[i]``) with ``nbits[i]`` bits (int64 in
    ``[0, 64]``) each, LSB-first, into ``out`` (uint8, zeroed, at least ``ceil(sum(nbits) / 8)``
    bytes). Returns the number of bits written."""
    acc = np.uint64(0)
    filled = 0  # bits held in acc
    at = 0  # next byte of out
    total = 0
    for i in range(values.size):
        k = nbits[i]
        if k == 0:
            continue
        v = values[i]
        total += k
        while k > 0:
            take = min(k, 64 - filled)
            part = v if take == 64 else v & ((np.uint64(1) << np.uint64(take)) - np.uint64(1))
            if filled < 64:
                acc |= part << np.uint64(filled)
            filled += take
            k -= take
            v = v >> np.uint64(take) if take < 64 else np.uint64(0)
            while filled >= 8:
                out[at] = np.uint8(acc & np.uint64(0xFF))
                at += 1
                acc >>= np.uint64(8)
                filled -= 8
    while filled > 0:
        out[at] = np.uint8(acc & np.uint64(0xFF))
        at += 1
        acc >>= np.uint64(8)
        filled -= 8
    return total


@njit(cache=True, nogil=True)
def decimal_inverse(k, shifts, low, divide, scale, out):
    """The floats of the decimal stage, as float64, in ``out`` (float64, ``(C, F)``).

    ``k`` (int64, ``(C, F)``): the stage's integers; ``shifts[c]`` (int64 in
    ``[0, MAX_FIELD_BITS]``) low bits per value of channel ``c`` read from ``low`` (padded,
    channel-major, ``F * sum(shifts)`` bits: checked by the caller) and put below ``k << s``;
    then ``k / scale[c]`` where ``divide[c]`` is 1, else ``k * scale[c]`` (IEEE float64, round
    to nearest: the writer's arithmetic). Integers beyond 2**53 round on conversion, as the
    writer's did."""
    channels, frames = k.shape
    pos = 0
    for c in range(channels):
        s = shifts[c]
        sc = scale[c]
        if s == 0:
            if divide[c]:
                for f in range(frames):
                    out[c, f] = np.float64(k[c, f]) / sc
            else:
                for f in range(frames):
                    out[c, f] = np.float64(k[c, f]) * sc
            continue
        mask = (np.uint64(1) << np.uint64(s)) - np.uint64(1)
        for f in range(frames):
            w = _load64(low, pos >> 3) >> np.uint64(pos & 7)
            pos += s
            v = (k[c, f] << np.int64(s)) | np.int64(w & mask)
            if divide[c]:
                out[c, f] = np.float64(v) / sc
            else:
                out[c, f] = np.float64(v) * sc
    return OK


@njit(cache=True, nogil=True, inline="always")
def _remainder_bits(ay, grid, lowest, precision):
    """Remainder bits of a binary-stage value whose integer part has magnitude ``ay > 0``:
    ``max(0, min(grid - lowest, precision - bit_length(ay)))``."""
    k = precision - bit_length(ay)
    g = grid - lowest
    if g < k:
        k = g
    return k if k > 0 else 0


@njit(cache=True, nogil=True)
def binary_remainders(y, r_scaled_exp, grid, lowest, precision, nbits):
    """``nbits[i]``: the remainder bits of ``y[i]`` (int64, flat; 0 for ``y[i] == 0``), and
    ``r_scaled_exp[i]``: the exponent ``grid - nbits[i]`` by which the remainder is scaled to
    an integer. ``grid - lowest`` and ``precision`` are in ``[0, 64)``."""
    for i in range(y.size):
        v = y[i]
        if v == 0:
            nbits[i] = 0
            r_scaled_exp[i] = grid
            continue
        ay = np.uint64(-v) if v < 0 else np.uint64(v)
        k = _remainder_bits(ay, grid, lowest, precision)
        nbits[i] = k
        r_scaled_exp[i] = grid - k


@njit(cache=True, nogil=True)
def binary_inverse(y, grid, lowest, precision, raw, nbytes, out):
    """The floats of the binary stage, as float64, in ``out`` (float64, flat, ``y.size``).

    ``y`` (int64, flat): the integer parts (``trunc(x / 2**grid)``); each ``y != 0`` reads its
    remainder bits (:func:`_remainder_bits`, at most ``precision - 1 <= 52``) from ``raw``
    (padded; ``nbytes`` bytes before the padding) and gives ``y * 2**grid + sign(y) * m *
    2**(grid - k)``, exact in float64 for the values the writer produced; ``y == 0`` gives
    ``+0.0`` (exceptions are patched by the caller). ``precision`` in ``[1, 53]``, ``grid -
    lowest >= 0``. Returns OK, ERR_SHORT when ``raw`` holds fewer bits than the values need,
    ERR_LONG when it holds a whole byte more."""
    avail = nbytes * 8
    pos = 0
    scale = math.ldexp(1.0, grid)
    for i in range(y.size):
        v = y[i]
        if v == 0:
            out[i] = 0.0
            continue
        ay = np.uint64(-v) if v < 0 else np.uint64(v)
        k = _remainder_bits(ay, grid, lowest, precision)
        base = np.float64(v) * scale
        if k == 0:
            out[i] = base
            continue
        if pos + k > avail:
            return ERR_SHORT
        m = (_load64(raw, pos >> 3) >> np.uint64(pos & 7)) & ((np.uint64(1) << np.uint64(k)) - np.uint64(1))
        pos += k
        rem = math.ldexp(np.float64(m), grid - k)
        out[i] = base + rem if v > 0 else base - rem
    if avail - pos >= 8:
        return ERR_LONG
    return OK
