"""The chunk search's candidate for a broadband background (``encoder.QUIET_BACKGROUND``: a ridge 16
times smaller and a first NLMS stage of 128 taps; results/level3-sac-gap-6.md): tried after
CANDIDATES only where the plan of the search on chunks has a coding for it (recordings of more
than ``Settings.level3_search_whole`` values and about 570 000 frames or more), kept only when
smaller by the margin, as any candidate. No format change: ``reg`` and ``n1`` are parameters every
version's header holds."""

from __future__ import annotations

import numpy as np
from test_level3 import round_trip
from test_level3_tonal_powr import _chosen as _written

from ubpe import level3
from ubpe._kernels import mixsignal
from ubpe.level3 import encoder
from ubpe.planner import configured, settings


def _background(frames: int, seed: int = 2) -> np.ndarray:
    """Broadband noise through a gentle low-pass resonance (a seismometer's background), int16."""
    rng = np.random.default_rng(seed)
    e = rng.normal(0, 40, frames)
    x = np.zeros(frames)
    for t in range(2, frames):
        x[t] = 1.2 * x[t - 1] - 0.5 * x[t - 2] + e[t]
    return np.round(x).astype(np.int16)


def test_it_comes_last_and_only_when_asked():
    s = settings.current()
    x = _background(200_000).reshape(-1, 1).astype(np.int64)
    chunks = [x[i:i + 8192] for i in range(0, 4 * 8192, 8192)]
    order = encoder._chunk_order(x, chunks, s)
    assert order[-1] == encoder.QUIET_BACKGROUND and encoder.QUIET_BACKGROUND not in encoder.CANDIDATES
    assert set(map(lambda c: tuple(sorted(c.items())), order[:-1])) == set(
        tuple(sorted(c.items())) for c in encoder.CANDIDATES)
    with configured(level3_search_quiet=False):
        assert encoder._chunk_order(x, chunks, settings.current()) == order[:-1]
    # the plan's codings: the defaults, every candidate, it and one of the descent after
    most = len(encoder.CANDIDATES) + 3
    assert encoder._chunk_order(x, chunks, s, most) == order
    assert encoder._chunk_order(x, chunks, s, most - 1) == order[:-1]


def test_not_coded_where_the_plan_has_no_coding_for_it(monkeypatch):
    """200 000 frames: 4 codings of the chunks, the candidate never reached; the bytes as without."""
    x = _background(200_000)
    coded = []
    orig = encoder._coded_size

    def spy(sample, prm, *a, **kw):
        coded.append((prm[mixsignal.PRM_REG], prm[mixsignal.PRM_N1]))
        return orig(sample, prm, *a, **kw)

    monkeypatch.setattr(encoder, "_coded_size", spy)
    data = round_trip(x)
    assert (20, 128) not in coded
    with configured(level3_search_quiet=False):
        assert level3.encode(x) == data


def test_tried_and_round_trips_on_a_long_background(monkeypatch):
    """640 000 frames (14 codings of the chunks): the candidate is coded on every chunk, the
    output decodes exactly, and the vector written has it only where the chunks said it is smaller
    than the defaults by the margin."""
    x = _background(640_000)
    sizes = {}
    orig = encoder._coded_size

    def spy(sample, prm, table, skip=0, res=None):
        got = orig(sample, prm, table, skip, res)
        key = (prm[mixsignal.PRM_REG], prm[mixsignal.PRM_N1], prm[mixsignal.PRM_MU1], prm[mixsignal.PRM_T1])
        sizes.setdefault(key, []).append(got)
        return got

    monkeypatch.setattr(encoder, "_coded_size", spy)
    _data, prm = _written(monkeypatch, x)
    d = level3.DEFAULTS
    quiet = (20, 128, d["mu1"], d["t1"])
    assert len(sizes[quiet]) == encoder.SEARCH_CHUNKS
    took = prm[mixsignal.PRM_REG] == 20 and prm[mixsignal.PRM_N1] == 128
    base = sum(sizes[(d["reg"], d["n1"], d["mu1"], d["t1"])][:encoder.SEARCH_CHUNKS])
    if took:  # (kept only when the chunks said it smaller than the defaults by the margin)
        assert sum(sizes[quiet]) < base * (1 - settings.current().level3_search_margin)
