"""Issue 29's encode floor on short recordings (results/level3-floor-4.md): level 3's encode-cost
model counts the final coding with the exact-value contexts where their sample will be coded, on
recordings of at most ``Settings.level3_search_model_final`` frames, which cuts the search on a
one-channel hourly year; the contexts' sample keeps the frames of the plan without that term (a
shorter one flips their choice), and elsewhere the plan and the bytes are as before."""

from __future__ import annotations

import numpy as np
from test_level3_v6 import hourly

from ubpe import level3
from ubpe.level3 import cost, encoder
from ubpe.level3.search import budget_plan
from ubpe.planner import settings as cfg


def _year(channel: int = 0) -> np.ndarray:
    """One channel of an hourly year on a coarse grid, (8760, 1) int16: the contexts' cue fires."""
    return np.ascontiguousarray(hourly(8760)[:, channel:channel + 1])


def test_final_term_counts_only_where_a_sample_is_coded():
    s = cfg.current()
    # the final coding with the contexts: one XCTX_NS a value more, only where the sample is coded
    assert cost.encode_ns(8759, 1, 1.0, 2190, True) - cost.encode_ns(8759, 1, 1.0, 2190) == cost.XCTX_NS
    assert cost.encode_ns(8759, 1, 1.0, 0, True) == cost.encode_ns(8759, 1, 1.0, 0)
    # a one-channel hourly year: above the floor without the term (the bound), below with it (cut)
    assert cost.search_share(8759, 1, 2190, s, False) == s.level3_search_work
    cut = cost.search_share(8759, 1, 2190, s, True)
    assert s.level3_search_model_least <= cut < s.level3_search_work
    # by default the term is counted up to level3_search_model_final frames, not beyond
    assert cost.search_share(8759, 1, 2190, s) == cut
    with cfg.configured(level3_search_model_final=8000):
        assert cost.search_share(8759, 1, 2190, cfg.current()) == s.level3_search_work


def test_one_channel_year_search_cut_sample_kept():
    s = cfg.current()
    x = _year()
    share, sample_share = encoder._search_shares(x)
    assert share < s.level3_search_work
    assert sample_share == s.level3_search_work  # (the share without the term: the sample's frames)
    assert encoder._search_shares(x)[0] == share
    on = budget_plan(x.shape[0], 1, s, 2, share)
    off = budget_plan(x.shape[0], 1, s, 2, sample_share)
    assert on[0] * on[1] < off[0] * off[1]
    with cfg.configured(level3_search_model_final=0):  # the model before: no cut
        assert encoder._search_shares(x) == (s.level3_search_work, s.level3_search_work)
    with cfg.configured(level3_search_model_final=x.shape[0] - 1):  # one frame too many
        assert encoder._search_shares(x) == (s.level3_search_work, s.level3_search_work)


def _limits(x: np.ndarray) -> tuple[bytes, list]:
    """The encoding of x and the ``limit`` each ``_choose_xctx`` call got (the sample's frames)."""
    seen = []
    original = encoder._choose_xctx

    def spy(y, table, prm, limit=None):
        seen.append(limit)
        return original(y, table, prm, limit)

    encoder._choose_xctx = spy
    try:
        data = level3.encode(x)
    finally:
        encoder._choose_xctx = original
    return data, seen


def test_contexts_sample_keeps_its_frames_and_round_trips():
    x = _year()
    data, seen = _limits(x)
    with cfg.configured(level3_search_model_final=0):
        before, seen_before = _limits(x)
    s = cfg.current()
    share, sample_share = encoder._search_shares(x)
    assert seen and seen == seen_before  # the contexts' sample: the frames of the plan before
    assert seen[0] == budget_plan(x.shape[0], 1, s, 2, sample_share)[0] > budget_plan(x.shape[0], 1, s, 2, share)[0]
    assert np.array_equal(level3.decode(data), x)
    assert np.array_equal(level3.decode(before), x)
    assert level3.encode(x) == data  # deterministic


def test_bytes_as_before_beyond_the_frames():
    x = _year(1)
    with cfg.configured(level3_search_model_final=x.shape[0] - 1):
        beyond = level3.encode(x)
    with cfg.configured(level3_search_model_final=0):
        before = level3.encode(x)
    assert beyond == before
    assert np.array_equal(level3.decode(beyond), x)


# ---------------------------------------------------------------- the full contexts and the encode floor


def test_full_contexts_encode_model():
    s = cfg.current()
    # the model: encode_ns at the least search with the sample, the final coding at the decoder's ns
    got = encoder._full_contexts_encode_ns(1.8, 8759, 1, 2190)
    want = (cost.encode_ns(8759, 1, s.level3_search_model_least, 2190) - cost.coder_ns(1)
            + encoder.xctx_decode_ns(1.8, 8759, 1))
    assert abs(got - want) < 1e-9 * want
    # temp-seattle's shape: the decoder's model keeps the full set, the encoder's does not
    assert encoder.xctx_decode_ns(1.8, 8759, 1) * encoder.XCTX_FLOOR * encoder.XCTX_MARGIN <= 1e9
    assert got * cost.FLOOR * cost.ENC_MARGIN > 1e9
    # more bits a value, a larger sample: slower predicted
    assert encoder._full_contexts_encode_ns(2.5, 8759, 1, 2190) > got
    assert encoder._full_contexts_encode_ns(1.8, 8759, 1, 4096) > got


def test_choose_xctx_light_set_under_the_encode_floor():
    """A one-channel hourly humidity whose contexts are kept (the gain's bar lowered): the full set
    by the decoder's model alone, the lighter one where the encoder's model is asked too."""
    x = np.ascontiguousarray(hourly(8760)[:, 1:2]).astype(np.int64)
    x -= x.min()
    prm = encoder.default_params(1)
    k = encoder._kernels()
    with cfg.configured(level3_xctx_gain=-1.0):
        assert encoder._choose_xctx(x, None, prm, 2190)[k.PRM_XCTX] == 2
    with cfg.configured(level3_xctx_gain=-1.0, level3_xctx_encode_floor=False):
        assert encoder._choose_xctx(x, None, prm, 2190)[k.PRM_XCTX] == 1
