"""Level 1's "lpc" stages built once a process (ubpe.planner.fast.fast_stages) and their keys kept
across plans (ubpe.planner.candidates.stage_key): the same stage for the same options, a new one
for other options, each as the stage built afresh."""

from __future__ import annotations

import numpy as np

from ubpe.frontend.chains import PREDICTORS, build_chain
from ubpe.frontend.lpc import LpcStage
from ubpe.planner import candidates, configured, fast


def _fresh(st: LpcStage, s, screen: bool) -> LpcStage:
    return LpcStage(window=st.window, blocks=s.fast_lpc_blocks or st.blocks,
                    reweight=st.reweight and s.fast_lpc_reweight and not screen,
                    candidates=s.fast_lpc_candidates, costed_every=s.fast_lpc_costed_every,
                    reweight_options=s.lpc_reweight_options(), high_gain=s.fast_lpc_high_gain)


def test_the_same_options_give_the_same_stage_and_others_another():
    for screen in (False, True):
        with configured() as s:
            a = fast.fast_stages(build_chain(PREDICTORS["lpc"]), s, screen)
            b = fast.fast_stages(build_chain(PREDICTORS["lpc"]), s, screen)
            assert a[0] is b[0]
            assert sorted(vars(a[0]).items()) == sorted(vars(_fresh(build_chain(PREDICTORS["lpc"])[0], s, screen)).items())
        with configured(fast_lpc_candidates=2, lpc_reweight_span=32) as s:
            c = fast.fast_stages(build_chain(PREDICTORS["lpc"]), s, screen)
            assert c[0] is not a[0] and c[0].candidates == 2
            assert c[0].reweight_options["span"] == 32 and a[0].reweight_options["span"] != 32
            assert sorted(vars(c[0]).items()) == sorted(vars(_fresh(build_chain(PREDICTORS["lpc"])[0], s, screen)).items())
    # the screen's stage does not refit; the full one does (an "lpc" that ends its chain)
    with configured() as s:
        assert fast.fast_stages(build_chain(PREDICTORS["lpc"]), s, True)[0].reweight is False
        assert fast.fast_stages(build_chain(PREDICTORS["lpc"]), s, False)[0].reweight is True


def test_stage_keys_kept_across_plans_are_the_stages_own():
    with configured() as s:
        st = fast.fast_stages(build_chain(PREDICTORS["lpc"]), s)[0]
    want = (st.name, repr(sorted(vars(st).items())))
    assert candidates.stage_key(st, {}) == want
    assert candidates.stage_key(st, {}) == want  # (from the kept keys)
    other = LpcStage(candidates=2)
    assert candidates.stage_key(other, {}) == (other.name, repr(sorted(vars(other).items())))
    # the stage's forward pass is unchanged by sharing it: the same residual twice
    x = np.cumsum(np.random.default_rng(3).integers(-20, 21, (1, 5000)), axis=1).astype(np.int16)
    y1, p1 = st.forward(x)
    y2, p2 = st.forward(x)
    assert np.array_equal(y1, y2) and p1 == p2
