"""Shared models for small windows (issue 30.2): a model fitted on a few windows codes the others
smaller than compressing each alone, never larger, bit for bit, and a window container names
the model it needs (docs/format.md, "Window containers")."""

from __future__ import annotations

import hashlib

import msgpack
import numpy as np
import pytest
from common import leb128
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import ubpe
from ubpe import CorruptDataError, FormatVersionError, SharedModel, fit_shared

N = 1000


@pytest.fixture(scope="module")
def ecg(shared_data):
    return np.load(shared_data / "ecg" / "mitbih_208.npy")


@pytest.fixture(scope="module")
def model(ecg):
    return fit_shared([ecg[i * N:(i + 1) * N] for i in range(10)])


@pytest.fixture(scope="module")
def synthetic():
    """A model of a random walk (no shared data needed)."""
    rng = np.random.default_rng(7)
    walk = np.cumsum(rng.integers(-3, 4, 10 * N)).astype(np.int16)
    return fit_shared([walk[i * N:(i + 1) * N] for i in range(10)], history=4096)


def test_windows_of_a_real_recording_are_smaller_with_the_model_and_come_back(ecg, model):
    windows = [ecg[i * N:(i + 1) * N] for i in range(10, 30)]
    alone = sum(len(ubpe.compress(w)) for w in windows)
    total = 0
    for w in windows:
        data = ubpe.compress(w, tokenizer=model)
        back = ubpe.decompress(data, tokenizer=model)
        assert back.dtype == w.dtype and np.array_equal(back, w)
        total += len(data)
    assert total < 0.95 * alone  # measured: 10.3 % smaller (benchmarks/results/windows.md)


@settings(max_examples=examples(40), deadline=None)  # costly: conftest.examples
@given(st.data())
def test_round_trip_and_never_larger_whatever_the_window(synthetic, data):
    dtype = data.draw(st.sampled_from(ubpe.shared.DTYPES))  # the model's is "<i2": others too
    info = np.iinfo(np.dtype(dtype))
    n = data.draw(st.integers(1, N))
    # a walk like the training one, or values far outside the model's residual range, or both
    steps = data.draw(st.sampled_from([3, 40, 3000]))
    start = data.draw(st.integers(int(info.min), int(info.max)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    w = np.clip(start + np.cumsum(rng.integers(-steps, steps + 1, n)), info.min, info.max).astype(dtype)
    if data.draw(st.booleans()):
        w[rng.integers(0, n, max(1, n // 20))] = data.draw(st.integers(int(info.min), int(info.max)))
    packed = ubpe.compress(w, tokenizer=synthetic)
    assert len(packed) <= len(ubpe.compress(w))
    back = ubpe.decompress(packed, tokenizer=synthetic)
    assert back.dtype == w.dtype and np.array_equal(back, w)


def test_values_outside_the_models_range_are_escaped_in_the_window_container(synthetic):
    rng = np.random.default_rng(3)
    w = np.cumsum(rng.integers(-3, 4, N)).astype(np.int16)
    w[[100, 500, 501]] = [30000, -30000, 12345]  # residuals far beyond the training ones
    packed = ubpe.compress(w, tokenizer=synthetic)
    assert ubpe.shared.is_window(packed)
    assert np.array_equal(ubpe.decompress(packed, tokenizer=synthetic), w)


def test_a_grid_valued_signal_gets_a_dense_variant_and_comes_back():
    rng = np.random.default_rng(10)
    x = (np.round(np.cumsum(rng.normal(0, 2, 12 * N)) ) * 64.25).astype(np.int16)  # values on a ~64 grid
    model = fit_shared([x[i * N:(i + 1) * N] for i in range(10)])
    assert any(v.values is not None for v in model.variants)
    assert SharedModel.from_bytes(model.to_bytes()).to_bytes() == model.to_bytes()
    for w in (x[10 * N:11 * N], x[11 * N:] + 3):  # the second off the training grid: escapes or the fallback
        packed = ubpe.compress(w, tokenizer=model)
        assert len(packed) <= len(ubpe.compress(w))
        assert np.array_equal(ubpe.decompress(packed, tokenizer=model), w)


def test_a_model_always_holds_a_variant_without_predictor(synthetic):
    """Windows of noise (a seismometer's after an event) code best with no predictor, which the
    held-out training windows may not show: the smallest such variant is kept besides the others."""
    assert any(v.coefs.size == 0 for v in synthetic.variants)
    assert synthetic.variants[-1].predictor.startswith("none")
    assert len(synthetic.variants) <= ubpe.shared.DEFAULT_VARIANTS + 1
    rng = np.random.default_rng(3)
    noise = rng.integers(-300, 301, N).astype(np.int16)
    packed = ubpe.compress(noise, tokenizer=synthetic)
    assert np.array_equal(ubpe.decompress(packed, tokenizer=synthetic), noise)


def test_shapes_and_slices_come_back(synthetic):
    rng = np.random.default_rng(4)
    w = np.cumsum(rng.integers(-3, 4, 600)).astype(np.int16).reshape(300, 2)
    packed = ubpe.compress(w, tokenizer=synthetic)
    assert np.array_equal(ubpe.decompress(packed, tokenizer=synthetic), w)
    assert np.array_equal(ubpe.decompress(packed, tokenizer=synthetic, start=10, stop=20), w[10:20])


def test_inputs_the_model_does_not_code_take_the_ordinary_container(synthetic):
    for values in (np.arange(100, dtype=np.int64), np.linspace(0, 1, 50), [1, 2, 3], np.zeros(0, np.int16)):
        packed = ubpe.compress(values, tokenizer=synthetic)
        assert packed[:4] == b"ubpe"
        back = ubpe.decompress(packed, tokenizer=synthetic)
        assert np.array_equal(back, np.asarray(values))


def test_model_and_windows_are_deterministic(ecg, model):
    again = fit_shared([ecg[i * N:(i + 1) * N] for i in range(10)])
    assert again.to_bytes() == model.to_bytes()
    w = ecg[20 * N:21 * N]
    assert ubpe.compress(w, tokenizer=model) == ubpe.compress(w, tokenizer=again)


def test_model_file_round_trip(tmp_path, synthetic):
    path = tmp_path / "m.ubpe-shared"
    synthetic.save(str(path))
    loaded = SharedModel.load(str(path))
    assert loaded.to_bytes() == synthetic.to_bytes() and loaded.digest == synthetic.digest
    w = np.cumsum(np.random.default_rng(5).integers(-3, 4, N)).astype(np.int16)
    packed = ubpe.compress(w, tokenizer=synthetic)
    assert np.array_equal(ubpe.decompress(packed, tokenizer=loaded), w)


def test_a_missing_or_different_model_is_a_clear_error(synthetic, model):
    w = np.cumsum(np.random.default_rng(6).integers(-3, 4, N)).astype(np.int16)
    packed = ubpe.compress(w, tokenizer=synthetic)
    with pytest.raises(CorruptDataError, match="references shared model .*pass tokenizer="):
        ubpe.decompress(packed)
    # (version 5 carries no model digest: what fails names both causes)
    with pytest.raises(CorruptDataError, match="not the model the window was compressed with"):
        ubpe.decompress(packed, tokenizer=model)
    # (a CorruptDataError: one lead byte marks a window, so damaged bytes of a container that
    # references a Tokenizer may read as one; the broad fuzz tier found such a mutation)
    with pytest.raises(CorruptDataError, match="needs the ubpe.SharedModel it was compressed with, not a Tokenizer"):
        ubpe.decompress(packed, tokenizer=ubpe.Tokenizer(None, 4).fit(np.arange(4)))


def test_fit_arguments_are_checked():
    with pytest.raises(TypeError, match="sequence of 1-D arrays"):
        fit_shared(np.arange(10, dtype=np.int16))
    with pytest.raises(ValueError, match="at least one window"):
        fit_shared([])
    with pytest.raises(TypeError, match="one dtype"):
        fit_shared([np.arange(10, dtype=np.int16), np.arange(10, dtype=np.int32)])
    with pytest.raises(TypeError, match="one dtype"):
        fit_shared([np.arange(10, dtype=np.int64)])
    with pytest.raises(ValueError, match="variants"):
        fit_shared([np.arange(10, dtype=np.int16)], variants=0)


# ---------------------------------------------------------------- hostile bytes


def _model_file(body: dict, version: int = 1) -> bytes:
    raw = msgpack.packb(body, use_bin_type=True)
    return msgpack.packb({"magic": "ubpe.shared", "version": version, "body": raw,
                          "sha256": hashlib.sha256(raw).digest()}, use_bin_type=True)


def test_damaged_or_hostile_model_files_are_refused(synthetic):
    good = synthetic.to_bytes()
    for i in range(0, len(good), max(1, len(good) // 97)):
        bad = bytearray(good)
        bad[i] ^= 0x55
        with pytest.raises(CorruptDataError):
            SharedModel.from_bytes(bytes(bad))
    for cut in (0, 1, 10, len(good) // 2, len(good) - 1):
        with pytest.raises(CorruptDataError):
            SharedModel.from_bytes(good[:cut])
    body = msgpack.unpackb(msgpack.unpackb(good)["body"])
    for key, value in [("dtype", "<i8"), ("history", b"\0"), ("variants", []), ("variants", [{}]),
                       ("variants", [{**body["variants"][0], "counts": [0, 1]}]),
                       ("variants", [{**body["variants"][0], "coefs": [1 << 20]}]),
                       ("variants", [{**body["variants"][0], "center": 10**9}]),
                       ("variants", [{**body["variants"][0], "size": 1}]),
                       ("variants", [{**body["variants"][0], "lo": 0, "values": bytes(8 * body["variants"][0]["size"])}]),
                       ("variants", [{**body["variants"][0], "values": b"\1"}])]:
        with pytest.raises(CorruptDataError):
            SharedModel.from_bytes(_model_file({**body, key: value}))
    newer = msgpack.packb({**msgpack.unpackb(good), "version": 3}, use_bin_type=True)
    with pytest.raises(FormatVersionError):
        SharedModel.from_bytes(newer)
    with pytest.raises(TypeError):
        SharedModel.from_bytes("not bytes")


def _adc(seed: int, n: int) -> np.ndarray:
    """ADC codes whose two low bits are noise that mostly reads 0 (the "mult" split pays)."""
    rng = np.random.default_rng(seed)
    walk = np.cumsum(rng.integers(-6, 7, n))
    return (walk * 4 + (rng.random(n) < 0.15) * rng.integers(1, 4, n) + 1).astype(np.int16)


@pytest.fixture(scope="module")
def adc_model():
    x = _adc(20, 10 * N)
    return fit_shared([x[i * N:(i + 1) * N] for i in range(10)], history=4096)


def test_noisy_low_digits_get_a_split_variant_and_windows_smaller_than_alone(adc_model):
    split = [v for v in adc_model.variants if v.base > 1]
    assert split and split[0].base == 4 and adc_model.variants[0].base == 4
    again = SharedModel.from_bytes(adc_model.to_bytes())
    assert again.to_bytes() == adc_model.to_bytes() and [v.base for v in again.variants] == [
        v.base for v in adc_model.variants]
    x = _adc(21, 5 * N)
    for i in range(5):
        w = x[i * N:(i + 1) * N]
        data = ubpe.compress(w, tokenizer=again)
        assert ubpe.shared.is_window(data) and len(data) < len(ubpe.compress(w))
        assert np.array_equal(ubpe.decompress(data, tokenizer=adc_model), w)
        old = ubpe.shared.compress_window(w, adc_model, ubpe.compress(w), version=1)  # no split variant in v1
        assert np.array_equal(ubpe.decompress(old, tokenizer=adc_model), w)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_split_variant_round_trips_whatever_the_window(adc_model, data):
    dtype = data.draw(st.sampled_from(ubpe.shared.DTYPES))
    info = np.iinfo(np.dtype(dtype))
    n = data.draw(st.integers(1, N))
    w = _adc(data.draw(st.integers(0, 2**32 - 1)), n).astype(np.int64) + data.draw(st.integers(-3, 3))
    w = np.clip(w + data.draw(st.sampled_from([0, int(info.min), int(info.max)])), info.min, info.max).astype(dtype)
    packed = ubpe.compress(w, tokenizer=adc_model)
    assert len(packed) <= len(ubpe.compress(w))
    back = ubpe.decompress(packed, tokenizer=adc_model)
    assert back.dtype == w.dtype and np.array_equal(back, w)


def test_split_variants_damaged_are_refused(adc_model):
    import random

    from common import byte_mutation, check_truncations

    w = _adc(22, N)
    good = ubpe.shared.compress_window(w, adc_model, ubpe.compress(w), version=3)
    assert good[:5] == b"ubpw\x03" and adc_model.variants[(good[7] >> 1) & 7].base > 1  # (version 3's head byte)
    assert check_truncations(good, lambda d: ubpe.decompress(d, tokenizer=adc_model)) == len(good)
    rng = random.Random(5)
    for _ in range(200):
        _refused_or_right(byte_mutation(good, rng), adc_model, w)
    body = msgpack.unpackb(msgpack.unpackb(adc_model.to_bytes())["body"])
    v = next(v for v in body["variants"] if "base" in v)
    for change in ({"base": 1}, {"offset": 4}, {"digits": [0, 0, [0, 4]]}, {"digits": [0, 9, [0, 0, 4]]},
                   {"digits": [3, 0, [0, 0, 4]]}, {"digits": "x"}):
        with pytest.raises(CorruptDataError):
            SharedModel.from_bytes(_model_file({**body, "variants": [{**v, **change}]}, 2))
    with pytest.raises(CorruptDataError):  # base without offset and digits
        SharedModel.from_bytes(_model_file({**body, "variants": [{k: x for k, x in v.items() if k != "digits"}]}, 2))
    assert SharedModel.from_bytes(_model_file(body, 2)).to_bytes() == adc_model.to_bytes()
    assert msgpack.unpackb(adc_model.to_bytes())["version"] == 2  # (a model without a split: version 1)
    with pytest.raises(CorruptDataError, match="version-2"):
        SharedModel.from_bytes(_model_file(body, 1))


def _refused_or_right(data: bytes, model: SharedModel, w: np.ndarray) -> None:
    try:
        back = ubpe.decompress(data, tokenizer=model)
    except (CorruptDataError, FormatVersionError):
        return
    assert np.array_equal(back, w)  # (a flip no check sees, e.g. in a nil's type byte: never wrong data)


def test_damaged_or_hostile_window_containers_are_refused(synthetic):
    w = np.cumsum(np.random.default_rng(8).integers(-3, 4, N)).astype(np.int16)
    good = ubpe.shared.compress_window(w, synthetic, ubpe.compress(w), version=2)
    assert good[:5] == b"ubpw\x02"
    old = ubpe.shared.compress_window(w, synthetic, ubpe.compress(w), version=1)
    assert old[:5] == b"ubpw\x01" and np.array_equal(ubpe.decompress(old, tokenizer=synthetic), w)
    for data in (good, old):
        for i in range(4, len(data)):
            bad = bytearray(data)
            bad[i] ^= 0x21
            _refused_or_right(bytes(bad), synthetic, w)
        for cut in range(len(data)):  # every strict prefix
            with pytest.raises(CorruptDataError):
                ubpe.decompress(data[:cut], tokenizer=synthetic)
    fields = msgpack.unpackb(old[5:])
    ref, index, dtype, shape, n, skip, rest, esc, crc = fields
    for change in ({4: 10**12}, {4: 10**7}, {5: 10**9}, {1: 3}, {1: -1}, {2: "<i2"}, {2: 99}, {3: [7, 7]}, {6: "text"},
                   {7: b"\x05"}, {8: -1}, {0: b"12345678"}, {5: -1}):
        hostile = list(fields)
        for k, v in change.items():
            hostile[k] = v
        with pytest.raises(CorruptDataError):
            ubpe.decompress(b"ubpw\x01" + msgpack.packb(hostile, use_bin_type=True), tokenizer=synthetic,
                            max_output_size=1 << 20)
    with pytest.raises(FormatVersionError):
        ubpe.decompress(b"ubpw\x06" + good[5:], tokenizer=synthetic)


def test_a_window_unlike_the_training_end_is_coded_without_the_primer_and_comes_back(synthetic):
    """A slower walk than the training one: the primer's statistics mislead the coder, so the
    window is coded "cold" (version 2: flag bit 7; version 3: bit 0 of the head byte; no skip
    field); the predictor still runs over the history."""
    w = np.cumsum(np.random.default_rng(1).integers(-1, 2, N)).astype(np.int16)
    data = ubpe.shared.compress_window(w, synthetic, ubpe.compress(w), version=3)
    assert data[:5] == b"ubpw\x03" and data[7] & 0x01
    v2 = ubpe.shared.compress_window(w, synthetic, ubpe.compress(w), version=2)
    assert v2[9] & 0x80 and np.array_equal(ubpe.decompress(v2, tokenizer=synthetic), w)
    assert len(data) < len(ubpe.compress(w))
    assert np.array_equal(ubpe.decompress(data, tokenizer=synthetic), w)
    primed = ubpe.shared.compress_window(w, synthetic, ubpe.compress(w), version=1)  # (version 1: always primed)
    assert len(data) < len(primed)


def test_mutated_window_containers_are_refused_or_decode_exactly(synthetic):
    from common import check_truncations, check_window_mutations

    w = np.cumsum(np.random.default_rng(12).integers(-3, 4, N)).astype(np.int16)
    shaped = w.astype(">i4").reshape(500, 2)
    slow = np.cumsum(np.random.default_rng(1).integers(-1, 2, N)).astype(np.int16)
    def v2(x, **options):
        return ubpe.shared.compress_window(x, synthetic, ubpe.compress(x), version=2, **options)

    samples = [(w, v2(w)), (shaped, v2(shaped, source={"name": "w.npy"})),
               (w, ubpe.shared.compress_window(w, synthetic, ubpe.compress(w), version=1)),
               (slow, v2(slow))]  # coded cold
    assert [d[:5] for _, d in samples] == [b"ubpw\x02", b"ubpw\x02", b"ubpw\x01", b"ubpw\x02"]
    assert check_window_mutations([(synthetic, *s) for s in samples], 30, 600) > 500
    for _, data in samples[:2] + samples[3:]:  # every strict prefix of a version-2 container
        assert check_truncations(data, lambda d: ubpe.decompress(d, tokenizer=synthetic)) == len(data)


def _v2(ref: bytes, flags: int, variant: int, n: int, below: int, *tail: bytes) -> bytes:
    """A version-2 window container laid out as docs/format.md says (a reference writer)."""
    return b"ubpw\x02" + ref + bytes([flags, variant]) + leb128(n) + leb128(below) + b"".join(tail)


def test_version_2_layout_and_hostile_fields(synthetic):
    w = np.cumsum(np.random.default_rng(8).integers(-3, 4, N)).astype(np.int16)
    good = ubpe.shared.compress_window(w, synthetic, ubpe.compress(w), version=2)
    ref, flags, variant = good[5:9], good[9], good[10]
    assert ref == synthetic.ref[:4] and flags & 0x0F == ubpe.shared.DTYPES.index("<i2")
    assert variant < len(synthetic.variants) and flags & 0xD0 == 0  # no shape, no source
    pos = 11 + len(leb128(N))
    assert good[11:pos] == leb128(N)
    below = good[pos]  # (one byte here: skip is close to its bound)
    pos += 1
    esc = b""
    if flags & 0x20:  # the first value escapes (it starts the walk anywhere)
        esc = good[pos:pos + 1 + good[pos]]
        pos += len(esc)
    crc_rest = good[pos:]
    assert _v2(ref, flags, variant, N, below, esc, crc_rest) == good
    # magic 4, version 1, ref 4, flags 1, variant 1, n 2, below 1, crc 4: 18 bytes besides esc and the coder's
    assert len(good) - len(crc_rest) - len(esc) + 4 == 18
    crc_rest = esc + crc_rest  # (with the escape field, when there is one: flags says so)
    for hostile in (
            _v2(b"1234", flags, variant, N, below, crc_rest),  # another model
            _v2(ref, flags | 0x80, variant, N, below, crc_rest),  # "cold" (no primer): the bytes shift
            _v2(ref, 12, variant, N, below, crc_rest),  # no such dtype
            _v2(ref, flags, 9, N, below, crc_rest),  # no such variant
            _v2(ref, flags, variant, 0, below, crc_rest),  # no values
            _v2(ref, flags, variant, 10**12, below, crc_rest),  # more than max_output_size
            _v2(ref, flags, variant, N, 10**9, crc_rest),  # skip below zero
            _v2(ref, flags | 0x10, variant, N, below, leb128(2), leb128(7), leb128(7), crc_rest),  # shape product
            _v2(ref, flags | 0x10, variant, N, below, leb128(40), crc_rest),  # 40 dims
            _v2(ref, flags | 0x10, variant, N, below, leb128(1), leb128(N), crc_rest),  # a 1-D shape spelt out
            _v2(ref, flags | 0x20, variant, N, below, leb128(1), b"\x05", crc_rest[len(esc):]),  # a bad escape field
            _v2(ref, flags | 0x20, variant, N, below, leb128(10**6), crc_rest[len(esc):]),  # escapes beyond the end
            _v2(ref, flags | 0x40, variant, N, below, leb128(1), b"\xc0", crc_rest),  # a source that is nil
            _v2(ref, flags, variant, N, below) + b"\xff" * 20,  # a varint that never ends
    ):
        with pytest.raises(CorruptDataError):
            ubpe.decompress(hostile, tokenizer=synthetic, max_output_size=1 << 20)


def test_command_line_fit_shared_compress_decompress(tmp_path):
    from ubpe import cli

    rng = np.random.default_rng(9)
    x = np.cumsum(rng.integers(-3, 4, 12 * N)).astype(np.int16)
    np.save(tmp_path / "train.npy", x[:10 * N])
    np.save(tmp_path / "w.npy", x[11 * N:])
    model, packed, back = tmp_path / "m.model", tmp_path / "w.ubpe", tmp_path / "back.npy"
    assert cli.main([str(a) for a in ["fit", "--shared", N, tmp_path / "train.npy", "-o", model, "-q"]]) == 0
    assert SharedModel.load(str(model)).history.size == 10 * N
    assert cli.main([str(a) for a in ["compress", "--model", model, tmp_path / "w.npy", "-o", packed, "-q"]]) == 0
    assert packed.read_bytes()[:1] == b"\xf5"  # (a window container of version 5)
    assert SharedModel.load(str(model)).digest.startswith(ubpe.describe(packed.read_bytes()).digest)
    assert cli.main([str(a) for a in ["decompress", "--model", model, packed, "-o", back, "-q"]]) == 0
    assert back.read_bytes() == (tmp_path / "w.npy").read_bytes()
    assert cli.main([str(a) for a in ["decompress", packed, "-o", tmp_path / "no.npy", "-q"]]) != 0


def test_decompress_to_reads_window_containers(synthetic):
    import io

    w = np.cumsum(np.random.default_rng(11).integers(-3, 4, N)).astype(np.int16)
    packed = ubpe.compress(w, tokenizer=synthetic)
    out = io.BytesIO()
    assert ubpe.decompress_to(out, io.BytesIO(packed), tokenizer=synthetic) == (w.dtype, w.shape)
    assert out.getvalue() == w.tobytes()
    with pytest.raises(CorruptDataError, match="references shared model"):
        ubpe.decompress_to(io.BytesIO(), io.BytesIO(packed))
