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


def nlms_step_q20(w: list[int], h: list[int], f: int) -> list[int]:
    """Version 5's NLMS tap update: each weight (Q20) plus f h[j] / 2**20 rounded to nearest
    (halves up), clamped to +-2**27, in Python integers."""
    lim = 1 << 27
    out = []
    for wj, hj in zip(w, h):
        num = f * hj
        q, r = divmod(num, 1 << 20)  # floor division: q + r / 2**20 == num / 2**20, 0 <= r < 2**20
        out.append(max(-lim, min(lim, wj + q + (1 if 2 * r >= 1 << 20 else 0))))
    return out
