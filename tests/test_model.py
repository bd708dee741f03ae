"""The public Model, model files (format version 1) and decode dtypes as a trust boundary."""

import hashlib
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ubpe
from common import model_body, model_file_of_body, pack_any, pack_model_file, unpack_any
from ubpe import Alphabet, Model, Tokenizer
from ubpe.model import check_decode_dtype

CORPUS = [0, 0, 0, 1, 3, 0, 0, 0, 1, 0, 2, 3, 3, 1, 0, 0, 1]


def small_tokenizer(**kw):
    return Tokenizer(4, 7, n_candidates=1, **kw).fit(CORPUS)


# ============================================================================ Model


def test_model_encodes_and_decodes_like_the_tokenizer():
    tok = small_tokenizer()
    model = tok.model
    assert isinstance(model, Model) and model.mode == "classic"
    assert model.alphabet_size == 4 and model.vocab_size == tok.vocab_size
    ids = tok.alphabet.to_ids(CORPUS)
    tokens = model.encode(ids)
    assert tokens.dtype == np.int32
    assert tok.encode(CORPUS).tolist() == model.token_ids[tokens].tolist()
    assert model.decode(tokens).tolist() == CORPUS
    assert model.decode(tokens, ">u2").dtype == np.dtype(">u2")
    assert not model.merges.flags.writeable
    assert model.merges.dtype == np.int32 and model.merges.shape == (3, 2)
    assert model.stats["counts"].tolist() == tok.counts.tolist()


def test_model_constructor_checks_types_and_priority_order():
    a = Alphabet(4)
    with pytest.raises(TypeError):
        Model(4, [[0, 0]])
    with pytest.raises(TypeError):
        Model(a, np.array([[0.0, 1.0]]))
    with pytest.raises(ValueError, match="shape"):
        Model(a, np.array([0, 1, 2]))
    with pytest.raises(ValueError, match=r"merges\[1\]"):
        Model(a, np.array([[0, 0], [5, 1]]))  # token 5 is made by merge 1 itself
    with pytest.raises(ValueError, match=r"merges\[0\]"):
        Model(a, np.array([[-1, 0]]))
    with pytest.raises(ValueError):
        Model(a, np.array([[0, 0]]), mode="sequential")
    with pytest.raises(ValueError, match="permutation"):
        Model(a, np.array([[0, 0], [0, 1]]), token_ids=[0, 1, 2, 3, 4, 4])
    with pytest.raises(ValueError, match="shape"):
        Model(a, np.array([[0, 0]]), stats={"counts": [1, 2]})
    assert Model(a, np.zeros((0, 2), dtype=np.int64)).vocab_size == 4


def test_prefix_keeps_the_first_merges_and_decodes_the_same():
    tok = Tokenizer(8, 20, n_candidates=1).fit((np.arange(400) * 7 % 13 % 8))
    model = tok.model
    for k in (0, 1, model.n_merges // 2, model.n_merges):
        p = model.prefix(k)
        assert p.merges.tolist() == model.merges[:k].tolist()
        ids = tok.alphabet.to_ids(np.arange(60) % 8)
        assert p.decode(p.encode(ids)).tolist() == (np.arange(60) % 8).tolist()
    with pytest.raises(ValueError):
        model.prefix(model.n_merges + 1)


def test_digest_covers_mode_alphabet_and_merges_only():
    a = small_tokenizer(weighting="idf", min_count=2)
    b = small_tokenizer(weighting="count", min_count=1)  # other training params, same merges
    assert a.merges.tolist() == b.merges.tolist()
    assert a.to_bytes() != b.to_bytes()
    assert a.digest == b.digest == a.model.digest
    # the canonical bytes documented in docs/format.md, "Model files"
    canonical = pack_any(
        {"magic": "ubpe.model", "version": 1, "mode": "classic", "alphabet": {"kind": "range", "size": 4},
         "merges": a.merges.astype("<i4").tobytes()},
        use_bin_type=True,
    )
    assert a.digest == hashlib.sha256(canonical).hexdigest()
    other = Model(Alphabet(4), a.merges[:2])
    assert other.digest != a.digest
    assert Model(Alphabet(5), a.merges).digest != a.digest


def test_model_pickles_and_rebuilds_its_tables():
    import pickle

    model = small_tokenizer().model
    model.expansion()
    back = pickle.loads(pickle.dumps(model))
    assert back.digest == model.digest and back.token_ids.tolist() == model.token_ids.tolist()
    assert back.stats["df"].tolist() == model.stats["df"].tolist()
    ids = np.array([0, 0, 0, 1, 3], dtype=np.int32)
    assert back.encode(ids).tolist() == model.encode(ids).tolist()


def test_model_default_decode_dtype_follows_the_alphabet():
    top = Model(Alphabet([0, 2**64 - 1]), np.array([[0, 1]]))
    out = top.decode(np.array([2, 1]))
    assert out.dtype == np.uint64 and out.tolist() == [0, 2**64 - 1, 2**64 - 1]
    assert Model(Alphabet([-3, 4]), np.zeros((0, 2), int)).decode(np.array([1, 0])).tolist() == [4, -3]
    assert Model(Alphabet("xy"), np.array([[1, 0]])).decode(np.array([2])).tolist() == ["y", "x"]


def test_tokenizer_model_before_fit_raises():
    with pytest.raises(ubpe.NotFittedError):
        Tokenizer(4, 7).model


# ============================================================================ model files


def test_model_file_bytes_are_deterministic_checksummed_and_round_trip():
    tok = small_tokenizer()
    data = tok.to_bytes()
    assert data == small_tokenizer().to_bytes()
    outer = unpack_any(data)
    assert outer["magic"] == "ubpe.tokenizer" and outer["version"] == 1
    assert hashlib.sha256(outer["body"]).digest() == outer["sha256"]
    back = Tokenizer.from_bytes(data)
    assert back == tok and back.to_bytes() == data and back.encode(CORPUS).tolist() == tok.encode(CORPUS).tolist()
    body = bytearray(outer["body"])
    body[len(body) // 2] ^= 1
    with pytest.raises(ubpe.CorruptDataError, match="checksum"):
        Tokenizer.from_bytes(pack_any(dict(outer, body=bytes(body)), use_bin_type=True))
    with pytest.raises(ubpe.CorruptDataError):
        Tokenizer.from_bytes(pack_any(dict(outer, extra=1), use_bin_type=True))
    with pytest.raises(ubpe.FormatVersionError):
        Tokenizer.from_bytes(pack_any(dict(outer, version=2), use_bin_type=True))
    for version in (0, -1, "1", None, True):
        with pytest.raises(ubpe.CorruptDataError, match="version"):
            Tokenizer.from_bytes(pack_any(dict(outer, version=version), use_bin_type=True))
    with pytest.raises(TypeError):
        Tokenizer.from_bytes("not bytes")


def hostile_range_model(size=2**31 - 1):
    fields = {
        "alphabet": {"kind": "range", "size": size}, "dtype": "<i8",
        "params": {"n_tokens": size, "n_candidates": 50, "min_count": 2, "weighting": "idf", "window": None},
        "n_units": 0, "merges": b"", "batches": b"", "counts": b"", "df": b"", "token_ids": b"",
    }
    return pack_model_file(fields)


def test_a_huge_declared_range_alphabet_is_refused_before_allocating():
    """(That nothing is allocated first: the next test, under an address-space limit.)"""
    with pytest.raises(ubpe.CorruptDataError, match="range size"):
        Tokenizer.from_bytes(hostile_range_model())
    ok = Tokenizer.from_bytes(hostile_range_model(1000))  # a reasonable range still loads
    assert ok.decode([999]).tolist() == [999]


def test_huge_range_model_raises_corrupt_data_under_an_address_space_limit():
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
        "import ubpe, test_model\n"
        "try:\n"
        "    ubpe.Tokenizer.from_bytes(test_model.hostile_range_model())\n"
        "except ubpe.CorruptDataError:\n"
        "    print('corrupt')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=pathlib.Path(__file__).parent)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "corrupt"
    assert "MemoryError" not in done.stderr


def body_fields(tok):
    return model_body(tok.to_bytes())


@pytest.mark.parametrize(
    "alphabet, dtype",
    [
        ({"kind": "integers", "dtype": "<i8", "values": np.array([1000, 2000, 3000], "<i8").tobytes()}, "|i1"),
        ({"kind": "symbols", "values": ["a", "b", "c"]}, "|u1"),
        ({"kind": "integers", "dtype": "<i8", "values": np.array([0, 1, 2], "<i8").tobytes()}, "<U1"),
        ({"kind": "range", "size": 3}, "<f8"),
        ({"kind": "range", "size": 3}, "|b1"),
        ({"kind": "range", "size": 3}, "|S3"),
        ({"kind": "range", "size": 3}, "<M8[s]"),
        ({"kind": "range", "size": 3}, "|V4"),
        ({"kind": "range", "size": 300}, "|u1"),
        ({"kind": "symbols", "values": ["a", "bc"]}, "<U1"),
        ({"kind": "range", "size": 3}, "not a dtype"),
        ({"kind": "range", "size": 3}, "01"),  # numpy raises SyntaxError for this one
    ],
)
def test_a_dtype_that_contradicts_the_alphabet_is_corrupt_data(alphabet, dtype):
    tok = Tokenizer(3, 3).fit([0, 1, 2, 0, 1])
    fields = dict(body_fields(tok), alphabet=alphabet, dtype=dtype)
    fields["params"]["n_tokens"] = 400
    with pytest.raises(ubpe.CorruptDataError, match="dtype"):
        Tokenizer.from_bytes(pack_model_file(fields))


def check_loaded_model_works(tok):
    """A model from_bytes accepted must encode and decode without any error."""
    values = tok.decode(np.arange(min(tok.vocab_size, 12)) % tok.vocab_size)
    again = tok.decode(tok.encode(values))
    assert again.dtype == tok.dtype
    assert np.array_equal(again, values) if again.dtype != object else again.tolist() == values.tolist()


@pytest.mark.parametrize("checksum", ["kept", "recomputed"])
def test_mutated_model_bytes_fail_only_with_library_errors(checksum):
    """Byte flips in the file (the checksum refuses almost all of them), or in its body with
    the checksum recomputed (the body's parser decides)."""
    rng = np.random.default_rng(20261123 + (checksum == "kept"))
    sources = [
        small_tokenizer(),
        Tokenizer(None, 8, n_candidates=2, min_count=1).fit(np.array([1000, 2000, 3000, 1000, 2000, 1000, 2000] * 3)),
        Tokenizer(None, 8, n_candidates=2, min_count=1).fit("abracadabra abracadabra"),
        Tokenizer(None, 60).fit((np.arange(300) % 50).astype(">i4")),
    ]
    accepted = 0
    for src in sources:
        base = src.to_bytes() if checksum == "kept" else unpack_any(src.to_bytes())["body"]
        for _ in range(150):
            raw = bytearray(base)
            for _ in range(int(rng.integers(1, 4))):
                raw[int(rng.integers(len(raw)))] = int(rng.integers(256))
            try:
                loaded = Tokenizer.from_bytes(bytes(raw) if checksum == "kept" else model_file_of_body(bytes(raw)))
            except (ubpe.CorruptDataError, ubpe.FormatVersionError):
                continue
            accepted += 1
            check_loaded_model_works(loaded)
    if checksum == "recomputed":
        assert accepted > 20  # enough mutants get past the parser to be exercised


FIELD_DTYPES = ["|i1", "<u2", ">i8", "|b1", "|O", "<U1", "<U2", "<U0", ">U1", "<f4", "|S1", "<M8[s]", "|V3",
                ">u8", "x", "01", None, 5]
FIELD_ALPHABETS = [
    {"kind": "range", "size": 3}, {"kind": "range", "size": 0}, {"kind": "symbols", "values": ["a", 1, b"x"]},
    {"kind": "symbols", "values": ["a\0", "b"]}, {"kind": "symbols", "values": []},
    {"kind": "integers", "dtype": "<u8", "values": np.array([0, 1, 2**64 - 1], "<u8").tobytes()},
    {"kind": "integers", "dtype": "<i8", "values": np.array([-(2**63), 0, 2**63 - 1], "<i8").tobytes()},
    {"kind": "integers", "dtype": "<i8", "values": np.array([0, 1], "<i8").tobytes()},
    {"kind": "integers", "dtype": "<i8", "values": b""},
]


def test_swapped_alphabet_and_dtype_fields_load_consistently_or_raise_corrupt_data():
    rng = np.random.default_rng(11)
    sources = [small_tokenizer(), Tokenizer(None, 8, n_candidates=2, min_count=1).fit("abracadabra"),
               Tokenizer(None, 8, min_count=1).fit(np.array([0, 2**64 - 1, 5, 2**64 - 1, 0, 5], dtype=np.uint64))]
    accepted = 0
    for i in range(600):
        fields = body_fields(sources[i % len(sources)])
        if rng.integers(2):
            fields["dtype"] = FIELD_DTYPES[int(rng.integers(len(FIELD_DTYPES)))]
        if rng.integers(2):
            fields["alphabet"] = FIELD_ALPHABETS[int(rng.integers(len(FIELD_ALPHABETS)))]
        fields["params"]["n_tokens"] = int(rng.integers(1, 40))
        try:
            loaded = Tokenizer.from_bytes(pack_model_file(fields))
        except ubpe.CorruptDataError:
            continue
        accepted += 1
        check_loaded_model_works(loaded)
    assert accepted > 50


def test_mutated_models_under_an_address_space_limit_fail_only_with_library_errors():
    code = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
        "import numpy as np, ubpe, test_model\n"
        "rng = np.random.default_rng(7)\n"
        "tok = test_model.Tokenizer(None, 8, n_candidates=2, min_count=1).fit('abracadabra')\n"
        "base = test_model.unpack_any(tok.to_bytes())['body']\n"
        "for _ in range(300):\n"
        "    raw = bytearray(base)\n"
        "    raw[int(rng.integers(len(raw)))] = int(rng.integers(256))\n"
        "    try:\n"
        "        tok = ubpe.Tokenizer.from_bytes(test_model.model_file_of_body(bytes(raw)))\n"
        "    except (ubpe.CorruptDataError, ubpe.FormatVersionError):\n"
        "        continue\n"
        "    test_model.check_loaded_model_works(tok)\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=pathlib.Path(__file__).parent)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


# ============================================================================ decode dtypes


def test_big_endian_fit_and_decode_return_the_exact_dtype():
    x = (np.arange(2000) % 50).astype(">i4")
    tok = Tokenizer(None, 80).fit(x)
    assert tok.dtype == np.dtype(">i4")
    out = tok.decode(tok.encode(x))
    assert out.dtype == np.dtype(">i4") and np.array_equal(out, x)
    assert tok.decode(tok.encode(x), dtype=">u2").dtype == np.dtype(">u2")
    back = Tokenizer.from_bytes(tok.to_bytes())
    assert back.dtype == np.dtype(">i4") and np.array_equal(back.decode(back.encode(x)), x)


@pytest.mark.parametrize("dtype, error", [("b1", ValueError), ("S3", TypeError), ("M8[s]", TypeError),
                                          ("V4", TypeError), ("f8", TypeError), ("i1", ValueError),
                                          ("U3", TypeError), ("c16", TypeError)])
def test_decode_refuses_dtypes_that_cannot_hold_the_alphabet(dtype, error):
    tok = Tokenizer(None, 5, min_count=1).fit([0, 5, 200, 0, 5, 200, 0, 5])
    with pytest.raises(error):
        tok.decode([0, 1], dtype=dtype)


def test_decode_dtype_rules_for_bool_and_symbols():
    bits = Tokenizer(None, 4, min_count=1).fit(np.array([0, 1, 1, 0, 1, 1, 0], dtype=bool))
    assert bits.decode(bits.encode([True, False]), dtype="b1").tolist() == [True, False]
    text = Tokenizer(None, 5, min_count=1).fit("abcabcab")
    assert text.decode(text.encode("cab"), dtype="U1").tolist() == ["c", "a", "b"]
    assert text.decode(text.encode("cab"), dtype=object).tolist() == ["c", "a", "b"]
    assert text.decode(text.encode("cab"), dtype="U").dtype == np.dtype("U1")  # flexible width fixed
    with pytest.raises(TypeError):
        text.decode([0], dtype="i4")
    assert check_decode_dtype(Alphabet([-(2**63), 2**63 - 1]), "<i8") == np.dtype("<i8")
    with pytest.raises(ValueError):
        check_decode_dtype(Alphabet([0, 2**63]), ">i8")


INT_DTYPES = [f"{order}{kind}{size}" for order in "<>" for kind in "iu" for size in (2, 4, 8)] + ["|i1", "|u1"]


@given(st.lists(st.integers(0, 120), min_size=1, max_size=60), st.sampled_from(INT_DTYPES),
       st.sampled_from(INT_DTYPES))
def test_round_trip_over_dtypes_and_byte_orders(values, fit_dtype, decode_dtype):
    x = np.array(values, dtype=fit_dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # short inputs may run out of pairs
        tok = Tokenizer(None, len(set(values)) + 4, n_candidates=2, min_count=1).fit(x)
    out = tok.decode(tok.encode(x))
    assert out.dtype == np.dtype(fit_dtype) and np.array_equal(out, x)
    other = tok.decode(tok.encode(x), dtype=decode_dtype)
    assert other.dtype == np.dtype(decode_dtype) and other.tolist() == values


def test_decode_refuses_an_expansion_beyond_max_output_size_before_allocating():
    # a legal 40-merge doubling chain: token 2 + k stands for 2**(k+1) values, the last 2**40
    merges = [[0, 0]] + [[2 + k, 2 + k] for k in range(39)]
    model = Model(Alphabet(2), np.array(merges))
    with pytest.raises(ValueError, match="max_output_size"):
        model.decode([model.vocab_size - 1])
    assert model.decode([2 + 9], np.uint8).shape == (1 << 10,)
    with pytest.raises(ValueError, match="1024 values"):
        model.decode([2 + 9], np.uint8, max_output_size=1000)
    tok = Tokenizer(2, 3).fit(np.zeros(64, dtype=np.uint8))
    with pytest.raises(ValueError, match="max_output_size"):
        tok.decode(tok.encode(np.zeros(64, dtype=np.uint8)), max_output_size=10)
