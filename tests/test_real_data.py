"""Real data that ships with the package: the README's test command checks it on any machine.

The bundled excerpt is 21 600 samples of MIT-BIH record 208 (11-bit ECG as int16,
``ubpe/data``); the shared recordings (../shared/data) are tested elsewhere when present.
"""

import bz2
import lzma
import zlib

import numpy as np
import pytest

import ubpe
from ubpe.io import demo_signal


@pytest.fixture(scope="module")
def excerpt() -> np.ndarray:
    x = demo_signal()
    assert x.dtype == np.int16 and x.shape == (21_600,)
    return x


@pytest.mark.parametrize("level", [1, 2])
def test_excerpt_round_trips_and_beats_the_stdlib_codecs(excerpt, level):
    data = ubpe.compress(excerpt, level=level)
    back = ubpe.decompress(data)
    assert back.dtype == excerpt.dtype and np.array_equal(back, excerpt)
    raw = excerpt.tobytes()
    best_stdlib = min(len(zlib.compress(raw, 9)), len(bz2.compress(raw, 9)),
                      len(lzma.compress(raw, preset=9 | lzma.PRESET_EXTREME)))
    assert len(data) < best_stdlib, (len(data), best_stdlib)


def test_excerpt_default_level_is_at_least_as_small_as_level_1(excerpt):
    assert len(ubpe.compress(excerpt)) <= len(ubpe.compress(excerpt, level=1))


def test_excerpt_prediction_is_chosen_and_recorded(excerpt):
    info = ubpe.describe(ubpe.compress(excerpt))
    assert info.front, "an ECG is smooth: the automatic choice predicts it"
    assert info.ratio > 3.0, info.ratio


def test_excerpt_as_two_channels_round_trips(excerpt):
    two = np.stack([excerpt, excerpt[::-1]], axis=1)
    back = ubpe.decompress(ubpe.compress(two))
    assert back.shape == two.shape and np.array_equal(back, two)
