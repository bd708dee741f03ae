"""The command line and the experiments as a new user meets them (issue 26), and inputs read
once from pipes and FIFOs (issue 27, item 5), on real recordings (the bundled MIT-BIH ECG
excerpt, as .npy, .wav, .csv and raw files): the command line (``ubpe.cli.main``) in this
process, and the installed ``ubpe`` entry point in a subprocess where a process of its own
matters (FIFOs and /dev/stdin, standard output to a pipe, exit codes, a terminal, the kernel
cache chosen at start-up, --help)."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys
import threading
import warnings
from io import BytesIO, TextIOWrapper

import numpy as np
import pytest

import ubpe
from ubpe import experiments, io

UBPE = shutil.which("ubpe", path=str(pathlib.Path(sys.executable).parent)) or shutil.which("ubpe")
pytestmark = pytest.mark.skipif(UBPE is None, reason="the ubpe command is not installed (pip install -e .)")


def ubpe_cmd(*argv, cwd, env=None, process=False, timeout=600) -> subprocess.CompletedProcess:
    """The ``ubpe`` command line: ``ubpe.cli.main`` in this process, in ``cwd`` with ``env`` set
    while it runs, its standard output and error captured as bytes (neither a terminal); with
    ``process``, the installed command in a subprocess, as a user runs it (for what needs a
    process of its own: a cache directory chosen at start-up)."""
    argv = [str(a) for a in argv]
    if process:
        full = dict(os.environ, **(env or {}))
        return subprocess.run([UBPE, *argv], cwd=cwd, env=full, capture_output=True, timeout=timeout)
    from ubpe.cli import main

    out, err = BytesIO(), BytesIO()
    saved = sys.stdout, sys.stderr, os.getcwd(), {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    os.chdir(cwd)
    wrappers = TextIOWrapper(out, write_through=True), TextIOWrapper(err, write_through=True)
    try:
        sys.stdout, sys.stderr = wrappers
        code = main(argv)
    finally:
        sys.stdout, sys.stderr = saved[0], saved[1]
        for w in wrappers:  # (closing a wrapper would close its bytes)
            w.flush()
            w.detach()
        os.chdir(saved[2])
        for k, v in saved[3].items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return subprocess.CompletedProcess([UBPE, *argv], code, out.getvalue(), err.getvalue())


def shell(script: str, *, cwd, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script.replace("UBPE", UBPE)], cwd=cwd, capture_output=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def ecg():
    """60 s of a real ECG (MIT-BIH record 208), int16."""
    return io.demo_signal()


@pytest.fixture()
def files(tmp_path, ecg):
    """The ECG as .npy, as raw little-endian int16 and as a two-lead .wav and .csv."""
    np.save(tmp_path / "ecg.npy", ecg)
    (tmp_path / "ecg.raw").write_bytes(ecg.astype("<i2").tobytes())
    two = np.stack([ecg, np.roll(ecg, 7)], axis=1)
    io.write_values(tmp_path / "two.wav", two, rate=360)
    io.write_values(tmp_path / "two.csv", two[:5000], source={"format": "csv", "delimiter": ",", "columns": 2,
                                                               "header": "lead1,lead2"})
    return tmp_path


def ratio_of(text: str) -> str:
    return re.search(r"ratio\s+(\d+\.\d+)", text).group(1)


# ============================================================== 1-3: bench and sweep


def test_bench_never_aborts_for_one_configuration_and_plots_every_row(files):
    """n_tokens below the alphabet is a row with its reason (the smallest size that works),
    printed, kept in the CSV and noted on the plot; every other configuration ran and every row of
    the table is a point or line of ratio.png, read back from the file."""
    out = files / "res"
    r = ubpe_cmd("bench", "ecg.npy", "two.csv", "--n-tokens", "auto,64", "--n-candidates", "50", "--level", "1",
                 "--codecs", "zlib,flac", "--out", out, "-j", "1", cwd=files)
    text = r.stdout.decode()
    assert r.returncode == 0, r.stderr.decode()
    assert "not run:" in text and "the smallest n_tokens that works is" in text
    rows = experiments.rows_from_csv(out / "results.csv")
    failed = [x for x in rows if not x.ok]
    assert failed and all(x.n_tokens == 64 and x.size is None and "smallest" in x.error for x in failed)
    assert all(x.ok for x in rows if x.n_tokens != 64)
    # FLAC codes the two-column CSV as two channels (it was skipped for multi-column inputs)
    assert [x.ok for x in rows if x.codec == "flac-8"] == [True, True] or shutil.which("flac") is None
    summary = experiments.summarize(rows)
    drawn = experiments.plotted(out / "ratio.png")
    assert sorted((a["config"], a["ratio"]) for a in summary) == sorted(
        (d["config"], d["y"]) for d in drawn)
    assert any(d["config"].endswith("t=auto c=50") and d["y"] for d in drawn)  # auto is plotted
    assert {(d["config"], d["y"]) for d in experiments.plotted(out / "time.png")} == {
        (a["config"], a["ratio"]) for a in summary if a["ratio"] is not None}


def test_sweep_rows_say_why_a_configuration_did_not_run(ecg):
    rows, _ = experiments.sweep(ecg[:3000], n_tokens=[0, 16, 1024], level=[1], codecs=[], memory=False)
    assert [r.ok for r in rows] == [False, False, True]
    assert "n_tokens" in rows[0].error and "smallest n_tokens that works is" in rows[1].error


def test_bench_reads_raw_files_and_its_rows_are_the_containers_of_compress(files):
    """--dtype as compress takes it; the default grid has auto, whose row is byte for byte the
    container ``ubpe compress`` writes, with the same ratio (file bytes / container bytes)."""
    r = ubpe_cmd("bench", "ecg.raw", "--dtype", "<i2", "--n-candidates", "50", "--level", "2", "--codecs", "none",
                 "--out", "res", "-j", "1", "--no-plots", cwd=files)
    assert r.returncode == 0, r.stderr.decode()
    rows = experiments.rows_from_csv(files / "res" / "results.csv")
    assert [x.n_tokens for x in rows] == [None, 256, 1024, 4096]  # auto first in the default grid
    c = ubpe_cmd("compress", "ecg.raw", "--dtype", "<i2", cwd=files)
    assert c.returncode == 0, c.stderr.decode()
    assert rows[0].size == (files / "ecg.raw.ubpe").stat().st_size
    assert f"{rows[0].ratio:.3f}" == ratio_of(c.stdout.decode())


# ============================================================== 4: the compile notice


def test_compile_notice_when_only_another_installation_is_cached(tmp_path):
    """The kernels of another installation (another checkout or environment) in the cache do
    not spare this one a compilation: the notice says so before any work."""
    from ubpe._cache import cache_key

    other = tmp_path / "cache" / cache_key() / "_kernels_0123456789abcdef0123456789abcdef01234567"
    other.mkdir(parents=True)
    (other / "kernel.nbi").write_bytes(b"")
    r = ubpe_cmd("compress", "missing.npy", cwd=tmp_path, env={"NUMBA_CACHE_DIR": str(tmp_path / "cache")},
                 process=True)
    err = r.stderr.decode()
    assert r.returncode == 1 and "compiling the kernels on first use" in err
    assert err.index("compiling") < err.index("missing.npy")


# ============================================================== 7: one ratio, counts named


def test_one_ratio_in_compress_inspect_test_and_describe(files):
    c = ubpe_cmd("compress", "two.wav", "two.csv", "--level", "1", cwd=files)
    k = ubpe_cmd("compress", "two.csv", "--column", "lead2", "-o", "col.ubpe", "--level", "1", cwd=files)
    assert c.returncode == 0 and k.returncode == 0, (c.stderr + k.stderr).decode()
    said = re.findall(r"ratio (\d+\.\d+)", (c.stdout + k.stdout).decode())
    names = ["two.wav.ubpe", "two.csv.ubpe", "col.ubpe"]
    inspected = re.findall(r"ratio\s+(\d+\.\d+)", ubpe_cmd("inspect", *names, cwd=files).stdout.decode())
    tested = re.findall(r"ratio (\d+\.\d+)", ubpe_cmd("test", *names, cwd=files).stdout.decode())
    described = [f"{ubpe.describe((files / n).read_bytes()).ratio:.3f}" for n in names]
    assert len(said) == 3 and said == inspected == tested == described
    # one column: against the one-column CSV decompress gives back, not the whole file
    assert ubpe_cmd("decompress", "col.ubpe", "-o", "col.csv", cwd=files).returncode == 0
    assert said[2] == f"{(files / 'col.csv').stat().st_size / (files / 'col.ubpe').stat().st_size:.3f}"
    assert said[0] == f"{(files / 'two.wav').stat().st_size / (files / 'two.wav.ubpe').stat().st_size:.3f}"


def test_counts_name_what_they_count(files, ecg):
    ubpe_cmd("compress", "two.wav", "--level", "1", cwd=files)
    t = ubpe_cmd("test", "two.wav.ubpe", cwd=files).stdout.decode()
    d = ubpe_cmd("decompress", "two.wav.ubpe", "-o", "back.wav", cwd=files).stdout.decode()
    said = f"{2 * ecg.size} values ({ecg.size} frames x 2 channels)"
    assert said in t and said in d
    assert (files / "back.wav").read_bytes() == (files / "two.wav").read_bytes()


# ============================================================== 8: progress


def test_progress_bar_on_a_terminal_only_cleared_before_the_summary(files):
    """In a pseudo-terminal (the bar shown at once: UBPE_PROGRESS_DELAY=0) a blocked input gets a
    bar with its percentage and rate, erased before the summary line; with standard error a pipe,
    nothing but the summary (fit included)."""
    pty = pytest.importorskip("pty")
    env = dict(os.environ, UBPE_PROGRESS_DELAY="0", COLUMNS="120")
    pid, fd = pty.fork()
    if pid == 0:  # the child: ubpe on the terminal
        os.chdir(files)
        os.execve(UBPE, [UBPE, "compress", "ecg.npy", "--block-size", "4096", "--level", "1"], env)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, out
    text = out.decode(errors="replace")
    bars = [m.start() for m in re.finditer(r"compressing ecg\.npy: +\d+%", text)]
    assert bars and "values/s" in text
    summary = text.index("ecg.npy.ubpe: ")
    assert bars[-1] < summary and re.search(r"\r {40,}\r", text[bars[-1]:summary])  # the line erased first
    r = ubpe_cmd("compress", "ecg.npy", "-o", "p.ubpe", "--block-size", "4096", cwd=files,
                 env={"UBPE_PROGRESS_DELAY": "0"})
    assert r.returncode == 0 and r.stderr == b""
    f = ubpe_cmd("fit", "ecg.npy", "-o", "m.model", "--n-tokens", "2000", cwd=files, env={"UBPE_PROGRESS_DELAY": "0"})
    assert f.returncode == 0 and f.stderr == b""  # no bar on a pipe


# ============================================================== 9: no library warnings


def test_compress_relays_no_warning_of_its_own_fits(ecg):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data = ubpe.compress(ecg[:6000], n_tokens=4096)
        ubpe.compress(np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max] * 5000))
    assert np.array_equal(ubpe.decompress(data), ecg[:6000])


# ============================================================== 10: fit, sizes, -9, inspect


def test_fit_without_n_tokens_and_the_smallest_size_that_works(files, ecg):
    f = ubpe_cmd("fit", "ecg.npy", "-o", "m.model", cwd=files)
    assert f.returncode == 0, f.stderr.decode()
    a = np.unique(ecg).size
    assert f"(n_tokens {a + 1024}: the alphabet + up to 1024 merges)" in f.stdout.decode()
    c = ubpe_cmd("compress", "ecg.npy", "--n-tokens", "16", cwd=files)
    assert c.returncode == 1 and re.search(r"the smallest --n-tokens that works is \d+", c.stderr.decode())


def test_presets_other_than_the_levels_are_refused_and_inspect_takes_several_files(files):
    r = ubpe_cmd("compress", "ecg.npy", "-9", cwd=files)
    assert r.returncode == 2 and "-9: ubpe has no preset -9: the levels are -1" in r.stderr.decode()
    assert not (files / "-9.ubpe").exists() and not (files / "ecg.npy.ubpe").exists()
    ubpe_cmd("compress", "ecg.npy", "two.wav", "--level", "1", cwd=files)
    ubpe_cmd("fit", "ecg.npy", "-o", "m.model", "--n-tokens", "2000", cwd=files)
    i = ubpe_cmd("inspect", "ecg.npy.ubpe", "two.wav.ubpe", "m.model", "-n", "2", cwd=files)
    text = i.stdout.decode()
    assert i.returncode == 0, i.stderr.decode()
    assert "ecg.npy.ubpe: ubpe container" in text and "two.wav.ubpe: ubpe container" in text
    assert "m.model: ubpe tokenizer" in text
    # a reader that stops early (head) ends the command quietly, as it ends cat
    piped = shell("UBPE inspect m.model -n -1 | head -1; exit ${PIPESTATUS[0]}", cwd=files)
    assert piped.stdout.decode().startswith("m.model: ubpe tokenizer") and piped.stderr == b""
    assert piped.returncode in (0, 141)


def test_help_is_current():
    h = subprocess.run([UBPE, "--help"], capture_output=True, text=True).stdout
    assert "3 internal error" in h
    c = subprocess.run([UBPE, "compress", "--help"], capture_output=True, text=True).stdout
    assert "picks the smallest of 0, 1, 2" not in " ".join(c.split())


# ============================================================== issue 27, item 5: streams


def fed(fifo: pathlib.Path, data: bytes) -> threading.Thread:
    """A FIFO at ``fifo`` and a thread that writes ``data`` into it once a reader opens it (as
    ``cat data > fifo &`` does)."""
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as f:
            f.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return writer


def in_process(*argv, cwd: pathlib.Path) -> int:
    """``ubpe.cli.main(argv)`` run in ``cwd`` (the same command line, no new interpreter)."""
    from ubpe.cli import main

    here = os.getcwd()
    os.chdir(cwd)
    try:
        return main([str(a) for a in argv])
    finally:
        os.chdir(here)


def test_fifos_and_standard_input_are_read_once(files, capsys):
    """compress from FIFOs named .npy, .csv, .txt (with and without --stream), decompress and test
    from a FIFO and from /dev/stdin: each comes back byte for byte, and no output is named after
    /dev/stdin. The real ``ubpe`` process reads a FIFO and /dev/stdin and writes standard output;
    the other FIFOs are read by the same command line in this process."""
    text = b"Notes, not numbers.\nThey come back as bytes.\n" * 40
    (files / "notes.txt").write_bytes(text)
    script = """
    set -e
    mkfifo fifo.npy; (cat ecg.npy > fifo.npy &)
    UBPE -q compress fifo.npy -o ecg.npy.packed --level 1
    UBPE -q decompress ecg.npy.packed -c | cmp - ecg.npy
    """
    r = shell(script, cwd=files)
    assert r.returncode == 0, (r.stdout + r.stderr).decode()
    for name in ("two.csv", "notes.txt"):
        suffix = name.rsplit(".", 1)[1]
        writer = fed(files / f"fifo.{suffix}", (files / name).read_bytes())
        assert in_process("-q", "compress", f"fifo.{suffix}", "-o", f"{name}.packed", "--level", "1", cwd=files) == 0
        writer.join(timeout=60)
        assert in_process("-q", "decompress", f"{name}.packed", "-o", f"back.{suffix}", cwd=files) == 0
        assert (files / f"back.{suffix}").read_bytes() == (files / name).read_bytes()
        (files / f"fifo.{suffix}").unlink()
    ecg = (files / "ecg.npy").read_bytes()
    fed(files / "big.npy", ecg)
    assert in_process("-q", "compress", "big.npy", "--stream", "-o", "s.ubpe", "--block-size", "5000", cwd=files) == 0
    stream = (files / "s.ubpe").read_bytes()
    fed(files / "c.npy.ubpe", stream)
    assert in_process("-q", "decompress", "c.npy.ubpe", cwd=files) == 0
    assert (files / "c.npy").read_bytes() == ecg
    fed(files / "e.ubpe", stream)
    capsys.readouterr()
    assert in_process("test", "e.ubpe", cwd=files) == 0
    assert ": OK (" in capsys.readouterr().out
    script = """
    set -e
    cat s.ubpe | UBPE -q decompress /dev/stdin -o d.npy; cmp d.npy ecg.npy
    cat s.ubpe | UBPE test /dev/stdin
    """
    r = shell(script, cwd=files)
    assert r.returncode == 0, (r.stdout + r.stderr).decode()
    assert r.stdout.decode().count(": OK (") == 1
    d = shell("cat s.ubpe | UBPE decompress /dev/stdin", cwd=files)
    assert d.returncode == 2 and b"-o OUTPUT" in d.stderr
    assert not any(p.name.startswith("stdin") for p in files.iterdir())
