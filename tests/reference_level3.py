"""Small, obviously correct references for parts of the level-3 coder (``ubpe.level3``)."""

from __future__ import annotations

import numpy as np


def golomb_bits(values: list[int], k: int) -> str:
    """Exponential-Golomb codes of order k as a bit string: w = v + 2**k written in binary,
    preceded by as many zeros as it has bits beyond k + 1."""
    out = []
    for v in values:
        w = format(v + (1 << k), "b")
        out.append("0" * (len(w) - k - 1) + w)
    return "".join(out)


def golomb_bytes(values: list[int], k: int) -> bytes:
    """``golomb_bits`` packed most significant bit first, the last byte padded with zeros."""
    bits = golomb_bits(values, k)
    bits += "0" * (-len(bits) % 8)
    return bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))


def least_squares(R: np.ndarray, b: np.ndarray, reg_shift: int) -> np.ndarray:
    """The solution of (R + (max diag R) 2**-reg_shift I) w = b in floats: what the kernel's
    integer LDL^T approximates (its coefficients in Q24)."""
    R = np.asarray(R, dtype=float)
    R = np.tril(R) + np.tril(R, -1).T
    ridge = R.diagonal().max() * 2.0 ** -reg_shift
    return np.linalg.solve(R + ridge * np.eye(len(b)), np.asarray(b, dtype=float))
