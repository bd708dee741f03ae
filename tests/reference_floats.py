"""Plain-Python reference decoders of the lossless float stages (ubpe/frontend/floatcodes.py docstrings).

The test oracle: one value at a time, Python ints for the integers and bitstreams, Python floats
(IEEE binary64, round to nearest) for the arithmetic, ``struct`` for the float widths. Never
imported by the package.
"""

from __future__ import annotations

import math
import struct

_FORMAT = {16: "e", 32: "f", 64: "d"}


def _as_width(value: float, bits: int) -> int:
    """The bits of ``value`` rounded to a float of ``bits`` (struct rounds to nearest)."""
    try:
        return int.from_bytes(struct.pack("<" + _FORMAT[bits], value), "little")
    except OverflowError:  # beyond the width's range: infinity of the sign (IEEE overflow)
        return int.from_bytes(struct.pack("<" + _FORMAT[bits], math.copysign(math.inf, value)), "little")


def _exceptions(raw: bytes, bits: int) -> dict[int, int]:
    """position -> float bits of an ``esc`` field: varints (count, that many position gaps, the
    number of distinct values), the distinct values' bits, then (fewer distinct values than
    exceptions) one index byte per exception."""
    ints, i = [], 0
    while not ints or len(ints) < 2 + ints[0]:
        v, shift = 0, 0
        while True:
            byte = raw[i]
            i += 1
            v |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        ints.append(v)
    count, gaps, distinct = ints[0], ints[1:-1], ints[-1]
    size = bits // 8
    table = [int.from_bytes(raw[i + j * size:i + (j + 1) * size], "little") for j in range(distinct)]
    i += distinct * size
    indices = list(raw[i:]) if distinct < count else list(range(count))
    assert len(indices) == count
    pos, result = -1, {}
    for gap, index in zip(gaps, indices):
        pos += gap + 1
        result[pos] = table[index]
    return result


class _Bits:
    """An LSB-first bit reader."""

    def __init__(self, raw: bytes):
        self.value, self.pos, self.size = int.from_bytes(raw, "little"), 0, 8 * len(raw)

    def read(self, k: int) -> int:
        assert self.pos + k <= self.size, "bitstream too short"
        out = (self.value >> self.pos) & ((1 << k) - 1)
        self.pos += k
        return out


def decimal(y: list[list[int]], params: dict, adjustments: list[int] | None = None) -> list[list[int]]:
    """The float bits (per channel, per frame) of a "floatdec" entry's integers ``y``;
    ``adjustments``: the tokens of its ``adj`` stream, channel-major (the stream's coder is not
    this module's subject: the caller decodes it)."""
    bits = params["bits"]
    fine = params.get("fine")
    frames = len(y[0]) if y else 0
    shifts = params.get("shifts", [0] * len(y))
    low = _Bits(params.get("low", b""))
    exc = _exceptions(params["esc"], bits) if "esc" in params else {}
    out = []
    for c, row in enumerate(y):
        base = params["base"][c]
        channel = []
        for f, v in enumerate(row):
            k = (v << shifts[c]) | low.read(shifts[c])
            t = adjustments[c * frames + f] if adjustments is not None else 0
            d = -((t + 1) // 2) if t % 2 else t // 2  # zigzag back
            if fine is not None:  # d in units of 10**-(base + fine)
                e = base + fine
                value = float(k) * 10.0 ** fine + float(d)
                value = value / 10.0 ** e if e >= 0 else value * 10.0 ** -e
                d = 0
            elif type(base) is int:
                value = float(k) / 10.0 ** base if base >= 0 else float(k) * 10.0 ** -base
            else:
                value = float(k) * base
            pattern = (_as_width(value, bits) + d) % (1 << bits)  # d in ulps (no fine)
            channel.append(exc.get(c * frames + f, pattern))
        out.append(channel)
    return out


def binary(y: list[list[int]], params: dict) -> list[list[int]]:
    """The float bits (per channel, per frame) of a "floatbin" entry's integers ``y``."""
    bits, grid, lowest, precision = params["bits"], params["exp"], params["lo"], params["precisions"]
    frames = len(y[0]) if y else 0
    raw = _Bits(params.get("raw", b""))
    exc = _exceptions(params["esc"], bits) if "esc" in params else {}
    out = []
    for c, row in enumerate(y):
        channel = []
        for f, v in enumerate(row):
            if v == 0:
                value = 0.0
            else:
                k = max(0, min(grid - lowest, precision - abs(v).bit_length()))
                m = raw.read(k)
                value = math.ldexp(float(v), grid) + math.copysign(math.ldexp(float(m), grid - k), v)
            channel.append(exc.get(c * frames + f, _as_width(value, bits)))
        out.append(channel)
    assert raw.size - raw.pos < 8, "bitstream too long"
    return out
