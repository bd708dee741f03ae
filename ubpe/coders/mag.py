""""mag": residual-like streams, coded by magnitude class (``ubpe._kernels.residual``).

``z = zigzag(t - center)`` is split into a half-octave magnitude class, rANS-coded with a
static table per context (the class of a running mean of z: the tables follow the signal's
loudness, like FLAC's partitioned Rice codes), and raw low bits. Fields ``n``, ``center``
(median token), ``rate`` (running-mean shift), ``pb``, ``table``, ``payload`` (uint32 LE
words), ``raw`` (LSB-first bitstream). Unused ids cost nothing, so a dense id range (no stored
alphabet) suits it. :func:`decode_with_lpc` decodes a stream and inverts an LPC predictor in
the same pass (level 1's usual signal container).
"""

from __future__ import annotations

import numpy as np

from .._kernels import l1plan as _l1plan
from .._kernels import level1 as _fast
from .._kernels import magrank as _rank
from .._kernels import residual as _mag
from .._kernels import tally as _tally
from ..errors import CorruptDataError
from ._base import Coder, Tokens, alloc_tokens, field_bytes, field_int

FIELDS = ("coder", "n", "center", "rate", "pb", "table", "payload", "raw")
#: The running-mean rates the coder tries.
RATES = np.arange(_mag.MIN_RATE, _mag.MAX_RATE + 1, dtype=np.int64)
MIN_RATE, MAX_RATE = _mag.MIN_RATE, _mag.MAX_RATE

#: A stream of more than RATE_SAMPLE_ABOVE tokens chooses its running-mean rate on
#: RATE_SAMPLE_WINDOWS evenly spaced windows of RATE_SAMPLE_ABOVE / 2 tokens in all, then counts
#: its tokens under that rate alone (the counts of seven rates were half of level 1's time on
#: the neural recordings).
RATE_SAMPLE_ABOVE = 1 << 18
RATE_SAMPLE_WINDOWS = 8


def _mag_pb_cap(n: int) -> int:
    """Largest "mag" precision for n tokens: its decoding tables (<= 56 x 2**pb) stay O(n)."""
    return min(_mag.MAX_PB, max(_mag.MIN_PB, int(n).bit_length() + 2))


#: :func:`ubpe._kernels.residual.mag_options`'s ``freqs`` when no frequencies are wanted.
_NO_FREQS = np.zeros((0, _mag.N_BUCKETS), dtype=np.int64)


def _mag_freqs(counts: np.ndarray, pb: int) -> np.ndarray:
    """Per-context bucket counts (int64, N_CONTEXTS x N_BUCKETS) -> frequencies summing to
    2**pb on every used context."""
    freqs = np.empty_like(counts)
    _mag.mag_options(np.ascontiguousarray(counts)[None], pb, np.empty((1, 1)), np.empty((1, 1), np.int64), freqs)
    return freqs


def _rate_stats(tokens: np.ndarray, center: int, rates: np.ndarray,
                known: dict | None) -> tuple[np.ndarray, int, tuple | None]:
    """``mag_stats``' counts of ``tokens`` (int32 or int64) about ``center`` for each rate of ``rates``
    (int64 ``(len(rates), N_CONTEXTS, N_BUCKETS)``), the raw bits, and what the encoder may code
    from: ``(zs, bk, ctx, rows)`` of :func:`ubpe._kernels.level1.mag_stats_kept`, ``rows[i]`` the
    row of ``ctx`` that holds the contexts under ``rates[i]`` (the rates counted here), or None
    when every rate was found in ``known`` (:attr:`~ubpe.coders._base.Tokens.mag_stats`, about
    the same center: taken from it; each rate's counts are its own, the same numbers)."""
    have = {} if not known else {r: v for r, v in known.items() if v[2] == center}
    missing = [i for i, r in enumerate(rates.tolist()) if r not in have]
    # (zeros where the kernel counts into it; else every row is written below: 157 KB of zeros
    # less for each of the short audio files, whose planner counted two of the seven rates)
    shape = (rates.size, _mag.N_CONTEXTS, _mag.N_BUCKETS)
    stats = np.zeros(shape, dtype=np.int64) if len(missing) == rates.size else np.empty(shape, dtype=np.int64)
    kept = None
    if missing:
        # the counted rates' contexts kept for the encoder (the same counts; the encoder's
        # bytes from them the same as mag_encode's: ECG's count and encoding 1043 -> 807 us)
        n = tokens.shape[0]
        sub = stats if len(missing) == rates.size else np.zeros((len(missing),) + stats.shape[1:], np.int64)
        zs, bk, ctx = np.empty(n, np.uint32), np.empty(n, np.uint8), np.empty((len(missing), n), np.uint8)
        raw_bits = int(_fast.mag_stats_kept(tokens, center, rates[missing], sub, zs, bk, ctx))
        if sub is not stats:
            stats[missing] = sub
        kept = (zs, bk, ctx, {i: row for row, i in enumerate(missing)})
    for i, r in enumerate(rates.tolist()):
        if r in have:
            stats[i] = have[r][0]
            raw_bits = int(have[r][1])  # (the raw bits do not depend on the rate)
    return stats, raw_bits, kept


def _encode_mag(arr: np.ndarray, budget: int, counts: np.ndarray | None = None,
                sample_above: int = RATE_SAMPLE_ABOVE, known: dict | None = None) -> dict | None:
    """The "mag" candidate, or None when its estimate cannot beat ``budget`` bytes.

    The center is the median token (the id of a residual's zero when ids follow values; from
    ``counts``, the tokens' histogram, when given); the running-mean rate and the precision pb
    are chosen by exact table bits + raw bits + the payload's cross-entropy under the normalised
    frequencies (beyond ``sample_above`` tokens, :data:`RATE_SAMPLE_ABOVE` unless given, the rate
    by those of a sample of ``sample_above / 2`` tokens, then the precision by all the tokens'
    counts under that rate). ``known``: counts of ``arr`` already made (:func:`_rate_stats`), a
    rate's ``(counts, raw bits, center)`` and, as a fourth element where they were made, its
    options (:func:`stream_options`' rows, taken for the same center and precisions).
    """
    n = int(arr.size)
    # int32 tokens as they are (the kernels read each as int64: the same counts and words; a copy
    # of a blocked writer's million-token block to int64 cost about 1 ms), other dtypes as int64
    tokens = arr if arr.dtype == np.int32 and arr.flags.c_contiguous else np.ascontiguousarray(arr, dtype=np.int64)
    if counts is None:
        center = int(np.partition(tokens, n // 2)[n // 2])
    elif counts.dtype == np.int64 and counts.ndim == 1 and counts.flags.c_contiguous:
        # the smallest token with more than n // 2 tokens at or below it (one compiled pass: the
        # searchsorted of the cumsum below, without the cumulative array)
        center = int(_tally.median_cell(counts, n // 2))
    else:
        center = int(np.searchsorted(np.cumsum(counts), n // 2, side="right"))
    rates = RATES
    if n > sample_above:  # the rate chosen on a sample, then counted on every token
        width = max(sample_above // (2 * RATE_SAMPLE_WINDOWS), 1)
        sample = tokens.reshape(RATE_SAMPLE_WINDOWS, -1)[:, :width] if n % RATE_SAMPLE_WINDOWS == 0 else None
        if sample is None:
            step = n // RATE_SAMPLE_WINDOWS
            sample = np.stack([tokens[k * step:k * step + width] for k in range(RATE_SAMPLE_WINDOWS)])
        stats = np.zeros((rates.size, _mag.N_CONTEXTS, _mag.N_BUCKETS), dtype=np.int64)
        _fast.mag_stats_rows(np.ascontiguousarray(sample), center, rates, stats)  # (each window: means from zero)
        npb = _mag_pb_cap(n) + 1 - _mag.MIN_PB
        ces = np.empty((rates.size, npb), np.float64)
        tbitss = np.empty((rates.size, npb), np.int64)
        _mag.mag_options(stats, _mag.MIN_PB, ces, tbitss, _NO_FREQS)
        rates = rates[int(np.argmin((ces + tbitss).min(axis=1))):][:1]
    nr = rates.size
    stats, raw_bits, kept = _rate_stats(tokens, center, rates, known)  # per rate
    npb = _mag_pb_cap(n) + 1 - _mag.MIN_PB
    ces = np.empty((nr, npb), np.float64)
    tbitss = np.empty((nr, npb), np.int64)
    # the options of the rates whose counts came with them (the planner sized the stream so:
    # :func:`stream_options`, the same counts and precisions) taken as they are: mag_options
    # computes each rate's row from its counts alone, so the same numbers
    have = {} if not known else {r: v[3] for r, v in known.items() if v[2] == center and len(v) > 3
                                 and v[3] is not None and v[3][0].shape == (npb,)}
    todo = [i for i, r in enumerate(rates.tolist()) if r not in have]
    # each row's precision in each option costed here: the chosen option's frequencies from them
    # (mag_freqs_chosen), where _mag_freqs costed the chosen rate's rows at every precision again
    choices = np.empty((len(todo), npb, _mag.N_CONTEXTS), np.int64)
    if len(todo) == nr:
        _mag.mag_options(stats, _mag.MIN_PB, ces, tbitss, _NO_FREQS, choices)
    else:
        for i, r in enumerate(rates.tolist()):
            if r in have:
                ces[i], tbitss[i] = have[r]
        if todo:
            sub_ce = np.empty((len(todo), npb), np.float64)
            sub_tb = np.empty((len(todo), npb), np.int64)
            _mag.mag_options(np.ascontiguousarray(stats[todo]), _mag.MIN_PB, sub_ce, sub_tb, _NO_FREQS, choices)
            ces[todo], tbitss[todo] = sub_ce, sub_tb
    # option (rate i, pb MIN_PB + j): ces + raw_bits + tbitss, the sum in that order. The decoder
    # builds a 2**pb-slot table per used context: the smallest pb within 0.05 % (or 8 bits) of the
    # best size (then the smallest size, then the lowest rate), in one compiled call (numpy's
    # totals, min, mask, any, argmax, flatnonzero and argmin: about 1 % of a short file's compress)
    i, j, total = _l1plan.mag_choice(ces, raw_bits, tbitss)
    i, j, total = int(i), int(j), float(total)
    pb, rate, tbits = _mag.MIN_PB + j, int(rates[i]), int(tbitss[i, j])
    if total / 8.0 > 1.05 * budget + 64:
        return None
    if i in todo:  # the chosen option's frequencies
        freqs = np.empty((_mag.N_CONTEXTS, _mag.N_BUCKETS), np.int64)
        _mag.mag_freqs_chosen(stats[i], pb, choices[todo.index(i), j], freqs)
    else:  # (its rate's options came with the counts)
        freqs = _mag_freqs(stats[i], pb)
    # (not zeroed: mag_encode writes every raw byte and every word from the returned start on,
    # the only ones kept; np.zeros' calloc of ECG's 432 KB of words took fresh pages each call)
    words = np.empty(n + 2, dtype=np.uint32)
    raw = np.empty((raw_bits + 7) // 8, dtype=np.uint8)
    if kept is not None and i in kept[3]:  # the chosen rate counted here: coded from its contexts
        zs, bk, ctx, row_of = kept
        start = _fast.mag_encode_kept(zs, bk, ctx[row_of[i]], freqs, pb, words, raw)
    else:
        start = _fast.mag_encode(tokens, center, rate, freqs, pb, words, raw)  # (the plain encoder's bytes, faster)
    tbuf = np.zeros((tbits + 7) // 8, dtype=np.uint8)
    _mag.table_encode(freqs, pb, tbuf)
    return {"coder": "mag", "n": n, "center": center, "rate": rate, "pb": pb, "table": tbuf.tobytes(),
            "payload": np.ascontiguousarray(words[start:], "<u4").tobytes(), "raw": raw.tobytes()}



def encode(tokens: Tokens, budget: int) -> dict | None:
    """The "mag" stream, or None when its estimate cannot beat ``budget`` bytes."""
    above = RATE_SAMPLE_ABOVE if tokens.rate_sample_above is None else tokens.rate_sample_above
    return _encode_mag(tokens.values, budget, tokens.counts, above, tokens.mag_stats)


def decode(fields: dict, n: int, vocab_size: int, classes: np.ndarray | None) -> np.ndarray:
    return _decode_mag(fields, n, vocab_size)


def _decode_mag(fields: dict, n: int, vocab_size: int, lpc: tuple | None = None) -> np.ndarray:
    center, rate, pb, freqs, words, raw = _checked_fields(fields, n, vocab_size)
    if lpc is None:
        out = alloc_tokens(n)
        lpc = _NO_LPC
    else:
        out = _NO_TOKENS
    status = _mag.mag_decode(words, raw, center, rate, freqs, pb, vocab_size, out, lpc)
    _raise_status(status)
    return out if lpc is _NO_LPC else lpc[-1]


def _checked_fields(fields: dict, n: int, vocab_size: int) -> tuple:
    """``(center, rate, pb, freqs, words, raw)`` of a "mag" stream of ``n`` tokens, every field
    checked as the kernels need it (CorruptDataError otherwise): ``freqs`` the decoded table
    (int64, N_CONTEXTS x N_BUCKETS), ``words`` the payload (native uint32), ``raw`` its bytes."""
    center, rate, pb = fields["center"], fields["rate"], fields["pb"]
    table, payload, raw = fields["table"], fields["payload"], fields["raw"]
    # the usual case, every field as it must be, in one test; else field by field (their messages)
    if not (type(center) is int and 0 <= center < vocab_size and type(rate) is int
            and _mag.MIN_RATE <= rate <= _mag.MAX_RATE and type(pb) is int and _mag.MIN_PB <= pb <= _mag_pb_cap(n)
            and type(table) is bytes and type(payload) is bytes and type(raw) is bytes):
        center = field_int(fields, "center", 0, vocab_size - 1)
        rate = field_int(fields, "rate", _mag.MIN_RATE, _mag.MAX_RATE)
        pb = field_int(fields, "pb", _mag.MIN_PB, _mag_pb_cap(n))
        table = field_bytes(fields, "table")
        payload = field_bytes(fields, "payload")
        raw = field_bytes(fields, "raw")
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
    words = np.frombuffer(payload, dtype="<u4")  # read in place (a copy only on big-endian machines)
    return (center, rate, pb, freqs, words if words.dtype.isnative else words.astype(np.uint32),
            np.frombuffer(raw, dtype=np.uint8))


def _raise_status(status: int) -> None:
    """CorruptDataError for a decoding kernel's error status (nothing for OK)."""
    if status == _mag.ERR_RAW:
        raise CorruptDataError("field 'raw': fewer or more raw bits than the payload's magnitude classes need")
    if status != _mag.OK:
        raise CorruptDataError(f"field 'payload': {_MAG_ERRORS.get(status, 'malformed')}")


_EMPTY_I64 = np.zeros(0, np.int64)


_ONE_ZERO = np.zeros(1, np.int64)


_NO_TOKENS = np.zeros(0, np.int32)


#: ``mag_decode``'s ``lpc`` argument when it decodes tokens (the types of a fused call's)
_NO_LPC = (False, np.zeros(0, np.uint64), np.uint64(0), 0, _EMPTY_I64, _ONE_ZERO, _EMPTY_I64, _EMPTY_I64, _ONE_ZERO,
           _EMPTY_I64, _EMPTY_I64)


def _require_stream_fields(fields: object, caller: str) -> None:
    """That ``fields`` is a "mag" stream's map (ValueError: a caller's error) with exactly its
    fields (CorruptDataError naming the first one missing, or those it should not have)."""
    if not isinstance(fields, dict) or fields.get("coder") != "mag":
        raise ValueError(f"{caller} takes a \"mag\" stream")
    if fields.keys() != _MAG_KEYS:  # (the usual case in one comparison)
        for name in FIELDS:
            if name not in fields:
                raise CorruptDataError(f"field {name!r} missing for coder 'mag'")
        extra = sorted(str(key)[:40] for key in fields if key not in FIELDS)
        raise CorruptDataError(f"unexpected fields for coder 'mag': {extra}")


def decode_with_lpc(fields: dict, vocab_size: int, lut: np.ndarray | None, lo: int, bits: int,
                    channels: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]],
                    out: np.ndarray | None = None) -> np.ndarray:
    """A "mag" stream (checked as :func:`ubpe.coders.decode_stream` checks it) decoded and LPC-reconstructed
    in one pass: the int64 signal, ``(channels, frames)`` flattened, wrapped to ``bits`` bits.

    Token ``t`` is the residual ``lut[t]`` (uint64, one per token) or, ``lut`` None, ``lo + t``
    (both modulo 2**bits); ``channels`` holds each channel's checked LPC params as
    :func:`ubpe.frontend.lpc.check_lpc_params` returns them, for ``fields["n"] // len(channels)``
    frames each. The same values as decoding the tokens, mapping them to values of ``bits``
    bits and inverting the LPC stage, in a quarter less time (``mag_decode``). ``out``: int64,
    C-contiguous, ``n`` cells, written and returned (None: a new array); its contents on entry
    do not matter.
    """
    _require_stream_fields(fields, "decode_with_lpc")
    n = field_int(fields, "n", 0)
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
           64 - bits, blocks, bstart, orders, shifts, cstart, coefs, _int64_out(out, n))
    return _decode_mag(fields, n, vocab_size, lpc)


_EMPTY_U64 = np.zeros(0, np.uint64)


def raw_words(raw: np.ndarray) -> np.ndarray:
    """The raw bitstream's bytes (uint8) as native uint32 words, little-endian, zero-padded to
    ``ceil(len(raw) / 4) + 2`` words (two whole zero words past the data): what
    :func:`ubpe._kernels.magrank.mag_rank_decode` reads 32 bits at a time."""
    words = np.zeros((raw.shape[0] + 3) // 4 + 2, "<u4")
    words.view(np.uint8)[:raw.shape[0]] = raw
    return words if words.dtype.isnative else words.astype(np.uint32)


def decode_with_ranks(fields: dict, vocab_size: int, lut: np.ndarray | None, lo: int, bits: int, order: int,
                      tables: list[np.ndarray], dst: np.ndarray) -> np.ndarray:
    """A "mag" stream of the deltas (order 1 or 2) of ranks, checked as
    :func:`ubpe.coders.decode_stream` checks it, decoded straight to the values
    (:func:`ubpe._kernels.magrank.mag_rank_decode`): ``dst``, frame-major.

    Token ``t`` is the residual ``lut[t]`` (uint64, one per token) or, ``lut`` None, ``lo + t``
    (both modulo 2**bits); the residuals summed (order 1) or summed twice (order 2), per
    channel and wrapped to ``bits`` bits, are ranks into that channel's ``tables[c]`` (its
    distinct values, in ``dst``'s dtype). ``dst``: 1-D, C-contiguous, ``fields["n"]`` cells,
    ``len(tables)`` channels of ``n // len(tables)`` frames, frame ``k`` of channel ``c`` written
    at ``k * len(tables) + c``; its contents on entry do not matter. The values that decoding the
    tokens, mapping and summing them in ``bits`` bits and looking the ranks up give, without
    their intermediate arrays. CorruptDataError for a malformed stream or a rank outside its table.
    """
    _require_stream_fields(fields, "decode_with_ranks")
    n = field_int(fields, "n", 0)
    if lut is not None and lut.shape != (vocab_size,):
        raise ValueError("lut must hold one value per token")
    if order not in (1, 2) or not 1 <= bits <= 64:
        raise ValueError("order must be 1 or 2 and bits in [1, 64]")
    channels = len(tables)
    if (dst.ndim != 1 or dst.shape[0] != n or not dst.flags.c_contiguous or not dst.flags.writeable
            or channels < 1 or n % channels):
        raise ValueError(f"dst must be a writeable C-contiguous 1-D array of n={n} cells, n a multiple of the channels")
    if any(t.ndim != 1 or t.shape[0] < 1 or t.dtype != dst.dtype for t in tables):
        raise ValueError("every channel's table must be a non-empty 1-D array of dst's dtype")
    values = tables[0] if channels == 1 else np.concatenate(tables)
    vstart = np.zeros(channels + 1, np.int64)
    np.cumsum([t.shape[0] for t in tables], out=vstart[1:])
    center, rate, pb, freqs, words, raw = _checked_fields(fields, n, vocab_size)
    status = _rank.mag_rank_decode(words, raw_words(raw), raw.shape[0], center, rate, freqs, pb, vocab_size,
                                   _EMPTY_U64 if lut is None else lut.astype(np.uint64, copy=False),
                                   np.uint64(lo % (1 << 64)), bits, order, np.ascontiguousarray(values), vstart, dst)
    if status == _rank.ERR_RANK:
        raise CorruptDataError("rank: a rank lies outside its channel's distinct values")
    if status == _rank.ERR_LAYOUT:  # (every argument was checked above: a bug, not the stream)
        raise ValueError("mag_rank_decode refused its arguments")
    _raise_status(status)
    return dst


def _int64_out(out: np.ndarray | None, n: int) -> np.ndarray:
    """:func:`decode_with_lpc`'s output array: ``out`` when it is int64, C-contiguous, 1-D and of
    ``n`` cells (ValueError otherwise), else a new one."""
    if out is None:
        return np.empty(n, np.int64)
    if out.dtype != np.int64 or out.ndim != 1 or out.shape[0] != n or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous int64 array of {n} cells")
    return out


_MAG_KEYS = frozenset(FIELDS)


_MAG_ERRORS = {
    _mag.ERR_TRUNCATED: "truncated",
    _mag.ERR_RANGE: "frequency table or initial coder state out of range",
    _mag.ERR_CONTEXT: "a context without a frequency table is reached",
    _mag.ERR_SYMBOL: "decoded a token outside [0, vocab_size)",
    _mag.ERR_TRAILING: "words left over or final coder state wrong",
}



def stream_options(stats: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The "mag" options of ``n`` tokens whose counts under some rates are ``stats`` (as
    :func:`stream_bits` takes them): ``(ce, tbits)``, ``(rates, precisions)`` arrays of
    ``mag_options``' payload cross-entropies and table bits at every precision up to
    ``_mag_pb_cap(n)``, as :func:`_encode_mag` computes them (a rate's row: what it takes
    from ``known``'s fourth element instead of computing it again)."""
    npb = _mag_pb_cap(n) + 1 - _mag.MIN_PB
    ces = np.empty((stats.shape[0], npb), np.float64)
    tbitss = np.empty((stats.shape[0], npb), np.int64)
    _mag.mag_options(np.ascontiguousarray(stats), _mag.MIN_PB, ces, tbitss, _NO_FREQS)
    return ces, tbitss


def stream_bits(stats: np.ndarray, raw_bits: int, n: int) -> float:
    """Bits of the "mag" stream of ``n`` tokens whose counts under some rates are ``stats``
    (int64, ``(rates, N_CONTEXTS, N_BUCKETS)``, as ``mag_stats`` fills them; ``raw_bits`` its
    return value): table, raw bits and payload cross-entropy of the best option of those rates
    and every precision, the coder's own measure (:func:`_encode_mag`, which tries every rate
    of :data:`RATES`: never more, but beyond :data:`RATE_SAMPLE_ABOVE` tokens, where it takes the
    rate a sample rates best: +0.007 % on the neural recordings joined). (The map's framing is not
    counted.)"""
    ces, tbitss = stream_options(stats, n)
    return float((ces + raw_bits + tbitss).min())


def estimate_bits(coded: list[tuple[np.ndarray, int]], rates: tuple[int, ...]) -> list[float]:
    """Bits this coder would spend on each ``(ids, center)`` of ``coded`` (``ids`` integers in
    [0, 2**24), around ``center``, their median, as the coder's), the least over the
    running-mean shifts ``rates`` (each in [MIN_RATE, MAX_RATE]): the magnitude classes' entropy in each
    loudness context (the compiled ``mag_stats`` pass the coder itself runs first, those rates
    only, in one pass): the coder's own measure of them (:func:`stream_bits`: its table bits as
    written, the payload's cross-entropy under its frequencies, the raw low bits)."""
    shifts = np.array(rates, np.int64)
    if shifts.ndim != 1 or not shifts.size or shifts.min() < MIN_RATE or shifts.max() > MAX_RATE:
        raise ValueError(f"rates must be in [{MIN_RATE}, {MAX_RATE}], got {rates!r}")
    checked = []
    for ids, center in coded:
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        if ids.ndim != 1 or (ids.size and (int(ids.min()) < 0 or int(ids.max()) >= 1 << 24)):
            raise ValueError("ids must be 1-D integers in [0, 2**24)")
        checked.append((ids, int(center)))
    rates = len(shifts)
    stats = np.zeros((len(coded) * rates, _mag.N_CONTEXTS, _mag.N_BUCKETS), np.int64)
    raws = [int(_fast.mag_stats(ids, center, shifts, stats[k * rates:(k + 1) * rates]))
            for k, (ids, center) in enumerate(checked)]
    return bits_of_stats(stats, raws, rates)


def bits_of_stats(stats: np.ndarray, raws: list[int], rates: int) -> list[float]:
    """:func:`estimate_bits` from the counts ``mag_stats`` gives (int64, ``(len(raws) * rates,
    N_CONTEXTS, N_BUCKETS)``: row ``k * rates + r`` for rate ``r`` of stream ``k``) and each
    stream's raw bits ``raws``: the least over its rates and the precisions of :func:`stream_bits`
    (stream ``k``'s token count is the sum of its counts). (Until the table coding of issue 28
    this was the counts' entropy + 13 + 9 x span bits a used context: 182 998 bits on the 70
    tables of the bench sets' and held-out files' containers, which the new coding writes in
    85 348.)"""
    out = []
    for k in range(len(raws)):
        block = np.ascontiguousarray(stats[k * rates:(k + 1) * rates])
        out.append(stream_bits(block, raws[k], int(block[0].sum())))
    return out


CODER = Coder("mag", 3, FIELDS, (1, 2), "static", "any", encode, decode)
