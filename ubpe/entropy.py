"""Entropy stage: a token stream in [0, V) to the fewest bytes and back, bit-exact.

:func:`encode_stream` returns a small msgpack-safe dict (str keys; int, str and bytes values)
and :func:`decode_stream` inverts it, validating every field before any kernel or coder runs.
Coders (the smallest msgpack encoding among the offered ones is chosen):

``"const"``  every token equals one symbol (entropy 0); nothing but ``n`` and ``symbol``.
``"packed"`` fixed-width little-endian bit packing (wins for tiny or near-uniform streams).
``"rans"``   (default) static-frequency rANS in numba (``ubpe._kernels.entropy``): 64-bit state
             in [2**32, 2**64), 32-bit words, frequencies summing to 2**pb (pb in 12..20) made
             from the stored counts by exact integer arithmetic; O(1) table-lookup decoding.
``"cm"``     (opt-in) adaptive context mixing in numba (``ubpe._kernels.cm``): no stored
             table; each token's bits are predicted from the previous 0..4 tokens and a
             match model, mixed, and binary arithmetic coded. Integer-only, so bit-exact
             everywhere. Smaller than "rans" on streams with context (text, signals), but
             slow: about 1 M tokens/s to encode or decode. Fields: ``n`` and ``payload`` (the coder's bytes, exact length).
``"cmt"``    "cm" with six more contexts for text through its bytes: orders 6 and 8, the current
             word (letters and digits, ASCII case-folded, bytes >= 128), the word with the one
             and the two before it, and the column with the byte above it; the second mixer is
             selected by the previous byte's class. Offered only with ``text_classes``: a
             stream of at most 256 symbols whose alphabet values are bytes; the reader
             derives the same classes from the container's alphabet. Same fields as "cm".
``"cmt2"``   (level 2's text coder; container format 4) the "cmt" contexts plus a class-pattern
             context, each hashed context with a bit-history state mapped to an adaptive
             probability besides its direct one, a second match model for repeats of 16 or
             more bytes, three mixers and a final mixer, and a second APM on order 2
             (``ubpe._kernels.cmtext``, normative). Offered as "cmt" is; same fields.
``"cms"``    (level 2's signal coder; container format 4) context mixing for signal-like
             streams whose token ids are values in order: orders 1, 2 and 4, a sparse context,
             the linear prediction 2 t1 - t2, the pattern of the last differences, magnitudes
             against a running mean and the running loudness, hashed entries adapting down to
             1/77, three mixers and a final mixer, two APMs (``ubpe._kernels.cmsignal``,
             normative). When offered with "cm" it replaces it for streams without
             ``classes`` (one context-mixing run); same fields as "cm". About half "cm"'s speed.
``"cms2"``   (level 2's signal coder; container format 5) context mixing for signals over a
             binary code fitted to the stream: each token's rank by distance from a predicted
             id (a stored center, or the previous token) is coded by a canonical prefix code whose
             length counts the payload's header stores, so a token costs about its entropy + 1
             decisions instead of bit_length(V - 1); five hashed contexts (orders 1 and 2, linear
             prediction, loudness, magnitudes), order 0, two mixers, one APM
             (``ubpe._kernels.cmsignal2``, normative). Takes "cms"'s place (and "cm"'s) for
             streams without ``classes`` when offered; same fields as "cm". 2-3 M tokens/s.
``"mag"``    residual-like streams (``ubpe._kernels.residual``): ``z = zigzag(t - center)`` split
             into a half-octave magnitude class, rANS-coded with a static table per context
             (the class of a running mean of z: the tables follow the signal's loudness, like
             FLAC's partitioned Rice codes), and raw low bits. Fields ``n``, ``center``
             (median token), ``rate`` (running-mean shift), ``pb``, ``table``, ``payload``
             (uint32 LE words), ``raw`` (LSB-first bitstream). Unused ids cost nothing, so a
             dense id range (no stored alphabet) suits it.

Frequency table (``"freq"`` bytes, a little-endian bitstream, see ``ubpe._kernels.entropy``):
1 mode bit; the set of used ids, either as a V-bit bitmap (mode 0) or as alternating runs of
unused/used ids (mode 1: one bit "id 0 is used", then run lengths minus one in adaptive
Golomb-Rice codes, separate statistics per run kind); then, for each used id in increasing
order, its count *code* minus one in adaptive Golomb-Rice. Codes are exact counts (``q == 0``)
or counts rounded to a pseudo-float with ``q`` mantissa bits (``q >= 1``): the encoder tries
several ``q`` and keeps the one minimising table bits + cross-entropy of the payload.

Format version 1 also defined ``"ans"`` (the rANS model coded by the ``constriction``
package, whose float quantisation made its bytes depend on that package's version). No writer
ever chose it by default; it is no longer defined, and decoding it raises CorruptDataError.

Decoding checks, besides types and ranges: the decoded histogram must re-quantise to exactly
the stored count codes (so every listed id occurs), all payload words must be consumed and
the rANS state must return to its initial value.
"""

from __future__ import annotations

import math
from typing import Any

import msgpack
import numpy as np

from ._kernels import cm as _cm
from ._kernels import entropy as _k
from ._kernels import residual as _mag
from .errors import CorruptDataError

__all__ = [
    "encode_stream",
    "decode_stream",
    "stream_cost_bits",
    "counts_cost_bits",
    "pack_uints",
    "unpack_uints",
    "pack_merges",
    "unpack_merges",
]

#: Every coder decode_stream understands.
CODERS = ("rans", "packed", "const", "cm", "mag", "cmt", "cmt2", "cms", "cms2")
#: Coders encode_stream offers by default (the planner offers them at level 1).
DEFAULT_CODERS = ("rans", "packed", "const", "mag")
#: Coders the planner offers at level 2 (the default level).
LEVEL2_CODERS = DEFAULT_CODERS + ("cm", "cmt", "cmt2", "cms2")
#: Coders of text through its bytes: they need ``text_classes``.
TEXT_CODERS = ("cmt", "cmt2")
#: When both text coders are offered, "cmt" is tried only for streams of at most this many
#: tokens (it can win on tiny, very repetitive texts; on longer ones "cmt2" is smaller, and
#: trying both would double the time).
CMT_BOTH_MAX = 1 << 16
_FIELDS = {
    "const": ("coder", "n", "symbol"),
    "packed": ("coder", "n", "width", "payload"),
    "rans": ("coder", "n", "k", "q", "pb", "freq", "payload"),
    "cm": ("coder", "n", "payload"),
    "cmt": ("coder", "n", "payload"),
    "cmt2": ("coder", "n", "payload"),
    "cms": ("coder", "n", "payload"),
    "cms2": ("coder", "n", "payload"),
    "mag": ("coder", "n", "center", "rate", "pb", "table", "payload", "raw"),
}
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
MAX_VOCAB = 1 << 24  #: largest vocabulary a stream may declare (the format's limit)


# ----------------------------------------------------------------------------- helpers


def _check_vocab(vocab_size: Any) -> int:
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    vocab_size = int(vocab_size)
    if not 1 <= vocab_size <= MAX_VOCAB:
        raise ValueError(f"vocab_size must be in [1, {MAX_VOCAB}], got {vocab_size}")
    return vocab_size


def _check_tokens(tokens: Any, vocab_size: int) -> np.ndarray:
    arr = np.asarray(tokens)
    if arr.ndim != 1:
        raise ValueError(f"tokens must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"tokens must have an integer dtype, got {arr.dtype}")
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= vocab_size:
        raise ValueError(f"tokens must be in [0, {vocab_size}), got range [{lo}, {hi}]")
    return arr


def _bit_length(x: int) -> int:
    return int(x).bit_length()


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


def _rans_model(ids: np.ndarray, counts: np.ndarray, vocab_size: int) \
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
    built (the small counts of a large alphabet: most q).
    """
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


def _choose_model(ids: np.ndarray, counts: np.ndarray, vocab_size: int) -> tuple[int, np.ndarray, int, float]:
    """(q, codes, table_bits, cross_entropy_bits) of :func:`_rans_model`."""
    q, codes, _, tbits, ce, _ = _rans_model(ids, counts, vocab_size)
    return q, codes, tbits, ce


def _pb_cap(n: int) -> int:
    return min(RANS_MAX_PB, max(RANS_MIN_PB, _bit_length(n) + 3))


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
    lo = max(RANS_MIN_PB, _bit_length(k - 1) + 1)
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


def _packed_width(hi: int) -> int:
    return _bit_length(hi)


# ----------------------------------------------------------------------------- public API


def text_classes(values: Any) -> np.ndarray | None:
    """The per-symbol classes the "cmt" coder needs (``ubpe._kernels.cm.text_class`` of each
    alphabet value), or None when the symbols are not bytes: more than 256 of them, or a value
    outside [0, 255]. ``values``: the alphabet's values in id order."""
    if isinstance(values, np.ndarray) and not 1 <= len(values) <= 256:
        return None  # (before tolist: a signal's alphabet often holds thousands of values)
    vals = list(values) if not isinstance(values, np.ndarray) else values.tolist()
    if not 1 <= len(vals) <= 256:
        return None
    out = np.empty(len(vals), dtype=np.int64)
    for i, v in enumerate(vals):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) <= 255:
            return None
        out[i] = _cm.text_class(int(v))
    return out


def encode_stream(tokens: np.ndarray, vocab_size: int, *, coders: tuple[str, ...] = DEFAULT_CODERS,
                  classes: np.ndarray | None = None) -> dict:
    """Encode tokens in [0, vocab_size) with the smallest coder; return a msgpack-safe dict.

    Fields by coder (all keys str; values int or bytes or str):

    - ``{"coder": "const", "n", "symbol"}`` when one symbol repeats n >= 1 times;
    - ``{"coder": "packed", "n", "width", "payload"}``: n values of ``width`` bits, little-endian;
    - ``{"coder": "rans", "n", "k", "q", "pb", "freq", "payload"}``: k used symbols, count codes
      with q mantissa bits (0 = exact), table bitstream ``freq``, precision pb, uint32 LE words;
    - ``{"coder": "cm", "n", "payload"}``: context-mixing arithmetic coder bytes (opt-in).

    ``coders`` lists the candidates (``"packed"`` is always one; ``"const"`` is used whenever
    a single symbol repeats and allowed; ``"cmt"`` and ``"cmt2"`` only with ``classes``, from
    :func:`text_classes`, one per symbol; with both, "cmt" only up to ``CMT_BOTH_MAX`` tokens;
    ``"cms2"`` or ``"cms"`` only without ``classes``, and then "cm" is not run, nor "cms" when "cms2" is
    offered). The smallest msgpack size wins; ties go to the earlier of packed, rans, mag, cm, cms2
    (or cms), cmt, cmt2. Same input -> same bytes.
    """
    vocab_size = _check_vocab(vocab_size)
    unknown = [c for c in coders if c not in CODERS]
    if unknown:
        raise ValueError(f"unknown coders {unknown}; choose from {CODERS}")
    arr = _check_tokens(tokens, vocab_size)
    n = int(arr.size)
    if n == 0:
        return {"coder": "packed", "n": 0, "width": 0, "payload": b""}
    counts = np.bincount(arr, minlength=vocab_size).astype(np.int64)
    ids = np.flatnonzero(counts)
    k = int(ids.size)
    if k == 1 and "const" in coders:
        return {"coder": "const", "n": n, "symbol": int(ids[0])}
    width = _packed_width(int(ids[-1]))
    if k == 1 or not ({"rans", "cm", "cms", "cms2", "mag", *TEXT_CODERS} & set(coders)):
        return _packed(arr, n, width)
    best: dict | None = None  # None: "packed", written only if it stays the smallest
    best_size = _packed_size(n, width)

    used = counts[ids]
    if "rans" in coders:  # (the count model is rans's alone: not chosen for the other coders)
        q, codes, model_counts, tbits, _, mode = _rans_model(ids, used, vocab_size)
        choice = _rans_pb(used, model_counts, n)
        est_bytes = None if choice is None else (tbits + choice[1] + ANS_OVERHEAD_BITS) / 8.0
        if choice is not None and est_bytes <= 1.05 * best_size + 64:
            pb, _, f = choice
            rank = np.zeros(vocab_size, dtype=np.int32)
            rank[ids] = np.arange(k, dtype=np.int32)
            dense = rank[arr]
            out = np.zeros(n + 2, dtype=np.uint32)
            start = _k.rans_encode(dense, f, pb, out)
            cand = {"coder": "rans", "n": n, "k": k, "q": q, "pb": pb, "freq": _table_bytes(ids, codes, vocab_size, mode),
                    "payload": out[start:].astype("<u4").tobytes()}
            size = len(msgpack.packb(cand))
            if size < best_size:
                best, best_size = cand, size
    if "mag" in coders:
        cand = _encode_mag(arr, best_size, counts)
        if cand is not None:
            size = len(msgpack.packb(cand))
            if size < best_size:
                best, best_size = cand, size
    # subtle: "cms2" (else "cms") takes the place of "cm" for streams without text classes (one
    # context-mixing run, not two or three); text streams keep "cm" beside their text coders
    signal_cm = None
    if classes is None:
        signal_cm = "cms2" if "cms2" in coders else ("cms" if "cms" in coders else None)
    if "cm" in coders and not signal_cm:
        cand = _encode_cm(arr, vocab_size, min(best_size, _cm_max_bytes(n, vocab_size)))
        if cand is not None:
            size = len(msgpack.packb(cand))
            if size < best_size:
                best, best_size = cand, size
    if signal_cm:
        cand = _encode_cm(arr, vocab_size, min(best_size, _cm_max_bytes(n, vocab_size)), coder=signal_cm)
        if cand is not None:
            size = len(msgpack.packb(cand))
            if size < best_size:
                best, best_size = cand, size
    for coder in TEXT_CODERS:
        if coder not in coders or classes is None:
            continue
        if coder == "cmt" and "cmt2" in coders and n > CMT_BOTH_MAX:
            continue
        if classes.shape != (vocab_size,):
            raise ValueError(f"classes must hold one entry per symbol ({vocab_size}), got shape {classes.shape}")
        cand = _encode_cm(arr, vocab_size, min(best_size, _cm_max_bytes(n, vocab_size)),
                          np.ascontiguousarray(classes, dtype=np.int64), coder)
        if cand is not None:
            size = len(msgpack.packb(cand))
            if size < best_size:
                best, best_size = cand, size
    return _packed(arr, n, width) if best is None else best


def _packed(arr: np.ndarray, n: int, width: int) -> dict:
    """The "packed" stream of the ``n`` tokens ``arr`` (each below 2**width)."""
    return {"coder": "packed", "n": n, "width": width, "payload": pack_uints(arr, width)[1]}


def _packed_size(n: int, width: int) -> int:
    """``len(msgpack.packb(_packed(arr, n, width)))`` without packing the tokens: the map with an
    empty payload (a bin 8 of length 0: 2 bytes) plus the payload's bytes and the header of a
    bin of that length (bin 8, 16 or 32: 2, 3 or 5 bytes)."""
    length = (n * width + 7) // 8
    header = 2 if length < 1 << 8 else (3 if length < 1 << 16 else 5)
    return len(msgpack.packb({"coder": "packed", "n": n, "width": width, "payload": b""})) - 2 + header + length


def _encode_cm(arr: np.ndarray, vocab_size: int, budget: int, classes: np.ndarray | None = None,
               coder: str = "cmt") -> dict | None:
    """The "cm" (or with ``classes`` the text ``coder``, "cmt" or "cmt2") candidate, or None when
    its payload would exceed ``budget`` bytes."""
    tokens = np.ascontiguousarray(arr, dtype=np.int32)
    buf = np.zeros(budget, dtype=np.uint8)
    if classes is None and coder == "cms2":
        from ._kernels import cmsignal2  # subtle: imported (and compiled) only when first used

        length = int(cmsignal2.cms2_encode(tokens, vocab_size, buf))
    elif classes is None and coder == "cms":
        from ._kernels import cmsignal  # subtle: imported (and compiled) only when first used

        length = int(cmsignal.cms_encode(tokens, vocab_size, buf))
    elif classes is None:
        coder = "cm"
        length = int(_cm.cm_encode(tokens, vocab_size, buf))
    elif coder == "cmt2":
        from ._kernels import cmtext  # subtle: imported (and compiled) only when text is coded

        length = int(cmtext.cmt2_encode(tokens, vocab_size, buf, classes))
    else:
        length = int(_cm.cmt_encode(tokens, vocab_size, buf, classes))
    if length > buf.size:  # did not fit: larger than the current best anyway
        return None
    return {"coder": coder, "n": int(tokens.size), "payload": buf[:length].tobytes()}


_BITLEN = _mag.bitlen_table()
_MAG_RATES = np.arange(_mag.MIN_RATE, _mag.MAX_RATE + 1, dtype=np.int64)  #: the running-mean rates the coder tries


def _mag_pb_cap(n: int) -> int:
    """Largest "mag" precision for n tokens: its decoding tables (<= 56 x 2**pb) stay O(n)."""
    return min(_mag.MAX_PB, max(_mag.MIN_PB, _bit_length(n) + 2))


#: :func:`ubpe._kernels.residual.mag_options`'s ``freqs`` when no frequencies are wanted.
_NO_FREQS = np.zeros((0, _mag.N_BUCKETS), dtype=np.int64)


def _mag_freqs(counts: np.ndarray, pb: int) -> np.ndarray:
    """Per-context bucket counts (int64, N_CONTEXTS x N_BUCKETS) -> frequencies summing to
    2**pb on every used context."""
    freqs = np.empty_like(counts)
    _mag.mag_options(np.ascontiguousarray(counts)[None], pb, np.empty((1, 1)), np.empty((1, 1), np.int64), freqs)
    return freqs


def _encode_mag(arr: np.ndarray, budget: int, counts: np.ndarray | None = None) -> dict | None:
    """The "mag" candidate, or None when its estimate cannot beat ``budget`` bytes.

    The center is the median token (the id of a residual's zero when ids follow values; from
    ``counts``, the tokens' histogram, when given); the running-mean rate and the precision pb
    are chosen by exact table bits + raw bits + the payload's cross-entropy under the normalised
    frequencies.
    """
    n = int(arr.size)
    tokens = np.ascontiguousarray(arr, dtype=np.int64)
    if counts is None:
        center = int(np.partition(tokens, n // 2)[n // 2])
    else:  # the smallest token with more than n // 2 tokens at or below it
        center = int(np.searchsorted(np.cumsum(counts), n // 2, side="right"))
    nr = _MAG_RATES.size
    stats = np.zeros((nr, _mag.N_CONTEXTS, _mag.N_BUCKETS), dtype=np.int64)  # per rate
    raw_bits = int(_mag.mag_stats(tokens, center, _BITLEN, _MAG_RATES, stats, np.zeros(nr, dtype=np.int64)))
    npb = _mag_pb_cap(n) + 1 - _mag.MIN_PB
    ces = np.empty((nr, npb), np.float64)
    tbitss = np.empty((nr, npb), np.int64)
    _mag.mag_options(stats, _mag.MIN_PB, ces, tbitss, _NO_FREQS)
    totals = ces + raw_bits + tbitss  # option (rate i, pb MIN_PB + j): the sum in that order
    # the decoder builds a 2**pb-slot table per used context: the smallest pb within 0.05 %
    # (or 8 bits) of the best size (then the smallest size, then the lowest rate: argmin's first)
    least = float(totals.min())
    near = totals <= least + max(8.0, 5e-4 * least)
    j = int(np.argmax(near.any(axis=0)))
    rows = np.flatnonzero(near[:, j])
    i = int(rows[np.argmin(totals[rows, j])])
    total, pb, rate, tbits = float(totals[i, j]), _mag.MIN_PB + j, int(_MAG_RATES[i]), int(tbitss[i, j])
    if total / 8.0 > 1.05 * budget + 64:
        return None
    freqs = _mag_freqs(stats[i], pb)  # the chosen option's
    words = np.zeros(n + 2, dtype=np.uint32)
    raw = np.zeros((raw_bits + 7) // 8, dtype=np.uint8)
    start = _mag.mag_encode(tokens, center, rate, _BITLEN, freqs, pb, words, raw)
    tbuf = np.zeros((tbits + 7) // 8, dtype=np.uint8)
    _mag.table_encode(freqs, tbuf)
    return {"coder": "mag", "n": n, "center": center, "rate": rate, "pb": pb, "table": tbuf.tobytes(),
            "payload": words[start:].astype("<u4").tobytes(), "raw": raw.tobytes()}


def stream_cost_bits(tokens: np.ndarray, vocab_size: int) -> float:
    """Estimate, in bits, the payload + frequency-table size ``encode_stream`` would produce.

    Uses the same model choice as the encoder (exact table size) and the payload's
    cross-entropy plus a fixed flush overhead for ANS; exact for ``packed`` and ``const``.
    Field names and msgpack framing (a few dozen bytes) are not counted.
    """
    vocab_size = _check_vocab(vocab_size)
    arr = _check_tokens(tokens, vocab_size)
    n = int(arr.size)
    if n == 0:
        return 0.0
    counts = np.bincount(arr, minlength=vocab_size).astype(np.int64)
    return counts_cost_bits(counts)


def counts_cost_bits(counts: np.ndarray) -> float:
    """:func:`stream_cost_bits` from a histogram (``counts[t]`` = occurrences of token t).

    The vocabulary size is ``len(counts)``; useful when the caller already has the counts.
    """
    counts = np.asarray(counts, dtype=np.int64)
    vocab_size = _check_vocab(counts.size)
    ids = np.flatnonzero(counts)
    if ids.size <= 1:
        return 0.0
    n = int(counts.sum())
    packed_bits = 8.0 * ((n * _packed_width(int(ids[-1])) + 7) // 8)
    used = counts[ids]
    _, _, model_counts, tbits, ce, _ = _rans_model(ids, used, vocab_size)
    choice = _rans_pb(used, model_counts, n)
    if choice is not None:
        ce = choice[1]
    ans_bits = 8.0 * ((tbits + 7) // 8) + 32.0 * math.ceil((ce + ANS_OVERHEAD_BITS) / 32.0)
    return min(packed_bits, ans_bits)


def _field_int(fields: dict, name: str, lo: int, hi: int | None = None) -> int:
    v = fields[name]
    if type(v) is not int:  # noqa: E721 - bool and numpy scalars are refused on purpose
        raise CorruptDataError(f"field {name!r} must be an int, got {type(v).__name__}")
    if v < lo or (hi is not None and v > hi):
        bound = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise CorruptDataError(f"field {name!r} = {v} out of range {bound}")
    return v


def _field_bytes(fields: dict, name: str) -> bytes:
    v = fields[name]
    if not isinstance(v, (bytes, bytearray)):
        raise CorruptDataError(f"field {name!r} must be bytes, got {type(v).__name__}")
    return bytes(v)


def decode_stream(fields: dict, vocab_size: int, *, max_count: int | None = None,
                  classes: np.ndarray | None = None) -> np.ndarray:
    """Invert :func:`encode_stream`; return the tokens as int32. ``classes``: what
    :func:`text_classes` gives for the stream's alphabet (a "cmt" stream needs them).

    Every field is type- and range-checked before any allocation proportional to ``n``
    (``n`` above ``max_count`` is refused first). Any malformed input raises
    ``CorruptDataError`` naming the field; nothing else escapes for bad data.
    """
    vocab_size = _check_vocab(vocab_size)
    if max_count is not None:
        if isinstance(max_count, bool) or not isinstance(max_count, int) or max_count < 0:
            raise ValueError(f"max_count must be a non-negative int or None, got {max_count!r}")
    if not isinstance(fields, dict):
        raise CorruptDataError(f"stream fields must be a dict, got {type(fields).__name__}")
    coder = fields.get("coder")
    if not isinstance(coder, str):
        raise CorruptDataError(f"field 'coder' must be a str, got {type(coder).__name__}")
    if coder == "ans":
        raise CorruptDataError(
            "field 'coder': the \"ans\" coder (format version 1, coded by the constriction "
            "package) is no longer supported; decode this container with ubpe 0.1"
        )
    if coder not in _FIELDS:
        raise CorruptDataError(f"field 'coder': unknown coder {coder[:40]!r}")
    expected = _FIELDS[coder]
    for name in expected:
        if name not in fields:
            raise CorruptDataError(f"field {name!r} missing for coder {coder!r}")
    extra = sorted(str(key)[:40] for key in fields if key not in expected)
    if extra:
        raise CorruptDataError(f"unexpected fields for coder {coder!r}: {extra}")
    n = _field_int(fields, "n", 0)
    if max_count is not None and n > max_count:
        raise CorruptDataError(f"field 'n' = {n} exceeds max_count {max_count}")
    if coder == "const":
        return _decode_const(fields, n, vocab_size)
    if coder == "packed":
        return _decode_packed(fields, n, vocab_size)
    if coder in ("cm", "cms", "cms2"):
        return _decode_cm(fields, n, vocab_size, coder=coder)
    if coder in TEXT_CODERS:
        if classes is None or classes.shape != (vocab_size,) or vocab_size > 256:
            raise CorruptDataError(f"field 'coder': \"{coder}\" codes text through its bytes, but the "
                                   "stream's symbols are not bytes")
        return _decode_cm(fields, n, vocab_size, np.ascontiguousarray(classes, dtype=np.int64), coder)
    if coder == "mag":
        return _decode_mag(fields, n, vocab_size)
    return _decode_rans(fields, n, vocab_size)


def _decode_const(fields: dict, n: int, vocab_size: int) -> np.ndarray:
    symbol = _field_int(fields, "symbol", 0, vocab_size - 1)
    out = _alloc_tokens(n)
    out.fill(symbol)
    return out


def _decode_packed(fields: dict, n: int, vocab_size: int) -> np.ndarray:
    width = _field_int(fields, "width", 0, _bit_length(vocab_size - 1))
    payload = _field_bytes(fields, "payload")
    expect = (n * width + 7) // 8
    if len(payload) != expect:
        raise CorruptDataError(
            f"field 'payload' has {len(payload)} bytes, expected {expect} for n={n} width={width}"
        )
    if width == 0:
        out = _alloc_tokens(n)
        out.fill(0)
        return out
    values = unpack_uints(payload, n, width)
    if n and int(values.max()) >= vocab_size:
        raise CorruptDataError(f"field 'payload': token {int(values.max())} >= vocab_size {vocab_size}")
    return values.astype(np.int32)


def _decode_rans(fields: dict, n: int, vocab_size: int) -> np.ndarray:
    k = _field_int(fields, "k", 2, vocab_size)
    q = _field_int(fields, "q", 0, MAX_Q)
    pb = _field_int(fields, "pb", RANS_MIN_PB, RANS_MAX_PB)
    if pb > _pb_cap(n):
        raise CorruptDataError(f"field 'pb' = {pb} too large for n={n} (max {_pb_cap(n)})")
    if k > (1 << pb):
        raise CorruptDataError(f"field 'k' = {k} exceeds 2**pb (field 'pb' = {pb})")
    freq = _field_bytes(fields, "freq")
    payload = _field_bytes(fields, "payload")
    if n < k:
        raise CorruptDataError(f"field 'n' = {n} is smaller than the {k} used symbols (field 'k')")
    if len(payload) % 4:
        raise CorruptDataError(f"field 'payload' length {len(payload)} is not a multiple of 4")
    max_words = n + 2
    if len(payload) // 4 > max_words:
        raise CorruptDataError(
            f"field 'payload' has {len(payload) // 4} words, more than n={n} tokens can need"
        )
    ids = np.zeros(k, dtype=np.int64)
    codes = np.zeros(k, dtype=np.int64)
    status = _k.table_decode(np.frombuffer(freq, dtype=np.uint8), vocab_size, ids, codes)
    if status != _k.OK:
        raise CorruptDataError(f"field 'freq': {_TABLE_ERRORS.get(status, 'malformed')}")
    model_counts = _dequantize(codes, q)
    if model_counts is None:
        raise CorruptDataError("field 'freq': count code too large for field 'q'")
    total = int(model_counts.sum())
    if q == 0 and total != n:
        raise CorruptDataError(f"field 'freq': counts sum to {total}, not n={n}")
    # each rounded count is within c * 2**-(q+1) of the true one, so the totals agree as well
    if q > 0 and abs(total - n) << (q + 1) > n:
        raise CorruptDataError(f"field 'freq': model counts sum to {total}, inconsistent with n={n}")
    words = np.frombuffer(payload, dtype="<u4").astype(np.uint32)
    if int(model_counts.sum()) >= RANS_MAX_TOTAL:
        raise CorruptDataError("field 'freq': counts too large for field 'pb'")
    out = _alloc_tokens(n)
    hist = np.zeros(k, dtype=np.int64)  # the kernel counts each decoded symbol
    sym = np.empty(1 << pb, dtype=np.uint16 if k <= 1 << 16 else np.int32)  # slot -> symbol
    status = _k.rans_decode(words, _normalize(model_counts, pb), ids.astype(np.int32), pb, out, hist, sym)
    if status != _k.OK:
        raise CorruptDataError(f"field 'payload': {_RANS_ERRORS.get(status, 'malformed')}")
    _check_histogram(hist, codes, q)
    return out


def _cm_max_bytes(n: int, vocab_size: int) -> int:
    """Longest "cm" payload a writer emits: it must beat "packed" (n * B bits + framing)."""
    return (n * max(1, _bit_length(vocab_size - 1)) + 7) // 8 + 32


#: "cms2"'s longest payload header (``cmsignal2.MAX_HEADER``; its reader allows that much more)
_CMS2_MAX_HEADER = 2 + 4 + 4 * 30


def _decode_cm(fields: dict, n: int, vocab_size: int, classes: np.ndarray | None = None,
               coder: str = "cmt") -> np.ndarray:
    payload = _field_bytes(fields, "payload")
    if len(payload) > _cm_max_bytes(n, vocab_size) + (_CMS2_MAX_HEADER if coder == "cms2" else 0):
        raise CorruptDataError(
            f"field 'payload' has {len(payload)} bytes, more than n={n} tokens can need"
        )
    # every binary decision costs >= -log2(4095/4096) > 1/2840 bit and the coder flushes at
    # most 32 bits, so n * B <= 2840 * (8 * len + 32): a larger n cannot be real (checked
    # before allocating). "cms2" codes B >= 1 decisions per token (its code has L >= 1 for V >= 2)
    per_token = 1 if coder == "cms2" else max(1, _bit_length(vocab_size - 1))
    if n * per_token > 4096 * (8 * len(payload) + 64):
        raise CorruptDataError(
            f"field 'n' = {n}: more tokens than {len(payload)} payload bytes can hold"
        )
    out = _alloc_tokens(n)
    data = np.frombuffer(payload, dtype=np.uint8).copy()  # writable: kernel shared with encoding
    if classes is None and coder == "cms2":
        from ._kernels import cmsignal2  # subtle: imported (and compiled) only when first used

        status = cmsignal2.cms2_decode(data, vocab_size, out)
    elif classes is None and coder == "cms":
        from ._kernels import cmsignal  # subtle: imported (and compiled) only when first used

        status = cmsignal.cms_decode(data, vocab_size, out)
    elif classes is None:
        status = _cm.cm_decode(data, vocab_size, out)
    elif coder == "cmt2":
        from ._kernels import cmtext  # subtle: imported (and compiled) only when text is decoded

        status = cmtext.cmt2_decode(data, vocab_size, out, classes)
    else:
        status = _cm.cmt_decode(data, vocab_size, out, classes)
    if status == _cm.ERR_SYMBOL:
        raise CorruptDataError(f"field 'payload': decoded a token >= vocab_size {vocab_size}")
    if status == _cm.ERR_CHECK:
        raise CorruptDataError("field 'payload': the decoded tokens fail the stream's 16-bit check")
    if status != _cm.OK:
        raise CorruptDataError("field 'payload': length or final bytes differ from the coder output")
    return out


def _decode_mag(fields: dict, n: int, vocab_size: int, lpc: tuple | None = None) -> np.ndarray:
    center, rate, pb = fields["center"], fields["rate"], fields["pb"]
    table, payload, raw = fields["table"], fields["payload"], fields["raw"]
    # the usual case, every field as it must be, in one test; else field by field (their messages)
    if not (type(center) is int and 0 <= center < vocab_size and type(rate) is int
            and _mag.MIN_RATE <= rate <= _mag.MAX_RATE and type(pb) is int and _mag.MIN_PB <= pb <= _mag_pb_cap(n)
            and type(table) is bytes and type(payload) is bytes and type(raw) is bytes):
        center = _field_int(fields, "center", 0, vocab_size - 1)
        rate = _field_int(fields, "rate", _mag.MIN_RATE, _mag.MAX_RATE)
        pb = _field_int(fields, "pb", _mag.MIN_PB, _mag_pb_cap(n))
        table = _field_bytes(fields, "table")
        payload = _field_bytes(fields, "payload")
        raw = _field_bytes(fields, "raw")
    if len(payload) % 4:
        raise CorruptDataError(f"field 'payload' length {len(payload)} is not a multiple of 4")
    if len(payload) // 4 > n + 2:
        raise CorruptDataError(f"field 'payload' has {len(payload) // 4} words, more than n={n} tokens can need")
    # a token has at most (N_BUCKETS >> 1) - 1 raw bits
    if len(raw) > (n * ((_mag.N_BUCKETS >> 1) - 1) + 7) // 8:
        raise CorruptDataError(f"field 'raw' has {len(raw)} bytes, more than n={n} tokens can need")
    freqs = np.zeros((_mag.N_CONTEXTS, _mag.N_BUCKETS), dtype=np.int64)
    status = _mag.table_decode(np.frombuffer(table, dtype=np.uint8), pb, freqs)
    if status != _mag.OK:
        raise CorruptDataError(f"field 'table': {_MAG_ERRORS.get(status, 'malformed')}")
    if lpc is None:
        out = _alloc_tokens(n)
        lpc = _NO_LPC
    else:
        out = _NO_TOKENS
    words = np.frombuffer(payload, dtype="<u4")  # read in place (a copy only on big-endian machines)
    status = _mag.mag_decode(words if words.dtype.isnative else words.astype(np.uint32), np.frombuffer(raw, dtype=np.uint8),
                             center, rate, freqs, pb, vocab_size, out, lpc)
    if status == _mag.ERR_RAW:
        raise CorruptDataError("field 'raw': fewer or more raw bits than the payload's magnitude classes need")
    if status != _mag.OK:
        raise CorruptDataError(f"field 'payload': {_MAG_ERRORS.get(status, 'malformed')}")
    return out if lpc is _NO_LPC else lpc[-1]


_EMPTY_I64 = np.zeros(0, np.int64)
_ONE_ZERO = np.zeros(1, np.int64)
_NO_TOKENS = np.zeros(0, np.int32)
#: ``mag_decode``'s ``lpc`` argument when it decodes tokens (the types of a fused call's)
_NO_LPC = (False, np.zeros(0, np.uint64), np.uint64(0), 0, _EMPTY_I64, _ONE_ZERO, _EMPTY_I64, _EMPTY_I64, _ONE_ZERO,
           _EMPTY_I64, _EMPTY_I64)


def decode_mag_lpc(fields: dict, vocab_size: int, lut: np.ndarray | None, lo: int, bits: int,
                   channels: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]) -> np.ndarray:
    """A "mag" stream (checked as :func:`decode_stream` checks it) decoded and LPC-reconstructed
    in one pass: the int64 signal, ``(channels, frames)`` flattened, wrapped to ``bits`` bits.

    Token ``t`` is the residual ``lut[t]`` (uint64, one per token) or, ``lut`` None, ``lo + t``
    (both modulo 2**bits); ``channels`` holds each channel's checked LPC params as
    :func:`ubpe.predict.check_lpc_params` returns them, for ``fields["n"] // len(channels)``
    frames each. The same values as decoding the tokens, mapping them to values of ``bits``
    bits and inverting the LPC stage, in a quarter less time (``mag_decode``).
    """
    vocab_size = _check_vocab(vocab_size)
    if not isinstance(fields, dict) or fields.get("coder") != "mag":
        raise ValueError("decode_mag_lpc takes a \"mag\" stream")
    if fields.keys() != _MAG_KEYS:  # (the usual case in one comparison)
        for name in _FIELDS["mag"]:
            if name not in fields:
                raise CorruptDataError(f"field {name!r} missing for coder 'mag'")
        extra = sorted(str(key)[:40] for key in fields if key not in _FIELDS["mag"])
        raise CorruptDataError(f"unexpected fields for coder 'mag': {extra}")
    n = _field_int(fields, "n", 0)
    if lut is not None and lut.shape != (vocab_size,):
        raise ValueError("lut must hold one value per token")
    if len(channels) == 1:  # (one array of the five numbers, three views of it)
        block, orders, shifts, coefs = channels[0]
        if orders.shape[0] != -(-n // block):
            raise ValueError("the LPC params do not describe n // channels frames per channel")
        meta = np.array((block, 0, orders.shape[0], 0, coefs.shape[0]), np.int64)
        blocks, bstart, cstart = meta[:1], meta[1:3], meta[3:]
    else:
        frames = n // max(len(channels), 1)
        if frames * len(channels) != n or any(c[1].shape[0] != -(-frames // c[0]) for c in channels):
            raise ValueError("the LPC params do not describe n // channels frames per channel")
        blocks = np.array([c[0] for c in channels], np.int64)
        bstart = np.cumsum([0] + [c[1].shape[0] for c in channels], dtype=np.int64)
        cstart = np.cumsum([0] + [c[3].shape[0] for c in channels], dtype=np.int64)
        orders, shifts, coefs = (np.concatenate([c[j] for c in channels]).astype(np.int64) for j in (1, 2, 3))
    lpc = (True, _EMPTY_U64 if lut is None else lut.astype(np.uint64, copy=False), np.uint64(lo % (1 << 64)),
           64 - bits, blocks, bstart, orders, shifts, cstart, coefs, np.empty(n, np.int64))
    return _decode_mag(fields, n, vocab_size, lpc)


_EMPTY_U64 = np.zeros(0, np.uint64)
_MAG_KEYS = frozenset(_FIELDS["mag"])

_MAG_ERRORS = {
    _mag.ERR_TRUNCATED: "truncated",
    _mag.ERR_RANGE: "frequency table or initial coder state out of range",
    _mag.ERR_CONTEXT: "a context without a frequency table is reached",
    _mag.ERR_SYMBOL: "decoded a token outside [0, vocab_size)",
    _mag.ERR_TRAILING: "words left over or final coder state wrong",
}


def _check_histogram(hist: np.ndarray, codes: np.ndarray, q: int) -> None:
    """The decoded counts must re-quantise to exactly the stored codes (all ids used)."""
    if hist.min() < 1 or not np.array_equal(_quantize(hist.astype(np.int64), q), codes):
        raise CorruptDataError("field 'payload': decoded counts disagree with field 'freq'")




def _alloc_tokens(n: int) -> np.ndarray:
    try:
        return np.empty(n, dtype=np.int32)
    except (MemoryError, ValueError, OverflowError):
        raise CorruptDataError(f"field 'n' = {n}: too many tokens to allocate") from None


_RANS_ERRORS = {
    _k.ERR_TRUNCATED: "truncated",
    _k.ERR_RANGE: "initial coder state out of range",
    _k.ERR_TRAILING: "data left over or final coder state wrong after decoding n tokens",
}

_TABLE_ERRORS = {
    _k.ERR_TRUNCATED: "truncated",
    _k.ERR_OVERSHOOT: "run of ids past vocab_size",
    _k.ERR_COUNT: "number of used ids differs from field 'k'",
    _k.ERR_ESCAPE: "bad escaped value",
    _k.ERR_RANGE: "value out of range",
    _k.ERR_TRAILING: "trailing bytes or nonzero padding",
}


# ----------------------------------------------------------------------------- bit packing


#: Values a Rice sequence (:func:`pack_rice`) holds are below this.
RICE_VALUE_LIMIT = 1 << _k.MAX_VALUE_BITS
#: Largest Rice parameter of :func:`pack_rice`.
MAX_RICE_PARAM = _k.MAX_RICE_PARAM


def pack_rice(values: np.ndarray) -> tuple[int, bytes] | None:
    """Rice-code non-negative ints (< RICE_VALUE_LIMIT) with the parameter that gives the fewest
    bytes; return (parameter, bytes), or None when a value is out of range.

    Layout per value: the Rice code of the stream's count tables (``q = v >> r`` in unary up to
    ``RICE_LIMIT`` zeros and a one, then the low ``r`` bits; quotients from ``RICE_LIMIT`` on
    escape to a 6-bit length and the value's bits), least significant bit first; padding bits
    zero; exactly ceil(bits / 8) bytes.
    """
    arr = np.ascontiguousarray(values, dtype=np.int64)
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= RICE_VALUE_LIMIT):
        return None
    top = _bit_length(int(arr.max())) if arr.size else 0
    best, bits = _rice_choice(arr, min(top, _k.MAX_RICE_PARAM))
    buf = np.zeros((bits + 7) // 8, np.uint8)
    _k.rice_pack_all(arr, best, buf)
    return best, buf.tobytes()


def _rice_choice(arr: np.ndarray, top: int) -> tuple[int, int]:
    """(r, bits): the Rice parameter in [0, top] whose code of ``arr`` (int64, each in [0,
    RICE_VALUE_LIMIT)) has the fewest bits, ties to the smaller r, and that bit count: every r
    sized in one compiled pass (:func:`ubpe._kernels.entropy.rice_bits`; numpy's (top + 1) x n
    arrays took ~25 us for an alphabet's 1 000 gaps)."""
    bits = np.zeros(top + 1, dtype=np.int64)
    _k.rice_bits(arr, bits)
    best = int(np.argmin(bits))
    return best, int(bits[best])


def unpack_rice(data: bytes, count: int, r: int) -> np.ndarray:
    """The ``count`` values :func:`pack_rice` wrote with parameter ``r`` into ``data`` (uint64).

    Raises ``CorruptDataError`` unless ``data`` holds exactly those values: every code valid,
    no bytes beyond the last one, padding bits zero.
    """
    if not 0 <= r <= _k.MAX_RICE_PARAM:
        raise CorruptDataError(f"Rice parameter {r} is outside [0, {_k.MAX_RICE_PARAM}]")
    if count > 8 * len(data):  # every value takes at least one bit: checked before allocating
        raise CorruptDataError(f"{len(data)} bytes cannot hold {count} Rice-coded values")
    buf = np.frombuffer(data, dtype=np.uint8)
    out = np.zeros(count, np.int64)
    end = _k.rice_unpack_all(buf, r, out)
    if end < 0:
        raise CorruptDataError("invalid Rice-coded values (truncated or a bad escape)")
    if (end + 7) // 8 != len(data) or (end % 8 and int(buf[-1]) >> (end % 8)):
        raise CorruptDataError("Rice-coded values: trailing bytes or non-zero padding bits")
    return out.astype(np.uint64)


def pack_uints(values: np.ndarray, width: int | None = None) -> tuple[int, bytes]:
    """Pack non-negative ints into ``width`` bits each, little-endian; return (width, bytes).

    ``width`` defaults to the bit length of the largest value (0 for none or all zeros) and
    must be in [0, 63]. Output has exactly ceil(len * width / 8) bytes, padding bits zero.
    """
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"values must have an integer dtype, got {arr.dtype}")
    hi = 0
    if arr.size:
        if int(arr.min()) < 0:
            raise ValueError("values must be non-negative")
        hi = int(arr.max())
    if width is None:
        width = _bit_length(hi)
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or not 0 <= width <= 63:
        raise ValueError(f"width must be an int in [0, 63], got {width!r}")
    width = int(width)
    if hi >> width:
        raise ValueError(f"value {hi} does not fit in {width} bits")
    out = np.zeros((arr.size * width + 7) // 8, dtype=np.uint8)
    if width and arr.size:
        _k.pack_bits(arr.astype(np.uint64), width, out)
    return width, out.tobytes()


def unpack_uints(data: bytes, count: int, width: int) -> np.ndarray:
    """Inverse of :func:`pack_uints`: ``count`` values of ``width`` bits as int64.

    Raises ``CorruptDataError`` unless ``len(data) == ceil(count * width / 8)`` and the
    padding bits are zero. ``count`` and ``width`` come from the caller (validated first).
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise CorruptDataError(f"packed data must be bytes, got {type(data).__name__}")
    for name, v, hi in (("count", count, None), ("width", width, 63)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0 or (hi is not None and v > hi):
            raise CorruptDataError(f"packed {name} invalid: {v!r}")
    count, width = int(count), int(width)
    expect = (count * width + 7) // 8
    if len(data) != expect:
        raise CorruptDataError(
            f"packed data has {len(data)} bytes, expected {expect} for {count} values of {width} bits"
        )
    out = np.zeros(count, dtype=np.int64)
    if width and count:
        if _k.unpack_bits(np.frombuffer(data, dtype=np.uint8), width, out):
            raise CorruptDataError("packed data has nonzero padding bits")
    return out


# ----------------------------------------------------------------------------- merges

_MERGES_TRUNCATED_BINARY = 0


def pack_merges(merges: np.ndarray, alphabet_size: int) -> bytes:
    """Serialise a merge table: row i = (left, right), both < alphabet_size + i.

    Layout: one method byte (0), then per row the number left * R + right (R = A + i) in
    truncated binary over R*R values, as one little-endian bitstream (high bit of each code
    first), zero padding. About log2(R*R) bits per row, never more than ceil(log2(R*R)).
    """
    arr = np.asarray(merges)
    if arr.size == 0:
        arr = arr.reshape(0, 2)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"merges must have shape (M, 2), got {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"merges must have an integer dtype, got {arr.dtype}")
    if isinstance(alphabet_size, bool) or not isinstance(alphabet_size, (int, np.integer)) or alphabet_size < 1:
        raise ValueError(f"alphabet_size must be a positive int, got {alphabet_size!r}")
    alphabet_size = int(alphabet_size)
    m = arr.shape[0]
    if (alphabet_size + m) >= 1 << 30:
        raise ValueError("alphabet_size + number of merges must be below 2**30")
    arr = arr.astype(np.int64)
    if m:
        limit = alphabet_size + np.arange(m, dtype=np.int64)
        bad = np.flatnonzero((arr < 0).any(axis=1) | (arr >= limit[:, None]).any(axis=1))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"merge {i} = {tuple(arr[i])} has a child outside [0, {alphabet_size + i})")
    empty = np.zeros(0, dtype=np.uint8)
    bits = _k.merges_encode(arr, alphabet_size, empty)
    buf = np.zeros((bits + 7) // 8, dtype=np.uint8)
    _k.merges_encode(arr, alphabet_size, buf)
    return bytes([_MERGES_TRUNCATED_BINARY]) + buf.tobytes()


def unpack_merges(data: bytes, n_merges: int, alphabet_size: int) -> np.ndarray:
    """Inverse of :func:`pack_merges`; returns (n_merges, 2) int32 with row i's children < A + i.

    Raises ``CorruptDataError`` for an unknown method byte, a truncated stream, extra bytes
    or nonzero padding. ``n_merges`` must already be bounded by the caller (it allocates).
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise CorruptDataError(f"merge table must be bytes, got {type(data).__name__}")
    for name, v in (("n_merges", n_merges), ("alphabet_size", alphabet_size)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < (0 if name == "n_merges" else 1):
            raise CorruptDataError(f"merge table {name} invalid: {v!r}")
    n_merges, alphabet_size = int(n_merges), int(alphabet_size)
    if alphabet_size + n_merges >= 1 << 30:
        raise CorruptDataError("merge table: alphabet_size + n_merges too large")
    data = bytes(data)
    if not data:
        raise CorruptDataError("merge table: empty (missing method byte)")
    if data[0] != _MERGES_TRUNCATED_BINARY:
        raise CorruptDataError(f"merge table: unknown method {data[0]}")
    body = np.frombuffer(data, dtype=np.uint8)[1:]
    # every row takes at least floor(log2(R*R)) >= 2*floor(log2 A) bits: cheap early refusal
    min_bits = n_merges * 2 * (alphabet_size.bit_length() - 1)
    if (min_bits + 7) // 8 > body.size:
        raise CorruptDataError("merge table: truncated")
    out = np.zeros((n_merges, 2), dtype=np.int64)
    status = _k.merges_decode(body, alphabet_size, out)
    if status != _k.OK:
        raise CorruptDataError(f"merge table: {_TABLE_ERRORS.get(status, 'malformed')}")
    return out.astype(np.int32)
