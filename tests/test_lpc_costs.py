"""The refit's block costs (ubpe.frontend.lpc._block_costs) of an int64 residual of a signal of at
most 32 bits, by the compiled integer sums (``narrow``), are the floats of numpy's float path:
every width's extremes, blocks and spans of one sample, a last block cut short."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ubpe.frontend import lpc

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(st.sampled_from([8, 16, 24, 32]), st.integers(1, 3000), st.integers(1, 700), st.integers(1, 100),
       st.integers(0, 2**32 - 1), st.sampled_from(["noise", "extremes", "zeros"]))
@example(32, 5, 1, 1, 0, "extremes")
@example(16, 1, 1, 1, 0, "zeros")
def test_narrow_block_costs_are_the_float_path(bits, n, block, span, seed, kind):
    rng = np.random.default_rng(seed)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if kind == "noise":
        r = rng.integers(lo, hi, n, endpoint=True)
    elif kind == "extremes":
        r = rng.choice([lo, lo + 1, -1, 0, 1, hi], n)
    else:
        r = np.zeros(n, np.int64)
    r = r.astype(np.int64)
    whole, local = lpc._block_costs(r, block, span)  # int64: numpy's float sums
    whole_n, local_n = lpc._block_costs(r, block, span, narrow=True)
    assert whole.tobytes() == whole_n.tobytes() and local.tobytes() == local_n.tobytes()
    spans = sum(-(-min(block, n - b0) // span) for b0 in range(0, n, block))
    totals = lpc._span_totals(r, block, span, spans, narrow=True)
    assert totals.tobytes() == lpc._span_totals(r, block, span, spans).tobytes()


@SETTINGS
@given(st.sampled_from([8, 16, 32]), st.integers(0, 3000), st.sampled_from([1, 7, 256, 4096]), st.integers(0, 2**32 - 1),
       st.sampled_from(["walk", "extremes"]))
@example(16, 1, 1, 0, "walk")
def test_residual_in_the_signals_width_is_the_int64_residual_narrowed(bits, n, block, seed, kind):
    """lpc_residual writing the signal's width (lpc_forward's output, no int64 copy) stores the
    int64 residual's values: every width, blocks of one sample, values at the width's extremes
    (the residuals wrap)."""
    from ubpe._kernels import level1 as fast

    rng = np.random.default_rng(seed)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if kind == "walk":
        x = np.clip(np.cumsum(rng.integers(-40, 41, n)) * 3, lo, hi)
    else:
        x = rng.choice([lo, hi, 0, -1], n)
    s = x.astype(np.int64)
    nb = -(-n // block) if n else 0
    orders = rng.integers(0, 9, nb).astype(np.int64)
    shifts = np.where(orders > 0, rng.integers(0, 16, nb), 0).astype(np.int64)
    coefs = rng.integers(-(1 << 14), 1 << 14, int(orders.sum())).astype(np.int64)
    wide = np.empty(n, np.int64)
    fast.lpc_residual(s, block, orders, shifts, coefs, 64 - bits, wide)
    narrow = np.empty(n, f"i{bits // 8}")
    fast.lpc_residual(s, block, orders, shifts, coefs, 64 - bits, narrow)
    assert np.array_equal(narrow, wide.astype(f"i{bits // 8}"))
    assert np.array_equal(narrow.astype(np.int64), wide)  # (every value already in the width)
    r, _ = lpc.lpc_forward(x.astype(f"i{bits // 8}"), block=max(block, 1))
    assert r.dtype == np.dtype(f"i{bits // 8}")
