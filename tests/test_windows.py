"""Shared models for small windows (issue 30.2): a model fitted on a few windows codes the others
smaller than compressing each alone, never larger, bit for bit, and a window container names
the model it needs (docs/format.md, "Window containers")."""

from __future__ import annotations

import hashlib

import msgpack
import numpy as np
import pytest
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


@settings(max_examples=30)
@given(st.data())
def test_round_trip_and_never_larger_whatever_the_window(synthetic, data):
    dtype = data.draw(st.sampled_from(["int16", "int32", "uint16", "int8", ">i2"]))
    info = np.iinfo(np.dtype(dtype))
    n = data.draw(st.integers(1, 400))
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
    assert packed[:4] == b"ubpw"
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
    with pytest.raises(CorruptDataError, match="not the given one"):
        ubpe.decompress(packed, tokenizer=model)
    with pytest.raises(TypeError, match="SharedModel"):
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


def _model_file(body: dict) -> bytes:
    raw = msgpack.packb(body, use_bin_type=True)
    return msgpack.packb({"magic": "ubpe.shared", "version": 1, "body": raw, "sha256": hashlib.sha256(raw).digest()},
                         use_bin_type=True)


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
    newer = msgpack.packb({**msgpack.unpackb(good), "version": 2}, use_bin_type=True)
    with pytest.raises(FormatVersionError):
        SharedModel.from_bytes(newer)
    with pytest.raises(TypeError):
        SharedModel.from_bytes("not bytes")


def test_damaged_or_hostile_window_containers_are_refused(synthetic):
    w = np.cumsum(np.random.default_rng(8).integers(-3, 4, N)).astype(np.int16)
    good = ubpe.compress(w, tokenizer=synthetic)
    assert good[:4] == b"ubpw"
    for i in range(4, len(good)):
        bad = bytearray(good)
        bad[i] ^= 0x21
        try:
            back = ubpe.decompress(bytes(bad), tokenizer=synthetic)
        except CorruptDataError:
            continue
        except FormatVersionError:
            assert i == 4
            continue
        assert np.array_equal(back, w)  # (a flip msgpack does not see, e.g. in a nil's type byte: never wrong data)
    for cut in range(0, len(good), 7):
        with pytest.raises(CorruptDataError):
            ubpe.decompress(good[:cut], tokenizer=synthetic)
    fields = msgpack.unpackb(good[5:])
    ref, index, dtype, shape, n, skip, rest, esc, crc = fields
    for change in ({4: 10**12}, {4: 10**7}, {5: 10**9}, {1: 3}, {1: -1}, {2: "<i2"}, {2: 99}, {3: [7, 7]}, {6: "text"},
                   {7: b"\x05"}, {8: -1}, {0: b"12345678"}):
        hostile = list(fields)
        for k, v in change.items():
            hostile[k] = v
        with pytest.raises(CorruptDataError):
            ubpe.decompress(b"ubpw\x01" + msgpack.packb(hostile, use_bin_type=True), tokenizer=synthetic,
                            max_output_size=1 << 20)
    with pytest.raises(FormatVersionError):
        ubpe.decompress(b"ubpw\x02" + good[5:], tokenizer=synthetic)


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
    assert packed.read_bytes()[:4] == b"ubpw"
    assert ubpe.describe(packed.read_bytes()).digest == SharedModel.load(str(model)).ref.hex()
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
