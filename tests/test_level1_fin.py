"""The "lpc" stage estimates a block length's cost only to compare it with another's (issue 28,
benchmarks/results/level1-fin.md): with one block length tried, the same residual and params
as before, and no estimate made."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ubpe.frontend import lpc

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "60")),
                    suppress_health_check=[HealthCheck.too_slow])


def _signal(n: int, seed: int, dtype) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    v = 2000 * np.sin(t * 0.05) + np.cumsum(rng.integers(-30, 31, n)) + rng.normal(0, 4, n)
    v *= np.where((t // 89) % 4 == 0, 6.0, 1.0)
    info = np.iinfo(dtype)
    return np.clip(np.rint(v), info.min, info.max).astype(dtype)


def stage_as_before(x: np.ndarray, blocks: tuple[int, ...], reweight: bool, stage: lpc.LpcStage):
    """The stage's result as it was made before: every block length tried costed, the least kept
    (the earlier on ties), blocks after one that held the whole channel not tried."""
    best = None
    for block in blocks:
        r, p = lpc.lpc_forward(x, block=block, candidates=stage.candidates, costed_every=stage.costed_every)
        cost = lpc._local_bits(r, block) + 8 * len(p["coefs"]) + 24 * len(p["orders"])
        if best is None or cost < best[0]:
            best = (cost, r, p)
        if block >= x.shape[0]:
            break
    r, p = best[1:]
    if reweight:
        r, p = lpc.lpc_reweight(x, r, p, **stage.reweight_options)
    return r, p


@SETTINGS
@given(st.integers(1, 1500), st.integers(0, 2**32 - 1), st.sampled_from([np.int16, np.int32, np.uint16]),
       st.sampled_from([(512,), (256, 1024), (1024, 256), (2048, 512), (64, 128, 4096)]), st.booleans())
def test_stage_result_is_the_least_estimate(n, seed, dtype, blocks, reweight):
    x = _signal(n, seed, dtype)
    stage = lpc.LpcStage(blocks=blocks, reweight=reweight, candidates=1, costed_every=4)
    y, params = stage.forward(x[None, :])
    r, p = stage_as_before(x, blocks, reweight, stage)
    assert np.array_equal(y[0], r) and y.dtype == r.dtype
    assert params["channels"][0] == p


@pytest.mark.parametrize(("n", "blocks", "estimates"), [
    (4096, (4096, 16384), 0),  # the screen's windows: the first block length holds the channel
    (3000, (512,), 0),  # one block length
    (3000, (1024, 4096), 2),  # two compared
    (3000, (4096, 1024), 0),  # the first holds it: the second is not tried
    (9000, (1024, 4096), 2),
])
def test_costs_are_estimated_only_to_be_compared(monkeypatch, n, blocks, estimates):
    calls = []
    plain_block, plain_local = lpc._block_bits, lpc._local_bits
    monkeypatch.setattr(lpc, "_block_bits", lambda *a: calls.append(a) or plain_block(*a))
    monkeypatch.setattr(lpc, "_local_bits", lambda *a: calls.append(a) or plain_local(*a))
    x = _signal(n, 7, np.int16)
    stage = lpc.LpcStage(blocks=blocks, candidates=1, costed_every=4)
    y, params = stage.forward(x[None, :])
    assert len(calls) == estimates
    monkeypatch.undo()
    r, p = stage_as_before(x, blocks, False, stage)
    assert np.array_equal(y[0], r) and params["channels"][0] == p
