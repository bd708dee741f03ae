"""The command line and the user's files: byte-identical round trips of every source kind,
standard input and output, special files, default names, ``ubpe test``, early refusals and
messages in the user's terms (issue 12)."""

from __future__ import annotations

import cProfile
import os
import pstats
import stat
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ubpe import cli

ONE_CALL = settings(max_examples=min(settings().max_examples, 15), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def round_trip(capsys, tmp_path, name: str, blob: bytes, *extra: str) -> bytes:
    """Write ``blob`` as ``name``, compress it to the default name, remove it, decompress to the
    default name again; return what came back."""
    src = tmp_path / name
    src.write_bytes(blob)
    code, out, err = run(capsys, "compress", src, *extra)
    assert code == 0, err
    packed = tmp_path / (name + ".ubpe")
    assert packed.exists()
    assert f"{len(blob)} -> {packed.stat().st_size} bytes" in out  # the ratio is against the file
    src.unlink()
    code, _, err = run(capsys, "decompress", packed)
    assert code == 0, err
    return src.read_bytes()


# ============================================================== source kinds, byte for byte


@pytest.mark.parametrize("array", [
    np.arange(3000, dtype="<i2") % 17,
    (np.arange(3000) % 17).astype(">i2"),
    np.asfortranarray((np.arange(3000, dtype="<i4") % 17).reshape(1000, 3)),
    (np.arange(3000, dtype=np.int64) % 17).reshape(1000, 3),
    np.array([0, 2**64 - 1, 5, 5, 5], dtype=np.uint64),
    np.zeros(0, dtype=np.int16),
], ids=["int16", "big-endian", "fortran", "rows", "uint64", "empty"])
def test_npy_comes_back_byte_for_byte(capsys, tmp_path, array):
    import io

    buf = io.BytesIO()
    np.save(buf, array)
    assert round_trip(capsys, tmp_path, "x.npy", buf.getvalue()) == buf.getvalue()


def test_npy_of_another_writer_keeps_its_header(capsys, tmp_path):
    import io

    buf = io.BytesIO()
    np.lib.format.write_array(buf, (np.arange(500) % 9).astype("<i2"), version=(2, 0))
    assert round_trip(capsys, tmp_path, "v2.npy", buf.getvalue()) == buf.getvalue()


@pytest.mark.parametrize("text", [
    "time,ecg\n" + "".join(f"{i},{(i * 7) % 100 - 50}\n" for i in range(400)),
    "".join(f"{(i * 13) % 256}\n" for i in range(400)),
    "a;b;c\n" + "".join(f"{i};{i % 3};{-i}\n" for i in range(300)),
    "1\r\n2\r\n3\r\n",  # CRLF: compressed as bytes, back the same
    " 1, 2\n+3, 4\n",  # spacing and signs numbers would lose
], ids=["header", "one-column", "semicolons", "crlf", "spacing"])
def test_csv_comes_back_byte_for_byte(capsys, tmp_path, text):
    assert round_trip(capsys, tmp_path, "t.csv", text.encode()) == text.encode()


@ONE_CALL
@given(text=st.text(max_size=300))
def test_any_utf8_text_comes_back_byte_for_byte(capsys, tmp_path_factory, text):
    tmp = tmp_path_factory.mktemp("text")
    blob = text.encode("utf-8", "surrogatepass")
    assert round_trip(capsys, tmp, "notes.txt", blob) == blob


def test_text_is_never_turned_into_numbers(capsys, tmp_path):
    """The issue's case: a text with '7:30' in it is compressed as bytes, with a note, and comes
    back as the same text (not one decimal number per line)."""
    blob = "Meeting at 7:30.\nBring notes; ½ of them are in Ünïcode ✓\n".encode() * 50
    src = tmp_path / "notes.txt"
    src.write_bytes(blob)
    code, _, err = run(capsys, "compress", src)
    assert code == 0 and "as bytes" in err and "notes.txt" in err
    src.unlink()
    assert run(capsys, "decompress", tmp_path / "notes.txt.ubpe")[0] == 0
    assert src.read_bytes() == blob
    code, _, _ = run(capsys, "decompress", tmp_path / "notes.txt.ubpe", "-o", tmp_path / "copy.csv")
    assert code == 0 and (tmp_path / "copy.csv").read_bytes() == blob  # bytes stay bytes


@ONE_CALL
@given(blob=st.binary(max_size=500))
def test_arbitrary_bytes_come_back(capsys, tmp_path_factory, blob):
    tmp = tmp_path_factory.mktemp("bytes")
    assert round_trip(capsys, tmp, "blob.dat", blob) == blob


@pytest.mark.parametrize("bits,channels,rate", [(8, 1, 8000), (16, 2, 44100), (24, 3, 48000), (32, 8, 96000)])
def test_wav_comes_back_byte_for_byte(capsys, tmp_path, bits, channels, rate):
    import struct

    rng = np.random.default_rng(bits + channels)
    width = bits // 8
    frames = 700
    if bits == 8:
        payload = rng.integers(0, 256, frames * channels, dtype=np.uint8).tobytes()
    else:
        x = np.cumsum(rng.integers(-50, 51, (frames, channels)), axis=0) % (1 << (bits - 1))
        payload = b"".join(int(v).to_bytes(width, "little", signed=True) for v in x.ravel())
    fmt = struct.pack("<HHIIHH", 1, channels, rate, rate * channels * width, channels * width, bits)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(payload)) + payload
    blob = b"RIFF" + struct.pack("<I", len(body)) + body
    assert round_trip(capsys, tmp_path, "a.wav", blob) == blob


def test_raw_with_dtype_comes_back(capsys, tmp_path):
    blob = (np.arange(999) % 37).astype("<i2").tobytes()
    assert round_trip(capsys, tmp_path, "x.raw", blob, "--dtype", "<i2") == blob


# ============================================================== standard streams and special files


def ubpe(*argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ubpe", *argv], input=stdin, capture_output=True, timeout=300)


def test_stdin_to_stdout_and_back():
    blob = "".join(f"{(i * 7) % 50}\n" for i in range(2000)).encode()
    packed = ubpe("compress", "-", stdin=blob)
    assert packed.returncode == 0, packed.stderr
    assert packed.stdout[:1] != b"" and b"ubpe" in packed.stdout[:16]
    assert b"(standard output)" in packed.stderr  # the summary never mixes with the data
    back = ubpe("decompress", "-", stdin=packed.stdout)
    assert back.returncode == 0, back.stderr
    assert back.stdout == blob


def test_dev_null_stays_a_device(capsys, tmp_path):
    src = tmp_path / "x.npy"
    np.save(src, np.arange(500, dtype=np.int16) % 7)
    assert run(capsys, "compress", src)[0] == 0
    before = os.stat(os.devnull)
    code, _, err = run(capsys, "decompress", tmp_path / "x.npy.ubpe", "-o", os.devnull)  # no --overwrite
    assert code == 0, err
    code, _, err = run(capsys, "decompress", tmp_path / "x.npy.ubpe", "-o", os.devnull, "--overwrite")
    assert code == 0, err
    after = os.stat(os.devnull)
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino


def test_fifo_is_written_in_place(capsys, tmp_path):
    src = tmp_path / "x.npy"
    np.save(src, np.arange(500, dtype=np.int16) % 7)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    code, _, err = run(capsys, "compress", src, "-o", fifo)
    reader.join(timeout=60)
    assert code == 0, err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert got and got[0][:16].find(b"ubpe") >= 0
    (tmp_path / "y.ubpe").write_bytes(got[0])
    assert run(capsys, "decompress", tmp_path / "y.ubpe", "-o", tmp_path / "y.npy")[0] == 0
    assert (tmp_path / "y.npy").read_bytes() == src.read_bytes()


# ============================================================== several inputs, --rm, test


def test_several_inputs_default_names_and_rm(capsys, tmp_path):
    blobs = {}
    for i in range(3):
        path = tmp_path / f"s{i}.npy"
        np.save(path, (np.arange(300 + i) * (i + 1)) % 11)
        blobs[path.name] = path.read_bytes()
    code, _, err = run(capsys, "compress", *sorted(tmp_path.iterdir()), "--rm")
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s0.npy.ubpe", "s1.npy.ubpe", "s2.npy.ubpe"]
    code, _, err = run(capsys, "decompress", *sorted(tmp_path.iterdir()))  # --keep is the default
    assert code == 0, err
    assert {p.name: p.read_bytes() for p in tmp_path.glob("*.npy")} == blobs
    assert len(list(tmp_path.glob("*.ubpe"))) == 3


def test_name_is_restored_from_the_container(capsys, tmp_path):
    src = tmp_path / "ecg.npy"
    np.save(src, np.arange(400, dtype=np.int16) % 13)
    assert run(capsys, "compress", src, "-o", tmp_path / "archive.bin")[0] == 0
    blob = src.read_bytes()
    src.unlink()
    assert run(capsys, "decompress", tmp_path / "archive.bin")[0] == 0
    assert src.read_bytes() == blob


def test_test_command_exit_codes_and_messages(capsys, tmp_path):
    src = tmp_path / "x.npy"
    np.save(src, np.arange(2000, dtype=np.int16) % 29)
    assert run(capsys, "compress", src)[0] == 0
    good = tmp_path / "x.npy.ubpe"
    data = good.read_bytes()
    (tmp_path / "cut.ubpe").write_bytes(data[: len(data) // 2])
    flipped = bytearray(data)
    flipped[-3] ^= 0x40
    (tmp_path / "flip.ubpe").write_bytes(bytes(flipped))
    (tmp_path / "joined.ubpe").write_bytes(data + b"extra")
    code, out, err = run(capsys, "test", good)
    assert code == 0 and "x.npy.ubpe: OK" in out and err == ""
    code, out, err = run(capsys, "test", good, tmp_path / "cut.ubpe", src, tmp_path / "flip.ubpe",
                         tmp_path / "joined.ubpe")
    assert code == 1 and "x.npy.ubpe: OK" in out
    lines = err.splitlines()
    assert any("cut.ubpe" in line and f"truncated: the container ends after {len(data) // 2} bytes" in line
               for line in lines), err
    assert any("x.npy" in line and "not a ubpe file" in line for line in lines), err
    assert any("flip.ubpe" in line for line in lines), err
    assert any("joined.ubpe" in line and "5 bytes of other data" in line for line in lines), err
    assert "ExtraData" not in err and "Traceback" not in err
    assert run(capsys, "decompress", "-t", good)[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["x.npy", "x.npy.ubpe", "cut.ubpe", "flip.ubpe", "joined.ubpe"])  # test writes nothing


# ============================================================== refused before any work


def run_profiled(capsys, *argv) -> tuple[int, str, set[str]]:
    """``run``, and the names of the public API's functions (ubpe.api) that ran meanwhile (read
    from cProfile)."""
    import ubpe.api

    profile = cProfile.Profile()
    code = profile.runcall(cli.main, [str(a) for a in argv])
    _, err = capsys.readouterr()
    api = os.path.abspath(ubpe.api.__file__)
    ran = {name for (file, _, name) in pstats.Stats(profile).stats if os.path.abspath(file) == api}
    return code, err, ran


def test_missing_directory_is_refused_before_work_and_named(capsys, tmp_path):
    src = tmp_path / "x.npy"
    np.save(src, np.arange(100, dtype=np.int16))
    code, err, ran = run_profiled(capsys, "compress", src, "-o", tmp_path / "nope" / "x.ubpe")
    assert code == 1 and str(tmp_path / "nope") in err and ".tmp" not in err
    assert not ran & {"compress", "compress_to"}  # refused before compressing
    code, _, ran = run_profiled(capsys, "compress", src, "-o", tmp_path / "x.ubpe")
    assert code == 0 and "compress" in ran  # (the control: a compression that ran shows)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root writes in any directory: a read-only one does not stop it")
def test_unwritable_directory_is_refused_before_work(capsys, tmp_path):
    src = tmp_path / "x.npy"
    np.save(src, np.arange(100, dtype=np.int16))
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o500)
    try:
        code, err, ran = run_profiled(capsys, "compress", src, "-o", out / "x.ubpe")
    finally:
        out.chmod(0o700)
    assert code == 1 and str(out) in err and ".tmp" not in err
    assert not ran & {"compress", "compress_to"}


def test_existing_output_needs_overwrite_and_inputs_are_never_replaced(capsys, tmp_path):
    src = tmp_path / "x.npy"
    np.save(src, np.arange(100, dtype=np.int16))
    (tmp_path / "x.npy.ubpe").write_bytes(b"keep me")
    code, _, err = run(capsys, "compress", src)
    assert code == 1 and "already exists" in err and (tmp_path / "x.npy.ubpe").read_bytes() == b"keep me"
    code, _, err = run(capsys, "compress", src, "-o", src, "--overwrite")
    assert code == 1 and "is the input file" in err
    assert run(capsys, "compress", src, "--overwrite")[0] == 0


@pytest.mark.parametrize("argv,message", [
    (["compress", "a.npy", "b.npy", "-o", "x.ubpe"], "-o names one output"),
    (["compress", "a.npy", "-o", "x.ubpe", "-c"], "cannot be used together"),
    (["compress", "-", "--rm"], "--rm cannot remove standard input"),
    (["decompress", "a.ubpe", "b.ubpe", "-c"], "-c/--stdout takes one input"),
])
def test_usage_errors(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, *argv)
    assert code == 2 and message in err


# ============================================================== progress


def test_progress_line_on_a_terminal_for_slow_jobs(capsys, tmp_path, monkeypatch):
    """A job that runs longer than cli.PROGRESS_DELAY (here: compress made slow by a sleep) shows
    a progress line on a terminal; never with -q, never when standard error is not a terminal.
    (That a job under the delay shows none is tqdm's ``delay``: not timed here.)"""
    import time

    import ubpe.api

    src = tmp_path / "x.npy"
    np.save(src, np.arange(300, dtype=np.int16) % 5)
    real = ubpe.api.compress
    monkeypatch.setattr(ubpe.api, "compress", lambda *a, **k: (time.sleep(cli.PROGRESS_DELAY + 0.6), real(*a, **k))[1])
    code, _, err = run(capsys, "compress", src, "-o", tmp_path / "pipe.ubpe")
    assert code == 0 and "compressing" not in err  # not a terminal
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, _, err = run(capsys, "compress", src)
    assert code == 0 and f"compressing {src}" in err
    code, _, err = run(capsys, "-q", "compress", src, "-o", tmp_path / "q.ubpe")
    assert code == 0 and err == ""


def test_text_flag_compresses_any_file_as_text_with_the_text_coder(capsys, tmp_path):
    """`--text` (an alias of --bytes): a file whose extension says numbers is taken as text, coded
    by a text coder at the default level, and restored byte for byte."""
    import ubpe

    blob = ("1,2,3 is not a CSV here; it is a sentence about numbers, and words.\n" * 60).encode()
    src = tmp_path / "notes.csv"
    src.write_bytes(blob)
    code, _, err = run(capsys, "compress", src, "--text", "-q")
    assert code == 0, err
    info = ubpe.describe((tmp_path / "notes.csv.ubpe").read_bytes())
    assert info.coder == "cmt2" and info.source["format"] == "bytes"
    src.unlink()
    assert run(capsys, "decompress", tmp_path / "notes.csv.ubpe", "-q")[0] == 0
    assert src.read_bytes() == blob
