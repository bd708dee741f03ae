"""Level 3's per-decision and least-squares kernels are compiled without numba's reference counting
(issue 29's encode floor, benchmarks/results/level3-floor-3.md): with it, every call took and
dropped a reference to each of its 12-18 array arguments (an atomic operation each), and the
least squares' row views one each. These kernels allocate nothing, and their callers hold every
array they are given for the whole call. Their bytes are guarded by test_level3_xctx_bytes.py and
the level-3 fixtures; this checks the compile option that the speed depends on."""

from __future__ import annotations

import numpy as np
import pytest

from ubpe._kernels import mixctx, mixsignal

NO_NRT = (
    mixsignal._final_code, mixsignal._xfinal_code, mixsignal._mix_code, mixsignal._mix2_code,
    mixsignal._ols_add, mixsignal._ols_rescale, mixsignal._ols_solve, mixsignal._ldl_apply,
    mixsignal._ols_solve_refined, mixctx._xlist, mixctx._xbases, mixctx._xcount, mixctx._xprefetch,
)


@pytest.mark.parametrize("kernel", NO_NRT, ids=lambda k: k.py_func.__name__)
def test_compiled_without_nrt(kernel):
    assert kernel.targetoptions.get("_nrt") is False


@pytest.mark.parametrize("kernel", (mixctx.code_state, mixctx.list_state))
def test_state_views_of_none_are_none(kernel):
    assert kernel(None) is None


def test_state_views_share_the_state():
    X = mixctx.new_state(100, 2, mixctx.XC_LISTS)
    c, lst = mixctx.code_state(X), mixctx.list_state(X)
    for name in mixctx.XCode._fields:
        assert np.shares_memory(getattr(c, name), getattr(X, name))
    for name in mixctx.XList._fields:
        assert np.shares_memory(getattr(lst, name), getattr(X, name))

