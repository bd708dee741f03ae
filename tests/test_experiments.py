"""ubpe.experiments: sweep rows, round-trip checks, CSV/JSON, skipped codecs, `ubpe bench`."""

import json

import numpy as np
import pytest

import ubpe
from ubpe import experiments
from ubpe.cli import main


@pytest.fixture(scope="module")
def signal():
    rng = np.random.default_rng(5)
    return np.cumsum(rng.integers(-3, 4, 3000)).astype(np.int16)


@pytest.fixture(scope="module")
def swept(signal):
    return experiments.sweep(signal, n_tokens=[32, 64], n_candidates=[1, 4], level=[1],
                             codecs=["zlib", "bz2"])


def test_one_row_per_combination_with_compress_sizes(signal, swept):
    rows, skipped = swept
    assert skipped == []
    mine = [r for r in rows if r.codec == "ubpe"]
    assert sorted((r.n_tokens, r.n_candidates) for r in mine) == [(32, 1), (32, 4), (64, 1), (64, 4)]
    for r in mine:
        blob = ubpe.compress(signal, n_tokens=r.n_tokens, n_candidates=r.n_candidates, level=1)
        assert r.size == len(blob)
        info = ubpe.describe(blob)
        assert (r.model, r.freq, r.payload) == (info.model, info.freq, info.payload)
        assert r.ratio == pytest.approx(signal.nbytes / len(blob))
        assert r.bits_per_value == pytest.approx(8 * len(blob) / signal.size)
    import zlib
    (z,) = [r for r in rows if r.codec == "zlib"]
    assert z.size == len(zlib.compress(signal.tobytes(), 9))


def test_broken_decompress_makes_sweep_raise(signal, monkeypatch):
    monkeypatch.setattr(experiments, "decompress", lambda b: ubpe.decompress(b)[::-1].copy())
    with pytest.raises(RuntimeError, match="round trip failed"):
        experiments.sweep(signal, n_tokens=[32], n_candidates=[1], level=[1], codecs=[])


def test_missing_codec_reported_as_skipped(signal, monkeypatch):
    real = experiments._codec

    def fake(name):
        if name == "zstd":
            raise ImportError("No module named 'zstandard'")
        return real(name)

    monkeypatch.setattr(experiments, "_codec", fake)
    ok, skipped = experiments.available_codecs("zlib,zstd")
    assert ok == ["zlib"]
    assert [s.codec for s in skipped] == ["zstd"] and "zstandard" in skipped[0].reason
    with pytest.raises(ValueError, match="unknown codec"):
        experiments.available_codecs(["gzip9"])


def test_csv_and_json_round_trip(tmp_path, swept):
    rows, skipped = swept
    experiments.rows_to_csv(tmp_path / "r.csv", rows)
    experiments.rows_to_json(tmp_path / "r.json", rows, skipped, parameters={"n_tokens": [32, 64]})
    assert experiments.rows_from_csv(tmp_path / "r.csv") == rows
    assert experiments.rows_from_json(tmp_path / "r.json") == rows
    meta = json.loads((tmp_path / "r.json").read_text())
    assert meta["ubpe_version"] == ubpe.__version__ and meta["format_version"] >= 2
    with pytest.raises(FileExistsError):
        experiments.rows_to_csv(tmp_path / "r.csv", rows)


def test_bench_cli_writes_results_plot_and_refuses_existing_folder(tmp_path, signal, capsys):
    src = tmp_path / "x.npy"
    np.save(src, signal)
    out = tmp_path / "res"
    argv = ["bench", str(src), "--n-tokens", "32,64", "--n-candidates", "1", "--level", "1",
            "--codecs", "zlib", "--out", str(out), "-q"]
    assert main(argv) == 0
    rows = experiments.rows_from_csv(out / "results.csv")
    assert len(rows) == 3 and {r.sha256 for r in rows} == {
        __import__("hashlib").sha256(signal.tobytes()).hexdigest()}
    plt = pytest.importorskip("matplotlib.pyplot", reason="matplotlib not installed")
    img = plt.imread(out / "ratio.png")
    assert img.ndim == 3 and img.shape[0] > 100
    assert main(argv) == 1
    assert "--overwrite" in capsys.readouterr().err
    # rerunning gives the same sizes
    assert main(argv + ["--overwrite"]) == 0
    assert [r.size for r in experiments.rows_from_csv(out / "results.csv")] == [r.size for r in rows]
