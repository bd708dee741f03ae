"""The search on a prefix's trial of the fast-following parts for a source rich in harmonics
(``encoder._fast_parts``: ORDER_MOVE's short least squares solved every 16 frames instead of 32 and
the second NLMS stage twice as long; ``Settings.level3_order_trial``; results/level3-sac-gap-7.md):
coded once, in the centred coding's place (where ``search.dc_change`` codes nothing), where the
search ends with ORDER_MOVE's short least squares, kept only when smaller by the margin. No format change: ``k2`` and ``n2`` are
parameters every version's header holds."""

from __future__ import annotations

import numpy as np
from test_level3_tonal_powr import _chosen as _written
from test_level3_v7 import voiced

from ubpe import level3
from ubpe._kernels import mixsignal
from ubpe.level3 import encoder, search
from ubpe.planner import configured, settings


def test_only_on_order_moves_short_least_squares():
    d = dict(level3.DEFAULTS)
    assert encoder._fast_parts(d) is None
    order = dict(d, **dict(search.MOVES)[search.ORDER_MOVE](d))
    fast = encoder._fast_parts(order)
    assert fast == dict(order, k2=order["k2"] // 2, n2=2 * d["n2"])
    assert encoder._fast_parts(fast) is None  # (once: k2 is no longer the move's)
    assert encoder._fast_parts(dict(order, n2=256))["n2"] == 256  # (within the kernel's bound)
    assert mixsignal.PRM_BOUNDS[mixsignal.PRM_N2][1] >= 256


def _spy(monkeypatch, fields=(mixsignal.PRM_K2, mixsignal.PRM_N2, mixsignal.PRM_P1)):
    """Every ``encoder._coded_size`` call from now on, as ``(*prm[fields], size)``."""
    coded = []
    orig = encoder._coded_size

    def spy(sample, prm, table, skip=0, res=None):
        got = orig(sample, prm, table, skip, res)
        coded.append((*(prm[f] for f in fields), got))
        return got

    monkeypatch.setattr(encoder, "_coded_size", spy)
    return coded


def test_tried_once_on_a_harmonic_tone_and_kept_only_when_smaller(monkeypatch):
    x = voiced(16000, period=48)
    y = np.asarray(x, np.int64).reshape(-1, 1)
    assert search.order_gain_db(y) >= settings.current().level3_search_order_start
    coded = _spy(monkeypatch)
    on, p_on = _written(monkeypatch, x, front=None)
    trial = [c for c in coded if c[0] == 16 and c[2] == 64]
    assert len(trial) >= 1
    took = p_on[mixsignal.PRM_K2] == 16
    assert not took or p_on[mixsignal.PRM_N2] == 2 * level3.DEFAULTS["n2"] or p_on[mixsignal.PRM_N2] > 32
    coded.clear()
    with configured(level3_order_trial=False):
        off, p_off = _written(monkeypatch, x, front=None)
    assert not [c for c in coded if c[0] == 16 and c[2] == 64]
    assert p_off[mixsignal.PRM_K2] == 32
    if not took:
        assert p_on[mixsignal.PRM_N2] == p_off[mixsignal.PRM_N2]


def test_not_where_the_search_does_not_start_from_order_64(monkeypatch):
    x = voiced(12000)  # (one resonance pair: order 64 gains nothing)
    coded = _spy(monkeypatch)
    on, _ = _written(monkeypatch, x, front=None)
    assert not [c for c in coded if c[0] == 16]
    with configured(level3_order_trial=False):
        assert level3.encode(x, front=None) == on
