"""The writer's choices (ubpe.planner): honest, measured, and never worse than a forced choice."""

from __future__ import annotations

import pathlib
from dataclasses import replace

import numpy as np
import pytest

import ubpe
from common import pack_any, unpack_any, check_roundtrip
from ubpe import frontend, planner
from ubpe.alphabet import Alphabet
from ubpe.container import compress, describe

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
EXCERPT = pathlib.Path(ubpe.__file__).parent / "data" / "mitbih_208_excerpt.npy"


def _real_inputs() -> dict[str, np.ndarray]:
    """Small real inputs that exist without ../shared: the bundled ECG excerpt and slices of
    it, the frozen fixtures' values, and a few 2-D, int8 and uint64 arrays."""
    ecg = np.load(EXCERPT)
    rng = np.random.default_rng(7)
    out = {
        "ecg_2000": ecg[:2000],
        "ecg_tail_1500": ecg[-1500:],
        "ecg_step3": ecg[::3][:3000],
        "ecg_as_2ch": ecg[:4000].reshape(2000, 2),
        "ecg_int8": (ecg[:3000] // 16).astype(np.int8),
        "ecg_uint64": ecg[:1500].astype(np.int64).astype(np.uint64) + np.uint64(2**63),
        "walk_2d": np.cumsum(rng.integers(-3, 4, (800, 3)), axis=0).astype(np.int32),
        "ecg_on_grid": ecg[:2000] * 12 - 7,
    }
    for path in sorted(FIXTURES.glob("v1_*.npy")):
        x = np.load(path, allow_pickle=False)
        if 0 < x.size <= 5000:
            out[path.stem] = x.T if x.ndim == 2 and x.shape[1] > x.shape[0] else x  # axis 0 is time
    return out


@pytest.mark.parametrize("level", [1, 2])
def test_automatic_choice_is_never_larger_than_a_forced_one(level, monkeypatch):
    """On real inputs, the automatic container is at most the best forced chain it measures
    (every ``predictor=`` of planner.auto_chains): at level 1, and at level 2 by the
    exhaustive search (up to LEAN_ABOVE values; here forced on every input). The lean search
    beyond LEAN_ABOVE, which sizes context mixing on samples, stays within 1 % of it."""
    inputs = _real_inputs()
    assert "v1_grid_2d_bigendian" in inputs and len(inputs) >= 12
    lean = {name: len(compress(x, level=level)) for name, x in inputs.items()}
    lean_above = planner.LEAN_ABOVE
    monkeypatch.setattr(planner, "LEAN_ABOVE", 1 << 30)
    for name, x in inputs.items():
        auto = compress(x, level=level)
        specs = planner.auto_chains(frontend.to_channels(np.asarray(x)), level)
        names = ("none",) if x.dtype.kind == "b" else [k for k, v in planner.PREDICTORS.items() if v in specs]
        forced = {k: len(compress(x, predictor=k, level=level)) for k in names}
        assert len(auto) <= min(forced.values()), (name, len(auto), forced)
        assert len(auto) == min(forced.values()), (name, len(auto), forced)  # the same candidates
        assert lean[name] <= 1.01 * len(auto), (name, lean[name], len(auto))
        if level == 1 or x.size <= lean_above:
            assert lean[name] == len(auto), (name, lean[name], len(auto))


def test_level_1_measures_only_chains_that_decode_fast():
    x = frontend.to_channels(np.load(EXCERPT)[:3000])
    fast = planner.auto_chains(x, 1)
    assert fast and all(planner.is_fast(spec) for spec in fast)
    assert planner.PREDICTORS["lpc"] in fast
    assert planner.PREDICTORS["lpc+adaptive"] not in fast
    assert planner.PREDICTORS["lpc+adaptive"] in planner.auto_chains(x, 2)
    for level in (1, 2):  # beyond SCREEN_ABOVE too: level 1 never chooses adaptive prediction
        info = ubpe.describe(compress(np.resize(np.load(EXCERPT), planner.SCREEN_ABOVE + 4000), level=level))
        if level == 1:
            assert all(stage["stage"] != "adaptive" for stage in info.front), info.front


def test_level_2_is_never_larger_than_level_1_on_real_inputs():
    for name, x in _real_inputs().items():
        for delta in (None, 0):
            one = compress(x, level=1, delta=delta)
            two = check_roundtrip(x, level=2, delta=delta)
            assert len(two) <= len(one), (name, delta)


def test_level_1_candidate_is_computed_once(monkeypatch):
    """Level 2 reuses level 1's training run: one run per chain, not two (the exhaustive
    search, up to LEAN_ABOVE values); the lean search trains on one chain at most, the fast
    chain its screen ranks first, and only where the estimates call for merges (its static
    estimate at most the context mixer's size, or LEAN_LEVEL1_GAIN times it: on this excerpt,
    neither)."""
    calls = []
    real = planner._train

    def counting(*args, **kwargs):
        calls.append(args[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(planner, "_train", counting)
    x = np.load(EXCERPT)[:3000]
    compress(x, level=1)
    runs_level1 = len(calls)
    calls.clear()
    with monkeypatch.context() as mp:
        mp.setattr(planner, "LEAN_ABOVE", x.size)
        compress(x, level=2)
    chans = frontend.to_channels(x)
    assert runs_level1 == len(planner.auto_chains(chans, 1)) < len(planner.AUTO_CHAINS)
    assert len(calls) == len(planner.auto_chains(chans, 2)) == len(planner.AUTO_CHAINS)
    calls.clear()
    assert x.size > planner.LEAN_ABOVE
    lean = compress(x, level=2)
    assert len(calls) == 0
    monkeypatch.setattr(planner, "LEAN_LEVEL1_GAIN", 0.0)  # merges called for everywhere
    assert len(compress(x, level=2)) <= len(lean)
    assert len(calls) == 1


def test_every_chain_is_measured(monkeypatch):
    """No chain is ruled out unmeasured: up to LEAN_ABOVE values the costing function sees
    every chain; beyond, the lean search ranks every chain's output by its rough size
    (:func:`planner._order0_bytes`) before the costing function sees the closest."""
    seen = set()
    x = np.load(EXCERPT)[:2000]

    def cost_spy(c):
        seen.add(tuple((e["stage"], e.get("order")) for e in c.chain))
        return planner.Cost(len(pack_any(c.tokens.tolist())), 0)

    chains = [planner.build_chain(spec) for spec in planner.AUTO_CHAINS]
    everyone = {tuple((name, opts.get("order")) for name, opts in spec) for spec in planner.AUTO_CHAINS}
    monkeypatch.setattr(planner, "LEAN_ABOVE", x.size)
    planner.plan(frontend.to_channels(x), chains, 2, cost_spy, planner.ReplayEncoder(None, {}))
    assert seen == everyone
    monkeypatch.setattr(planner, "LEAN_ABOVE", x.size - 1)
    rough, real = [], planner._order0_bytes
    monkeypatch.setattr(planner, "_order0_bytes", lambda y, counts=None: rough.append(y.shape[0]) or real(y, counts))
    seen.clear()
    planner.plan(frontend.to_channels(x), chains, 2, cost_spy, planner.ReplayEncoder(None, {}))
    assert rough == [x.size] * len(chains)
    assert seen and seen <= everyone


class _OtherEncoder(planner.ReplayEncoder):
    """A stand-in for a future encoder: proposes its own stream (the bare alphabet), no replay."""

    def propose(self, chain, y, level, cost, sampled):
        alphabet = Alphabet.from_data(y)
        ids = alphabet.to_ids(y)
        return [planner.Candidate(chain, alphabet, np.zeros((0, 2), np.int32), ids, planner.LEVEL_CODERS[level])]


def test_any_encoder_plugs_in_by_proposing_candidates():
    x = np.load(EXCERPT)[:2000]
    sizes = {}

    def cost(c):
        size = len(pack_any(c.tokens.tolist())) + 10 * len(c.chain)
        sizes[id(c)] = size
        return planner.Cost(size, size)

    chains = [planner.build_chain(spec) for spec in planner.AUTO_CHAINS]
    best = planner.plan(frontend.to_channels(x), chains, 1, cost, _OtherEncoder(None, {}))
    assert len(best.merges) == 0 and best.tokens.shape[0] == x.size
    assert sizes[id(best)] == min(sizes.values())


def test_weighting_needs_n_tokens_and_changes_what_is_kept():
    x = np.load(EXCERPT)[:4000]
    with pytest.raises(ValueError, match="n_tokens"):
        compress(x, weighting="count")
    a = len(np.unique(np.diff(x))) + 1
    sizes = {}
    for weighting in ("idf", "count"):
        data = check_roundtrip(x, n_tokens=a + 200, weighting=weighting, delta=1, level=1)
        sizes[weighting] = data
    assert sizes["idf"] != sizes["count"]
    with pytest.raises(ValueError, match="weighting"):
        compress(x, n_tokens=a + 200, weighting="nope")


def test_sample_beyond_full_fit_is_deterministic(monkeypatch):
    monkeypatch.setattr(planner, "FULL_FIT", 3000)
    monkeypatch.setattr(planner, "SAMPLE", 2048)
    x = np.load(EXCERPT)[:12000]
    a = check_roundtrip(x, level=2)
    assert a == compress(x, level=2)
    assert describe(a).front  # a front end is chosen on this smooth signal


def test_n_tokens_smaller_than_the_full_alphabet_beyond_the_sample(monkeypatch):
    """A sample can hold fewer distinct values than all the values: a clear ValueError."""
    monkeypatch.setattr(planner, "FULL_FIT", 3000)
    monkeypatch.setattr(planner, "SAMPLE", 2048)
    x = np.zeros(12_000, np.int16)
    x[700:710] = np.arange(10) * 37 + 5  # between the sample's first two windows (0-127, 791-918)
    with pytest.raises(ValueError, match="n_tokens"):
        compress(x, n_tokens=3, delta=0, level=1)
    a = len(np.unique(x))
    check_roundtrip(x, n_tokens=a + 4, delta=0, level=1)


def test_multichannel_input_offers_decorrelate_chains():
    x = np.load(EXCERPT)[:4000]
    mono = frontend.to_channels(x)
    stereo = frontend.to_channels(x.reshape(2000, 2))
    for level in (1, 2):
        assert not any(spec[0][0] == "decorrelate" for spec in planner.auto_chains(mono, level) if spec)
        offered = [spec for spec in planner.auto_chains(stereo, level) if spec and spec[0][0] == "decorrelate"]
        assert offered and all(spec in planner.PREDICTORS.values() for spec in offered)
        assert all(planner.is_fast(spec) for spec in offered) or level == 2
    assert planner.PREDICTORS["decorrelate+lpc+adaptive"] in planner.auto_chains(stereo, 2)
    assert planner.PREDICTORS["decorrelate+lpc+adaptive"] not in planner.auto_chains(stereo, 1)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int64, np.uint16, np.uint64])
def test_grid_chains_offered_only_when_a_step_above_one_exists(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(3)
    k = rng.integers(0, 5, 500)
    for step, offset, expected in ((1, 0, False), (3, 0, True), (2, int(info.min) + 1, True)):
        x = (np.asarray(offset, dtype=object) + step * k.astype(object)).astype(dtype)
        chans = frontend.to_channels(x)
        assert planner.has_grid(chans) is expected, (step, offset)
        grid = [spec for spec in planner.auto_chains(chans, 2) if spec and spec[0][0] == "grid"]
        assert bool(grid) is expected
    # the extremes of the dtype: the difference spans the whole range, gcd exact
    ends = np.array([info.min, info.max], dtype=dtype)
    assert planner.has_grid(frontend.to_channels(ends)) is (int(info.max) - int(info.min) > 1)
    assert not planner.has_grid(frontend.to_channels(np.full(10, info.max, dtype)))  # constant: no step
    # one channel on a grid is enough
    two = np.stack([k * 4, k + np.arange(500) % 2], axis=1).astype(dtype)
    assert planner.has_grid(frontend.to_channels(two))


def test_forced_grid_and_decorrelate_chains_round_trip():
    x = np.load(EXCERPT)[:3000]
    on_grid = x * 6 + 11
    for name in planner.GRID_CHAINS:
        data = check_roundtrip(on_grid, predictor=name, level=1 if planner.is_fast(planner.PREDICTORS[name]) else 2)
        assert [e["stage"] for e in describe(data).front][0] == "grid"
    # on values on a grid of step 6 the grid chain's symbols are consecutive: its alphabet is a
    # bare range (no gaps stored), where first differences alone need a gap per symbol; the
    # coders see the same token statistics either way, so the sizes stay close
    with_grid = compress(on_grid, predictor="grid+delta1", level=1)
    without = compress(on_grid, predictor="delta1", level=1)
    grid_alphabet = unpack_any(with_grid)["alphabet"]
    assert grid_alphabet["gaps"] == b"" and grid_alphabet["w"] == 0 and "r" not in grid_alphabet
    assert unpack_any(without)["alphabet"]["gaps"] != b""
    assert len(with_grid) <= 1.01 * len(without)
    stereo = x.reshape(1500, 2)
    for name in planner.DECORRELATE_CHAINS:
        data = check_roundtrip(stereo, predictor=name, level=2)
        assert [e["stage"] for e in describe(data).front][0] == "decorrelate"


def test_cm_candidate_on_a_sample_keeps_level_2_at_most_level_1_and_is_deterministic(monkeypatch):
    """Beyond CM_SAMPLE_ABOVE values a chain's context-mixing candidate is sized on a sample;
    the winner is built on all the values and compared exactly with the best candidate built
    on all of them."""
    monkeypatch.setattr(planner, "CM_SAMPLE_ABOVE", 2000)
    monkeypatch.setattr(planner, "CM_SAMPLE", 1024)
    monkeypatch.setattr(planner, "LEAN_ABOVE", 1 << 20)  # the exhaustive search's sample
    sized = []
    real = planner._windows

    def spy(n, total, count=planner.WINDOWS):
        if total == 1024:
            sized.append(n)
        return real(n, total, count)

    monkeypatch.setattr(planner, "_windows", spy)
    ecg = np.load(EXCERPT)
    for x in (ecg[:6000], ecg[-5000:].reshape(2500, 2)):
        sized.clear()
        two = check_roundtrip(x, level=2)
        assert sized  # some chain's candidate sized on the sample
        assert two == compress(x, level=2)
        assert len(two) <= len(compress(x, level=1))


def test_level_2_context_mixing_candidates_have_no_merges(monkeypatch):
    """Level 2 offers its context-mixing coders the bare alphabet only (they model the values'
    context themselves): every "cm" candidate proposed, on a signal whose static candidate
    keeps merges, has none."""
    rng = np.random.default_rng(5)
    x = np.tile(rng.integers(0, 50, 40), 60).astype(np.int16)  # 2 400 values, merges pay
    seen = []
    real = planner.ReplayEncoder.propose

    def spy(self, chain, y, level, cost, sampled):
        out = real(self, chain, y, level, cost, sampled)
        seen.extend(out)
        return out

    monkeypatch.setattr(planner.ReplayEncoder, "propose", spy)
    check_roundtrip(x, level=2, predictor="none")
    static = [c for c in seen if c.family == "static" and not c.variant]
    cm = [c for c in seen if c.family == "cm"]
    assert static and len(static[0].merges) > 0
    assert cm and all(len(c.merges) == 0 for c in cm)
    assert all(np.array_equal(c.tokens, c.alphabet.to_ids(x.astype(np.int64))) for c in cm)


def test_screen_keeps_channels_together_for_decorrelate():
    """Beyond SCREEN_ABOVE the screen samples windows; a chain relating channels sees them as
    the input's channels (not windows as channels), so near-identical channels pick it."""
    rng = np.random.default_rng(11)
    left = np.cumsum(rng.integers(-40, 41, 40_000)).astype(np.int32)
    x = np.stack([left, left + rng.integers(-1, 2, left.size)], axis=1)
    assert x.size > planner.SCREEN_ABOVE
    shapes = []
    real = frontend.forward

    def spy(values, chain):
        if chain and chain[0].name == "decorrelate":
            shapes.append(values.shape)
        return real(values, chain)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(frontend, "forward", spy)
        planner._screen(frontend.to_channels(x), [planner.build_chain(planner.PREDICTORS[k])
                        for k in ("delta1", "lpc", "decorrelate+delta1")], _packed_cost, planner.ReplayEncoder(None, {}))
    assert shapes and all(s[0] == 2 for s in shapes), shapes  # the input's two channels
    data = check_roundtrip(x, level=1)
    assert describe(data).front[0]["stage"] == "decorrelate"
    assert len(data) <= len(compress(x, predictor="delta1", level=1))



def test_screen_windows_are_long_enough_to_learn_and_close_chains_go_on():
    """The screen's windows hold SCREEN_SAMPLE / SCREEN_WINDOWS frames of one channel (4096:
    an LPC block, time for the adaptive cascade to learn); besides the SCREEN_KEEP smallest,
    every chain within SCREEN_CLOSE of the last of them goes on (the level-1 proxy errs by
    about that much)."""
    assert planner.SCREEN_SAMPLE // planner.SCREEN_WINDOWS >= 4096
    x = frontend.to_channels(np.cumsum(np.random.default_rng(4).integers(-9, 10, 40_000)).astype(np.int32))
    names = ["none", "delta1", "delta2", "lpc", "delta1+adaptive", "lpc+adaptive"]
    chains = [planner.build_chain(planner.PREDICTORS[k]) for k in names]
    shapes, real = [], frontend.forward

    def spy(values, chain):
        shapes.append(values.shape)
        return real(values, chain)

    def runs(sizes: list[float]) -> list[str]:
        """The chains kept when the screen's cost of chain i is sizes[i] (by its stage names)."""
        by_stages = {tuple(st.name for st in ch): v for ch, v in zip(chains, sizes)}

        def cost(c):
            return planner.Cost(int(by_stages[tuple(e["stage"] for e in c.chain)]), 0)

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(frontend, "forward", spy)
            kept, _ = planner._screen(x, chains, cost, planner.ReplayEncoder(None, {}))
        return [names[chains.index(k)] for k in kept]

    # delta1 and delta2 share their stage names: give them the same size
    close = int(808 * planner.SCREEN_CLOSE)
    assert runs([1000, 900, 900, 800, 808, 900]) == ["lpc", "delta1+adaptive"]
    assert runs([1000, 900, 900, 800, 808, close]) == ["lpc", "delta1+adaptive", "lpc+adaptive"]
    assert runs([1000, 900, 900, 800, 808, close + 1]) == ["lpc", "delta1+adaptive"]
    assert shapes and all(s == (planner.SCREEN_WINDOWS, planner.SCREEN_SAMPLE // planner.SCREEN_WINDOWS) for s in shapes)


def _quiet_with_events(n: int, seed: int = 12) -> np.ndarray:
    """A quiet int32 noise floor with rare large excursions (a seismometer between events):
    most of the distinct residuals are the excursions, each a value of its own."""
    rng = np.random.default_rng(seed)
    d = rng.normal(0, 30, n)
    events = rng.choice(n, n // 16, replace=False)
    d[events] += rng.normal(0, 200_000, events.size)
    return np.round(np.cumsum(d)).astype(np.int32)


@pytest.mark.parametrize("sizes", ["full", "cm_sample"])
def test_level2_offers_dense_ids_to_the_context_mixers(sizes, monkeypatch):
    """A heavy-tailed residual's alphabet (its excursions, each a distinct value) costs more
    than the holes of its range cost "cms2": level 2 offers the dense ids over [min, max] (no
    alphabet stored), sized on all the values or on a coder sample (then rebuilt); the container
    is exact and smaller than without the offer (DENSE_CM_ALPHABET above every alphabet)."""
    if sizes == "cm_sample":
        monkeypatch.setattr(planner, "CM_SAMPLE_ABOVE", 4096)
        monkeypatch.setattr(planner, "CM_SAMPLE", 4096)
    x = _quiet_with_events(12_000)
    data = check_roundtrip(x, level=2, predictor="delta1")
    d = unpack_any(data, raw=False)
    with monkeypatch.context() as mp:
        mp.setattr(planner, "DENSE_CM_ALPHABET", 1 << 30)
        without = compress(x, level=2, predictor="delta1")
    assert d["stream"]["coder"] == "cms2" and len(data) < len(without)
    a = d["model"]["a"]
    residual = np.diff(x.astype(np.int64))
    assert a == int(residual.max()) - int(residual.min()) + 1 > np.unique(residual).size  # every value of the range


def test_dense_ids_are_not_offered_for_small_alphabets():
    y = np.array([0, 5, 5, 9, 0, 100], np.int64)
    assert planner._dense_cm_candidate([], y, 4, ("cms2",)) is None  # 4 < DENSE_CM_ALPHABET
    c = planner._dense_cm_candidate([], y, 4, ("cms2",), always=True)
    assert len(c.alphabet) == 101 and c.tokens.tolist() == [0, 5, 5, 9, 0, 100] and c.variant == "dense"
    wide = np.array([0, 1 << 40], np.int64)
    assert planner._dense_cm_candidate([], wide, 2, ("cms2",), always=True) is None  # beyond MAX_VOCAB


def _packed_cost(c):
    size = len(pack_any(c.tokens.tolist()))
    return planner.Cost(size, size)


def _training_lengths(monkeypatch) -> list[int]:
    """The number of values of every training run the planner starts, in order."""
    lengths: list[int] = []
    real = planner._train

    def spy(a, ids, max_merges, fit_options):
        lengths.append(int(ids.shape[0]))
        return real(a, ids, max_merges, fit_options)

    monkeypatch.setattr(planner, "_train", spy)
    return lengths


def test_probe_skips_training_on_all_values_when_no_merge_pays(monkeypatch):
    """Smooth-signal residuals: the probe (a run on PROBE_SAMPLE values) keeps no merge, so no
    run covers all the values and the container has none."""
    monkeypatch.setattr(planner, "PROBE_SAMPLE", 2048)
    lengths = _training_lengths(monkeypatch)
    x = np.load(EXCERPT)[:12000]
    c = check_roundtrip(x, level=1, predictor="lpc")
    assert lengths and max(lengths) <= 2048, lengths
    assert describe(c).n_merges == 0


def test_probe_trains_on_all_values_when_merges_pay(monkeypatch):
    """A repeated motif: merges pay on the probe, so the chain's run covers all the values and
    the container keeps merges, exactly as without the probe."""
    monkeypatch.setattr(planner, "PROBE_SAMPLE", 2048)
    rng = np.random.default_rng(3)
    motifs = rng.integers(0, 200, (6, 9))
    x = motifs[rng.integers(0, 6, 1500)].reshape(-1).astype(np.int16)  # 13 500 values
    lengths = _training_lengths(monkeypatch)
    c = check_roundtrip(x, level=1, predictor="none")
    assert x.size in lengths, lengths
    assert describe(c).n_merges > 0
    monkeypatch.setattr(planner, "_probe", lambda *args: (None, True))  # no probe: train on all values
    assert compress(x, level=1, predictor="none") == c


def test_probe_on_a_short_input_is_its_only_training_run(monkeypatch):
    """Up to PROBE_SAMPLE values the probe's run is the chain's run: one run per chain."""
    lengths = _training_lengths(monkeypatch)
    rng = np.random.default_rng(5)
    x = np.tile(rng.integers(0, 50, 40), 60).astype(np.int16)  # 2 400 values, merges pay
    c = check_roundtrip(x, level=1, predictor="none")
    assert lengths == [x.size]
    assert describe(c).n_merges > 0


def test_level_2_does_not_cost_the_bare_alphabet_twice_with_the_static_coders(monkeypatch):
    """Level 2's context-mixing candidate (the bare alphabet) is offered the context mixers,
    "packed" and "const" only: level 1's bare candidate, the same tokens, already measured the
    static coders. The container is still never larger than level 1's."""
    from ubpe import entropy

    offered = []
    real = entropy.encode_stream

    def spy(tokens, vocab_size, *, coders=entropy.DEFAULT_CODERS, classes=None):
        offered.append(tuple(coders))
        return real(tokens, vocab_size, coders=coders, classes=classes)

    monkeypatch.setattr(entropy, "encode_stream", spy)
    x = np.load(EXCERPT)[:4000]
    two = check_roundtrip(x, level=2)
    context = [c for c in offered if set(c) & {"cm", "cms", "cms2"}]
    assert context and all("rans" not in c and "mag" not in c and "packed" in c for c in context)
    assert any("rans" in c for c in offered)
    monkeypatch.setattr(entropy, "encode_stream", real)
    assert len(two) <= len(compress(x, level=1))


def test_dense_ids_beyond_full_fit_round_trip(monkeypatch):
    """Beyond FULL_FIT a dense candidate sized on the sample and rebuilt on all the values
    (whose range may be wider) is exact."""
    monkeypatch.setattr(planner, "FULL_FIT", 8192)
    monkeypatch.setattr(planner, "SAMPLE", 4096)
    monkeypatch.setattr(planner, "DENSE_CM_ALPHABET", 2)
    x = _quiet_with_events(12_000, seed=5)
    seen = []
    real = planner._dense_cm_candidate

    def spy(*args, **kwargs):
        c = real(*args, **kwargs)
        seen.append((kwargs.get("always", False), c is not None))
        return c

    monkeypatch.setattr(planner, "_dense_cm_candidate", spy)
    check_roundtrip(x, level=2, predictor="delta1")
    assert (False, True) in seen  # offered on the sample


def _cm_runs(monkeypatch) -> list[int]:
    """The number of tokens of every context-mixing run the planner starts, in order."""
    from ubpe import entropy

    runs: list[int] = []
    real = entropy._encode_cm

    def spy(arr, vocab_size, budget, classes=None, coder="cmt"):
        runs.append(int(arr.size))
        return real(arr, vocab_size, budget, classes, coder)

    monkeypatch.setattr(entropy, "_encode_cm", spy)
    return runs


def test_lean_search_runs_about_one_full_context_mixing_pass(monkeypatch):
    """Beyond LEAN_ABOVE values level 2 sizes its context-mixing candidates on samples of at
    most LEAN_CM_SAMPLE values and builds on all the values only the best estimate; the
    exhaustive search runs the coder on all the values of every chain it screens in. The lean
    container stays within 1 % of the exhaustive one and at most level 1's."""
    x = np.resize(np.load(EXCERPT), 12_000)
    assert x.size > max(planner.LEAN_ABOVE, planner.LEAN_CM_SAMPLE, planner.LEAN_SMALL)
    monkeypatch.setattr(planner, "LEAN_CLOSE", 1.05)  # several finalists, sized on samples
    runs = _cm_runs(monkeypatch)
    lean = check_roundtrip(x, level=2)
    full = [r for r in runs if r == x.size]
    sampled = [r for r in runs if r != x.size]
    assert len(full) == 1 and len(sampled) >= 2 and all(r <= planner.LEAN_CM_SAMPLE for r in sampled), runs
    assert compress(x, level=2) == lean == compress(x, level=2, threads=2)  # deterministic
    runs.clear()
    with monkeypatch.context() as mp:
        mp.setattr(planner, "LEAN_ABOVE", x.size)
        exhaustive = compress(x, level=2)
    assert len([r for r in runs if r == x.size]) > len(full)
    assert len(exhaustive) <= len(lean) <= 1.01 * len(exhaustive)
    assert len(lean) <= len(compress(x, level=1))


def test_lean_search_sizes_context_mixing_on_a_sample(monkeypatch):
    """With a small LEAN_CM_SAMPLE, the finalists' context-mixing candidates are sized on a
    sample, the winner rebuilt on all the values: exact, deterministic, at most level 1."""
    monkeypatch.setattr(planner, "LEAN_CM_SAMPLE", 1024)
    monkeypatch.setattr(planner, "LEAN_KEEP", 3)  # several finalists, so samples are compared
    runs = _cm_runs(monkeypatch)
    ecg = np.load(EXCERPT)
    for x in (ecg[:6000], ecg[-5000:].reshape(2500, 2)):
        runs.clear()
        two = check_roundtrip(x, level=2)
        assert 1024 in runs and x.size in runs, runs
        assert two == compress(x, level=2)
        assert len(two) <= len(compress(x, level=1))


def test_order0_bytes_ranks_by_entropy_and_table():
    """The lean search's rough size: order-0 entropy plus LEAN_TABLE_BITS per distinct value."""
    y = np.array([0, 0, 0, 1], np.int64)
    expected = (4 * np.log2(4) - 3 * np.log2(3) + 2 * planner.LEAN_TABLE_BITS) / 8
    assert planner._order0_bytes(y) == pytest.approx(expected)
    assert planner._order0_bytes(np.zeros(0, np.int64)) == 0.0
    wide = np.array([0, 1 << 40, 0, 1 << 40], np.int64)  # beyond a histogram: unique counts
    assert planner._order0_bytes(wide) == pytest.approx((4 + 2 * planner.LEAN_TABLE_BITS) / 8)
    top = np.array([2**64 - 1, 2**64 - 2], np.uint64)
    assert planner._order0_bytes(top) == pytest.approx((2 + 2 * planner.LEAN_TABLE_BITS) / 8)
    for v in (y, wide, top):  # the counts the lean search computes once give the same size
        assert planner._value_counts(v).tolist() == np.unique(v, return_counts=True)[1].tolist()
        assert planner._order0_bytes(v, planner._value_counts(v)) == planner._order0_bytes(v)


def _lean_outputs(x: np.ndarray) -> list[tuple[list, np.ndarray, list[dict]]]:
    """(chain, output on the screen's sample, record) for every chain the lean search ranks."""
    xc = frontend.to_channels(np.asarray(x))
    windows, joined, scale = planner._screen_sample(xc)
    out = []
    for spec in planner.auto_chains(xc, 2):
        chain = planner.build_chain(spec)
        across = any(st.name == "decorrelate" for st in chain)
        y, record = frontend.forward(joined if across else windows, chain)
        out.append((chain, np.ascontiguousarray(y).reshape(-1), record))
    return out


def test_forward_passes_share_prefixes_and_give_the_same_output():
    """The lean search's forward passes reuse the longest computed prefix ("lpc+adaptive" from
    "lpc"): the output and record of every chain are those of its own forward pass, and each
    distinct prefix runs once."""
    ecg = np.load(EXCERPT)
    for x in (ecg[:20_000], ecg[:6000].reshape(3000, 2)):
        xc = frontend.to_channels(x)
        chains = [planner.build_chain(spec) for spec in planner.auto_chains(xc, 2)]
        cache: dict = {}
        inputs = {False: xc, True: xc}
        for i, chain in enumerate(chains):
            y, record = planner._forward_shared(inputs, chains, i, cache)
            y0, record0 = frontend.forward(xc, planner.build_chain(planner.auto_chains(xc, 2)[i]))
            assert np.array_equal(y, y0) and y.dtype == y0.dtype and record == record0, record0
        prefixes = {tuple((st.name, repr(sorted(vars(st).items()))) for st in c[:k])
                    for c in chains for k in range(1, len(c) + 1)}
        assert len(cache) == len(prefixes) < sum(len(c) for c in chains)


def test_static_estimate_tracks_the_exact_level_1_proxy():
    """The lean search ranks chains by _static_estimate instead of costing them exactly: on
    the bundled ECG excerpt (whole and on a grid) every predicting chain's estimate is within
    5 % of the exact proxy (_screened_size), and the chain it ranks first is within SCREEN_CLOSE
    of the exact best. Values that
    are not integers rank last; an empty output costs its params only."""
    ecg = np.load(EXCERPT)
    base = {"magic": "UBPE", "v": 2, "dtype": "<i2", "shape": [1], "layout": "C", "crc": 0, "front": []}
    from ubpe import container

    def cost(c):
        return container._cost(base, c)

    for x in (ecg, ecg[:5000] * 12 - 7):
        outs = _lean_outputs(x)
        exact = [planner._screened_size(rec, y, cost, 1.0) for _, y, rec in outs]
        est = [min(planner._static_estimate(rec, y, 1.0)) for _, y, rec in outs]
        for (chain, _, _), e, s in zip(outs, est, exact):
            if chain:  # raw values: the estimate may overrate them (the lean search checks those exactly)
                assert 0.95 * s <= e <= 1.05 * s, ([st.name for st in chain], e, s)
        # the chain the estimate ranks first is within SCREEN_CLOSE of the exact best
        assert exact[int(np.argmin(est))] <= planner.SCREEN_CLOSE * min(exact), (est, exact)
    assert min(planner._static_estimate([], np.zeros(4, np.float64), 1.0)) == float("inf")
    assert planner._static_estimate([], np.zeros(0, np.int64), 1.0)[0] == 1.0  # msgpack's empty list


def test_mag_bits_of_several_inputs_are_each_ones_own():
    """_mag_bits of several (ids, center) at once gives each the bits of a call of its own,
    to the last bit (its rows' entropies are summed as one call's), and the least over the
    rates: a louder second input does not move the first's bits."""
    rng = np.random.default_rng(11)
    quiet = rng.integers(90, 110, 3000).astype(np.int64)
    loud = np.abs(np.cumsum(rng.integers(-40, 41, 5000))).astype(np.int64) % 4000
    alone = [planner._mag_bits((ids, int(np.median(ids))))[0] for ids in (quiet, loud)]
    assert planner._mag_bits((quiet, 100), (loud, int(np.median(loud))))[0] == planner._mag_bits((quiet, 100))[0]
    assert planner._mag_bits((quiet, int(np.median(quiet))), (loud, int(np.median(loud)))) == alone
    assert alone[0] < alone[1] and len(planner._mag_bits((loud, 0), (quiet, 0), (loud, 0))) == 3


@pytest.mark.parametrize("seed", range(6))
def test_cost_lower_bound_never_exceeds_the_exact_cost(seed):
    """_cost_lower_bound (the probe's pruning) is at most entropy.counts_cost_bits on skewed,
    flat, sparse and tiny histograms."""
    from ubpe import entropy

    rng = np.random.default_rng(seed)
    for _ in range(40):
        v = int(rng.integers(1, 3000))
        kind = rng.integers(0, 3)
        if kind == 0:
            counts = rng.geometric(rng.uniform(0.01, 0.9), v) - 1
        elif kind == 1:
            counts = rng.integers(0, 50, v)
        else:
            counts = np.zeros(v, np.int64)
            counts[rng.integers(0, v, int(rng.integers(1, 6)))] = rng.integers(1, 10**6)
        counts = counts.astype(np.int64)
        if counts.sum() == 0:
            counts[0] = 1
        assert planner._cost_lower_bound(counts) <= entropy.counts_cost_bits(counts)


def test_probe_pruning_gives_the_exact_answer(monkeypatch):
    """best_prefix(bound=True) (the probe) prunes prefixes whose lower bound cannot beat no
    merges: whether a merge pays is the same as with every prefix costed exactly, on inputs
    where merges pay and where they do not."""
    calls = []
    real = planner.best_prefix

    def spy(hist, merges, a, ladders=planner.PREFIX_LADDERS, cache=None, bound=False):
        if bound:
            exact = real(hist, merges, a, ladders, cache={}, bound=False)
            pruned = real(hist, merges, a, ladders, cache=cache, bound=True)
            calls.append((exact > 0, pruned > 0))
            return pruned
        return real(hist, merges, a, ladders, cache=cache)

    monkeypatch.setattr(planner, "best_prefix", spy)
    ecg = np.load(EXCERPT)
    rng = np.random.default_rng(3)
    for x in (ecg[:12_000], np.tile(np.array([5, 5, 7, 1, 1, 1], np.int16), 3000),
              rng.integers(-300, 300, 20_000).astype(np.int16), (ecg[:12_000] // 64).astype(np.int16)):
        compress(x, level=1)
    assert calls and all(a == b for a, b in calls), calls
    assert {a for a, _ in calls} == {True, False}  # both answers were checked


def test_static_estimate_of_dense_ids_counts_rans():
    """Values on a coarse grid (holes between every two): the dense ids' "mag" bits see the
    holes as magnitude, rANS does not; the dense estimate is within 5 % of the exact dense
    candidate, as the bare one of the bare candidate (so neither is dropped unmeasured)."""
    from ubpe import container

    rng = np.random.default_rng(5)
    y = (np.cumsum(rng.integers(-2, 3, 8000)) % 97 * 8).astype(np.int64)
    y = np.diff(y)
    base = {"magic": "UBPE", "v": 2, "dtype": "<i8", "shape": [y.size], "layout": "C", "crc": 0, "front": []}
    found = planner._bare_candidates([], y)
    assert [c.variant for c in found] == ["", "dense"]
    exact = [container._cost(base, c).size for c in found]
    est = planner._static_estimate([], y, 1.0)
    for e, s in zip(est, exact):
        assert 0.95 * s <= e <= 1.05 * s, (est, exact)
    assert planner._clearly_smaller(found, est) == found


def test_likely_coders_drop_only_a_coder_that_loses():
    """The lean search costs a static candidate without the coder its estimates rate
    LEAN_CODER_CLEAR larger than the other (_likely_coders): on every chain's output of the
    bundled ECG excerpt, of the excerpt on a coarse grid and of white noise, a coder dropped
    would not have given the smaller container, and the container is the one with every coder.
    Where neither is rated clearly larger, both are kept; candidates with merges keep theirs."""
    from ubpe import container

    base = {"magic": "UBPE", "v": 2, "dtype": "<i2", "shape": [1], "layout": "C", "crc": 0, "front": []}
    rng = np.random.default_rng(8)
    ecg = np.load(EXCERPT)
    dropped = 0
    for x in (ecg, ecg[:5000] * 12 - 7, rng.integers(-500, 500, 6000).astype(np.int16)):
        for _, y, rec in _lean_outputs(x):
            parts = planner._estimate_parts(rec, y, 1.0)
            found = planner._bare_candidates(rec, y)
            for full, kept in zip(found, planner._likely_coders(found, parts)):
                assert set(kept.coders) <= set(full.coders) and {"packed", "const"} <= set(kept.coders)
                gone = set(full.coders) - set(kept.coders)
                dropped += len(gone)
                every = container._cost(base, full).size
                assert container._cost(base, kept).size == every, (gone, parts)
    assert dropped > 0
    c = planner._bare_candidates([], np.arange(100, dtype=np.int64) % 7)[0]
    assert planner._likely_coders([c], (100.0, 100.0, float("inf"), float("inf")))[0].coders == c.coders
    merged = replace(c, merges=np.array([[0, 1]], np.int32))
    assert planner._likely_coders([merged], (100.0, 10.0, float("inf"), float("inf")))[0].coders == c.coders


def test_raw_values_are_a_context_mixing_finalist_only_where_their_context_is_learnable(monkeypatch):
    """Beyond LEAN_SMALL values the first chain (raw values) is sized with "cms2" on the
    strength of its estimate only when it has at most LEAN_RAW_DISTINCT distinct values a value
    (_raw_learnable): a few levels repeated (a coarse grid) qualify, a smooth recording with a
    distinct value every few samples does not, and then no "cms2" run is spent on it."""
    rng = np.random.default_rng(12)
    n = 20_000
    few = (rng.integers(0, 60, n) * 97).astype(np.int16)
    assert planner._raw_learnable(few.astype(np.int64))
    ecg = np.resize(np.load(EXCERPT), 12_000)
    assert not planner._raw_learnable(ecg.astype(np.int64))
    k = int(planner.LEAN_RAW_DISTINCT * 1000)
    edge = np.arange(1000, dtype=np.int64) % k
    assert planner._raw_learnable(edge) and not planner._raw_learnable(np.arange(1000, dtype=np.int64) % (k + 1))
    assert not planner._raw_learnable(np.zeros(0, np.int64))
    monkeypatch.setattr(planner, "SCREEN_FIRST_WITHIN", 10.0)  # raw values within reach by their estimate
    runs = _cm_runs(monkeypatch)
    gated = compress(ecg, level=2)
    gated_runs = list(runs)
    runs.clear()
    monkeypatch.setattr(planner, "LEAN_RAW_DISTINCT", float("inf"))
    ungated = compress(ecg, level=2)
    assert len(runs) > len(gated_runs), (runs, gated_runs)
    assert len(gated) <= 1.01 * len(ungated)
    assert np.array_equal(ubpe.decompress(gated), ecg)
