"""Per-thread work arrays reused from call to call (level 1's kernels and their callers).

Level 1 puts each chain's output through several compiled passes that each need a work array
as long as the input (the "mag" statistics' magnitudes and classes, the encoder's contexts,
an int64 residual narrowed before it is kept): allocated afresh each call, an array above
glibc's mmap threshold is mapped and unmapped every time and its pages faulted in again
(about 500 minor faults a level-1 ``compress`` of ECG's 108 000 values). :func:`take` hands out
a view of a buffer kept per thread instead, grown to the largest request seen, never shrunk.

Rules for a caller:

* the contents of an array :func:`take` returns are undefined (whatever the last user left):
  the caller writes every element it reads;
* it is the caller's until the next :func:`take` of the same ``slot`` *in the same thread*:
  never returned, stored or handed to code that may take the same slot; each use site names
  its own slot;
* threads never share a buffer (``threading.local``), so concurrent compressions are safe.

Requests above :data:`MAX_BYTES` are allocated afresh and not kept (a thread's cache stays
below ``MAX_BYTES`` times the number of slots in use: a few tens of MB at most). The cache
holds nothing between threads: a thread that ends frees its buffers.
"""

from __future__ import annotations

import threading

import numpy as np

#: The largest buffer kept, bytes (larger requests: a fresh array each time).
MAX_BYTES = 1 << 23

_local = threading.local()


def take(slot: str, n: int, dtype: type | np.dtype) -> np.ndarray:
    """A C-contiguous 1-D array of ``n`` elements of ``dtype`` (uninitialised), a view of this
    thread's buffer for ``(slot, dtype)``: valid until the next ``take`` of ``slot`` and
    ``dtype`` in this thread (see the module docstring). ``n`` >= 0."""
    dt = np.dtype(dtype)
    nbytes = n * dt.itemsize
    if nbytes > MAX_BYTES:
        return np.empty(n, dt)
    cache = getattr(_local, "buffers", None)
    if cache is None:
        cache = _local.buffers = {}
    key = (slot, dt)
    buf = cache.get(key)
    if buf is None or buf.shape[0] < n:
        # grown to at least twice the last size (capped): inputs that grow a little at a time
        # re-allocate a logarithmic number of times
        size = n if buf is None else min(max(n, 2 * buf.shape[0]), MAX_BYTES // dt.itemsize)
        buf = cache[key] = np.empty(size, dt)
    return buf[:n]


def clear() -> None:
    """Drop this thread's buffers (the tests' hook; nothing else needs it)."""
    _local.buffers = {}
