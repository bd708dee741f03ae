"""Numba kernels for the rANS decoder's model in one call (ubpe.coders.rans.decode): the table of
used symbols and count codes parsed, the codes dequantised and checked against the token count,
and the frequencies normalised with their shortfall given out, instead of three kernel calls and
the shortfall's half-dozen numpy calls (on a 1 000-token stream those calls' fixed cost was most
of the model's time).

Each kernel computes exactly the integers of the numpy definitions in ``ubpe.coders.rans``
(``_normalize``); tests/test_decode_kernels.py holds them equal.
"""

from __future__ import annotations

import numpy as np

from . import njit
from .alloc import empty
from .entropy import OK, rans_decode, table_decode
from .ransmodel import dequantize_codes, histogram_matches, normalize_counts

#: :func:`rans_model`'s status when the counts are refused (the caller's step-by-step path says why).
ERR_MODEL = 1


@njit(cache=True, nogil=True)
def normalized_frequencies(counts, total, pb, freqs):
    """``ubpe.coders.rans._normalize`` of int64 ``counts`` summing to ``total`` into ``freqs``
    (int64, same length): the floors of :func:`normalize_counts`, then the shortfall, one each
    to the largest remainders ``c * (M - k) mod total`` (``M = 2**pb``), ties to the lower
    index, chosen by a min-heap of the ``shortfall`` best keys ``remainder * k + (k - 1 - i)``
    (distinct: O(k log k) whatever the counts). Returns the shortfall. Preconditions:
    ``total >= 1`` the counts' sum, ``k <= M``, ``total * M < 2**62``."""
    k = counts.shape[0]
    short = normalize_counts(counts, total, pb, freqs)
    if short <= 0:
        return short
    if short >= k:  # (only when the preconditions fail: _normalize's order[:short] takes every index)
        for i in range(k):
            freqs[i] += 1
        return short
    spare = (np.int64(1) << pb) - k
    heap = empty(short, np.int64)  # a min-heap: heap[0] the smallest key kept
    for i in range(k):
        key = (counts[i] * spare) % total * k + (k - 1 - i)
        if i < short:  # sift up
            j = i
            while j > 0:
                parent = (j - 1) >> 1
                if heap[parent] <= key:
                    break
                heap[j] = heap[parent]
                j = parent
            heap[j] = key
        elif key > heap[0]:  # replace the smallest, sift down
            j = 0
            while True:
                c = 2 * j + 1
                if c >= short:
                    break
                if c + 1 < short and heap[c + 1] < heap[c]:
                    c += 1
                if heap[c] >= key:
                    break
                heap[j] = heap[c]
                j = c
            heap[j] = key
    for j in range(short):
        freqs[k - 1 - heap[j] % k] += 1
    return short


@njit(cache=True, nogil=True)
def rans_model(buf, vocab_size, q, n, pb, max_total, ids, codes, counts, freqs):
    """A rANS stream's model from its ``freq`` bytes (``buf``, uint8): ``ids`` and ``codes``
    (int64, length k) as ``entropy.table_decode`` parses them, ``counts`` the codes dequantised
    (``ransmodel.dequantize_codes``) and ``freqs`` (int64, length k) their
    :func:`normalized_frequencies` at ``2**pb``. Returns OK, a negative ``table_decode`` status,
    or ERR_MODEL when ``ubpe.coders.rans.decode`` refuses the counts: a code too large for
    ``q``, counts summing to other than ``n`` (``q = 0``) or inconsistent with it (``q > 0``:
    ``|total - n| * 2**(q+1) > n``), or a total of ``max_total`` or more. Preconditions:
    ``1 <= k <= vocab_size``, ``0 <= q <= 40``, ``n >= 0``, ``k <= 2**pb``, ``max_total *
    2**pb <= 2**62``."""
    status = table_decode(buf, vocab_size, ids, codes)
    if status != OK:
        return status
    total = dequantize_codes(codes, q, counts)
    if total == -1:
        return ERR_MODEL
    if q == 0:
        if total != n:
            return ERR_MODEL
    elif total < 0 or (total - n if total >= n else n - total) > (n >> (q + 1)):
        return ERR_MODEL  # (|total - n| << (q + 1) > n, without the shift's overflow)
    if total >= max_total:
        return ERR_MODEL
    normalized_frequencies(counts, total, pb, freqs)
    return OK


#: :func:`rans_decode_stream`'s status for a payload refused by ``entropy.rans_decode``:
#: ``ERR_PAYLOAD - status`` (``rans_decode``'s statuses are negative).
ERR_PAYLOAD = 100

#: :func:`rans_decode_stream`'s status when the decoded counts disagree with the stored codes.
ERR_HISTOGRAM = 200


@njit(cache=True, nogil=True)
def rans_decode_stream(buf, words, vocab_size, q, n, pb, max_total, model, out, sym):
    """A whole rANS stream in one call: :func:`rans_model` from the ``freq`` bytes ``buf`` into
    the rows of ``model`` (int64 ``(5, k)``, zero-filled: ids, codes, counts, histogram,
    frequencies), then ``entropy.rans_decode`` of ``words`` (uint32) into ``out`` (int32, ``n``
    tokens; ``sym``: its slot table, ``2**pb`` entries of uint16 or int32 holding ``k - 1``), then
    the decoded histogram checked against the codes (``ransmodel.histogram_matches``). Returns
    OK, :func:`rans_model`'s refusal (a negative table status or ERR_MODEL), ``ERR_PAYLOAD -
    status`` for ``rans_decode``'s, or ERR_HISTOGRAM. Preconditions: those of
    :func:`rans_model` and ``rans_decode``; ``vocab_size <= 2**31``."""
    ids = model[0]
    codes = model[1]
    counts = model[2]
    hist = model[3]
    freqs = model[4]
    status = rans_model(buf, vocab_size, q, n, pb, max_total, ids, codes, counts, freqs)
    if status != OK:
        return status
    k = ids.shape[0]
    ids32 = empty(k, np.int32)
    for i in range(k):
        ids32[i] = ids[i]
    status = rans_decode(words, freqs, ids32, pb, out, hist, sym)
    if status != OK:
        return ERR_PAYLOAD - status
    if not histogram_matches(hist, codes, q):
        return ERR_HISTOGRAM
    return OK
