"""ubpe.experiments and `ubpe bench`: one row per combination whose size is that of
ubpe.compress, round trips checked, one training per vocabulary axis giving the same bytes,
skipped codecs reported, CSV/JSON round trips, reproducibility metadata, plots that are PNGs."""

import hashlib
import json
import warnings
import zlib

import numpy as np
import pytest

import ubpe
from ubpe import experiments, peers, trainer
from ubpe.cli import main


@pytest.fixture(scope="module")
def signal():
    rng = np.random.default_rng(5)
    return np.cumsum(rng.integers(-3, 4, 3000)).astype(np.int16)


@pytest.fixture(scope="module")
def swept(signal):
    return experiments.sweep(signal, n_tokens=[64, 32], n_candidates=[1, 4], level=[1, 2],
                             codecs=["zlib", "bz2"])


def fresh_compress(x, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return ubpe.compress(x, **kw)


def test_one_row_per_combination_in_grid_order_with_the_sizes_of_compress(signal, swept):
    rows, skipped = swept
    assert skipped == []
    mine = [r for r in rows if r.codec == "ubpe"]
    assert [(r.n_tokens, r.n_candidates, r.level) for r in mine] == [
        (nt, nc, lv) for nt in (64, 32) for nc in (1, 4) for lv in (1, 2)]
    for r in mine:  # each row's bytes are those of a fresh compress, with no training reused
        blob = fresh_compress(signal, n_tokens=r.n_tokens, n_candidates=r.n_candidates, level=r.level)
        assert r.size == len(blob)
        info = ubpe.describe(blob)
        assert (r.model, r.freq, r.payload) == (info.model, info.freq, info.payload)
        assert r.vocabulary == info.alphabet_size + info.n_merges <= r.n_tokens
        assert r.ratio == pytest.approx(signal.nbytes / len(blob))
        assert r.bits_per_value == pytest.approx(8 * len(blob) / signal.size)
        assert r.chain and r.compress_seconds > 0 and r.decompress_seconds > 0 and r.peak_memory > 0
    assert [r.codec for r in rows if r.codec != "ubpe"] == ["zlib-9", "bz2-9"]
    (z,) = [r for r in rows if r.codec == "zlib-9"]
    assert z.size == len(zlib.compress(signal.astype("<i2").tobytes(), 9))
    assert z.sha256 == hashlib.sha256(signal.tobytes()).hexdigest()


def test_smaller_vocabularies_reuse_the_largest_training(swept):
    mine = [r for r in swept[0] if r.codec == "ubpe"]
    largest = [r for r in mine if r.n_tokens == 64]
    assert all(r.training_reused for r in mine if r.n_tokens == 32)
    assert any(r.train_seconds > 0 for r in largest)
    assert all(r.train_seconds == 0 for r in mine if r.training_reused)


def test_sizes_do_not_depend_on_reuse_jobs_or_grid_order(signal, swept):
    rows, _ = experiments.sweep([signal], n_tokens=[32, 64], n_candidates=[4, 1], level=[2, 1], codecs="none",
                                reuse_training=False, memory=False)
    size = {(r.n_tokens, r.n_candidates, r.level): r.size for r in rows}
    assert size == {(r.n_tokens, r.n_candidates, r.level): r.size for r in swept[0] if r.codec == "ubpe"}
    assert all(r.training_reused is None and r.peak_memory is None for r in rows)


def test_worker_processes_give_the_same_rows(signal):
    kw = dict(n_tokens=[48, 40], n_candidates=[2], level=[1], codecs=["zlib"], memory=False)
    one, _ = experiments.sweep([signal, signal[::-1].copy()], jobs=1, **kw)
    two, _ = experiments.sweep([signal, signal[::-1].copy()], jobs=2, **kw)
    assert [(r.dataset, r.codec, r.n_tokens, r.size) for r in one] == [
        (r.dataset, r.codec, r.n_tokens, r.size) for r in two]


def test_a_broken_decompress_is_a_row_that_says_so(signal, monkeypatch):
    monkeypatch.setattr(experiments, "decompress", lambda b: ubpe.decompress(b)[::-1].copy())
    rows, _ = experiments.sweep(signal, n_tokens=[32], n_candidates=[1], level=[1], codecs=[])
    assert [r.error.startswith("round trip failed") for r in rows] == [True]


def test_missing_codecs_are_reported_as_skipped_never_dropped(signal, monkeypatch):
    real = peers.missing
    monkeypatch.setattr(peers, "missing", lambda name: "not installed here" if name == "zstd-19" else real(name))
    ok, skipped = experiments.available_codecs("zlib,zstd")
    assert ok == ["zlib"] and skipped == [experiments.Skipped("zstd-19", "not installed here")]
    rows, skipped = experiments.sweep(signal, n_tokens=[32], n_candidates=[1], level=[1], codecs="zlib,zstd")
    assert [r.codec for r in rows] == ["ubpe", "zlib-9"]
    assert [s.codec for s in skipped] == ["zstd-19"]
    with pytest.raises(ValueError, match="unknown codec"):
        experiments.available_codecs(["gzip9"])


def test_a_codec_that_does_not_apply_is_a_row_with_the_reason():
    x = np.arange(-5, 5, dtype=np.int64) << 40  # wider than 24 bits: no FLAC
    if peers.missing("flac-8"):
        pytest.skip("flac is not installed")
    rows, skipped = experiments.sweep(x, n_tokens=[None], level=[1], codecs="flac")
    assert [r.codec for r in rows] == ["ubpe", "flac-8"] and skipped == []
    assert rows[0].ok and not rows[1].ok and "24 bits" in rows[1].error and rows[1].size is None


def test_csv_and_json_round_trip_with_reproducibility_metadata(tmp_path, swept):
    rows, skipped = swept
    experiments.rows_to_csv(tmp_path / "r.csv", rows)
    experiments.rows_to_json(tmp_path / "r.json", rows, skipped, parameters={"n_tokens": [64, 32]})
    assert experiments.rows_from_csv(tmp_path / "r.csv") == rows
    assert experiments.rows_from_json(tmp_path / "r.json") == rows
    meta = json.loads((tmp_path / "r.json").read_text())
    assert meta["ubpe_version"] == ubpe.__version__
    assert meta["format_version"] == ubpe.describe(ubpe.compress([1, 2])).version
    assert meta["parameters"] == {"n_tokens": [64, 32]} and "zlib" in meta["codec_versions"]
    with pytest.raises(FileExistsError):
        experiments.rows_to_csv(tmp_path / "r.csv", rows)


def test_summary_totals_per_group(swept):
    rows, _ = swept
    summary = experiments.summarize(rows)
    best = summary[0]
    assert best["ratio"] == max(a["ratio"] for a in summary)
    (z,) = [a for a in summary if a["config"] == "zlib-9"]
    assert z["size"] == next(r.size for r in rows if r.codec == "zlib-9")
    text = experiments.format_summary(summary)
    assert "ubpe L2 t=64 c=4" in text and "zlib-9" in text


def test_pandas_frame_when_pandas_is_installed(swept):
    pytest.importorskip("pandas", reason="pandas is optional and not installed")
    frame = experiments.to_pandas(swept[0])
    assert len(frame) == len(swept[0]) and "bits_per_value" in frame.columns


def test_training_reuse_gives_the_model_bytes_of_a_fresh_fit():
    rng = np.random.default_rng(2)
    docs = [np.cumsum(rng.integers(-2, 3, n)) for n in (900, 1300, 40)]
    for nc in (1, 3, 50):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            fresh = {nt: ubpe.Tokenizer(None, nt, n_candidates=nc).fit(docs).to_bytes()
                     for nt in (5000, 400, 123, 60)}
            with trainer.reuse_training() as kept:
                derived = {nt: ubpe.Tokenizer(None, nt, n_candidates=nc).fit(docs).to_bytes()
                           for nt in (5000, 400, 123, 60)}
        assert derived == fresh
        assert kept.runs == 4 and kept.reused == 3
    with trainer.reuse_training(), pytest.raises(RuntimeError, match="nest"):
        with trainer.reuse_training():
            pass


def test_bench_cli_writes_results_and_plots_and_refuses_an_existing_folder(tmp_path, signal, capsys):
    src = tmp_path / "x.npy"
    np.save(src, signal)
    out = tmp_path / "res"
    argv = ["bench", str(src), "--n-tokens", "32,64,auto", "--n-candidates", "1", "--level", "1",
            "--codecs", "zlib", "--out", str(out), "-j", "1"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "ubpe L1 t=64 c=1" in printed and "every round trip checked" in printed
    rows = experiments.rows_from_csv(out / "results.csv")
    assert [r.n_tokens for r in rows] == [32, 64, None, None]
    assert {r.sha256 for r in rows} == {hashlib.sha256(src.read_bytes()).hexdigest()}
    meta = json.loads((out / "results.json").read_text())
    assert meta["datasets"][0]["path"] == str(src) and meta["parameters"]["n_tokens"] == [32, 64, None]
    plt = pytest.importorskip("matplotlib.pyplot", reason="matplotlib is optional (ubpe[plot])")
    for name in ("ratio.png", "bits.png", "time.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        img = plt.imread(out / name)
        assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    before = (out / "results.csv").read_bytes()
    assert main(argv) == 1
    assert "--overwrite" in capsys.readouterr().err
    assert (out / "results.csv").read_bytes() == before  # nothing written over
    assert main(argv + ["--overwrite", "-q"]) == 0  # rerunning gives the same sizes
    assert [r.size for r in experiments.rows_from_csv(out / "results.csv")] == [r.size for r in rows]


def test_bench_cli_names_bad_arguments(tmp_path, signal, capsys):
    src = tmp_path / "x.npy"
    np.save(src, signal)
    for bad, said in ((["--n-tokens", "ten"], "--n-tokens"), (["--level", "3"], "--level"),
                      (["--codecs", "gzip"], "unknown codec")):
        assert main(["bench", str(src), "--out", str(tmp_path / "r"), "-q", *bad]) == 1
        assert said in capsys.readouterr().err
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())
