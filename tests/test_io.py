"""ubpe.io: atomic writes, the readers and writers of each format, their errors, the demo signal."""

from __future__ import annotations

import os

import numpy as np
import pytest
from scipy.io import wavfile

from ubpe import io as uio

# ============================================================== write_atomic


def _leftovers(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_write_atomic_creates(tmp_path):
    target = tmp_path / "out.bin"
    uio.write_atomic(target, b"hello", overwrite=False)
    assert target.read_bytes() == b"hello"
    assert _leftovers(tmp_path) == []


def test_write_atomic_refuses_existing(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(FileExistsError) as info:
        uio.write_atomic(target, b"new", overwrite=False)
    assert str(target) in str(info.value) and "--overwrite" in str(info.value)
    assert target.read_bytes() == b"old"
    assert _leftovers(tmp_path) == []


def test_write_atomic_overwrites_when_asked(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    uio.write_atomic(str(target), b"new", overwrite=True)
    assert target.read_bytes() == b"new"
    assert _leftovers(tmp_path) == []


def test_write_atomic_file_mode_follows_umask(tmp_path):
    target = tmp_path / "out.bin"
    old = os.umask(0o022)
    try:
        uio.write_atomic(target, b"x", overwrite=False)
    finally:
        os.umask(old)
    assert target.stat().st_mode & 0o777 == 0o644


class _Boom(Exception):
    pass


@pytest.mark.parametrize("existing", [False, True])
def test_write_atomic_failure_leaves_target_and_no_temp(tmp_path, monkeypatch, existing):
    target = tmp_path / "out.bin"
    if existing:
        target.write_bytes(b"old")

    def fail(fd):
        raise _Boom("fsync failed")

    monkeypatch.setattr(uio.os, "fsync", fail)
    with pytest.raises(_Boom):
        uio.write_atomic(target, b"new" * 1000, overwrite=True)
    monkeypatch.undo()
    assert _leftovers(tmp_path) == []
    if existing:
        assert target.read_bytes() == b"old"
    else:
        assert not target.exists()


def test_write_atomic_failure_in_write(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(TypeError):
        uio.write_atomic(target, "not bytes", overwrite=True)  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert _leftovers(tmp_path) == []


def test_write_atomic_failure_in_rename(tmp_path, monkeypatch):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")

    def fail(src, dst):
        raise PermissionError(13, "Permission denied", dst)

    monkeypatch.setattr(uio.os, "replace", fail)
    with pytest.raises(PermissionError):
        uio.write_atomic(target, b"new", overwrite=True)
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert _leftovers(tmp_path) == []


def test_write_atomic_no_clobber_race(tmp_path, monkeypatch):
    """A file that appears between the check and the rename is not replaced."""
    target = tmp_path / "out.bin"
    real_fsync = os.fsync

    def fsync_then_appear(fd):
        real_fsync(fd)
        if not target.exists():
            target.write_bytes(b"theirs")

    monkeypatch.setattr(uio.os, "fsync", fsync_then_appear)
    with pytest.raises(FileExistsError):
        uio.write_atomic(target, b"mine", overwrite=False)
    monkeypatch.undo()
    assert target.read_bytes() == b"theirs"
    assert _leftovers(tmp_path) == []


def test_write_atomic_directory_target(tmp_path):
    with pytest.raises(IsADirectoryError):
        uio.write_atomic(tmp_path, b"x", overwrite=True)


def test_write_atomic_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError):
        uio.write_atomic(tmp_path / "no" / "such" / "file", b"x", overwrite=False)


# ============================================================== round trips


@pytest.mark.parametrize(
    "values",
    [
        np.array([3, -1, 7, 7, 0], dtype=np.int16),
        np.arange(-5, 20, dtype=np.int64).reshape(5, 5),
        np.array([0, 255, 1], dtype=np.uint8),
        np.array([2**40, -(2**40)], dtype=np.int64),
        np.zeros(0, dtype=np.int32),
    ],
)
def test_npy_round_trip(tmp_path, values):
    path = tmp_path / "v.npy"
    uio.write_values(path, values)
    back = uio.read_values(path)
    assert back.dtype == values.dtype and np.array_equal(back, values)


@pytest.mark.parametrize("dtype", ["u1", "<i2", "<i4"])
def test_wav_round_trip_mono(tmp_path, dtype):
    info = np.iinfo(dtype)
    values = np.array([info.min, 0 if dtype != "u1" else 128, info.max, 5, 6], dtype=dtype)
    path = tmp_path / "v.wav"
    uio.write_values(path, values, rate=360)
    sig = uio.read_signal(path)
    assert sig.rate == 360
    assert sig.values.dtype == values.dtype and np.array_equal(sig.values, values)
    assert np.array_equal(uio.read_values(path), values)


def test_wav_round_trip_stereo_and_default_rate(tmp_path):
    values = np.arange(20, dtype=np.int16).reshape(10, 2)
    path = tmp_path / "v.wav"
    uio.write_values(path, values)
    rate, data = wavfile.read(path)
    assert rate == uio.DEFAULT_WAV_RATE
    sig = uio.read_signal(path)
    assert sig.values.shape == (10, 2) and np.array_equal(sig.values, values)


def test_wav_narrows_wide_integers(tmp_path):
    path = tmp_path / "v.wav"
    uio.write_values(path, np.array([1, -2, 300], dtype=np.int64))
    assert uio.read_values(path).dtype == np.int16
    uio.write_values(path, np.array([1, 70000], dtype=np.int64), overwrite=True)
    back = uio.read_values(path)
    assert back.dtype == np.int32 and back.tolist() == [1, 70000]
    with pytest.raises(ValueError, match="32-bit"):
        uio.write_values(path, np.array([2**40], dtype=np.int64), overwrite=True)


def test_wav_reads_float_for_the_step_path(tmp_path):
    path = tmp_path / "f.wav"
    x = np.linspace(-1, 1, 50).astype(np.float32)
    wavfile.write(path, 8000, x)
    sig = uio.read_signal(path)
    assert sig.values.dtype == np.float32 and np.array_equal(sig.values, x) and sig.source["float"] is True


def test_csv_round_trip(tmp_path):
    values = np.array([5, -3, 0, 123456789012], dtype=np.int64)
    for name in ("v.csv", "v.txt"):
        path = tmp_path / name
        uio.write_values(path, values)
        assert path.read_text() == "5\n-3\n0\n123456789012\n"
        back = uio.read_values(path)
        assert back.dtype == np.int64 and np.array_equal(back, values)


def test_csv_layouts(tmp_path):
    path = tmp_path / "v.csv"
    path.write_text("# header comment\n1, 2,3\n\n4,5 ,  6\r\n+7,-8,9 # trailing\n\n")
    assert uio.read_values(path).tolist() == [[1, 2, 3], [4, 5, 6], [7, -8, 9]]
    path.write_text("1 2  3\n4  5 6\n")  # no comma, semicolon or tab on the first line: whitespace
    assert uio.read_values(path).tolist() == [[1, 2, 3], [4, 5, 6]]
    path.write_text("1,2,3,4\n")  # one line of values: a flat sequence
    assert uio.read_values(path).tolist() == [1, 2, 3, 4]
    path.write_text("")
    assert uio.read_values(path).size == 0
    path2 = tmp_path / "m.csv"
    uio.write_values(path2, np.array([[1, 2], [3, 4]]))
    assert path2.read_text() == "1,2\n3,4\n"
    assert uio.read_values(path2).tolist() == [[1, 2], [3, 4]]


def test_csv_floats_are_read_as_float64(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text("1\n2\n3.5\n4\n")
    back = uio.read_values(path)
    assert back.dtype == np.float64 and back.tolist() == [1.0, 2.0, 3.5, 4.0]
    path.write_text("1 2e3\n")
    assert uio.read_values(path).tolist() == [1.0, 2000.0]


def test_csv_rejects_words_and_huge(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("1\nvalue\n")
    with pytest.raises(ValueError, match=r"line 2, column 0: 'value' is not a number"):
        uio.read_values(path)
    path.write_text("1\n99999999999999999999999\n")
    with pytest.raises(ValueError, match="line 2, column 0: .*64-bit"):
        uio.read_values(path)
    path.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(ValueError, match="UTF-8"):
        uio.read_values(path)


@pytest.mark.parametrize("dtype", ["<i2", ">i2", "u1", "<u4", "<i8"])
def test_raw_round_trip(tmp_path, dtype):
    values = np.array([1, 2, 3, 100, 0], dtype=dtype)
    path = tmp_path / "v.bin"
    uio.write_values(path, values)
    assert path.read_bytes() == values.tobytes()
    back = uio.read_values(path, dtype=dtype)
    assert back.dtype == np.dtype(dtype) and np.array_equal(back, values)


def test_raw_length_not_multiple(tmp_path):
    path = tmp_path / "v.dat"
    path.write_bytes(b"\x00" * 7)
    with pytest.raises(ValueError, match=r"7 bytes is not a multiple of the 2-byte") as info:
        uio.read_values(path, dtype="<i2")
    assert str(path) in str(info.value)


def test_raw_needs_dtype_and_integer_dtype(tmp_path):
    path = tmp_path / "v.dat"
    path.write_bytes(b"\x00" * 8)
    with pytest.raises(ValueError, match="--dtype"):
        uio.read_values(path)
    with pytest.raises(TypeError, match="quantize"):
        uio.read_values(path, dtype="<f4")
    with pytest.raises(TypeError, match="not a numpy dtype"):
        uio.read_values(path, dtype="nonsense")


def test_dtype_with_known_extension_is_refused(tmp_path):
    path = tmp_path / "v.npy"
    np.save(path, np.arange(3))
    with pytest.raises(ValueError, match="raw binary"):
        uio.read_values(path, dtype="<i2")
    assert uio.read_values(path, fmt="raw", dtype="u1").size == path.stat().st_size


def test_bytes_any_file(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.arange(3))
    back = uio.read_values(path, as_bytes=True)
    assert back.dtype == np.uint8 and back.tobytes() == path.read_bytes()
    out = tmp_path / "copy.bin"
    uio.write_values(out, back)
    assert out.read_bytes() == path.read_bytes()


def test_write_values_no_clobber(tmp_path):
    path = tmp_path / "v.npy"
    path.write_bytes(b"keep")
    with pytest.raises(FileExistsError, match="--overwrite"):
        uio.write_values(path, np.arange(3))
    assert path.read_bytes() == b"keep"
    uio.write_values(path, np.arange(3), overwrite=True)
    assert uio.read_values(path).tolist() == [0, 1, 2]


# ============================================================== reader errors


def test_missing_file(tmp_path):
    for name in ("none.npy", "none.wav", "none.csv"):
        with pytest.raises(FileNotFoundError):
            uio.read_values(tmp_path / name)
    with pytest.raises(FileNotFoundError):
        uio.read_values(tmp_path / "none.bin", dtype="<i2")
    with pytest.raises(FileNotFoundError):
        uio.read_values(tmp_path / "none.bin", as_bytes=True)


def test_npy_errors(tmp_path):
    bad = tmp_path / "bad.npy"
    bad.write_bytes(b"not an npy file at all")
    with pytest.raises(ValueError, match="not a readable .npy") as info:
        uio.read_values(bad)
    assert str(bad) in str(info.value)
    obj = tmp_path / "obj.npy"
    np.save(obj, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(TypeError, match="Python objects"):
        uio.read_values(obj)
    cpx = tmp_path / "c.npy"
    np.save(cpx, np.linspace(0, 1, 5) * 1j)
    with pytest.raises(TypeError, match="complex"):
        uio.read_values(cpx)
    flt = tmp_path / "f.npy"
    np.save(flt, np.linspace(0, 1, 5).astype(np.float32))
    assert uio.read_values(flt).dtype == np.float32
    scalar = tmp_path / "s.npy"
    np.save(scalar, np.int64(5))
    with pytest.raises(ValueError, match="scalar"):
        uio.read_values(scalar)
    truncated = tmp_path / "t.npy"
    np.save(truncated, np.arange(100))
    truncated.write_bytes(truncated.read_bytes()[:-10])
    with pytest.raises(ValueError, match="not a readable .npy"):
        uio.read_values(truncated)


def test_wav_errors(tmp_path):
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"RIFF\x00\x00")
    with pytest.raises(ValueError, match="not a readable WAV file: no RIFF/WAVE header") as info:
        uio.read_values(bad)
    assert str(bad) in str(info.value)


def test_write_errors(tmp_path):
    with pytest.raises(TypeError, match="complex"):
        uio.write_values(tmp_path / "f.npy", np.linspace(0, 1, 3) * 1j)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        uio.write_values(tmp_path / "c.csv", np.zeros((2, 2, 2), dtype=np.int8))
    with pytest.raises(ValueError, match="sample rate"):
        uio.write_values(tmp_path / "r.wav", np.zeros(3, dtype=np.int16), rate=0)
    with pytest.raises(ValueError, match="unknown format"):
        uio.write_values(tmp_path / "x", np.zeros(3, dtype=np.int16), fmt="parquet")
    assert list(tmp_path.iterdir()) == []


def test_cast_values():
    v = np.array([1, -2, 300], dtype=np.int64)
    out = uio.cast_values(v, ">i2")
    assert out.dtype == np.dtype(">i2") and out.tolist() == [1, -2, 300]
    with pytest.raises(ValueError, match="does not fit"):
        uio.cast_values(v, "u1")
    with pytest.raises(TypeError):
        uio.cast_values(v, "<f8")


# ============================================================== demo data


def test_demo_signal():
    x = uio.demo_signal()
    assert x.dtype == np.int16 and x.ndim == 1
    assert 20_000 <= len(x) <= 30_000
    assert 300 <= x.min() and x.max() <= 2047  # 11-bit ADC values
    assert x[:6].tolist() == [975, 981, 987, 989, 990, 990]  # record 208 from its start


def test_demo_data_is_small_and_attributed():
    from importlib import resources

    data = resources.files("ubpe").joinpath("data")
    assert len(data.joinpath("mitbih_208_excerpt.npy").read_bytes()) < 100_000
    text = data.joinpath("ATTRIBUTION.md").read_text()
    assert "ODC-By" in text and "208" in text and "PhysioNet" in text


def test_a_killed_write_leaves_a_temporary_that_a_later_write_removes(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from ubpe import io as uio

    target = tmp_path / "out.bin"
    # a child that dies by SIGKILL in the middle of write_atomic (during the write of the data)
    code = (
        "import os, signal, ubpe.io as u\n"
        "os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)\n"
        f"u.write_atomic({str(target)!r}, b'x' * 1000, overwrite=False)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    left = [p for p in tmp_path.iterdir() if p.name.startswith(".out.bin.")]
    assert len(left) == 1 and not target.exists()
    other = tmp_path / ".other.bin.abcdefgh.tmp"  # another file's temporary: never touched
    other.write_bytes(b"")
    uio.write_atomic(target, b"new", overwrite=False)
    assert left[0].exists(), "a fresh temporary (maybe a concurrent writer's) must stay"
    old = time.time() - uio.atomic.STALE_TEMP_SECONDS - 10
    for p in (left[0], other):
        os.utime(p, (old, old))
    uio.write_atomic(target, b"newer", overwrite=True)
    assert not left[0].exists() and other.exists()
    assert target.read_bytes() == b"newer"
