"""The first NLMS stage's length and the long least squares' memory judged on one long piece after
the search on chunks (``encoder._piece_choice``, ``encoder.PIECE_MOVES``; results/level3-sac-gap-7.md):
coded only where the piece's three codings are at most ``Settings.level3_piece_share`` of the
recording, each move kept only when it codes the piece smaller by ``level3_piece_margin``, never a
first stage beyond LONG_MEMORY's. No format change: ``n1`` and ``t1`` are parameters every version's
header holds."""

from __future__ import annotations

import numpy as np
from test_level3_quiet import _background
from test_level3_tonal_powr import _chosen as _written

from ubpe import level3
from ubpe._kernels import mixsignal
from ubpe.level3 import encoder
from ubpe.level3.front import LONG_MEMORY
from ubpe.planner import configured, settings

HALF = 4096  # (a small piece, so that a recording of 65 536 frames reaches the rule)


def _spy(monkeypatch):
    coded = []
    orig = encoder._coded_size

    def spy(sample, prm, table, skip=0, res=None):
        got = orig(sample, prm, table, skip, res)
        coded.append((sample.shape[0], skip, prm[mixsignal.PRM_N1], prm[mixsignal.PRM_T1], got))
        return got

    monkeypatch.setattr(encoder, "_coded_size", spy)
    return coded


def test_the_moves_are_the_searchs():
    names = dict(encoder.MOVES)
    assert all(name in names for name in encoder.PIECE_MOVES)


def test_kept_only_when_smaller_by_the_margin(monkeypatch):
    y = _background(1 << 16, seed=5).reshape(-1, 1).astype(np.int64)
    coded = _spy(monkeypatch)
    with configured(level3_piece=HALF):
        s = settings.current()
        got = encoder._piece_choice(y, None, 0, 1, {}, s)
    assert 2 <= len(coded) <= 3
    assert all(c[0] == 2 * HALF and c[1] == HALF for c in coded)
    d = level3.DEFAULTS
    base = coded[0]
    assert (base[2], base[3]) == (d["n1"], d["t1"])
    first = coded[1]
    assert (first[2], first[3]) == (2 * d["n1"], d["t1"])  # "long NLMS x2" first
    kept_n1 = first[4] < base[4] * (1 - s.level3_piece_margin)
    assert got.get("n1", d["n1"]) == (2 * d["n1"] if kept_n1 else d["n1"])
    last = coded[-1]  # "long window x2", from what the first move left
    assert last[3] == d["t1"] + 2 and last[2] == got.get("n1", d["n1"])
    ref = first[4] if kept_n1 else base[4]
    assert (got.get("t1", d["t1"]) == d["t1"] + 2) == (last[4] < ref * (1 - s.level3_piece_margin))


def test_not_coded_below_the_share_or_when_off(monkeypatch):
    s = settings.current()
    coded = _spy(monkeypatch)
    short = int(6 * s.level3_piece / s.level3_piece_share) - 1
    y = np.zeros((short, 1), np.int64)
    assert encoder._piece_choice(y, None, 0, 1, {"reg": 20}, s) == {"reg": 20}
    with configured(level3_piece=0):
        assert encoder._piece_choice(np.zeros((1 << 20, 1), np.int64), None, 0, 1, {}, settings.current()) == {}
    assert coded == []


def test_no_first_stage_beyond_long_memory(monkeypatch):
    y = _background(1 << 16, seed=6).reshape(-1, 1).astype(np.int64)
    coded = _spy(monkeypatch)
    with configured(level3_piece=HALF):
        got = encoder._piece_choice(y, None, 0, 1, dict(n1=LONG_MEMORY["n1"], t1=19), settings.current())
    assert got == dict(n1=LONG_MEMORY["n1"], t1=19) and coded == []  # (t1 at its most: nothing to try)


def test_round_trips_and_writes_the_choice(monkeypatch):
    """70 000 frames (the search on chunks), a piece of 2 x 4 096: the vector written has the
    piece's choice (here a first stage of 512 taps), the output decodes exactly; with the piece
    off, the chunk search's vector and no piece coded."""
    x = _background(70_000, seed=7)
    made = []
    orig = encoder._piece_choice

    def spy(y, table, tmode, C, best, s):
        got = orig(y, table, tmode, C, best, s)
        made.append((dict(best), got))
        return got

    monkeypatch.setattr(encoder, "_piece_choice", spy)
    with configured(level3_piece=0):
        off, p_off = _written(monkeypatch, x)
    assert len(made) == 1 and made[0][0] == made[0][1]
    with configured(level3_piece=HALF):
        on, p_on = _written(monkeypatch, x)
    best, got = made[-1]
    for k in ("n1", "t1"):
        assert p_on[getattr(mixsignal, "PRM_" + k.upper())] == dict(level3.DEFAULTS, **got)[k]
        assert p_off[getattr(mixsignal, "PRM_" + k.upper())] == dict(level3.DEFAULTS, **best)[k]
    assert got != best and got["n1"] == 2 * level3.DEFAULTS["n1"]  # (this background takes it)
    assert on != off


def test_a_table_codes_the_piece_in_symbols(monkeypatch):
    """Few values spread irregularly (a value table, ``tmode`` > 0): the piece is coded as the
    chunks are, in the table's symbols, and the output round-trips."""
    b = _background(70_000, seed=8).astype(np.int64)
    q = np.clip((b - b.min()) * 48 // (b.max() - b.min() + 1), 0, 47)
    levels = np.cumsum(np.random.default_rng(8).integers(1, 400, 48))
    x = levels[q].astype(np.int16)
    seen = []
    orig = encoder._piece_choice

    def spy(y, table, tmode, C, best, s):
        seen.append(tmode)
        return orig(y, table, tmode, C, best, s)

    monkeypatch.setattr(encoder, "_piece_choice", spy)
    with configured(level3_piece=HALF):
        _written(monkeypatch, x)
    assert seen and seen[-1] > 0
