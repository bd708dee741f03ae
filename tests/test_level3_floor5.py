"""Issue 29's encode floor, fifth stop (results/level3-floor-5.md): three savings of the encoder's
trials. (1) The one chain's coding of the search's prefix is left out where nothing reads its size
(``front._start_unmeasured``): the same bytes. (2) Where the contexts' sample would be most of a
short recording, the contexts are decided on the final coding with ``xctx`` = 2 itself
(``encoder._encode_xctx_final``). (3) The contexts' sample is coded only where
``encoder.successor_recurrence`` also reaches ``Settings.level3_xctx_successor``. And the cues'
autocorrelations are computed once an input (``search._channel_acfs``), bit for bit as before."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_level3_v6 import hourly

from ubpe import level3
from ubpe._kernels import mixsignal
from ubpe.level3 import encoder, front, search
from ubpe.planner import settings as cfg


def _successors(y: np.ndarray) -> float:
    """``successor_recurrence`` by its definition: a dict of each value's last successor."""
    best = 0.0
    for c in range(y.shape[1]):
        v = [int(a) for a in y[:, c]]
        last: dict = {}
        hits = 0
        for t in range(1, len(v)):
            hits += last.get(v[t - 1]) == v[t]
            last[v[t - 1]] = v[t]
        best = max(best, hits / max(1, len(v) - 1))
    return best


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 200), st.integers(1, 3), st.integers(1, 12), st.integers(0, 2**32 - 1))
def test_successor_recurrence_is_its_definition(frames, channels, values, seed):
    y = np.random.default_rng(seed).integers(-values, values + 1, (frames, channels))
    assert encoder.successor_recurrence(y) == _successors(y)


def test_successor_recurrence_cases():
    assert encoder.successor_recurrence(np.zeros((1, 2), np.int64)) == 0.0
    assert encoder.successor_recurrence(np.zeros((50, 1), np.int64)) == 48 / 49  # (the first pair: nothing before)
    cycle = np.tile(np.arange(5), 20).reshape(-1, 1)  # each value's successor repeats after one round
    assert encoder.successor_recurrence(cycle) == 94 / 99  # (the first round's 5 pairs: none before)
    # values recur in pairs (pair_recurrence high) but each value's successor alternates
    alt = np.array([0, 1, 0, 2] * 50).reshape(-1, 1)
    assert encoder.pair_recurrence(alt) > 0.9
    assert encoder.successor_recurrence(alt) < 0.6 * encoder.pair_recurrence(alt)


def _short_weather() -> np.ndarray:
    """Two months of hourly readings, (1 440, 2) int16: the contexts are chosen."""
    return np.ascontiguousarray(hourly(1440))


def _spy(name: str, module=encoder):
    calls = []
    original = getattr(module, name)

    def spy(*args, **kw):
        calls.append(args)
        return original(*args, **kw)

    return calls, original, spy


def test_contexts_decided_on_the_final_coding():
    x = _short_weather()
    s = cfg.current()
    calls, original, spy = _spy("_choose_xctx")
    encoder._choose_xctx = spy
    try:
        data = level3.encode(x)
        assert not calls  # (no sample of the contexts' own)
        with cfg.configured(level3_xctx_in_final=0.0):
            before = level3.encode(x)
        assert len(calls) == 1
    finally:
        encoder._choose_xctx = original
    assert encoder._xctx_in_final(1440, 2, 1024) and not encoder._xctx_in_final(1440, 2, 512)
    assert not encoder._xctx_in_final(1440, s.level3_sample_channels + 1, 1024)
    assert data == before  # the same choice, the same bytes
    assert data[0] in (6, 10)  # (version 6: the contexts on; 10 where the lags are on too)
    assert level3.format.model_params(data)[mixsignal.PRM_XCTX] > 0
    assert np.array_equal(level3.decode(data), x)


def test_contexts_rejected_on_the_final_coding_coded_again():
    # noise on a coarse grid: the values' pairs recur, the contexts save nothing
    rng = np.random.default_rng(5)
    x = rng.integers(0, 6, (1440, 2)).astype(np.int16) * 7
    with cfg.configured(level3_xctx_successor=0.0):
        data = level3.encode(x)
        with cfg.configured(level3_xctx_in_final=0.0):
            before = level3.encode(x)
    assert data == before and data[0] != 6
    assert np.array_equal(level3.decode(data), x)


def test_successor_gate_spares_the_sample():
    # forty values drawn at random: most pairs recur, a value's successor one time in forty
    y = np.random.default_rng(3).integers(0, 40, (4096, 1)) * 40
    prm = level3.format.default_params(1)
    assert encoder.pair_recurrence(y) >= cfg.current().level3_xctx_recur
    assert encoder._xctx_gates(y, prm, None) is None
    with cfg.configured(level3_xctx_successor=0.0):
        assert encoder._xctx_gates(y, prm, None) is not None


def test_unmeasured_start_same_bytes_one_coding_less():
    x = _short_weather()
    calls, original, spy = _spy("_coded_size", front)
    front._coded_size = spy
    try:
        data = level3.encode(x)
        assert not calls  # (the one chain's prefix not coded)
        unmeasured = front._start_unmeasured
        front._start_unmeasured = lambda *a: False
        try:
            before = level3.encode(x)
        finally:
            front._start_unmeasured = unmeasured
        assert len(calls) == 1
    finally:
        front._coded_size = original
    assert data == before


def test_start_unmeasured_rule():
    s = cfg.current()
    start = dict(level3.format.DEFAULTS)
    assert front._start_unmeasured((1024, 1, 0.0), start, s)
    assert not front._start_unmeasured((1024, 2, 0.0), start, s)
    assert not front._start_unmeasured((1024, search.DC_MIN_EVALS, 0.0), start, s)


def test_channel_acfs_kept_bit_for_bit():
    rng = np.random.default_rng(1)
    y = np.cumsum(rng.normal(size=(3000, 2)), axis=0)
    search._ACFS.clear()
    first = search._channel_acfs(y, 64)
    first[0][:] = 0.0  # (a caller's change does not reach the kept arrays)
    again = search._channel_acfs(y, 40)
    search._ACFS.clear()
    fresh = search._channel_acfs(y, 40)
    assert all(np.array_equal(a, b) for a, b in zip(again, fresh))
    assert all(a.shape == (41,) for a in again)
    z = y.copy()
    z[5, 1] += 1.0  # other values: computed afresh
    assert not np.array_equal(search._channel_acfs(z, 40)[1], fresh[1])


def test_channel_acfs_not_served_for_other_values_of_the_same_checksum(monkeypatch):
    import zlib

    rng = np.random.default_rng(2)
    y = np.cumsum(rng.normal(size=(3000, 2)), axis=0)
    z = y.copy()
    z[7, 0] -= 3.0
    search._ACFS.clear()
    monkeypatch.setattr(zlib, "crc32", lambda data: 0)  # every input one key: a collision
    search._channel_acfs(y, 40)
    got = search._channel_acfs(z, 40)
    search._ACFS.clear()
    monkeypatch.undo()
    fresh = search._channel_acfs(z, 40)
    search._ACFS.clear()
    assert all(np.array_equal(a, b) for a, b in zip(got, fresh))
