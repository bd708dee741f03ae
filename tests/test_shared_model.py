"""Shared models never refuse new data: values outside the model's alphabet are escaped
(``compress(tokenizer=..., escape=True)``, the default), and ``ubpe fit`` takes a front end and a
value range (issue 12, "shared models")."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ubpe
from common import pack_any, unpack_any
from ubpe import Tokenizer, cli

DTYPES = ["int8", "uint8", "int16", "int32", "int64", "uint64"]


@given(st.sampled_from(DTYPES), st.data())
def test_escaped_values_come_back_exactly(dtype, data):
    info = np.iinfo(dtype)
    train = np.array(data.draw(st.lists(st.integers(0, 20), min_size=2, max_size=200)), dtype=dtype)
    with warnings.catch_warnings():  # a short random train may hold fewer pairs than asked for
        warnings.simplefilter("ignore", UserWarning)
        tok = Tokenizer(None, len(np.unique(train)) + 8).fit(train)
    anything = st.integers(int(info.min), int(info.max))
    window = np.array(data.draw(st.lists(st.one_of(st.integers(0, 20), anything), max_size=300)), dtype=dtype)
    for embed in (True, False):
        packed = ubpe.compress(window, tokenizer=tok, embed=embed, delta=0)
        back = ubpe.decompress(packed, tokenizer=tok)
        assert back.dtype == window.dtype and np.array_equal(back, window)
        outside = ~np.isin(window, np.unique(train))
        assert ubpe.describe(packed).escapes == int(outside.sum())


def test_every_value_escaped_and_extremes():
    tok = Tokenizer(None, 12).fit(np.arange(10, dtype=np.int64) % 5)
    x = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, -1, 7, 99], dtype=np.int64)
    packed = ubpe.compress(x, tokenizer=tok, delta=0)
    assert np.array_equal(ubpe.decompress(packed, tokenizer=tok), x)
    assert ubpe.describe(packed).escapes == 5 and ubpe.describe(packed).escape_bytes > 2 * 10  # two 64-bit extremes


def test_without_escape_the_alphabet_still_refuses():
    tok = Tokenizer(None, 12).fit(np.arange(10) % 5)
    with pytest.raises(ValueError, match="alphabet"):
        ubpe.compress(np.array([1, 2, 77]), tokenizer=tok, delta=0, escape=False)


def test_escapes_merge_like_their_substitute_and_cost_little():
    """A window of a signal the model has not seen whole: a few new extremes, each costs its
    value and position, not a refused window."""
    rng = np.random.default_rng(3)
    walk = np.cumsum(rng.integers(-3, 4, 30_000)).astype(np.int32)
    tok = Tokenizer(None, 300).fit(np.diff(walk[:20_000]))
    window = walk[20_000:22_000].copy()
    window[1000] += 5000  # a spike no training step reached
    packed = ubpe.compress(window, tokenizer=tok, embed=False)
    info = ubpe.describe(packed)
    assert info.delta == 1 and 1 <= info.escapes <= 3
    assert np.array_equal(ubpe.decompress(packed, tokenizer=tok), window)


def _with_esc(packed: bytes, esc) -> bytes:
    d = unpack_any(packed, raw=False)
    d["esc"] = esc
    return pack_any(d, use_bin_type=True)


@pytest.mark.parametrize("esc", [
    b"",  # empty
    b"\x01\x00",  # count 1, a gap, no value
    b"\x01\x00\x0a\x00",  # one varint too many
    b"\x00",  # count 0
    b"\x05\x00\x00\x00\x00\x00\x02\x02\x02\x02\x02",  # more escapes than values
    b"\x01\x04\x02",  # position 4 of 4 values
    b"\x01\x00\x80",  # cut inside a varint
    b"\x01\x00" + b"\xff" * 10 + b"\x01",  # a varint beyond 64 bits
    b"\x01\x00\xfe\xff\x07",  # a value beyond int16
    {"n": 1},  # not bytes
])
def test_hostile_escape_fields_are_corrupt_data(esc):
    tok = Tokenizer(None, 12).fit(np.arange(100, dtype=np.int16) % 7)
    packed = ubpe.compress(np.array([1, 2, 300, 4], dtype=np.int16), tokenizer=tok, delta=0)
    with pytest.raises(ubpe.CorruptDataError, match="esc"):
        ubpe.decompress(_with_esc(packed, esc), tokenizer=tok)


def test_cli_fit_with_a_predictor_and_a_range(capsys, tmp_path):
    rng = np.random.default_rng(8)
    x = np.cumsum(rng.integers(-2, 3, 12_000)).astype(np.int16)
    for i in range(3):
        np.save(tmp_path / f"w{i}.npy", x[i * 3000:(i + 1) * 3000])
    np.save(tmp_path / "new.npy", x[9000:] + 500)
    model = tmp_path / "m.model"
    args = ["fit", *(tmp_path / f"w{i}.npy" for i in range(3)), "-o", model, "--n-tokens", "40", "--predictor", "delta1"]
    assert cli.main([str(a) for a in args]) == 0
    tok = Tokenizer.load(model)
    assert set(np.asarray(tok.alphabet.values).tolist()) <= set(range(-2, 3)) | set(x[i * 3000] for i in range(3))
    out = tmp_path / "new.ubpe"
    assert tok.predictor == "delta1"  # recorded in the model file
    argv = ["compress", tmp_path / "new.npy", "-o", out, "--model", model, "--reference"]  # applied unasked
    assert cli.main([str(a) for a in argv]) == 0
    info = ubpe.describe(out.read_bytes())
    assert info.delta == 1 and info.escapes == 1 and not info.embedded  # the first value only
    assert cli.main([str(a) for a in ["decompress", out, "-o", tmp_path / "back.npy", "--model", model]]) == 0
    assert np.load(tmp_path / "back.npy").tobytes() == np.load(tmp_path / "new.npy").tobytes()
    ranged = tmp_path / "r.model"
    assert cli.main([str(a) for a in ["fit", tmp_path / "w0.npy", "-o", ranged, "--n-tokens", "3100",
                                      "--range=-100:2999"]]) == 0
    assert len(Tokenizer.load(ranged).alphabet) == 3100
    capsys.readouterr()
    assert cli.main([str(a) for a in ["fit", tmp_path / "w0.npy", "-o", tmp_path / "s.model", "--n-tokens", "5",
                                      "--range=0:9"]]) == 2
    assert "less than the 10 values" in capsys.readouterr().err


def test_the_model_records_its_front_end():
    """fit(predictor=) learns the chain's residuals and records the chain; model files keep it;
    compress applies it by itself; a damaged record is corrupt data."""
    rng = np.random.default_rng(4)
    x = np.cumsum(rng.integers(-3, 4, 20_000)).astype(np.int32)
    tok = Tokenizer(None, 64).fit([x[:8000], x[8000:16000]], predictor="delta1")
    assert tok.predictor == "delta1"
    again = Tokenizer.from_bytes(tok.to_bytes())
    assert again.predictor == "delta1" and again == tok and again.digest == tok.digest
    window = x[16000:18000]
    packed = ubpe.compress(window, tokenizer=again, embed=False)
    info = ubpe.describe(packed)
    assert info.delta == 1 and info.escapes == 1  # only the window's first value is raw
    assert np.array_equal(ubpe.decompress(packed, tokenizer=tok), window)
    plain = Tokenizer(None, 600).fit([x[:8000], x[8000:16000]])
    assert plain.predictor is None and b"front" not in plain.to_bytes()
    with pytest.raises(ValueError, match="predictor"):
        Tokenizer(None, 64).fit(x, predictor="flac")
    with pytest.raises(TypeError):
        Tokenizer(None, 64).fit(np.array([1.5, 2.5]), predictor="delta1")
    import hashlib

    outer = unpack_any(tok.to_bytes(), raw=False)
    body = unpack_any(outer["body"], raw=False)
    body["front"] = "zigzag"
    outer["body"] = pack_any(body, use_bin_type=True)
    outer["sha256"] = hashlib.sha256(outer["body"]).digest()
    with pytest.raises(ubpe.CorruptDataError, match="front"):
        Tokenizer.from_bytes(pack_any(outer, use_bin_type=True))


def test_auto_predictor_is_chosen_on_held_out_documents():
    """fit(predictor="auto") keeps the chain whose model compresses held-out documents smallest:
    on a smooth AR(2) signal a predicting chain, never "none"."""
    rng = np.random.default_rng(12)
    t = np.arange(40_000)
    x = (2000 * np.sin(t / 40.0) + np.cumsum(rng.integers(-2, 3, t.size))).astype(np.int16)
    docs = [x[i:i + 4000] for i in range(0, 40_000, 4000)]
    tok = Tokenizer(None, 512).fit(docs, predictor="auto")
    assert tok.predictor in ("delta1", "delta2", "delta1+adaptive", "lpc", "lpc+adaptive")
    sizes = {}
    for name in ("none", tok.predictor):
        try:
            trial = Tokenizer(None, 512).fit(docs[0::2], predictor=name)
        except ValueError:
            continue  # "none": more raw values than tokens
        sizes[name] = sum(len(ubpe.compress(d, tokenizer=trial, embed=False)) for d in docs[1::2])
    assert sizes[tok.predictor] == min(sizes.values())
    with pytest.raises(TypeError):
        Tokenizer(None, 64).fit(["abc", "abd"], predictor="auto")


def test_auto_names_the_chains_it_could_not_try():
    """A chain whose values outnumber n_tokens cannot be fitted: predictor="auto" says so, since
    the chain left out might have been the best (raw 16-bit windows at 256 tokens)."""
    rng = np.random.default_rng(3)
    t = np.arange(12_000)
    x = (1000 * np.sin(t / 200.0) + rng.integers(-2, 3, t.size)).astype(np.int16)  # ~2000 raw values
    docs = [x[i:i + 3000] for i in range(0, 12_000, 3000)]
    with pytest.warns(UserWarning, match=r"without trying none: .* n_tokens=600"):
        tok = Tokenizer(None, 600).fit(docs, predictor="auto")
    assert tok.predictor != "none"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Tokenizer(None, 2100).fit(docs, predictor="auto")
    assert not [w for w in caught if "without trying" in str(w.message)]  # every chain fits 2100 tokens


def test_a_given_model_may_leave_its_merges_unused():
    """compress keeps the smaller of the model's tokens and the bare alphabet ids; the reader
    needs nothing to tell them apart, the container records nothing, and describe infers "bare"
    (a model with merges, one token per value)."""
    rng = np.random.default_rng(21)
    train = rng.integers(0, 40, 20_000).astype(np.int16)  # no structure: merges only cost bits
    tok = Tokenizer(None, 300).fit(train)
    window = rng.integers(0, 40, 3000).astype(np.int16)
    packed = ubpe.compress(window, tokenizer=tok, embed=False, delta=0, level=1)
    info = ubpe.describe(packed)
    assert info.method == "bare" and info.n_tokens == window.size
    assert np.array_equal(ubpe.decompress(packed, tokenizer=tok), window)
    assert "method" not in unpack_any(packed, raw=False)


def test_a_model_behind_a_predictor_covers_the_range_between_its_extremes():
    """Fitted behind a chain (a shared model), the alphabet is every residual between the
    extremes seen, when n_tokens allows: a new window's unseen values inside it need no escape."""
    rng = np.random.default_rng(9)
    docs = [np.cumsum(rng.choice([-7, -2, 0, 3, 11], 4000)).astype(np.int16) for _ in range(3)]
    tok = Tokenizer(None, 64).fit(docs, predictor="delta1")
    assert tok.alphabet.values.tolist() == list(range(-7, 12))  # -7..11, though only 5 steps occur
    window = np.cumsum(rng.choice([-7, -5, 0, 6, 11], 3000)).astype(np.int16)  # -5 and 6: unseen
    data = ubpe.compress(window, tokenizer=tok, embed=False)
    assert ubpe.describe(data).escapes == 0
    assert np.array_equal(ubpe.decompress(data, tokenizer=tok), window)
    narrow = Tokenizer(None, 10).fit(docs, predictor="delta1")  # 19 values do not fit 10 tokens
    assert narrow.alphabet.values.tolist() == [-7, -2, 0, 3, 11]
    plain = Tokenizer(None, 5000).fit(docs)  # no predictor: the values seen, as always
    assert len(plain.alphabet) == len(np.unique(np.concatenate(docs)))
