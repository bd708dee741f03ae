"""The static coders' parameter searches as they were written first (plain loops), kept as the
test oracle for the faster searches of :mod:`ubpe.coders.rans` and :mod:`ubpe.coders.mag`
(``tests/test_costing.py``): every choice (ties included) and every number the writer uses must
be the same. Never imported by the package."""

from __future__ import annotations

import math

import numpy as np

import reference_mag
from ubpe._kernels import residual as _mag
from ubpe.coders import mag as M
from ubpe.coders import rans as E


def table_bits(ids: np.ndarray, codes: np.ndarray, vocab_size: int) -> int:
    empty = np.zeros(0, dtype=np.uint8)
    return min(E._k.table_encode(ids, codes, vocab_size, m, empty) for m in (0, 1))


def table_bytes(ids: np.ndarray, codes: np.ndarray, vocab_size: int) -> bytes:
    """Smallest table bitstream over both used-set modes (bitmap first on ties)."""
    empty = np.zeros(0, dtype=np.uint8)
    best_mode, best_bits = 0, None
    for mode in (0, 1):
        bits = E._k.table_encode(ids, codes, vocab_size, mode, empty)
        if best_bits is None or bits < best_bits:
            best_mode, best_bits = mode, bits
    buf = np.zeros((best_bits + 7) // 8, dtype=np.uint8)
    E._k.table_encode(ids, codes, vocab_size, best_mode, buf)
    return buf.tobytes()


def choose_model(ids: np.ndarray, counts: np.ndarray, vocab_size: int) -> tuple[int, np.ndarray, int, float]:
    """(q, codes, table_bits, cross_entropy_bits): the q of Q_CANDIDATES minimising table bits +
    payload cross-entropy, ties to the earlier."""
    best = None
    for q in E.Q_CANDIDATES:
        if q == 0 and int(counts.max()) >= E.MAX_COUNT_CODE:
            continue
        codes = E._quantize(counts, q)
        if int(codes.max()) >= E.MAX_COUNT_CODE:
            continue
        model = E._dequantize(codes, q).astype(np.float64)
        ce = float((counts * np.log2(model.sum() / model)).sum())
        tbits = table_bits(ids, codes, vocab_size)
        total = tbits + ce
        if best is None or total < best[0] - 1e-9:
            best = (total, q, codes, tbits, ce)
    assert best is not None
    return best[1], best[2], best[3], best[4]


def normalize(model_counts: np.ndarray, pb: int) -> np.ndarray:
    """Model counts -> rANS frequencies summing to 2**pb: f_i = 1 + floor(c_i (M - k) / S), the
    shortfall one each to the largest remainders, ties to the lower index (a stable sort)."""
    c = model_counts.astype(np.int64)
    k = c.size
    spare = (1 << pb) - k
    s = int(c.sum())
    scaled = c * spare
    f = 1 + scaled // s
    short = (1 << pb) - int(f.sum())
    if short:
        order = np.argsort(-(scaled % s), kind="stable")
        f[order[:short]] += 1
    return f


def choose_pb(counts: np.ndarray, model_counts: np.ndarray, n: int) -> tuple[int, float] | None:
    """(pb, cross_entropy_bits): the smallest precision within 0.05 % (or 8 bits) of the best."""
    k = counts.size
    lo = max(E.RANS_MIN_PB, (k - 1).bit_length() + 1)
    hi = E._pb_cap(n)
    if lo > hi or int(model_counts.sum()) >= E.RANS_MAX_TOTAL:
        return None
    cf = counts.astype(np.float64)
    ces = []
    for pb in range(lo, hi + 1):
        f = normalize(model_counts, pb).astype(np.float64)
        ces.append(float((cf * (pb - np.log2(f))).sum()))
    best = min(ces)
    for pb, ce in zip(range(lo, hi + 1), ces):
        if ce <= best + max(8.0, 5e-4 * best):
            return pb, ce
    raise AssertionError("unreachable")


def mag_choice(arr: np.ndarray) -> tuple[int, int, int, float, np.ndarray, int]:
    """The "mag" coder's (center, rate, pb, total_bits, freqs, raw_bits): center the median token;
    every rate and pb sized by exact table bits + raw bits + cross-entropy; the smallest pb within
    0.05 % (or 8 bits) of the best size, then the smallest size, then the lowest rate."""
    n = int(arr.size)
    tokens = np.ascontiguousarray(arr, dtype=np.int64)
    center = int(np.partition(tokens, n // 2)[n // 2])
    empty = np.zeros(0, dtype=np.uint8)
    options = []
    stats = np.zeros((_mag.MAX_RATE - _mag.MIN_RATE + 1, _mag.N_CONTEXTS, _mag.N_BUCKETS), dtype=np.int64)
    rates = np.arange(_mag.MIN_RATE, _mag.MAX_RATE + 1, dtype=np.int64)
    raw_bits = int(reference_mag.mag_stats(tokens, center, reference_mag.BITLEN, rates, stats,
                                  np.zeros(stats.shape[0], np.int64)))  # (checked against mag_stats_one)
    for rate in range(_mag.MIN_RATE, _mag.MAX_RATE + 1):
        counts = stats[rate - _mag.MIN_RATE]
        for pb in range(_mag.MIN_PB, M._mag_pb_cap(n) + 1):
            freqs, ce1 = np.empty_like(counts), np.empty((1, 1))
            # (its frequencies and cross-entropy: checked against normalize_rows below)
            _mag.mag_options(counts[None], pb, ce1, np.empty((1, 1), np.int64), freqs)
            options.append((float(ce1[0, 0]) + raw_bits + _mag.table_encode(freqs, pb, empty), pb, rate, freqs, raw_bits))
    least = min(o[0] for o in options)
    total, pb, rate, freqs, raw_bits = min((o for o in options if o[0] <= least + max(8.0, 5e-4 * least)),
                                           key=lambda o: (o[1], o[0], o[2]))
    return center, rate, pb, total, freqs, raw_bits


def counts_cost_bits(counts: np.ndarray) -> float:
    """``ubpe.coders.counts_cost_bits`` with the searches above."""
    counts = np.asarray(counts, dtype=np.int64)
    ids = np.flatnonzero(counts)
    if ids.size <= 1:
        return 0.0
    n = int(counts.sum())
    packed_bits = 8.0 * ((n * int(ids[-1]).bit_length() + 7) // 8)
    used = counts[ids]
    q, codes, tbits, ce = choose_model(ids, used, counts.size)
    choice = choose_pb(used, E._dequantize(codes, q), n)
    if choice is not None:
        ce = choice[1]
    ans_bits = 8.0 * ((tbits + 7) // 8) + 32.0 * math.ceil((ce + E.ANS_OVERHEAD_BITS) / 32.0)
    return min(packed_bits, ans_bits)


def encode_mag(arr: np.ndarray, budget: int) -> dict | None:
    """The "mag" candidate as :func:`mag_choice` chooses it, or None beyond ``budget`` bytes."""
    n = int(arr.size)
    tokens = np.ascontiguousarray(arr, dtype=np.int64)
    center, rate, pb, total, freqs, raw_bits = mag_choice(arr)
    if total / 8.0 > 1.05 * budget + 64:
        return None
    empty = np.zeros(0, dtype=np.uint8)
    words = np.zeros(n + 2, dtype=np.uint32)
    raw = np.zeros((raw_bits + 7) // 8, dtype=np.uint8)
    start = reference_mag.mag_encode(tokens, center, rate, reference_mag.BITLEN, freqs, pb, words, raw)
    tbuf = np.zeros((_mag.table_encode(freqs, pb, empty) + 7) // 8, dtype=np.uint8)
    _mag.table_encode(freqs, pb, tbuf)
    return {"coder": "mag", "n": n, "center": center, "rate": rate, "pb": pb, "table": tbuf.tobytes(),
            "payload": words[start:].astype("<u4").tobytes(), "raw": raw.tobytes()}


def encode_rans(arr: np.ndarray, vocab_size: int) -> dict | None:
    """The "rans" candidate as the searches above choose it (None when rANS cannot code it)."""
    n = int(arr.size)
    counts = np.bincount(arr, minlength=vocab_size).astype(np.int64)
    ids = np.flatnonzero(counts)
    used = counts[ids]
    q, codes, _, _ = choose_model(ids, used, vocab_size)
    model_counts = E._dequantize(codes, q)
    choice = choose_pb(used, model_counts, n)
    if choice is None:
        return None
    pb = choice[0]
    rank = np.zeros(vocab_size, dtype=np.int32)
    rank[ids] = np.arange(ids.size, dtype=np.int32)
    out = np.zeros(n + 2, dtype=np.uint32)
    start = E._k.rans_encode(rank[arr], normalize(model_counts, pb), pb, out)
    return {"coder": "rans", "n": n, "k": int(ids.size), "q": q, "pb": pb,
            "freq": table_bytes(ids, codes, vocab_size), "payload": out[start:].astype("<u4").tobytes()}


def _bucket(z: int) -> int:
    if z < 2:
        return z
    e = z.bit_length()
    return 2 * e - 2 + ((z >> (e - 2)) & 1)


def mag_stats_one(tokens: np.ndarray, center: int, rate: int) -> tuple[np.ndarray, int]:
    """The "mag" statistics of one rate (the kernel's former form, in Python): per (context,
    bucket) counts and the raw bits."""
    counts = np.zeros((_mag.N_CONTEXTS, _mag.N_BUCKETS), dtype=np.int64)
    m = raw = 0
    for t in tokens.tolist():
        d = t - center
        z = 2 * d if d >= 0 else -2 * d - 1
        b = _bucket(z)
        counts[min(_bucket(m >> (rate - 2)), _mag.N_CONTEXTS - 1), b] += 1
        if b >= 4:
            raw += (b >> 1) - 1
        m += z - (m >> rate)
    return counts, raw


def normalize_rows(counts: np.ndarray, pb: int) -> tuple[np.ndarray, float]:
    """The "mag" rows' frequencies and cross-entropy as the kernel first computed them (in
    Python): per used row f = 1 + floor(c (M - k) / S), the shortfall one at a time to the
    largest remaining remainder (a scan of every bucket, ties to the lower), the cross-entropy
    summed row by row, bucket by bucket."""
    size = 1 << pb
    freqs = np.zeros_like(counts)
    ce = 0.0
    for c in range(counts.shape[0]):
        row = counts[c].tolist()
        k, s = sum(v > 0 for v in row), sum(row)
        if k == 0:
            continue
        rem = [-1] * len(row)
        for b, v in enumerate(row):
            if v > 0:
                freqs[c, b] = 1 + v * (size - k) // s
                rem[b] = v * (size - k) % s
        for _ in range(size - int(freqs[c].sum())):
            best = -1
            for b in range(len(row)):
                if rem[b] >= 0 and (best < 0 or rem[b] > rem[best]):
                    best = b
            freqs[c, best] += 1
            rem[best] = -1
        for b, v in enumerate(row):
            if v > 0:
                ce += v * (pb - math.log2(int(freqs[c, b])))
    return freqs, ce
