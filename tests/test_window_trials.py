"""Which trials the version-5 window writer pays for (ubpe/shared/v5.py): a window's own code
only when an order-0 estimate says it may fit the window better than its variant's
(``code_saving`` above ``CODE_SAVING_MIN``); the primed trials only for the predictors whose
cold trials came near the best (``PRIMED_WITHIN``, ``OWN_PRIMED_WITHIN``)."""

from __future__ import annotations

import numpy as np
import pytest

import ubpe
from ubpe import fit_shared
from ubpe.shared.v5 import CODE_SAVING_MIN, code_saving, own_code

N = 1000


@pytest.fixture(scope="module")
def noise():
    """A model of 10 windows of wide noise, a window like them and one of narrow noise elsewhere."""
    rng = np.random.default_rng(51)
    x = rng.normal(0, 2000, 11 * N).astype(np.int16)
    model = fit_shared([x[i * N:(i + 1) * N] for i in range(10)])
    return model, x[10 * N:], rng.normal(3000, 20, N).astype(np.int16)


def _plain(model):
    """The model's variant without predictor (its residuals are the values)."""
    return next(v for v in model.variants if not v.coefs.size and not v.adaptive and v.values is None)


def test_the_own_code_estimate_tells_a_moved_window_from_a_like_one(noise):
    model, like, moved = noise
    v = _plain(model)
    for w, pays in ((moved, True), (like, False)):
        tokens = v.tokens(w.astype(np.int64))[0]
        saving = code_saving(v, tokens, own_code(v, tokens))
        assert (saving > CODE_SAVING_MIN) is pays, saving


def test_windows_the_gates_judge_round_trip_and_take_the_better_container(noise):
    model, like, moved = noise
    for w, own in ((moved, True), (like, False)):
        packed = ubpe.compress(w, tokenizer=model)
        assert np.array_equal(ubpe.decompress(packed, tokenizer=model), w)
        assert len(packed) <= len(ubpe.compress(w))
        if own:  # (cold with its own code: head bits 3 and 4, extras bit 4)
            assert packed[1] & 0x18 == 0x18 and packed[4] & 0x10
