"""Window containers of version 3 (docs/format.md, "Window containers"): the fields of version 2
in 15 bytes besides the escapes, the source and the coder's (version 2: 18), and a split
variant's digits primed with the history's; versions 1 and 2 stay readable and writable."""

from __future__ import annotations

import numpy as np
import pytest
from common import check_truncations, check_window_mutations, leb128
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import ubpe
from ubpe import CorruptDataError, FormatVersionError, SharedModel, fit_shared
from ubpe.shared import DTYPES, compress_window

N = 1000


@pytest.fixture(scope="module")
def walk_model():
    walk = np.cumsum(np.random.default_rng(7).integers(-3, 4, 10 * N)).astype(np.int16)
    return fit_shared([walk[i * N:(i + 1) * N] for i in range(10)], history=4096)


def _adc(seed: int, n: int) -> np.ndarray:
    """ADC codes whose two low bits are noise that mostly reads 0 (the "mult" split pays)."""
    rng = np.random.default_rng(seed)
    walk = np.cumsum(rng.integers(-6, 7, n))
    return (walk * 4 + (rng.random(n) < 0.15) * rng.integers(1, 4, n) + 1).astype(np.int16)


@pytest.fixture(scope="module")
def adc_model():
    x = _adc(20, 10 * N)
    return fit_shared([x[i * N:(i + 1) * N] for i in range(10)], history=4096)


def _window(model: SharedModel, x: np.ndarray, version: int = 3, **options) -> bytes:
    return compress_window(x, model, ubpe.compress(x), version=version, **options)


def _v3(ref: bytes, dtype: int, variant: int, cold: int, n: int, below: int | None, extras: int, *tail: bytes) -> bytes:
    """A version-3 window container laid out as docs/format.md says (a reference writer)."""
    head = bytes([16 * dtype + 2 * variant + cold]) + leb128(2 * n + (extras != 0))
    return (b"ubpw\x03" + ref + head + (b"" if below is None else leb128(below))
            + (bytes([extras]) if extras else b"") + b"".join(tail))


def test_version_3_is_written_and_two_or_three_bytes_smaller_than_version_2(walk_model):
    model = fit_shared([np.asarray(walk_model.history[i:i + N], np.int16) for i in range(0, 4 * N, N)],
                       history=4096, variants=1)
    # delta 1 or none (no predictor to restart): the same residuals in both versions (the fit keeps
    # [delta 1, none]; with the lighter "cms2" of issue 28, [none])
    assert model.variants and all(len(v.coefs) <= 1 for v in model.variants)
    rng = np.random.default_rng(8)
    for seed in range(5):
        w = np.cumsum(rng.integers(-3, 4, N)).astype(np.int16)
        new, old = _window(model, w), _window(model, w, 2)
        assert new[:5] == b"ubpw\x03" and old[:5] == b"ubpw\x02"
        extras = new[8] & 1  # (the low bit of the count: an extras byte follows, here for the escapes)
        # ref 4 -> 2 bytes, flags and variant in one byte, the count with the extras bit
        assert len(new) == len(old) - 3 + extras
        assert np.array_equal(ubpe.decompress(new, tokenizer=model), w)


def test_a_seismometers_windows_are_smaller_with_the_predictor_restarted_at_each_window(shared_data):
    """Version 3 restarts the linear predictor at the window (its first value predicted from
    the history, the others from the window alone): a window is not the continuation of the
    history, and an order-30 predictor fed the jump paid for it in 30 residuals."""
    x = np.load(shared_data / "seismic" / "CRLZ_HHZ.npy").astype(np.int16)
    model = fit_shared([x[i * N:(i + 1) * N] for i in range(10)])
    assert any(len(v.coefs) >= 2 for v in model.variants)
    new = old = 0
    for i in range(10, 30):
        w = x[i * N:(i + 1) * N]
        v3, v2 = _window(model, w), _window(model, w, 2)
        assert np.array_equal(ubpe.decompress(v3, tokenizer=model), w)
        new, old = new + len(v3), old + len(v2)
    assert new < old - 20 * 5  # measured: 14 459 against 14 609 bytes (3 of the 7.5 a window: the header)


def test_version_3_layout_and_hostile_fields(walk_model):
    w = (walk_model.history[-1] + np.cumsum(np.random.default_rng(8).integers(-3, 4, N))).astype(np.int16)
    good = _window(walk_model, w)
    ref, head = good[5:7], good[7]
    dtype, variant, cold = head >> 4, (head >> 1) & 7, head & 1
    assert ref == walk_model.ref[:2] and dtype == DTYPES.index("<i2") and variant < len(walk_model.variants)
    assert not cold and good[8:10] == leb128(2 * N)  # no extras: no shape, escapes or source
    below = good[10]  # (one byte here: skip is close to its bound)
    rest = good[11:]
    assert _v3(ref, dtype, variant, 0, N, below, 0, rest) == good
    # magic 4, version 1, ref 2, head 1, count 2, below 1, crc 4: 15 bytes besides the coder's
    assert len(good) - len(rest) + 4 == 15
    for hostile in (
            _v3(b"12", dtype, variant, 0, N, below, 0, rest),  # another model
            _v3(ref, dtype, variant, 1, N, None, 0, rest),  # "cold" (no primer): the bytes shift
            _v3(ref, 12, variant, 0, N, below, 0, rest),  # no such dtype
            _v3(ref, dtype, 7, 0, N, below, 0, rest),  # no such variant
            _v3(ref, dtype, variant, 0, 0, below, 0, rest),  # no values
            _v3(ref, dtype, variant, 0, 10**12, below, 0, rest),  # more than max_output_size
            _v3(ref, dtype, variant, 0, N, 10**9, 0, rest),  # skip below zero
            _v3(ref, dtype, variant, 0, N, below, 0x08, rest),  # an extras bit that means nothing
            _v3(ref, dtype, variant, 0, N, below, 0, rest[:4]),  # a CRC and no coder bytes
            b"ubpw\x03" + ref + bytes([head]) + leb128(2 * N + 1) + leb128(below) + b"\x00" + rest,  # extras 0
            _v3(ref, dtype, variant, 0, N, below, 0x01, leb128(2), leb128(7), leb128(7), rest),  # shape product
            _v3(ref, dtype, variant, 0, N, below, 0x01, leb128(40), rest),  # 40 dims
            _v3(ref, dtype, variant, 0, N, below, 0x01, leb128(1), leb128(N), rest),  # a 1-D shape spelt out
            _v3(ref, dtype, variant, 0, N, below, 0x02, leb128(1), b"\x05", rest),  # a bad escape field
            _v3(ref, dtype, variant, 0, N, below, 0x02, leb128(10**6), rest),  # escapes beyond the end
            _v3(ref, dtype, variant, 0, N, below, 0x04, leb128(1), b"\xc0", rest),  # a source that is nil
            b"ubpw\x03" + ref + bytes([head]) + b"\xff" * 20,  # a varint that never ends
    ):
        with pytest.raises(CorruptDataError):
            ubpe.decompress(hostile, tokenizer=walk_model, max_output_size=1 << 20)
    with pytest.raises(FormatVersionError):
        ubpe.decompress(b"ubpw\x06" + good[5:], tokenizer=walk_model)


def test_version_3_extras_shape_source_and_escapes_come_back(walk_model):
    rng = np.random.default_rng(3)
    w = np.cumsum(rng.integers(-3, 4, N)).astype(np.int16)
    far = w.copy()
    far[[10, 500]] += 20000  # outside the model's residual range: escaped
    shaped = w.astype(">i4").reshape(500, 2)
    for x, source in ((far, None), (shaped, {"name": "w.npy"}), (far.reshape(100, 10), {"name": "f"})):
        data = _window(walk_model, x, source=source)
        assert data[:5] == b"ubpw\x03" and ubpe.describe(data).shape == x.shape
        back = ubpe.decompress(data, tokenizer=walk_model)
        assert back.dtype == x.dtype and back.shape == x.shape and np.array_equal(back, x)
        if source is not None:
            assert ubpe.describe(data).source == source


def test_split_digits_are_primed_and_smaller_than_version_2(adc_model):
    x = _adc(21, 10 * N)
    new = old = 0
    for i in range(10):
        w = x[i * N:(i + 1) * N]
        v3, v2 = _window(adc_model, w), _window(adc_model, w, 2)
        assert adc_model.variants[(v3[7] >> 1) & 7].base > 1
        assert np.array_equal(ubpe.decompress(v3, tokenizer=adc_model), w)
        new, old = new + len(v3), old + len(v2)
    assert new < old - 10 * 3  # more than the 3 header bytes a window: the digits' statistics come primed


@settings(max_examples=examples(30), deadline=None)  # costly: conftest.examples
@given(st.data())
def test_split_and_range_variants_round_trip_whatever_the_window(adc_model, walk_model, data):
    model = data.draw(st.sampled_from([adc_model, walk_model]))
    dtype = data.draw(st.sampled_from(DTYPES))
    info = np.iinfo(np.dtype(dtype))
    n = data.draw(st.integers(1, N))
    w = _adc(data.draw(st.integers(0, 2**32 - 1)), n).astype(np.int64) * data.draw(st.sampled_from([1, 3, 1000]))
    w = np.clip(w + data.draw(st.sampled_from([0, int(info.min), int(info.max)])), info.min, info.max).astype(dtype)
    for version in (3, 2):
        packed = compress_window(w, model, ubpe.compress(w), version=version)
        assert len(packed) <= len(ubpe.compress(w))
        back = ubpe.decompress(packed, tokenizer=model)
        assert back.dtype == w.dtype and np.array_equal(back, w)


def test_every_strict_prefix_and_mutation_of_version_3_is_refused_or_exact(walk_model, adc_model):
    w = np.cumsum(np.random.default_rng(12).integers(-3, 4, N)).astype(np.int16)
    slow = np.cumsum(np.random.default_rng(1).integers(-1, 2, N)).astype(np.int16)
    adc = _adc(22, N)
    samples = [(walk_model, w, _window(walk_model, w)),
               (walk_model, w.reshape(500, 2), _window(walk_model, w.reshape(500, 2),
                                                           source={"name": "w.npy"})),
               (walk_model, slow, _window(walk_model, slow)),  # coded cold
               (adc_model, adc, _window(adc_model, adc))]  # a split variant
    assert [d[:5] for _, _, d in samples] == [b"ubpw\x03"] * 4
    assert samples[2][2][7] & 1 and adc_model.variants[(samples[3][2][7] >> 1) & 7].base > 1
    for model, _, data in samples:
        assert check_truncations(data, lambda d: ubpe.decompress(d, tokenizer=model)) == len(data)
    assert check_window_mutations(samples, 33, 600) > 500


def test_version_3_is_deterministic_and_names_its_model(walk_model):
    w = np.cumsum(np.random.default_rng(5).integers(-3, 4, N)).astype(np.int16)
    a, b = _window(walk_model, w), _window(walk_model, w.copy())
    assert a == b
    assert walk_model.digest.startswith(ubpe.describe(a).digest) and len(ubpe.describe(a).digest) == 4
    with pytest.raises(CorruptDataError, match="references shared model"):
        ubpe.decompress(a)
    other = fit_shared([np.arange(N, dtype=np.int16) * 3 for _ in range(3)])
    with pytest.raises(CorruptDataError):
        ubpe.decompress(a, tokenizer=other)


def test_hostile_digits_fields_of_a_split_window_are_refused(adc_model):
    w = _adc(23, N)
    good = _window(adc_model, w)
    assert good[:5] == b"ubpw\x03" and not good[8] & 1 and not good[7] & 1  # no extras, primed
    head, rest = good[:11], good[15:]  # (ref, head byte, count, below; the CRC's 4 bytes after them)
    crc = good[11:15]
    below_d, used = good[15], 1
    assert below_d < 0x80
    length = rest[used] | ((rest[used + 1] & 0x7F) << 7 if rest[used] & 0x80 else 0)
    assert 0 < length < len(rest)
    for hostile_rest in (
            leb128(10**9) + rest[used:],  # the digits' skip below zero
            leb128(below_d) + leb128(10**6) + rest[used + (2 if rest[used] & 0x80 else 1):],  # beyond the end
            leb128(below_d) + leb128(0) + rest[used + (2 if rest[used] & 0x80 else 1):],  # no digits' bytes
            b"\xff" * 12,  # a varint that never ends
    ):
        with pytest.raises(CorruptDataError):
            ubpe.decompress(head + crc + hostile_rest, tokenizer=adc_model, max_output_size=1 << 20)
    assert np.array_equal(ubpe.decompress(head + crc + rest, tokenizer=adc_model), w)
