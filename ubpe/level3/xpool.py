"""The exact-value contexts' state (``mixctx.XState``, ``xctx`` = 1 or 2), kept between codings
(issue 29's encode floor, benchmarks/results/level3-floor-6.md).

``mixctx.new_state`` allocates 0.6 to 26 MiB a coding, most of it the successor lists (LV, LC:
2**lb x XL_K entries) and the APMs (XA, 1 MiB, written whole from the first step's interpolation).
Fresh pages cost a page fault each the first time they are written (on the machine of
results/level3-floor-6.md about 0.6 ms for a 1 147-frame sample's state, XA alone), and an encode
that chooses the contexts codes twice with them (its sample, then the final coding).

``acquire(n, C, xctx)`` returns a state that every coding reads exactly as ``new_state(n, C,
xctx)``: a state kept from an earlier coding of the same table sizes, reset, or a new one.
``release(X)`` keeps at most ``POOL_MAX`` states of at most ``POOL_BYTES`` each (the process then
holds up to 34 MiB; the full set's 26 MiB state of 2**15 values or more is not kept).

The reset writes every array as ``new_state`` does except the lists' symbols and counts (LV,
LC), which keep the earlier coding's values: a list is read only where its key LT[slot] equals
the value's key (``mixctx._xbases``), keys are 32-bit hashes (>= 0) and LT is reset to -1, and
``mixctx._xcount`` clears a slot's LV and LC when it takes the slot for a key. So no coding reads
an entry of LV or LC that it did not write itself (tests/test_level3_floor6.py: the same bytes
with LV and LC filled with noise). Thread-safe: a state is held by one coding at a time.
"""

from __future__ import annotations

import threading

from .._kernels import mixctx

POOL_MAX = 2  #: states kept between codings
POOL_BYTES = 17 << 20  #: the largest state kept (every ``xctx`` = 2 state, 13.6 MiB at most; ``xctx`` = 1's below 2**15 values)

_lock = threading.Lock()
_pool: list = []
_first: dict = {}  # the arrays whose start is a constant of the format: XA's and XW's, from new_state


def _sizes(X) -> tuple:
    return tuple(a.shape for a in X)


def _reset(X, fresh_small) -> None:
    """X (a kept state) written as ``new_state`` writes its arrays, LV and LC aside (module
    docstring); ``fresh_small``: ``new_state``'s XB for these sizes and set."""
    X.XB[:] = fresh_small
    X.XP.fill(32768)
    X.XN.fill(0)
    X.XW[:] = _first["XW"]
    X.XI.fill(0)
    X.XA[:] = _first["XA"]
    X.LT.fill(-1)
    X.LB.fill(-1)
    for a in (X.LK, X.LO, X.GV, X.GC, X.GN):
        a.fill(0)


def acquire(n: int, C: int, xctx: int):
    """A state for n frames of C channels and ``xctx`` (``mixctx.XC_FULL`` or ``XC_LISTS``) that
    codes as ``mixctx.new_state(n, C, xctx)`` (module docstring); give it back with ``release``."""
    if xctx not in (mixctx.XC_FULL, mixctx.XC_LISTS):
        return mixctx.new_state(n, C, xctx)  # (raises its ValueError)
    XB = mixctx.state_header(n, C, xctx)
    xbits, lbits = int(XB[4 + mixctx.XNI]), int(XB[0])
    want = ((1 << xbits) + mixctx.XL_SIZE, 1 << lbits)
    with _lock:
        for i, X in enumerate(_pool):
            if (X.XP.shape[0], X.LT.shape[0]) == want:
                del _pool[i]
                break
        else:
            X = None
    if X is None:
        X = mixctx.new_state(n, C, xctx)
        if not _first:
            _first["XW"] = X.XW.copy()
            _first["XA"] = X.XA.copy()
        return X
    _reset(X, XB)
    return X


def release(X) -> None:
    """Keep X (done with: no coding reads it any more) for a later ``acquire``, up to POOL_MAX states
    of at most POOL_BYTES each."""
    if sum(a.nbytes for a in X) > POOL_BYTES:
        return
    with _lock:
        if len(_pool) < POOL_MAX and _first:
            _pool.append(X)
