"""The ridge trial on the whole recording (``encoder._ridge_trial``; results/level3-sac-gap-8.md): where
the search on chunks kept the defaults (``dcm`` aside) for one channel of a wide range of at most
``Settings.level3_ridge_values`` values whose prediction gains at least ``level3_ridge_gain`` dB,
the whole recording is coded once more with the refined solve, a smaller ridge and a shorter
memory, and the smaller record is kept. No format change:
``olsr``, ``reg`` and ``t1`` are parameters version 7's and 8's headers hold."""

from __future__ import annotations

import numpy as np
import pytest

from ubpe import level3
from ubpe._kernels import mixsignal
from ubpe.level3 import encoder
from ubpe.planner import configured, settings

N = 70_000  # (above level3_search_whole's 65 536: the search on chunks)


def _voice(n: int, seed: int) -> np.ndarray:
    """A resonance whose frequency drifts, excited by white noise, over most of the int16 range."""
    rng = np.random.default_rng(seed)
    e = rng.normal(0.0, 1.0, n)
    f = 0.02 + 0.01 * np.sin(np.arange(n) * 2 * np.pi / 9000)
    a1, a2 = 2 * 0.995 * np.cos(2 * np.pi * f), -0.995 ** 2
    y = np.zeros(n)
    for i in range(2, n):
        y[i] = a1[i] * y[i - 1] + a2 * y[i - 2] + e[i]
    return np.round(y * 20_000 / np.abs(y).max()).astype(np.int16)


def _wide(n: int = N, C: int = 1) -> np.ndarray:
    return np.tile(np.arange(n, dtype=np.int64) % 40_000, (C, 1)).T.copy()


def test_the_trials_vector():
    s = settings.current()
    k = mixsignal
    prm = level3.default_params(1)
    prm[k.PRM_DCM] = 10  # (the centred least squares kept: still "the defaults")
    alt = encoder._ridge_trial(_wide(), prm)
    assert alt is not None
    changed = {i for i in range(len(prm)) if alt[i] != prm[i]}
    assert changed == {k.PRM_OLSR, k.PRM_REG, k.PRM_T1}
    assert alt[k.PRM_OLSR] == s.level3_tonal_olsr
    assert alt[k.PRM_REG] == min(24, prm[k.PRM_REG] + s.level3_ridge_reg)
    assert alt[k.PRM_T1] == max(0, prm[k.PRM_T1] - s.level3_ridge_t1)
    assert all(lo <= v <= hi for v, (lo, hi) in zip(alt, mixsignal.PRM_BOUNDS))


@pytest.mark.parametrize("case", ["short", "long", "two channels", "narrow", "unpredicted", "searched", "off",
                                  "version 6"])
def test_not_tried(case):
    prm = level3.default_params(1)
    y = _wide()
    changes = {}
    if case == "short":
        y = _wide(settings.current().level3_search_whole)
    elif case == "long":
        y = _wide(settings.current().level3_ridge_values + 1)
    elif case == "two channels":
        y, prm = _wide(C=2), level3.default_params(2)
    elif case == "narrow":
        y = y % 1000
    elif case == "unpredicted":  # white noise over the same range: no prediction gain
        y = np.random.default_rng(1).integers(0, 40_000, (N, 1))
    elif case == "searched":
        prm[mixsignal.PRM_IRLS] = 24
    elif case == "off":
        changes = dict(level3_ridge_values=0)
    else:
        changes = dict(level3_version=6)
    with configured(**changes):
        assert encoder._ridge_trial(y, prm) is None


def _records(monkeypatch) -> list:
    made = []
    orig = encoder._model_payload

    def spy(head, y, lo, step, table, tmode, prm, version, res=None):
        data = orig(head, y, lo, step, table, tmode, prm, version, res)
        made.append((list(prm), data))
        return data

    monkeypatch.setattr(encoder, "_model_payload", spy)
    return made


@pytest.mark.parametrize("seed", [0, 2])
def test_the_smaller_record_kept(monkeypatch, seed):
    x = _voice(N, seed)
    made = _records(monkeypatch)
    data = level3.encode(x)
    assert len(made) == 2  # the final coding and the trial, both of the whole recording
    (first, a), (second, b) = made
    assert second == encoder._ridge_trial(_wide(), first)  # (the chosen vector's trial)
    assert data == min(a, b, key=len)  # (the final coding's on a tie)
    assert np.array_equal(level3.decode(data), x)
    made.clear()
    with configured(level3_ridge_values=0):
        off = level3.encode(x)
    assert len(made) == 1 and made[0][1] == a  # off: the first record alone, the bytes before
    assert len(data) <= len(off)


def test_kept_where_smaller_and_decoded():
    x = _voice(N, 0)
    data = level3.encode(x)
    with configured(level3_ridge_values=0):
        off = level3.encode(x)
    assert len(data) < len(off)  # (this drifting resonance: the trial's vector codes it smaller)
    assert np.array_equal(level3.decode(data), x)
    assert data[0] in (7, 8)  # the refined solve: version 7 or 8


def test_fixed_parameters_never_tried(monkeypatch):
    x = _voice(N, 0)
    made = _records(monkeypatch)
    level3.encode(x, params=level3.default_params(1))
    level3.encode(x, search=False)
    assert len(made) == 2
