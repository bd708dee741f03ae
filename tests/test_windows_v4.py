"""Window containers of version 4 (docs/format.md, "Window containers"): a window may carry its
own linear predictor (fitted on the window, as compressing alone does) in place of its
variant's; a window that keeps its variant's predictor is written as version 3, byte for byte."""

from __future__ import annotations

import numpy as np
import pytest
from common import check_truncations, check_window_mutations, leb128
from hypothesis import given, settings
from hypothesis import strategies as st

import ubpe
from ubpe import CorruptDataError, FormatVersionError, fit_shared
from ubpe.shared import compress_window

N = 1000


def _resonance(seed: int, n: int, poles: list[tuple[int, float, float]]) -> np.ndarray:
    """An AR(2) resonance whose coefficients ``(a1, a2)`` change at the given starts."""
    rng = np.random.default_rng(seed)
    e, x = rng.normal(0, 30, n), np.zeros(n)
    for i in range(2, n):
        a1, a2 = [(c1, c2) for start, c1, c2 in poles if start <= i][-1]
        x[i] = a1 * x[i - 1] + a2 * x[i - 2] + e[i]
    return x.astype(np.int16)


@pytest.fixture(scope="module")
def moving():
    """10 training windows of one resonance, then 3 windows of another."""
    x = _resonance(3, 13 * N, [(0, 1.6, -0.8), (10 * N, -1.2, -0.6)])
    return fit_shared([x[i * N:(i + 1) * N] for i in range(10)]), [x[i * N:(i + 1) * N] for i in range(10, 13)]


def _window(model, x, version=4):
    return compress_window(x, model, ubpe.compress(x), version=version)


def test_a_window_whose_spectrum_moved_carries_its_own_predictor_and_is_smaller(moving):
    model, windows = moving
    for w in windows:
        new, old = _window(model, w), _window(model, w, 3)  # (old: version 3 or alone)
        assert new[:5] == b"ubpw\x04"
        assert len(new) < 0.95 * len(old)  # (measured: 910 bytes against 1 000 for the first)
        assert new[8] & 1 and new[10 if new[7] & 1 else 11] & 0x08  # the extras byte holds the predictor flag
        assert np.array_equal(ubpe.decompress(new, tokenizer=model), w)
        assert ubpe.describe(new).version == 4


def test_a_window_like_the_training_data_keeps_version_3_bytes(moving):
    x = _resonance(4, 11 * N, [(0, 1.6, -0.8)])
    model = fit_shared([x[i * N:(i + 1) * N] for i in range(10)])
    w = x[10 * N:]
    new = _window(model, w)
    assert new[:5] == b"ubpw\x03" and new == _window(model, w, 3)


def test_version_4_layout_and_hostile_predictor_fields(moving):
    model, windows = moving
    good = _window(model, windows[0])
    head = good[7]
    assert good[:5] == b"ubpw\x04" and head & 1  # cold here: no below after the count
    count = leb128(2 * N + 1)
    assert good[8:8 + len(count)] == count
    pos = 8 + len(count) - 1
    extras = good[pos + 1]
    assert extras & 0x08 and not extras & 0x05  # the predictor (and escapes, here), no shape or source
    order, shift = good[pos + 2] + 1, good[pos + 3]
    assert 1 <= order <= 32 and shift <= 31
    prefix, tail = good[:pos + 2], good[pos + 4:]  # tail: the coefficients, CRC, coder bytes
    for hostile in (
            prefix + bytes([32, shift]) + tail,  # order 33
            prefix + bytes([order - 1, 40]) + tail,  # shift 40
            prefix + bytes([order - 1, shift]) + leb128(1 << 17) + tail,  # a coefficient beyond int16
            b"ubpw\x03" + good[5:],  # version 3 has no predictor flag
            good[:pos + 1] + bytes([extras & ~0x08 or 0x01]) + good[pos + 2:],  # version 4 without the predictor flag
            good[:pos + 1] + bytes([extras | 0x10]) + good[pos + 2:],  # an extras bit that means nothing
    ):
        with pytest.raises(CorruptDataError):
            ubpe.decompress(hostile, tokenizer=model, max_output_size=1 << 20)
    with pytest.raises(FormatVersionError):
        ubpe.decompress(b"ubpw\x06" + good[5:], tokenizer=model)


def test_a_dense_variant_refuses_a_windows_own_predictor():
    x = (np.cumsum(np.random.default_rng(9).integers(-2, 3, 11 * N)) * 8).astype(np.int16)
    model = fit_shared([x[i * N:(i + 1) * N] for i in range(10)], variants=8)
    dense = [i for i, v in enumerate(model.variants) if v.values is not None]
    assert dense
    other = _resonance(5, 13 * N, [(0, 1.6, -0.8), (10 * N, -1.2, -0.6)])
    m2 = fit_shared([other[i * N:(i + 1) * N] for i in range(10)])
    good = _window(m2, other[10 * N:11 * N])
    assert good[:5] == b"ubpw\x04"
    # the same bytes naming a dense variant of a model that has one
    hostile = good[:5] + model.ref[:2] + bytes([(good[7] & 0xF1) | (2 * dense[0])]) + good[8:]
    with pytest.raises(CorruptDataError):
        ubpe.decompress(hostile, tokenizer=model, max_output_size=1 << 20)


def test_every_strict_prefix_and_mutation_of_version_4_is_refused_or_exact(moving):
    model, windows = moving
    samples = [(w, _window(model, w)) for w in windows[:2]]
    assert [d[:5] for _, d in samples] == [b"ubpw\x04"] * 2
    for _, data in samples:
        assert check_truncations(data, lambda d: ubpe.decompress(d, tokenizer=model)) == len(data)
    assert check_window_mutations([(model, *s) for s in samples], 44, 300) > 250


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_any_window_round_trips_and_is_never_larger_than_alone(moving, data):
    model, _ = moving
    n = data.draw(st.integers(1, 1500))
    a1 = data.draw(st.floats(-1.9, 1.9))
    seed = data.draw(st.integers(0, 2**16))
    scale = data.draw(st.sampled_from([1, 30, 3000]))
    e = np.random.default_rng(seed).normal(0, scale, n)
    x = np.zeros(n)
    for i in range(1, n):
        x[i] = np.clip(a1 * x[i - 1] * 0.5 + e[i], -32768, 32767)
    w = x.astype(np.int16)
    alone = ubpe.compress(w)
    data_ = compress_window(w, model, alone)
    assert len(data_) <= len(alone)
    assert np.array_equal(ubpe.decompress(data_, tokenizer=model), w)


def test_a_split_variant_takes_the_windows_own_predictor_of_its_quotients():
    """ADC codes ``4 q + 1 + noise`` whose quotients ``q`` change resonance after the training."""
    rng = np.random.default_rng(30)
    q = np.concatenate((_resonance(1, 10 * N, [(0, 1.6, -0.8)]), _resonance(2, 2 * N, [(0, -1.2, -0.6)])))
    x = (q.astype(np.int64) * 4 + (rng.random(q.size) < 0.15) * rng.integers(1, 4, q.size) + 1).astype(np.int16)
    model = fit_shared([x[i * N:(i + 1) * N] for i in range(10)])
    for w in (x[10 * N:11 * N], x[11 * N:]):
        data = _window(model, w)
        assert data[:5] == b"ubpw\x04" and model.variants[(data[7] >> 1) & 7].base > 1
        assert len(data) < 0.9 * len(ubpe.compress(w))  # (measured: 937 bytes against 1 151 alone)
        assert np.array_equal(ubpe.decompress(data, tokenizer=model), w)
