"""Numba kernel for the rANS decoder's frequencies (ubpe.coders.rans._frequencies): the shortfall
of the normalised counts given out one each to the largest remainders, by a heap, instead of the
half-dozen numpy calls of a stable sort (on a 1 000-token stream those calls' fixed cost was most
of the model's time).

It computes exactly the integers of the numpy definition ``ubpe.coders.rans._normalize``;
tests/test_decode_kernels.py holds them equal. It calls no other kernel: a kernel that calls
another compiles the callee's code again (about 0.8 s of the first call for a wrapper of this
one and ``ransmodel``'s two).
"""

from __future__ import annotations

import numpy as np

from . import njit


@njit(cache=True, nogil=True)
def give_shortfall(counts, total, pb, short, freqs, heap):
    """Add 1 to ``freqs[i]`` (int64, length k) for the ``short`` indices of the largest
    remainders ``counts[i] * (M - k) mod total`` (``M = 2**pb``), ties to the lower index:
    ``ransmodel.normalize_counts``' floors then become ``_normalize``'s frequencies. The
    ``short`` best keys ``remainder * k + (k - 1 - i)`` (distinct) are kept in the min-heap
    ``heap`` (int64 scratch, at least ``short`` entries): O(k log k) whatever the counts.
    Preconditions: ``0 < short < k``, ``total >= 1`` the counts' sum, ``k <= M``,
    ``total * M < 2**62``."""
    k = counts.shape[0]
    spare = (np.int64(1) << pb) - k
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
        elif key > heap[0]:  # replace the smallest kept, sift down
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
