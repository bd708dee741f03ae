"""A plain-Python reference of the "hold" coder's payload (docs/format.md, "Coders";
``ubpe._kernels.hold``): the same bytes, written for reading, not speed."""

from __future__ import annotations


def _hash(h: int, x: int) -> int:
    v = ((h ^ x) & 0xFFFFFFFF) * 0x5BD1E995
    v ^= v >> 29
    v = (v & 0xFFFFFFFF) * 0x2F0B3A49
    return (v ^ (v >> 31)) & 0xFFFFFFFF


class _Coder:
    """cmcore's carry-less binary arithmetic coder (encoding only)."""

    def __init__(self) -> None:
        self.x1, self.x2, self.out = 0, 0xFFFFFFFF, bytearray()

    def bit(self, p: int, y: int) -> None:
        r = self.x2 - self.x1
        mid = self.x1 + (r >> 12) * p + (((r & 0xFFF) * p) >> 12)
        if y:
            self.x2 = mid
        else:
            self.x1 = mid + 1
        while (self.x1 ^ self.x2) & 0xFF000000 == 0:
            self.out.append(self.x1 >> 24)
            self.x1 = (self.x1 << 8) & 0xFFFFFFFF
            self.x2 = ((self.x2 << 8) & 0xFFFFFFFF) | 255

    def finish(self, n: int, chk: int) -> bytes:
        for j in range(16 if n else 0):
            self.bit(2048, (chk >> (15 - j)) & 1)
        for k in range(5):
            sh = 32 - 8 * k
            v = ((self.x1 + (1 << sh) - 1) >> sh) << sh
            if v <= self.x2:
                self.out += bytes((v >> (24 - 8 * j)) & 255 for j in range(k))
                break
        return bytes(self.out)


class _Counts(dict):
    def p(self, k) -> int:
        c0, c1 = self.get(k, (0, 0))
        return min(max(((2 * c1 + 1) * 4096) // (2 * (c0 + c1) + 2), 1), 4095)

    def add(self, k, y: int) -> None:
        c = list(self.get(k, (0, 0)))
        c[y] += 1
        if c[0] + c[1] > 1020:
            c = [(c[0] + 1) // 2, (c[1] + 1) // 2]
        self[k] = tuple(c)


def _bucket(r: int) -> int:
    v = min(r + 1, 1 << 24)
    k = v.bit_length() - 1
    return min(2 * k + (v * v >= 1 << (2 * k + 1)), 47)


def hold_payload(tokens: list[int], vocab_size: int) -> bytes:
    """The "hold" payload of ``tokens`` (each in [0, vocab_size)): the most frequent token (the
    smallest of equals) as LEB128, then the coder's bytes."""
    z = max(range(vocab_size), key=lambda t: (tokens.count(t), -t))
    head, v = bytearray(), z
    while True:
        head.append((v & 0x7F) | (0x80 if v >> 7 else 0))
        v >>= 7
        if not v:
            break
    ac, step, up_c, len_c, top_c = _Coder(), _Counts(), _Counts(), _Counts(), _Counts()
    run, last, chk = 0, 0, 0
    for t in tokens:
        b = _bucket(run)
        y = int(t != z)
        ac.bit(step.p(b), y)
        step.add(b, y)
        if not y:
            run += 1
        else:
            up = int(t > z)
            ac.bit(up_c.p(last), up)
            up_c.add(last, up)
            mx = vocab_size - 1 - z if up else z
            m = abs(t - z)
            length = m.bit_length()
            k = 1
            while k < mx.bit_length():
                yb = int(length > k)
                ac.bit(len_c.p((up, k)), yb)
                len_c.add((up, k), yb)
                if not yb:
                    break
                k += 1
            for j in range(k - 2, -1, -1):
                yb = (m >> j) & 1
                if j == k - 2:
                    ac.bit(top_c.p((up, k)), yb)
                    top_c.add((up, k), yb)
                else:
                    ac.bit(2048, yb)
            run, last = 0, 1 + up
        chk = _hash(chk, t + 1)
    return bytes(head) + ac.finish(len(tokens), chk)
