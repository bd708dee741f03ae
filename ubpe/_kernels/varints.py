"""Numba kernels of LEB128 varints (ubpe.format.bits.pack_varints, unpack_varints): one pass over
the values or bytes instead of a dozen numpy calls, whose fixed cost dominated the short fields
(a "rank" stage's values, a float stage's exceptions) and whose temporaries (a dozen arrays of
10 x n entries) dominated the long ones (the escapes of a million values)."""

from __future__ import annotations

import numpy as np

from . import njit

#: :func:`decode_varints`'s count when the bytes end inside a varint (its last byte has the high bit set).
ERR_CUT = -1


@njit(cache=True, nogil=True)
def decode_varints(data, out):
    """Decode the canonical unsigned LEB128 varints filling ``data`` (uint8) into ``out``
    (uint64, at least ``len(data)`` entries). Returns ``(count, overlong)``: how many varints, or
    ERR_CUT when the bytes end inside one; ``overlong`` whether one is longer than 10 bytes, not
    the shortest form (a last byte 0 after another byte) or a 10-byte one beyond 64 bits (last
    byte above 1). Reads and writes only within the arrays."""
    count = 0
    length = 0
    value = np.uint64(0)
    overlong = False
    for i in range(data.shape[0]):
        b = data[i]
        if length < 10:
            value |= np.uint64(b & 0x7F) << np.uint64(7 * length)
        length += 1
        if b < 0x80:
            if length > 10 or (length > 1 and b == 0) or (length == 10 and b > 1):
                overlong = True
            out[count] = value
            count += 1
            length = 0
            value = np.uint64(0)
    return (ERR_CUT if length else count), overlong


@njit(cache=True, nogil=True)
def encode_varints(values, out):
    """Write the shortest unsigned LEB128 form of each of ``values`` (uint64) into ``out`` (uint8,
    at least ``10 * len(values)`` entries: a uint64 takes at most 10 bytes), low 7-bit group
    first, the high bit set on every byte but a value's last. Returns how many bytes it wrote."""
    k = 0
    for i in range(values.shape[0]):
        v = values[i]
        while v >= np.uint64(0x80):
            out[k] = np.uint8((v & np.uint64(0x7F)) | np.uint64(0x80))
            v >>= np.uint64(7)
            k += 1
        out[k] = np.uint8(v)
        k += 1
    return k
