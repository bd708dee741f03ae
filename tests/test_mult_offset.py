"""mult_detect's offset search (``ubpe.frontend.mult._mult_offset``) by a compiled loop over the
cuts (``ubpe._kernels.digits.mult_offset``): the same integer costs and the same first argmin as
the numpy table of every cut and value it replaced."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")),
                    suppress_health_check=[HealthCheck.too_slow])


def _mult_offset_table(h: np.ndarray) -> int:
    """``ubpe.frontend.mult._mult_offset`` as numpy computed it before the compiled loop."""
    m = h.shape[0]
    p = int(np.argmax(h))
    s = np.arange(m)
    dev = (s - p + m // 2) % m - m // 2
    pos = ((p - s) % m)[:, None] + dev[None, :]
    cost = ((pos < 0) | (pos >= m)).astype(np.int64) @ h.astype(np.int64)
    return int(np.argmin(cost))


@SETTINGS
@given(st.integers(1, 64), st.integers(0, 2**32 - 1), st.sampled_from(["spread", "ties", "zeros", "peak"]))
def test_compiled_mult_offset_is_the_numpy_table(m, seed, kind):
    from ubpe._kernels import digits
    from ubpe.frontend import mult

    rng = np.random.default_rng(seed)
    if kind == "spread":
        h = rng.integers(0, 10**6, m)
    elif kind == "ties":
        h = rng.integers(0, 2, m) * 7
    elif kind == "zeros":
        h = np.zeros(m, np.int64)
    else:
        h = rng.integers(0, 30, m)
        h[rng.integers(m)] += 10**5
    h = h.astype(np.int64)
    expected = _mult_offset_table(h)
    assert digits.mult_offset(h) == expected
    assert mult._mult_offset(h) == expected == mult._mult_offset_reference(h)
