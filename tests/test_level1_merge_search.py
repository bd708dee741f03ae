"""Level 1's merge search on few-valued inputs (issue 28, held-out files such as an SpO2 channel):
``best_prefix``'s later sweeps start from a prefix the call costed already, and a prefix whose
lower bound is above a cost the call has seen is not costed (the same answer, and the same costs
for the prefixes costed, as the former search, which this file keeps), and a chain whose
merges level 1 rated already is not probed again (``propose(rated=True)``): the same candidates
where the probe would say yes, and never a larger container."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ubpe
from ubpe.alphabet import Alphabet
from ubpe.coders import counts_cost_bits
from ubpe.format.bits import pack_merges
from ubpe.planner import DEFAULT, ReplayEncoder, configured, replay
from ubpe.planner.replay import _cost_lower_bound, best_prefix


def _former_best_prefix(hist, merges, a, ladders, cache=None, bound=False):
    """best_prefix as it was before the sweeps restarted from a costed prefix (every sweep
    unrolled from all ``m`` merges): the reference."""
    m = len(merges)
    cache = {} if cache is None else cache
    if m == 0:
        return 0
    left = merges[:, 0].tolist()
    right = merges[:, 1].tolist()
    base = [int(c) for c in hist.tolist()]

    def cost(h, k):
        counts = np.asarray(h[: a + k], dtype=np.int64)
        model_bits = 8 * len(pack_merges(merges[:k], a)) if k else 0
        return counts_cost_bits(counts) + model_bits

    pending = []

    def sweep(ladder):
        h = list(base)
        out = {}
        top = m
        for k in sorted(set(ladder), reverse=True):
            for t in range(a + top - 1, a + k - 1, -1):
                c = h[t]
                if c:
                    j = t - a
                    h[left[j]] += c
                    h[right[j]] += c
                    h[t] = 0
            top = k
            if k in cache:
                out[k] = cache[k]
            elif bound and k > 0 and 0 in ladder:
                counts = np.asarray(h[: a + k], dtype=np.int64)
                model_bits = 8 * len(pack_merges(merges[:k], a))
                pending.append((k, counts, _cost_lower_bound(counts) + model_bits, model_bits))
            else:
                cache[k] = out[k] = cost(h, k)
        for k, counts, low, model_bits in pending:
            if low >= out[0]:
                out[k] = low
            else:
                cache[k] = out[k] = counts_cost_bits(counts) + model_bits
        pending.clear()
        return out

    def ladder(hi, lo, ratio):
        points, x = [hi], float(hi)
        while True:
            x /= ratio
            k = int(round(x))
            if k <= lo:
                break
            if k < points[-1]:
                points.append(k)
        points.append(lo)
        return points

    costs = {}
    lo, hi = 0, m
    for ratio in ladders:
        if hi - lo <= 2 and costs:
            break
        costs.update(sweep([k for k in ladder(hi, lo, ratio) if k not in costs] or [hi]))
        keys = sorted(k for k in costs if lo <= k <= hi)
        best = min(keys, key=lambda k: (costs[k], k))
        i = keys.index(best)
        lo, hi = keys[max(i - 1, 0)], keys[min(i + 1, len(keys) - 1)]
    return min(costs, key=lambda k: (costs[k], k))


def _few_valued(seed: int, n: int, levels: int, kind: int) -> np.ndarray:
    """A signal of few distinct values: a slow saturation-like level with steps (kind 0), a motif
    repeated with noise (kind 1), or a random walk of small steps (kind 2)."""
    rng = np.random.default_rng(seed)
    if kind == 0:
        x = np.repeat(rng.integers(0, levels, n // 50 + 1), 50)[:n]
        x = x + (rng.random(n) < 0.05) * rng.integers(-1, 2, n)
    elif kind == 1:
        x = np.tile(rng.integers(0, levels, 37), n // 37 + 1)[:n] + (rng.random(n) < 0.1)
    else:
        x = np.cumsum(rng.integers(-1, 2, n)) % levels
    return np.diff(x.astype(np.int64), prepend=0)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(200, 6000), st.integers(2, 60), st.integers(0, 2),
       st.sampled_from([DEFAULT.prefix_ladders, (2.0, 1.1), (4.0,), (1.5, 1.2, 1.05, 1.01)]),
       st.booleans(), st.booleans())
def test_best_prefix_restarted_sweeps_are_the_former_answer(seed, n, levels, kind, ladders, bound, cached):
    y = _few_valued(seed, n, levels, kind)
    alphabet = Alphabet.from_data(y)
    a = len(alphabet)
    fit = replay.train(a, alphabet.to_ids(y), replay.auto_max_merges(n, a, DEFAULT), {})
    hist = np.bincount(fit.stream, minlength=a + len(fit.merges))
    ladders = DEFAULT.probe_ladders if bound else ladders
    new_cache, old_cache = {}, {}
    if cached:  # a cache filled by the probe's coarse, bounded call first (as propose shares it)
        best_prefix(hist, fit.merges, a, DEFAULT.probe_ladders, cache=new_cache, bound=True)
        _former_best_prefix(hist, fit.merges, a, DEFAULT.probe_ladders, cache=old_cache, bound=True)
    got = best_prefix(hist, fit.merges, a, ladders, cache=new_cache, bound=bound)
    want = _former_best_prefix(hist, fit.merges, a, ladders, cache=old_cache, bound=bound)
    assert got == want
    # the prefixes costed exactly are among the former's, at the same costs (the others' lower
    # bounds were above a cost the call had seen)
    assert all(old_cache[k] == v for k, v in new_cache.items())


def test_best_prefix_restarts_on_a_long_training():
    """Hundreds of merges and the default ladders (three sweeps, the later two from a costed
    prefix): the former answer and costs."""
    y = _few_valued(7, 60_000, 40, 0)
    alphabet = Alphabet.from_data(y)
    a = len(alphabet)
    fit = replay.train(a, alphabet.to_ids(y), replay.auto_max_merges(y.size, a, DEFAULT), {})
    assert len(fit.merges) > 300
    hist = np.bincount(fit.stream, minlength=a + len(fit.merges))
    new_cache, old_cache = {}, {}
    got = best_prefix(hist, fit.merges, a, DEFAULT.prefix_ladders, cache=new_cache)
    assert got == _former_best_prefix(hist, fit.merges, a, DEFAULT.prefix_ladders, cache=old_cache)
    assert all(old_cache[k] == v for k, v in new_cache.items()) and got > 0
    assert len(new_cache) < len(old_cache)  # some prefixes were bounded, not costed


def _candidates(y: np.ndarray, rated: bool):
    # (both trained to one min_count, the probed search's 2: the cut is tested below)
    enc = ReplayEncoder(None, {}, replace(DEFAULT, fast_merge_min_count=2))
    return enc.propose([], y, 1, replay._no_cost, False, rated=rated)


@pytest.mark.parametrize("n,kind", [(3000, 1), (40_000, 0), (40_000, 1)])  # all the values probed; a sample
def test_rated_propose_is_the_probed_one_where_merges_pay(n, kind):
    """Where the probe says merges pay, propose(rated=True) offers the same candidates (merges,
    tokens, variants) as the probed propose."""
    y = _few_valued(11, n, 30, kind)
    a = len(Alphabet.from_data(y))
    _, pays = replay.probe(y, a, Alphabet.from_data(y).to_ids(y), {}, DEFAULT)
    assert pays
    new, old = _candidates(y, True), _candidates(y, False)
    assert [c.variant for c in new] == [c.variant for c in old]
    for c, d in zip(new, old):
        assert np.array_equal(c.merges, d.merges) and np.array_equal(c.tokens, d.tokens)


def test_rated_propose_offers_the_bare_ids_where_the_probe_says_no():
    """Where the probe says no merge pays, propose(rated=True) still offers the bare ids (the
    probed propose's candidate) among its candidates: the smallest is never larger."""
    rng = np.random.default_rng(2)
    y = rng.integers(-200, 200, 30_000).astype(np.int64)  # noise: no pair repeats enough
    alphabet = Alphabet.from_data(y)
    ids = alphabet.to_ids(y)
    _, pays = replay.probe(y, len(alphabet), ids, {}, DEFAULT)
    assert not pays
    old = _candidates(y, False)
    new = _candidates(y, True)
    bare = [c for c in new if len(c.merges) == 0 and c.variant == old[0].variant]
    assert bare and np.array_equal(bare[0].tokens, old[0].tokens)


def test_level1_does_not_probe_a_chain_whose_merges_it_rated(monkeypatch):
    """Level 1 (fast_plan) passes rated=True: on a few-valued signal whose merges it builds, the
    probe never runs, the container round-trips, and with the full training run of the probed
    search (fast_merge_min_count 2) it equals the probed search's (merges pay here: the probe
    would say yes)."""
    x = np.cumsum(_few_valued(5, 50_000, 25, 1)).astype(np.int16)  # a motif repeated, noisy
    want = ubpe.compress(x, level=1, threads=1)
    assert ubpe.describe(want).n_merges > 0

    def no_probe(*args, **kwargs):
        raise AssertionError("probed")

    monkeypatch.setattr(replay, "probe", no_probe)
    got = ubpe.compress(x, level=1, threads=1)
    assert np.array_equal(ubpe.decompress(got), x)
    monkeypatch.undo()
    with configured(fast_merge_min_count=2):  # (the probed search's training run)
        got = ubpe.compress(x, level=1, threads=1)
        monkeypatch.setattr(ReplayEncoder, "propose", _probed(ReplayEncoder.propose))
        assert ubpe.compress(x, level=1, threads=1) == got


def _probed(propose):
    def f(self, chain, y, level, cost, sampled, rated=False):
        return propose(self, chain, y, level, cost, sampled, rated=False)
    return f


@pytest.mark.parametrize("kind,levels", [(0, 40), (1, 30), (1, 200)])
def test_a_higher_min_count_trains_a_prefix_of_the_merges(kind, levels):
    """The run to fast_merge_min_count stops sooner and its merges are the first ones of the
    run to min_count 2 but near the cut (the batches agree while every candidate pair occurs
    often enough; the last ones differ in the pairs near the cut): at least 80 % in common."""
    y = _few_valued(3, 40_000, levels, kind)
    alphabet = Alphabet.from_data(y)
    a, ids = len(alphabet), alphabet.to_ids(y)
    most = replay.auto_max_merges(y.size, a, DEFAULT)
    full = replay.train(a, ids, most, {})
    cut = replay.train(a, ids, most, {"min_count": DEFAULT.fast_merge_min_count})
    m = len(cut.merges)
    assert 0 < m < len(full.merges)
    same = (cut.merges == full.merges[:m]).all(axis=1)
    common = m if same.all() else int(np.argmin(same))
    assert common >= 0.8 * m, (common, m)
    assert np.array_equal(cut.tokens(common), full.tokens(common))  # the same replay stream there


def _spied_training(monkeypatch) -> list[tuple[int, int]]:
    """``(values, min_count)`` of every run of the trainer (``replay.train``) from now on."""
    seen: list[tuple[int, int]] = []
    train = replay.train

    def spy(a, ids, max_merges, fit_options):
        seen.append((ids.shape[0], fit_options.get("min_count", 2)))
        return train(a, ids, max_merges, fit_options)

    monkeypatch.setattr(replay, "train", spy)
    return seen


def test_level1_trains_rated_merges_to_fast_merge_min_count(monkeypatch):
    """Level 1's run over all the values of a rated chain stops at fast_merge_min_count (never
    below the fit's own min_count); with the setting at 2, the former containers."""
    x = np.cumsum(_few_valued(5, 50_000, 25, 1)).astype(np.int16)
    seen = _spied_training(monkeypatch)
    got = ubpe.compress(x, level=1, threads=1)
    assert (x.size, DEFAULT.fast_merge_min_count) in seen
    assert np.array_equal(ubpe.decompress(got), x) and ubpe.describe(got).n_merges > 0
    with configured(fast_merge_min_count=2):
        former = ubpe.compress(x, level=1, threads=1)
    assert (x.size, 2) in seen
    monkeypatch.setattr(ReplayEncoder, "propose", _probed(ReplayEncoder.propose))
    with configured(fast_merge_min_count=2):
        assert ubpe.compress(x, level=1, threads=1) == former  # the probed search's container
    assert ubpe.compress(x, level=1, threads=1) == got  # (level 1's probed search: the same cut)


def test_level1_trains_byte_merges_to_fast_merge_min_count(monkeypatch):
    """Bytes keep the exhaustive search: at level 1 (the static coders only) its run over all the
    values stops at fast_merge_min_count too, while the probe's run keeps the fit's min_count;
    with the setting at 2, the former container. Level 2's own run keeps the fit's min_count."""
    x = (np.cumsum(_few_valued(9, 40_000, 25, 1)) % 256).astype(np.uint8)  # a motif repeated, noisy
    seen = _spied_training(monkeypatch)
    got = ubpe.compress(x, level=1, threads=1)
    assert np.array_equal(ubpe.decompress(got), x) and ubpe.describe(got).n_merges > 0
    assert (x.size, DEFAULT.fast_merge_min_count) in seen and (x.size, 2) not in seen
    assert (DEFAULT.probe_sample, 2) in seen  # (the probe's run)
    seen.clear()
    with configured(fast_merge_min_count=2):
        former = ubpe.compress(x, level=1, threads=1)
    assert (x.size, 2) in seen and np.array_equal(ubpe.decompress(former), x)
    seen.clear()
    enc = ReplayEncoder(None, {}, DEFAULT)
    enc.propose([], x.astype(np.int64), 2, replay._no_cost, False)
    assert (x.size, 2) in seen and (x.size, DEFAULT.fast_merge_min_count) not in seen


def _former_unroll(h, merges, a, top, k):
    h = [int(c) for c in h]
    for t in range(a + top - 1, a + k - 1, -1):
        c = h[t]
        if c:
            j = t - a
            h[int(merges[j, 0])] += c
            h[int(merges[j, 1])] += c
            h[t] = 0
    return h


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 300), st.integers(0, 400))
def test_prefix_kernels_are_the_python_loops(seed, a, m):
    """``_prefix.unroll`` is best_prefix's former loop over Python ints, and ``_prefix.table_bits``
    gives, for every prefix, the bits behind ``len(pack_merges(merges[:k], a))``."""
    from ubpe._kernels import prefix as _prefix

    rng = np.random.default_rng(seed)
    merges = np.array([[rng.integers(0, a + i), rng.integers(0, a + i)] for i in range(m)], np.int32).reshape(m, 2)
    left = np.ascontiguousarray(merges[:, 0], dtype=np.int64)
    right = np.ascontiguousarray(merges[:, 1], dtype=np.int64)
    table = np.empty(m + 1, np.int64)
    _prefix.table_bits(left, right, a, table)
    for k in sorted({0, 1, m // 3, m // 2, m - 1, m} & set(range(m + 1))):
        assert 1 + (int(table[k]) + 7) // 8 == len(pack_merges(merges[:k], a)), k
    h = rng.integers(0, 1 << 40, a + m).astype(np.int64)
    top, k = m, int(rng.integers(0, m + 1))
    want = _former_unroll(h, merges, a, top, k)
    got = h.copy()
    _prefix.unroll(got, left, right, a, top, k)
    assert got.tolist() == want


def test_best_prefix_refuses_merges_out_of_range():
    hist = np.ones(6, np.int64)
    with pytest.raises(ValueError):
        best_prefix(hist, np.array([[0, 1], [5, 0]], np.int32), 4, DEFAULT.prefix_ladders)
