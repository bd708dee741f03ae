"""ubpe.dask: fitting over a dask collection gives the model bytes of Tokenizer.fit on the same
documents (on a local cluster of two worker processes, and without a cluster), behind a front-end
chain too; chunks compress as ubpe.compress compresses them, and a ubpe-compressed zarr array
written from dask reads back, its padded last chunk without escapes; the README's example runs
and stores less than zarr's default compressor."""

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ubpe

da = pytest.importorskip("dask.array", reason="dask is optional (ubpe[dask])")
db = pytest.importorskip("dask.bag", reason="dask is optional (ubpe[dask])")
distributed = pytest.importorskip("distributed", reason="distributed is optional (ubpe[dask])")

from ubpe import dask as ubpe_dask  # noqa: E402


def in_memory(docs, alphabet, n_tokens, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return ubpe.Tokenizer(alphabet, n_tokens, **kw).fit(docs).to_bytes()


def on_dask(collection, alphabet, n_tokens, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return ubpe_dask.fit(collection, alphabet=alphabet, n_tokens=n_tokens, **kw).to_bytes()


@pytest.fixture(scope="module")
def signal():
    rng = np.random.default_rng(8)
    return np.cumsum(rng.integers(-3, 4, 60_000)).astype(np.int16)


@pytest.fixture(scope="module")
def cluster_client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=50) as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.mark.parametrize("chunk,n_candidates,extra", [(6_000, 50, 1500), (6_000, 1, 120), (60_000, 50, 400),
                                                      (25_000, 7, 600)])
def test_fit_on_two_worker_processes_gives_the_in_memory_model_bytes(cluster_client, signal, chunk,
                                                                      n_candidates, extra):
    alphabet = ubpe.Alphabet.from_data(signal)
    docs = [signal[i:i + chunk] for i in range(0, signal.size, chunk)]  # one chunk = one document
    n_tokens = len(alphabet) + extra
    expected = in_memory(docs, alphabet, n_tokens, n_candidates=n_candidates)
    assert on_dask(da.from_array(signal, chunks=chunk), alphabet, n_tokens, n_candidates=n_candidates) == expected


def test_rows_of_a_2d_array_and_bag_elements_are_documents(cluster_client, signal):
    alphabet = ubpe.Alphabet.from_data(signal)
    rows = signal[:48_000].reshape(12, 4000)
    expected = in_memory(list(rows), alphabet, len(alphabet) + 300, window=500)
    assert on_dask(da.from_array(rows, chunks=(5, 1000)), alphabet, len(alphabet) + 300, window=500) == expected
    docs = [signal[:10], signal[10:4000], signal[4000:4001], signal[4001:20_000], signal[20_000:20_000]]
    bag = db.from_sequence(docs, npartitions=3)
    assert on_dask(bag, alphabet, len(alphabet) + 200) == in_memory(docs, alphabet, len(alphabet) + 200)


def test_bag_documents_are_taken_as_tokenizer_fit_takes_them():
    """bytes as uint8, lists of ints, characters of a str: each a document, as in Tokenizer.fit."""
    texts = [b"abracadabra " * 40, b"", b"cadabra abra " * 25, bytes(range(50))]
    assert on_dask(db.from_sequence(texts, npartitions=2), ubpe.Alphabet(256), 300, client=False) == \
        in_memory(texts, ubpe.Alphabet(256), 300)
    lists = [[1, 2, 3, 1, 2, 3, 1, 2], [3, 1, 2] * 20]
    assert on_dask(db.from_sequence(lists, npartitions=2), ubpe.Alphabet(4), 12, client=False) == \
        in_memory(lists, ubpe.Alphabet(4), 12)
    words = ["banana bandana", "an ant and a banana"]
    letters = ubpe.Alphabet(sorted(set("".join(words))))
    assert on_dask(db.from_sequence(words, npartitions=2), letters, len(letters) + 8, client=False) == \
        in_memory(words, letters, len(letters) + 8)


def test_training_that_runs_out_of_pairs_stops_early_the_same_way(signal):
    alphabet = ubpe.Alphabet.from_data(signal)
    docs = [signal[:3000], signal[3000:6000]]
    with pytest.warns(UserWarning, match="stopped early"):
        tok = ubpe_dask.fit(da.from_array(signal[:6000], chunks=3000), alphabet=alphabet,
                            n_tokens=len(alphabet) + 5000, min_count=40, client=False)
    assert tok.to_bytes() == in_memory(docs, alphabet, len(alphabet) + 5000, min_count=40)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), min_size=0, max_size=60), min_size=1, max_size=7),
       st.integers(1, 4), st.integers(1, 60), st.integers(1, 3), st.sampled_from([None, 4]))
def test_fit_without_a_cluster_equals_tokenizer_fit(docs, n_partitions, extra, n_candidates, window):
    """No client: the rounds run in this process on the computed partitions, same bytes."""
    docs = [np.array(d, dtype=np.int8) for d in docs]
    if sum(d.size for d in docs) == 0:
        return
    alphabet = ubpe.Alphabet(6)
    bag = db.from_sequence(docs, npartitions=min(n_partitions, len(docs)))
    assert on_dask(bag, alphabet, 6 + extra, n_candidates=n_candidates, window=window, client=False) == \
        in_memory(docs, alphabet, 6 + extra, n_candidates=n_candidates, window=window)


def test_the_default_alphabet_is_the_range_of_the_array(signal):
    x = signal[:20_000]
    full = ubpe.Alphabet(np.arange(int(x.min()), int(x.max()) + 1))
    got = on_dask(da.from_array(x, chunks=5000), "range", len(full) + 100, client=False)
    assert got == in_memory([x[i:i + 5000] for i in range(0, 20_000, 5000)], full, len(full) + 100)
    with pytest.raises(TypeError, match="range"):
        ubpe_dask.fit(db.from_sequence([x]), n_tokens=5000)
    span = int(x.max()) - int(x.min()) + 1
    with pytest.raises(ValueError, match="at least that.*predictor"):
        ubpe_dask.fit(da.from_array(x, chunks=5000), n_tokens=span - 1, client=False)
    with pytest.raises(ValueError, match="n_tokens"):  # a range of 2**40 integers is never built
        ubpe_dask.fit(da.from_array(np.array([0, 2**40]), chunks=1), n_tokens=100, client=False)


def test_bad_collections_and_values_are_named(signal):
    with pytest.raises(TypeError, match="dask array or a dask bag"):
        ubpe_dask.fit([signal], alphabet=ubpe.Alphabet.from_data(signal), n_tokens=5000)
    with pytest.raises(TypeError, match="alphabet"):
        ubpe_dask.fit(da.from_array(signal, chunks=10_000), alphabet=None, n_tokens=5000)
    with pytest.raises(ValueError):
        ubpe_dask.fit(da.from_array(signal, chunks=10_000), alphabet=ubpe.Alphabet(10), n_tokens=50)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        ubpe_dask.fit(da.zeros((2, 2, 2), dtype=np.int16, chunks=1), alphabet=ubpe.Alphabet(1), n_tokens=5)


def test_chunks_compress_as_compress_does_and_a_zarr_array_reads_back(tmp_path, signal):
    pytest.importorskip("zarr", reason="zarr is optional (ubpe[zarr])")
    import dask

    arr = da.from_array(signal, chunks=15_000)
    tok = ubpe_dask.fit(arr, alphabet=ubpe.Alphabet.from_data(signal), n_tokens=1500)
    blobs = dask.compute(*ubpe_dask.compress(arr, tok, level=1))
    assert [len(b) for b in blobs] == [len(ubpe.compress(signal[i:i + 15_000], tokenizer=tok, embed=False, level=1))
                                      for i in range(0, signal.size, 15_000)]
    back = np.concatenate([ubpe.decompress(b, tokenizer=tok) for b in blobs])
    assert np.array_equal(back, signal)
    path = str(tmp_path / "x.zarr")
    ubpe_dask.to_zarr(arr, path, tok)
    lazy = ubpe_dask.from_zarr(path)
    assert isinstance(lazy, da.Array) and lazy.chunks == arr.chunks and lazy.dtype == signal.dtype
    assert np.array_equal(lazy[20_000:40_000].compute(), signal[20_000:40_000])
    uneven = da.from_array(signal, chunks=((15_000, 5_000, 25_000, 15_000),))  # zarr chunks of 15 000
    ubpe_dask.to_zarr(uneven, str(tmp_path / "uneven.zarr"), tok)
    assert np.array_equal(ubpe_dask.from_zarr(str(tmp_path / "uneven.zarr")).compute(), signal)


@settings(max_examples=12, deadline=None)
@given(st.lists(st.lists(st.integers(0, 4), min_size=0, max_size=40), min_size=1, max_size=6),
       st.integers(1, 3), st.integers(1, 40), st.integers(1, 3))
def test_small_drawn_corpora_on_two_worker_processes(cluster_client, docs, n_partitions, extra, n_candidates):
    docs = [np.array(d, dtype=np.int16) for d in docs]
    if sum(d.size for d in docs) == 0:
        return
    bag = db.from_sequence(docs, npartitions=min(n_partitions, len(docs)))
    assert on_dask(bag, ubpe.Alphabet(5), 5 + extra, n_candidates=n_candidates) == \
        in_memory(docs, ubpe.Alphabet(5), 5 + extra, n_candidates=n_candidates)


def test_recordings_as_documents_on_two_worker_processes(cluster_client, shared_data):
    from scipy.io import wavfile

    files = sorted((shared_data / "neural").glob("*.wav"), key=lambda p: p.name.encode())[:6]
    docs = [wavfile.read(f)[1] for f in files]
    alphabet = ubpe.Alphabet.from_data(docs)
    n_tokens = len(alphabet) + 700
    assert on_dask(db.from_sequence(docs, npartitions=4), alphabet, n_tokens) == in_memory(docs, alphabet, n_tokens)


@pytest.mark.parametrize("predictor", ["delta1", "lpc", "auto"])
def test_a_model_behind_a_front_end_is_that_of_tokenizer_fit(cluster_client, signal, predictor):
    """The residuals of each chunk are learnt, the model records the chain, and the alphabet is
    Tokenizer.fit's (every residual between the extremes: n_tokens allows it here)."""
    docs = [signal[i:i + 10_000] for i in range(0, 40_000, 10_000)]
    arr = da.from_array(signal[:40_000], chunks=10_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        tok = ubpe_dask.fit(arr, n_tokens=300, predictor=predictor)
        expected = ubpe.Tokenizer(None, 300).fit(docs, predictor=predictor)
    assert tok.to_bytes() == expected.to_bytes()
    assert tok.predictor == expected.predictor and tok.predictor != "none"
    x = signal[40_000:50_000]
    assert ubpe.compress(x, tokenizer=tok, embed=False) == ubpe.compress(x, tokenizer=expected, embed=False)


def test_residuals_spanning_more_than_n_tokens_take_the_distinct_values(signal):
    x = np.repeat(np.array([0, 900, -900, 5], dtype=np.int16), 3000)[np.arange(12_000) * 7 % 12_000]
    docs = [x[:6000], x[6000:]]
    with pytest.warns(UserWarning, match="stopped early"):
        tok = ubpe_dask.fit(da.from_array(x, chunks=6000), n_tokens=40, predictor="delta1", client=False)
    with pytest.warns(UserWarning, match="stopped early"):
        expected = ubpe.Tokenizer(None, 40).fit(docs, predictor="delta1")
    assert len(tok.alphabet) < 40 and tok.to_bytes() == expected.to_bytes()


def test_the_zarr_fill_value_costs_no_escape(tmp_path, signal):
    """zarr pads the last partial chunk with the fill value: to_zarr makes it one the model codes."""
    pytest.importorskip("zarr", reason="zarr is optional (ubpe[zarr])")
    import zarr

    x = (signal[:25_000] - signal[:25_000].min() + 300).astype(np.int16)  # 0 is outside the alphabet
    arr = da.from_array(x, chunks=10_000)
    for predictor in (None, "delta1"):
        tok = ubpe_dask.fit(arr, n_tokens=2000, predictor=predictor, client=False)
        path = tmp_path / f"{predictor}.zarr"
        ubpe_dask.to_zarr(arr, str(path), tok)
        assert np.array_equal(zarr.open_array(str(path))[:], x)
        last = ubpe.describe((path / "2").read_bytes())  # 5 000 values and 5 000 of padding
        full = (path / "0").stat().st_size
        assert last.escapes <= (0 if predictor is None else 1)  # behind delta1: the jump to the padding
        assert (path / "2").stat().st_size < full
    assert ubpe_dask.fill_value(tok, np.int16) == 0
    assert ubpe_dask.fill_value(ubpe_dask.fit(arr, n_tokens=2000, client=False), np.int16) == int(x.min())


def test_the_readme_example_runs_and_stores_less_than_zarr_default(tmp_path):
    """The README's Dask block, run on a zarr copy of the bundled ECG excerpt (chunks of 5000)."""
    pytest.importorskip("zarr", reason="zarr is optional (ubpe[zarr])")
    import zarr

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    section = readme[readme.index("## On Dask"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    ecg = np.load(Path(ubpe.__file__).parent / "data" / "mitbih_208_excerpt.npy")
    raw, out = tmp_path / "raw.zarr", tmp_path / "x.ubpe.zarr"
    zarr.create_array(raw, data=ecg, chunks=(5000,), zarr_format=2)  # zarr's default compressor
    # the workers' working folder is not this test's: the paths made absolute
    code = code.replace('"raw.zarr"', repr(str(raw))).replace('"x.ubpe.zarr"', repr(str(out)))
    assert str(raw) in code and str(out) in code
    scope: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        exec(compile(code, "README.md", "exec"), scope)
    assert np.array_equal(scope["y"].compute(), ecg)

    def stored(folder):
        return sum(f.stat().st_size for f in Path(folder).rglob("*") if f.is_file())

    assert stored(out) < stored(raw)
