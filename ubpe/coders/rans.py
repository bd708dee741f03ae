""""rans": a static frequency model stored as a count table, then rANS over the tokens.

The coder (``ubpe._kernels.entropy``): 64-bit state in [2**32, 2**64), 32-bit words,
frequencies summing to 2**pb (pb in 12..20) made from the stored counts by exact integer
arithmetic; O(1) table-lookup decoding.

Frequency table (``"freq"`` bytes, a little-endian bitstream): 1 mode bit; the set of used ids,
either as a V-bit bitmap (mode 0) or as alternating runs of unused/used ids (mode 1: one bit
"id 0 is used", then run lengths minus one in adaptive Golomb-Rice codes, separate statistics
per run kind); then, for each used id in increasing order, its count *code* minus one in
adaptive Golomb-Rice. Codes are exact counts (``q == 0``) or counts rounded to a pseudo-float
with ``q`` mantissa bits (``q >= 1``): the encoder tries several ``q`` and keeps the one
minimising table bits + cross-entropy of the payload. Decoding checks that the decoded
histogram re-quantises to exactly the stored codes (so every listed id occurs), that every
payload word is consumed and that the state returns to its initial value.
"""

from __future__ import annotations

import math

import numpy as np

from .._kernels import entropy as _k
from .._kernels import ransfreq as _kf
from .._kernels import ransmodel as _km
from ..errors import CorruptDataError
from ..format.bits import TABLE_ERRORS
from ._base import Coder, Tokens, alloc_tokens, field_bytes, field_int, packed_width

#: rANS probability precision range (bits). The decoder builds a 2**pb slot table, so pb is
#: also capped at max(RANS_MIN_PB, bit_length(n) + 3) to keep decoding memory O(n).
RANS_MIN_PB = 12


RANS_MAX_PB = 20


#: rANS needs sum(model counts) * 2**pb < 2**63.
RANS_MAX_TOTAL = 1 << 42


#: Mantissa-bit settings the encoder tries for the count codes (0 = exact counts).
Q_CANDIDATES = (0, 1, 2, 3, 4, 5, 6, 8)


MAX_Q = 40


#: Approximate fixed overhead of the ANS payload in bits (flushing the coder state).
ANS_OVERHEAD_BITS = 32


MAX_COUNT_CODE = 1 << _k.MAX_VALUE_BITS


def _quantize(counts: np.ndarray, q: int) -> np.ndarray:
    """Count -> code: exact below 2**(q+1), else exponent e >= 1 and rounded mantissa."""
    if q == 0:
        return counts.copy()
    out = np.empty(counts.shape[0], dtype=np.int64)
    _k.quantize_counts(np.ascontiguousarray(counts, dtype=np.int64), q, out, _EMPTY_I64)  # the rule below, compiled
    return out


def _quantize_reference(counts: np.ndarray, q: int) -> np.ndarray:
    """:func:`_quantize` in numpy (the definition the kernel follows; kept for the tests)."""
    if q == 0:
        return counts.copy()
    c = counts.astype(np.int64)
    top = 1 << (q + 1)
    _, bl = np.frexp(c.astype(np.float64))  # bit length, exact for c < 2**53
    e = np.maximum(bl.astype(np.int64) - (q + 1), 0)
    half = np.where(e > 0, np.left_shift(1, np.maximum(e - 1, 0)), 0)
    mant = (c + half) >> e
    over = mant == top
    e = e + over
    mant = np.where(over, 1 << q, mant)
    return np.where(e == 0, c, e * (1 << q) + mant)


def _dequantize(codes: np.ndarray, q: int) -> np.ndarray | None:
    """Code -> reconstructed count; None if a code would exceed 2**52."""
    if q == 0:
        return codes
    e = np.maximum((codes >> q) - 1, 0)
    if codes.size and int(e.max()) + q + 1 > 52:
        return None
    mant = codes - e * (1 << q)
    return np.where(codes < (1 << (q + 1)), codes, mant << e)


_EMPTY_U8 = np.zeros(0, dtype=np.uint8)  #: a table kernel's "buffer" for a dry run (bits counted, none written)


def _table_bytes(ids: np.ndarray, codes: np.ndarray, vocab_size: int, mode: int | None = None) -> bytes:
    """The table bitstream in ``mode`` (None: the smaller of both used-set modes, the bitmap on
    ties, :func:`_runs_saving`)."""
    if mode is None:
        mode = 1 if _runs_saving(ids, codes, vocab_size) < 0 else 0
    buf = np.zeros((_k.table_encode(ids, codes, vocab_size, mode, _EMPTY_U8) + 7) // 8, dtype=np.uint8)
    _k.table_encode(ids, codes, vocab_size, mode, buf)
    return buf.tobytes()


def _runs_saving(ids: np.ndarray, codes: np.ndarray, vocab_size: int, bitmap: int | None = None) -> int:
    """min(0, table bits in mode 1 - table bits in mode 0): what listing the used ids as runs
    saves over the bitmap (negative) or 0. The count codes follow the used-id set the same way
    in both modes, so this depends on ``ids`` alone, not on ``codes``; the smaller table of any
    codes has ``table_encode(mode 0) + _runs_saving`` bits, in mode 1 exactly when negative.
    ``bitmap``: the mode-0 table bits of these codes when the caller has them."""
    if bitmap is None:
        bitmap = _k.table_encode(ids, codes, vocab_size, 0, _EMPTY_U8)
    return min(0, _k.table_encode(ids, codes, vocab_size, 1, _EMPTY_U8) - bitmap)


def _table_bits(ids: np.ndarray, codes: np.ndarray, vocab_size: int) -> int:
    """Bits of the smaller table of the two used-set modes."""
    return _k.table_encode(ids, codes, vocab_size, 0, _EMPTY_U8) + _runs_saving(ids, codes, vocab_size)


def _rans_model(ids: np.ndarray, counts: np.ndarray, vocab_size: int, quantized: tuple | None = None) \
        -> tuple[int, np.ndarray, np.ndarray, int, float, int]:
    """Pick the count quantisation q of ``Q_CANDIDATES`` minimising table bits + payload
    cross-entropy (ties keep the earlier q). ``ids``: the used ids (increasing), ``counts``
    their counts (int64, each in [1, 2**52)).

    Returns (q, codes, model, table_bits, cross_entropy_bits, mode): ``model`` = the counts the
    codes stand for (``_dequantize(codes, q)``), ``mode`` the table's used-set mode. Every q's
    codes, model and cross-entropy come from one array of q rows (each row's numbers equal the
    one-q computation's: elementwise, and a row sum adds as a 1-D sum does). The table bits of a
    q are one dry run in mode 0 plus the mode-1 saving, the same for every q
    (:func:`_runs_saving`); a q whose cross-entropy alone already reaches the best total is not
    sized (its table bits, >= 0, cannot make it win). A q >= 1 under which every count is below
    2**(q + 1) codes each count as itself, q = 0's row again, which wins their tie: it is not
    built (the small counts of a large alphabet: most q). ``quantized``: :func:`_quantized` of
    these counts, when the caller has it (the same numbers).
    """
    qs, codes, model, ces = _quantized(counts) if quantized is None else quantized
    best = None
    saving = None
    for j, q in enumerate(qs):
        ce = ces[j]
        if best is not None and ce >= best[0] - 1e-9:
            continue
        bits = _k.table_encode(ids, codes[j], vocab_size, 0, _EMPTY_U8)
        if saving is None:
            saving = _runs_saving(ids, codes[j], vocab_size, bits)
        tbits = bits + saving
        total = tbits + ce
        if best is None or total < best[0] - 1e-9:
            best = (total, j, tbits, ce)
    assert best is not None and saving is not None
    j = best[1]
    return qs[j], codes[j], model[j], best[2], best[3], 1 if saving < 0 else 0


def _quantized(counts: np.ndarray) -> tuple[list[int], np.ndarray, np.ndarray, list[float]]:
    """The part of :func:`_rans_model` that depends on the counts alone (not on the ids nor the
    vocabulary): the q of ``Q_CANDIDATES`` it weighs, each q's codes and model (a row each,
    int64) and payload cross-entropy (floats), as ``_rans_model`` computes them."""
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    top = int(counts.max())
    qs = [q for q in Q_CANDIDATES if (top >= 2 << q if q else top < MAX_COUNT_CODE)]
    codes = np.empty((len(qs), counts.size), dtype=np.int64)
    model = np.empty_like(codes)  # _dequantize of each row, from the same kernel pass
    for j, q in enumerate(qs):
        if q:
            _k.quantize_counts(counts, q, codes[j], model[j])
        else:
            codes[j] = model[j] = counts
    keep = codes.max(axis=1) < MAX_COUNT_CODE
    if not keep.all():
        codes, model = codes[keep], model[keep]
        qs = [q for q, kept in zip(qs, keep.tolist()) if kept]
    mf = model.astype(np.float64)
    ces = (counts * np.log2(mf.sum(axis=1, keepdims=True) / mf)).sum(axis=1).tolist()
    return qs, codes, model, ces


def _choose_model(ids: np.ndarray, counts: np.ndarray, vocab_size: int) -> tuple[int, np.ndarray, int, float]:
    """(q, codes, table_bits, cross_entropy_bits) of :func:`_rans_model`."""
    q, codes, _, tbits, ce, _ = _rans_model(ids, counts, vocab_size)
    return q, codes, tbits, ce


def _pb_cap(n: int) -> int:
    return min(RANS_MAX_PB, max(RANS_MIN_PB, int(n).bit_length() + 3))


def _normalize(model_counts: np.ndarray, pb: int) -> np.ndarray:
    """Model counts -> rANS frequencies summing to exactly 2**pb, each >= 1 (exact integers).

    f_i = 1 + floor(c_i * (M - k) / S); the shortfall (< k) goes one each to the largest
    remainders c_i * (M - k) mod S, ties to the lower index. Preconditions: k <= M,
    S * M < 2**63.
    """
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


#: :func:`_normalize_range` sorts every row's keys up to this many symbols, else partitions
#: each row (numpy's sort of a few hundred keys costs less than one call per row)
_SORT_MAX_K = 600


def _normalize_range(model_counts: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """:func:`_normalize` at every precision of [lo, hi]: row ``pb - lo`` of the result (int64,
    ``(hi - lo + 1, k)``), the same integers. A row's shortfall goes to its largest keys
    ``remainder * k + (k - 1 - index)`` (distinct: the largest remainders, ties to the lower
    index), those at or above the shortfall-th largest key. Preconditions: k <= 2**lo,
    S * 2**hi < 2**62 (so a key, below S * k, fits as well)."""
    c = np.ascontiguousarray(model_counts, dtype=np.int64)
    k = c.size
    size = np.left_shift(1, np.arange(lo, hi + 1, dtype=np.int64))
    quot, rem = np.divmod(c * (size - k)[:, None], int(c.sum()))
    f = quot + 1
    short = size - f.sum(axis=1)
    key = rem * k + np.arange(k - 1, -1, -1, dtype=np.int64)
    if k <= _SORT_MAX_K:
        cut = np.sort(key, axis=1)[np.arange(short.size), np.minimum(k - short, k - 1)]
        cut[short == 0] = np.iinfo(np.int64).max  # (no key reaches it)
        f += key >= cut[:, None]
    else:
        for p, s in enumerate(short.tolist()):
            if s:
                f[p] += key[p] >= np.partition(key[p], k - s)[k - s]
    return f


def _rans_pb(counts: np.ndarray, model_counts: np.ndarray, n: int) -> tuple[int, float, np.ndarray] | None:
    """Smallest precision whose payload cross-entropy is within 0.05 % (or 8 bits) of the best.

    The smallest acceptable pb also means the smallest decoding table (2**pb slots, built per
    call): on real streams the precisions above the chosen one save at most ~0.03 %.
    Returns (pb, cross_entropy_bits, frequencies at pb), or None when rANS cannot code this
    model. Every pb's frequencies and cross-entropy come from one array (a row per pb; each
    row's numbers equal the one-pb computation's).
    """
    k = counts.size
    lo = max(RANS_MIN_PB, int(k - 1).bit_length() + 1)
    hi = _pb_cap(n)
    if lo > hi or int(model_counts.sum()) >= RANS_MAX_TOTAL:
        return None
    freqs = _normalize_range(model_counts, lo, hi)
    pbs = np.arange(lo, hi + 1, dtype=np.int64)[:, None]
    ces = (counts.astype(np.float64) * (pbs - np.log2(freqs.astype(np.float64)))).sum(axis=1).tolist()
    best = min(ces)
    for i, ce in enumerate(ces):
        if ce <= best + max(8.0, 5e-4 * best):
            return lo + i, ce, freqs[i]
    raise AssertionError("unreachable")



_EMPTY_I64 = np.zeros(0, np.int64)


def encode(tokens: Tokens, budget: int) -> dict | None:
    """The rANS stream, or None when its estimate is clearly above ``budget`` bytes."""
    ids, used, n, vocab_size = tokens.ids, tokens.counts[tokens.ids], tokens.n, tokens.vocab_size
    q, codes, model_counts, tbits, _, mode = _rans_model(ids, used, vocab_size)
    choice = _rans_pb(used, model_counts, n)
    if choice is None or (tbits + choice[1] + ANS_OVERHEAD_BITS) / 8.0 > 1.05 * budget + 64:
        return None
    pb, _, f = choice
    k = ids.shape[0]
    rank = np.zeros(vocab_size, dtype=np.int32)
    rank[ids] = np.arange(k, dtype=np.int32)
    dense = rank[tokens.values]
    out = np.zeros(n + 2, dtype=np.uint32)
    start = _k.rans_encode(dense, f, pb, out)
    return {"coder": "rans", "n": n, "k": k, "q": q, "pb": pb, "freq": _table_bytes(ids, codes, vocab_size, mode),
            "payload": np.ascontiguousarray(out[start:], "<u4").tobytes()}


def stream_bits(ids: np.ndarray, used: np.ndarray, vocab_size: int, shared: dict | None = None) -> float | None:
    """Bits of the "rans" stream :func:`encode` writes for tokens whose used ids ``ids``
    (increasing, in ``[0, vocab_size)``) occur ``used`` times each (int64, at least two ids):
    its table and its payload (cross-entropy plus the flush, in whole words), as ``encode``
    chooses them, without coding; None when rANS cannot code them. (The map's framing, a few
    dozen bytes, is not counted.) ``shared``: a dict the caller keeps while it sizes the same
    counts under other ids (a chain's bare and dense ids): what depends on the counts alone
    (:func:`_quantized`, and :func:`_rans_pb` of each q chosen) is computed once, kept there with
    the array ``used`` (the same numbers)."""
    n = int(used.sum())
    if shared is None:
        _, _, model_counts, tbits, _, _ = _rans_model(ids, used, vocab_size)
        choice = _rans_pb(used, model_counts, n)
    else:
        if shared.get("used") is not used:  # (by identity: the dict is for one array of counts)
            shared.clear()
            shared["used"], shared["quantized"] = used, _quantized(used)
        q, _, model_counts, tbits, _, _ = _rans_model(ids, used, vocab_size, shared["quantized"])
        if ("pb", q) not in shared:
            shared["pb", q] = _rans_pb(used, model_counts, n)
        choice = shared["pb", q]
    if choice is None:
        return None
    return 8.0 * ((tbits + 7) // 8) + 32.0 * math.ceil((choice[1] + ANS_OVERHEAD_BITS) / 32.0)


def counts_cost_bits(counts: np.ndarray) -> float:
    """Bits of the smaller of the "packed" and "rans" streams of tokens with histogram ``counts``
    (``counts[t]`` occurrences of token t; ``len(counts)`` is the vocabulary size): the exact
    table and the payload's cross-entropy plus the coder's flush, in whole words; exact for
    "packed". The msgpack framing (a few dozen bytes) is not counted."""
    counts = np.asarray(counts, dtype=np.int64)
    vocab_size = counts.size
    ids = np.flatnonzero(counts)
    if ids.size <= 1:
        return 0.0
    n = int(counts.sum())
    packed_bits = 8.0 * ((n * packed_width(int(ids[-1])) + 7) // 8)
    used = counts[ids]
    _, _, model_counts, tbits, ce, _ = _rans_model(ids, used, vocab_size)
    choice = _rans_pb(used, model_counts, n)
    if choice is not None:
        ce = choice[1]
    ans_bits = 8.0 * ((tbits + 7) // 8) + 32.0 * math.ceil((ce + ANS_OVERHEAD_BITS) / 32.0)
    return min(packed_bits, ans_bits)


_RANS_ERRORS = {
    _k.ERR_TRUNCATED: "truncated",
    _k.ERR_RANGE: "initial coder state out of range",
    _k.ERR_TRAILING: "data left over or final coder state wrong after decoding n tokens",
}


def decode(fields: dict, n: int, vocab_size: int, classes: np.ndarray | None) -> np.ndarray:
    k, q, pb = fields["k"], fields["q"], fields["pb"]
    if not (type(k) is int and 2 <= k <= vocab_size and type(q) is int and 0 <= q <= MAX_Q
            and type(pb) is int and RANS_MIN_PB <= pb <= RANS_MAX_PB):  # (the usual case in one test)
        k = field_int(fields, "k", 2, vocab_size)
        q = field_int(fields, "q", 0, MAX_Q)
        pb = field_int(fields, "pb", RANS_MIN_PB, RANS_MAX_PB)
    if pb > _pb_cap(n):
        raise CorruptDataError(f"field 'pb' = {pb} too large for n={n} (max {_pb_cap(n)})")
    if k > (1 << pb):
        raise CorruptDataError(f"field 'k' = {k} exceeds 2**pb (field 'pb' = {pb})")
    freq, payload = fields["freq"], fields["payload"]
    if type(freq) is not bytes or type(payload) is not bytes:
        freq, payload = field_bytes(fields, "freq"), field_bytes(fields, "payload")
    if n < k:
        raise CorruptDataError(f"field 'n' = {n} is smaller than the {k} used symbols (field 'k')")
    if len(payload) % 4:
        raise CorruptDataError(f"field 'payload' length {len(payload)} is not a multiple of 4")
    max_words = n + 2
    if len(payload) // 4 > max_words:
        raise CorruptDataError(
            f"field 'payload' has {len(payload) // 4} words, more than n={n} tokens can need"
        )
    model = np.zeros((5, k), dtype=np.int64)  # (one allocation: rows are C-contiguous arrays)
    ids, codes, model_counts, hist, freqs = model[0], model[1], model[2], model[3], model[4]
    status = _k.table_decode(np.frombuffer(freq, dtype=np.uint8), vocab_size, ids, codes)
    if status != _k.OK:
        raise CorruptDataError(f"field 'freq': {TABLE_ERRORS.get(status, 'malformed')}")
    total = int(_km.dequantize_codes(codes, q, model_counts))  # (_dequantize, in one pass)
    if total == -1:
        raise CorruptDataError("field 'freq': count code too large for field 'q'")
    if q == 0 and total != n:
        raise CorruptDataError(f"field 'freq': counts sum to {total}, not n={n}")
    # each rounded count is within c * 2**-(q+1) of the true one, so the totals agree as well
    if q > 0 and abs(total - n) << (q + 1) > n:
        raise CorruptDataError(f"field 'freq': model counts sum to {total}, inconsistent with n={n}")
    if total >= RANS_MAX_TOTAL:
        raise CorruptDataError("field 'freq': counts too large for field 'pb'")
    _frequencies(model_counts, total, pb, freqs)
    words = np.frombuffer(payload, dtype="<u4").astype(np.uint32)
    out = alloc_tokens(n)
    # hist (zeros): the kernel counts each decoded symbol
    sym = np.empty(1 << pb, dtype=np.uint16 if k <= 1 << 16 else np.int32)  # slot -> symbol
    status = _k.rans_decode(words, freqs, ids.astype(np.int32), pb, out, hist, sym)
    if status != _k.OK:
        raise CorruptDataError(f"field 'payload': {_RANS_ERRORS.get(status, 'malformed')}")
    if not _km.histogram_matches(hist, codes, q):  # (_check_histogram, in one pass)
        raise CorruptDataError("field 'payload': decoded counts disagree with field 'freq'")
    return out


def _frequencies(counts: np.ndarray, total: int, pb: int, freqs: np.ndarray | None = None) -> np.ndarray:
    """:func:`_normalize` of int64 ``counts`` summing to ``total`` (into ``freqs`` when given):
    its floors in one kernel pass (``_kernels.ransmodel.normalize_counts``), then the shortfall,
    one each to the largest remainders, ties to the lower index (``_kernels.ransfreq.give_shortfall``:
    a heap of the distinct keys)."""
    k = counts.shape[0]
    if freqs is None:
        freqs = np.empty(k, dtype=np.int64)
    short = int(_km.normalize_counts(counts, total, pb, freqs))
    if short <= 0:
        return freqs
    if short >= k:  # (only when the preconditions fail: _normalize's order[:short] takes every index)
        freqs += 1
        return freqs
    _kf.give_shortfall(counts, total, pb, short, freqs, np.empty(short, dtype=np.int64))
    return freqs


def _check_histogram(hist: np.ndarray, codes: np.ndarray, q: int) -> None:
    """The decoded counts must re-quantise to exactly the stored codes (all ids used)."""
    if hist.min() < 1 or not np.array_equal(_quantize(hist.astype(np.int64), q), codes):
        raise CorruptDataError("field 'payload': decoded counts disagree with field 'freq'")


CODER = Coder("rans", 0, ("coder", "n", "k", "q", "pb", "freq", "payload"), (1, 2), "static", "any", encode, decode)
