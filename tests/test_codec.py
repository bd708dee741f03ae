"""ubpe as a numcodecs codec and a zarr compressor (issue 10, item 3)."""

from __future__ import annotations

import json

import numpy as np
import pytest

numcodecs = pytest.importorskip("numcodecs", reason="numcodecs is the optional extra ubpe[zarr]")

import ubpe  # noqa: E402
from ubpe.codec import UBPECodec  # noqa: E402


@pytest.fixture(scope="module")
def signal() -> np.ndarray:
    rng = np.random.default_rng(6)
    return np.cumsum(rng.integers(-20, 21, 30_000)).astype(np.int16)


@pytest.mark.parametrize("level", [1, 2])
def test_round_trip_from_several_buffer_types_and_into_out(signal, level):
    codec = UBPECodec(level=level)
    for buf in (signal, signal.reshape(100, 300).T.copy(), memoryview(signal)):
        data = codec.encode(buf)
        assert isinstance(data, bytes) and len(data) < signal.nbytes / 2
        back = codec.decode(data)
        assert np.asarray(back).tobytes() == np.ascontiguousarray(np.asarray(buf)).tobytes()
        out = np.empty_like(np.asarray(buf))
        assert codec.decode(data, out=out) is out and out.tobytes() == np.asarray(buf).tobytes()
    raw = signal.tobytes()  # plain bytes are bytes (uint8) to the codec
    packed = codec.encode(raw)
    assert bytes(np.asarray(codec.decode(packed))) == raw
    out = bytearray(len(raw))
    codec.decode(packed, out=out)
    assert bytes(out) == raw


def test_config_is_json_and_enough_to_decode(signal):
    model = ubpe.Tokenizer(None, 300).fit(signal[:20_000], predictor="delta1")
    codec = UBPECodec(level=1, model=model)
    config = json.loads(json.dumps(codec.get_config()))
    assert config["id"] == "ubpe" and isinstance(config["model"], str)
    data = codec.encode(signal[20_000:])
    info = ubpe.describe(data)
    assert not info.embedded and info.delta == 1  # each chunk: the digest and its stream
    again = numcodecs.get_codec(config)  # the registry, through the entry point
    assert isinstance(again, UBPECodec) and again.get_config() == config
    assert np.array_equal(again.decode(data), signal[20_000:])
    assert UBPECodec.from_config({k: v for k, v in config.items() if k != "id"}).get_config() == config


def test_bad_configs_and_inputs():
    with pytest.raises(ValueError):
        UBPECodec(level=3)
    with pytest.raises(TypeError):
        UBPECodec(model=42)
    with pytest.raises(ubpe.CorruptDataError):
        UBPECodec(model=b"not a model")
    with pytest.raises(ubpe.CorruptDataError):
        UBPECodec().decode(b"not a container")


def test_zarr_format_2_array_on_disk(tmp_path, signal):
    zarr = pytest.importorskip("zarr", reason="zarr is the optional extra ubpe[zarr]")
    path = str(tmp_path / "a.zarr")
    frames = np.stack([signal[:15_000], signal[15_000:]], axis=1)  # (frames, channels)
    kwargs = dict(shape=frames.shape, chunks=(4000, 2), dtype=frames.dtype, compressor=UBPECodec(level=2))
    if int(zarr.__version__.split(".")[0]) >= 3:
        kwargs = dict(shape=frames.shape, chunks=(4000, 2), dtype=frames.dtype, zarr_format=2,
                      compressors=UBPECodec(level=2))
        z = zarr.create_array(path, **kwargs)
    else:  # pragma: no cover - zarr 2
        z = zarr.open_array(path, mode="w", **kwargs)
    z[:] = frames
    back = zarr.open_array(path, mode="r")  # the codec found again from the stored config
    assert np.array_equal(back[:], frames)
    assert np.array_equal(back[3990:4010, 1], frames[3990:4010, 1])  # across a chunk boundary


def test_zarr_format_3_array_on_disk_reopens_in_a_fresh_process(tmp_path, signal):
    """Format 3 through zarr's numcodecs bridge (zarr >= 3.1.3): "numcodecs.ubpe" with a shared
    model in the array's metadata; a new process finds the codec through the entry point."""
    import subprocess
    import sys
    import warnings

    pytest.importorskip("zarr.codecs.numcodecs", reason="zarr >= 3.1.3 has the numcodecs bridge")
    import zarr

    import ubpe.zarr3

    tok = ubpe.Tokenizer(None, 600).fit(signal[:10_000], predictor="delta1")
    path = str(tmp_path / "a3.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr: "numcodecs codecs are not in the format 3 spec"
        z = zarr.create_array(path, shape=signal.shape, chunks=(7000,), dtype=signal.dtype,
                              serializer=ubpe.zarr3.codec(level=2, model=tok), compressors=None)
        z[:] = signal
    meta = json.loads((tmp_path / "a3.zarr" / "zarr.json").read_text())
    assert meta["codecs"][0]["name"] == "numcodecs.ubpe" and meta["codecs"][0]["configuration"]["level"] == 2
    code = (f"import zarr, numpy as np, sys; z = zarr.open_array({path!r}, mode='r'); "
            "sys.stdout.write(z[:].tobytes().hex())")
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert bytes.fromhex(proc.stdout) == signal.tobytes()
    with pytest.raises((ValueError, TypeError)):
        ubpe.zarr3.UBPE(level=7)


def test_import_ubpe_never_imports_numcodecs_or_zarr():
    import subprocess
    import sys

    code = "import sys, ubpe; ubpe.compress(b'abc'); print(sorted(m for m in ('numcodecs', 'zarr') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
