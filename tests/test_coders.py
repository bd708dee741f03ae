"""Spec tests for ubpe.coders: the registry, round trips, coder choice, cost estimate, corruption
handling; and the bit-level codes of ubpe.format.bits (packed integers, merges, Rice sequences)."""

from __future__ import annotations

import os

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ubpe import coders
from ubpe.coders import CODERS, REGISTRY, coders_for, counts_cost_bits, decode_stream, encode_stream, text_classes
from ubpe.coders import rans as R
from ubpe.errors import CorruptDataError
from ubpe.format.bits import pack_merges, pack_rice, pack_uints, unpack_merges, unpack_rice, unpack_uints

SETTINGS = settings(
    deadline=None,
    max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def zipf_tokens(n: int, vocab: int, seed: int = 0, a: float = 1.1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, vocab + 1) ** a
    return rng.choice(vocab, size=n, p=p / p.sum())


def real_bits(fields: dict) -> int:
    return 8 * (len(fields.get("freq", b"")) + len(fields.get("payload", b"")))


def roundtrip(tokens: np.ndarray, vocab: int, **kw) -> dict:
    fields = encode_stream(tokens, vocab, **kw)
    assert msgpack.unpackb(msgpack.packb(fields), raw=False) == fields  # msgpack-safe
    out = decode_stream(msgpack.unpackb(msgpack.packb(fields), raw=False), vocab, max_count=len(tokens))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.asarray(tokens))
    return fields


@st.composite
def streams(draw, max_len: int = 3000, max_vocab: int = 70000):
    vocab = draw(st.integers(1, max_vocab))
    n = draw(st.integers(0, max_len))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["uniform", "zipf", "few", "bounds"]))
    if kind == "uniform":
        tokens = rng.integers(0, vocab, size=n)
    elif kind == "zipf":
        tokens = np.minimum(rng.zipf(1.3, size=n) - 1, vocab - 1)
        tokens = (tokens * draw(st.integers(1, 7))) % vocab
    elif kind == "few":
        pool = rng.integers(0, vocab, size=draw(st.integers(1, 4)))
        tokens = rng.choice(pool, size=n)
    else:
        tokens = rng.choice(np.array([0, vocab - 1]), size=n)
    return tokens.astype(draw(st.sampled_from([np.int64, np.int32, np.uint16]) if vocab <= 65535 else st.just(np.int64))), vocab


# ----------------------------------------------------------------------------- the registry


def test_registry_names_every_coder_once_in_tie_order():
    assert CODERS == ("const", "packed", "rans", "mag", "cms2", "cmt2", "mixsignal", "floatpack", "hold")
    assert tuple(c.name for c in REGISTRY) == CODERS
    for c in REGISTRY:
        assert c.fields[:2] == ("coder", "n") and len(set(c.fields)) == len(c.fields)
        assert c.kind in ("trivial", "static", "adaptive", "values") and c.symbols in ("any", "signal", "text")


def test_each_level_offers_its_coders():
    """Level 1 offers the coders with a stored (or no) model; level 2 adds the context mixers."""
    assert coders_for(1) == ("const", "packed", "rans", "mag")
    assert coders_for(2) == ("const", "packed", "rans", "mag", "cms2", "cmt2", "hold")
    assert coders_for(3) == coders_for(2) + ("mixsignal",)  # level 2's container, or one of "mixsignal"
    assert coders_for(2, ("trivial", "adaptive")) == ("const", "packed", "cms2", "cmt2", "hold")
    assert encode_stream.__kwdefaults__["coders"] == coders_for(1)


def test_the_level_3_coder_codes_values_and_refuses_a_token_stream():
    """"mixsignal" (kind "values") is never chosen for tokens, and a token stream naming it is corrupt."""
    tokens = np.arange(200) % 7
    assert encode_stream(tokens, 7, coders=CODERS)["coder"] != "mixsignal"
    with pytest.raises(CorruptDataError, match="values, not tokens"):
        decode_stream({"coder": "mixsignal", "n": 200, "payload": b"\x01"}, 7)


def _signal_ids(n: int, seed: int = 3) -> tuple[np.ndarray, int]:
    """Ids (in value order) of a noisy AR(2) oscillation: what "cms2" is for."""
    rng = np.random.default_rng(seed)
    x = np.zeros(n)
    e = rng.normal(0, 3, n)
    for i in range(2, n):
        x[i] = 1.8 * x[i - 1] - 0.9 * x[i - 2] + e[i]
    values, ids = np.unique(np.round(x).astype(np.int64), return_inverse=True)
    return ids.astype(np.int64), len(values)


def _text_ids() -> tuple[np.ndarray, int, np.ndarray]:
    text = np.frombuffer(b"the cat sat on the mat; the rat sat on the cat.\n" * 80, dtype=np.uint8)
    values, ids = np.unique(text, return_inverse=True)
    return ids.astype(np.int64), len(values), text_classes(values)


def _where_each_coder_wins() -> dict:
    rng = np.random.default_rng(9)
    laplace = np.clip(np.round(rng.laplace(512, 3 + 40 * (np.arange(3000) > 1500))), 0, 1023).astype(np.int64)
    signal, vs = _signal_ids(6000)
    text, vt, classes = _text_ids()
    return {"const": (np.full(40, 5), 10, None), "packed": (rng.integers(0, 256, 4000), 256, None),
            "rans": (zipf_tokens(20000, 4096), 4096, None), "mag": (laplace, 1024, None),
            "cms2": (signal, vs, None), "cmt2": (text, vt, classes)}


def test_every_coder_wins_somewhere_and_writes_exactly_its_fields():
    """Each coder is the smallest of its level's on some stream."""
    for coder, (tokens, vocab, classes) in _where_each_coder_wins().items():
        level = 2 if coder in ("cms2", "cmt2") else 1
        fields = encode_stream(tokens, vocab, coders=coders_for(level), classes=classes)
        assert fields["coder"] == coder
        assert tuple(fields) == next(c.fields for c in REGISTRY if c.name == coder)
        out = decode_stream(msgpack.unpackb(msgpack.packb(fields), raw=False), vocab, classes=classes)
        np.testing.assert_array_equal(out, tokens)


def test_context_mixers_code_only_their_kind_of_stream():
    """"cms2" codes streams without text classes, "cmt2" only streams with them (byte symbols)."""
    signal, vs = _signal_ids(6000)
    text, vt, classes = _text_ids()
    assert encode_stream(signal, vs, coders=("packed", "cmt2"))["coder"] == "packed"
    assert encode_stream(text, vt, coders=("packed", "cms2"), classes=classes)["coder"] == "packed"
    assert encode_stream(text, vt, coders=("packed", "cmt2"), classes=classes)["coder"] == "cmt2"
    assert encode_stream(text, vt, coders=("packed", "cms2"))["coder"] == "cms2"


def test_invalid_arguments_are_typed_errors():
    with pytest.raises(ValueError, match="unknown coders"):
        encode_stream(np.arange(3), 3, coders=("zstd",))
    with pytest.raises(TypeError, match="vocab_size"):
        encode_stream(np.arange(3), 3.0)
    with pytest.raises(ValueError, match="vocab_size"):
        encode_stream(np.arange(3), 0)
    with pytest.raises(ValueError, match="vocab_size"):
        encode_stream(np.arange(3), coders.MAX_VOCAB + 1)
    with pytest.raises(ValueError, match="range"):
        encode_stream(np.array([0, 3]), 3)
    with pytest.raises(ValueError, match="range"):
        encode_stream(np.array([-1, 2]), 3)
    with pytest.raises(TypeError, match="integer dtype"):
        encode_stream(np.array([0.0, 1.0]), 3)
    with pytest.raises(ValueError, match="1-D"):
        encode_stream(np.zeros((2, 2), np.int64), 3)
    with pytest.raises(ValueError, match="max_count"):
        decode_stream({"coder": "const", "n": 1, "symbol": 0}, 3, max_count=-1)


# ----------------------------------------------------------------------------- round trips


@SETTINGS
@given(streams())
def test_stream_roundtrip(case):
    tokens, vocab = case
    roundtrip(tokens, vocab)


@SETTINGS
@given(streams(max_len=600, max_vocab=3000), st.sampled_from(["rans", "packed"]))
def test_each_coder_roundtrips(case, coder):
    tokens, vocab = case
    fields = roundtrip(tokens, vocab, coders=(coder,))
    assert fields["coder"] in (coder, "packed")


@pytest.mark.parametrize(
    "tokens,vocab,coder",
    [
        ([], 1, "packed"),
        ([], 5000, "packed"),
        ([0], 1, "const"),
        ([7], 10, "const"),
        ([3] * 1000, 10, "const"),
        ([0, 0, 0], 1, "const"),
        ([0, 1], 2, "packed"),
        ([0, 69999], 70000, "packed"),
    ],
)
def test_edge_cases(tokens, vocab, coder):
    fields = roundtrip(np.array(tokens, dtype=np.int64), vocab)
    assert fields["coder"] == coder
    if coder == "const":
        assert real_bits(fields) == 0


def test_all_symbols_used_and_bounds():
    rng = np.random.default_rng(1)
    for vocab in (2, 256, 4096, 65536):
        tokens = np.concatenate([np.arange(vocab), rng.integers(0, vocab, 3 * vocab), [0, vocab - 1]])
        roundtrip(tokens, vocab)
        roundtrip(np.sort(tokens), vocab, coders=("rans",))


def test_deterministic():
    tokens = zipf_tokens(20000, 2048, seed=3)
    a = msgpack.packb(encode_stream(tokens, 2048))
    b = msgpack.packb(encode_stream(tokens.astype(np.int32).copy(), 2048))
    assert a == b


def test_skewed_stream_prefers_rans_and_small_table():
    tokens = zipf_tokens(30000, 4096, seed=0)
    fields = roundtrip(tokens, 4096)
    assert fields["coder"] == "rans"
    assert len(fields["freq"]) < 0.1 * len(fields["payload"])
    counts = np.bincount(tokens)
    p = counts[counts > 0] / tokens.size
    entropy_bytes = -(counts[counts > 0] * np.log2(p)).sum() / 8
    assert len(fields["payload"]) < 1.01 * entropy_bytes + 16


def test_choice_picks_smaller():
    rng = np.random.default_rng(5)
    cases = [
        (rng.integers(0, 1024, 50), 1024),  # tiny: packing wins (no table)
        (rng.integers(0, 256, 20000), 256),  # uniform over a power of two: packing ties/wins
        (zipf_tokens(20000, 4096), 4096),  # skewed: entropy coding wins
    ]
    for tokens, vocab in cases:
        chosen = len(msgpack.packb(encode_stream(tokens, vocab)))
        for coder in ("packed", "rans"):
            other = len(msgpack.packb(encode_stream(tokens, vocab, coders=(coder,))))
            assert chosen <= other
        assert len(msgpack.packb(encode_stream(tokens, vocab, coders=CODERS))) <= chosen


def test_cost_estimate_tracks_real_size():
    for n, vocab, a in [(30000, 4096, 1.1), (98700, 1024, 1.0), (98700, 4096, 1.2), (5000, 16384, 0.9), (200, 256, 1.0)]:
        tokens = zipf_tokens(n, vocab, seed=n, a=a)
        real = real_bits(encode_stream(tokens, vocab))
        est = counts_cost_bits(np.bincount(tokens, minlength=vocab))
        assert abs(est - real) <= 0.02 * real + 64, (n, vocab, est, real)
    assert counts_cost_bits(np.zeros(10, dtype=np.int64)) == 0  # no tokens
    assert counts_cost_bits(np.bincount(np.full(100, 3), minlength=10)) == 0  # "const": nothing stored


def _rans_fields_at(tokens: np.ndarray, vocab: int, pb: int) -> dict:
    """A "rans" stream of ``tokens`` written with precision ``pb`` (the writer's model and
    table, only the precision forced), as any writer allowed by the format could emit it."""
    from ubpe._kernels import entropy as K

    counts = np.bincount(tokens, minlength=vocab).astype(np.int64)
    ids = np.flatnonzero(counts)
    q, codes, _, _ = R._choose_model(ids, counts[ids], vocab)
    f = R._normalize(R._dequantize(codes, q), pb)
    rank = np.zeros(vocab, dtype=np.int32)
    rank[ids] = np.arange(ids.size, dtype=np.int32)
    out = np.zeros(tokens.size + 2, dtype=np.uint32)
    start = K.rans_encode(rank[tokens], f, pb, out)
    return {"coder": "rans", "n": int(tokens.size), "k": int(ids.size), "q": q, "pb": pb,
            "freq": R._table_bytes(ids, codes, vocab), "payload": out[start:].astype("<u4").tobytes()}


def test_chosen_pb_size_within_tolerance_of_best():
    """The writer takes the smallest precision (smallest decoding table) whose payload is
    within 0.05 % (or 8 bits) of the best precision's; check that against real sizes."""
    RANS_MIN_PB, _pb_cap = R.RANS_MIN_PB, R._pb_cap
    for n, vocab, a in [(300_000, 1024, 1.3), (200_000, 512, 1.05), (120_000, 4096, 1.6)]:
        tokens = zipf_tokens(n, vocab, seed=vocab, a=a)
        fields = roundtrip(tokens, vocab)
        assert fields["coder"] == "rans"
        sizes = {pb: len(_rans_fields_at(tokens, vocab, pb)["payload"])
                 for pb in range(RANS_MIN_PB, _pb_cap(n) + 1)}
        assert sizes[fields["pb"]] == len(fields["payload"])
        best = min(sizes.values())
        # 0.05 % of the payload or 8 bits, plus up to one 32-bit word of rounding each side
        assert len(fields["payload"]) <= best + max(1, 5e-4 * best) + 8, (n, fields["pb"], sizes)
        # and it is the smallest such table: every smaller pb is outside the tolerance (up to
        # the estimate's rounding to whole words)
        assert all(sizes[pb] > best + 5e-4 * best - 8 for pb in sizes if pb < fields["pb"]), sizes
        assert fields["pb"] < _pb_cap(n)  # on these streams the largest table is not needed


@pytest.mark.parametrize(
    "case",
    ["skewed", "uniform_4000", "two_symbols", "k_above_65536"],
)
def test_every_pb_in_range_decodes(case):
    """Streams written with any precision the format allows decode bit-exactly (old writers
    chose other precisions; the decoder's fast path must not depend on the writer's rule)."""
    RANS_MIN_PB, RANS_MAX_PB, _pb_cap = R.RANS_MIN_PB, R.RANS_MAX_PB, R._pb_cap
    rng = np.random.default_rng(11)
    if case == "skewed":  # most decoding-table buckets lie inside one symbol
        vocab, tokens = 700, zipf_tokens(40_000, 700, seed=2, a=1.2)
    elif case == "uniform_4000":  # nearly every bucket straddles symbols
        vocab, tokens = 4000, rng.integers(0, 4000, 30_000)
    elif case == "two_symbols":
        vocab, tokens = 3, rng.choice(np.array([0, 2]), size=5_000, p=[0.999, 0.001])
    else:  # more than 2**16 used symbols: the wider slot table
        vocab = 70_000
        tokens = np.concatenate([np.arange(vocab), rng.integers(0, 50, 60_000)])
        tokens = tokens[rng.permutation(tokens.size)]
    tokens = tokens.astype(np.int64)
    k = np.unique(tokens).size
    lo = max(RANS_MIN_PB, int(k - 1).bit_length())
    pbs = range(lo, min(RANS_MAX_PB, _pb_cap(tokens.size)) + 1)
    assert len(pbs) >= 3
    for pb in pbs:
        fields = _rans_fields_at(tokens, vocab, pb)
        out = decode_stream(msgpack.unpackb(msgpack.packb(fields), raw=False), vocab)
        np.testing.assert_array_equal(out, tokens, err_msg=f"pb={pb}")
        # the last word dropped, or one word too many: refused, never a crash
        for payload in (fields["payload"][:-4], fields["payload"] + b"\x01\x00\x00\x00"):
            with pytest.raises(CorruptDataError):
                decode_stream(dict(fields, payload=payload), vocab)


def test_rans_hostile_payloads_at_large_pb():
    """Random words under a valid table at several precisions: refused or in range, never
    a crash (run with NUMBA_BOUNDSCHECK=1 in CI)."""
    rng = np.random.default_rng(12)
    tokens = zipf_tokens(60_000, 300, seed=5)
    for pb in (12, 16, 20):
        fields = _rans_fields_at(tokens, 300, pb)
        nwords = len(fields["payload"]) // 4
        for trial in range(40):
            size = nwords if trial % 2 else int(rng.integers(0, nwords + 2))
            words = rng.integers(0, 2**32, size=size, dtype=np.uint64).astype("<u4")
            if trial % 4 == 1:
                words[:2] = 0  # initial state below 2**32
            try:
                out = decode_stream(dict(fields, payload=words.tobytes()), 300)
            except CorruptDataError:
                continue
            assert out.shape == tokens.shape and 0 <= out.min() and out.max() < 300


# ----------------------------------------------------------------------------- bit packing


@SETTINGS
@given(st.integers(0, 63), st.integers(0, 3000), st.integers(0, 2**32 - 1))
def test_pack_uints_roundtrip(width, n, seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 2**width, size=n, dtype=np.uint64) if width else np.zeros(n, np.uint64)
    w, data = pack_uints(values, width)
    assert w == width and len(data) == (n * width + 7) // 8
    np.testing.assert_array_equal(unpack_uints(data, n, width), values.astype(np.int64))
    w2, _ = pack_uints(values)
    assert w2 == (int(values.max()).bit_length() if n else 0)


def test_unpack_uints_validates():
    _, data = pack_uints(np.array([1, 2, 3, 4, 5]), 3)
    with pytest.raises(CorruptDataError, match="expected 2"):
        unpack_uints(data[:1], 5, 3)
    with pytest.raises(CorruptDataError, match="expected 2"):
        unpack_uints(data + b"\0", 5, 3)
    with pytest.raises(CorruptDataError, match="padding"):
        unpack_uints(data[:1] + bytes([data[1] | 0x80]), 5, 3)
    with pytest.raises(CorruptDataError, match="width"):
        unpack_uints(data, 5, 64)
    with pytest.raises(CorruptDataError, match="must be bytes"):
        unpack_uints("ab", 5, 3)
    with pytest.raises(ValueError, match="fit"):
        pack_uints(np.array([8]), 3)


# ----------------------------------------------------------------------------- merges


@st.composite
def merge_tables(draw):
    alphabet = draw(st.integers(1, 70000))
    m = draw(st.integers(0, 400))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    limit = alphabet + np.arange(m)
    merges = (rng.random((m, 2)) ** draw(st.sampled_from([1, 3])) * limit[:, None]).astype(np.int64)
    return np.minimum(merges, limit[:, None] - 1), alphabet


@SETTINGS
@given(merge_tables())
def test_merges_roundtrip(case):
    merges, alphabet = case
    data = pack_merges(merges, alphabet)
    out = unpack_merges(data, len(merges), alphabet)
    assert out.dtype == np.int32 and out.shape == (len(merges), 2)
    np.testing.assert_array_equal(out, merges)
    bound = sum(2 * int(alphabet + i - 1).bit_length() for i in range(len(merges)))
    assert len(data) <= 1 + (bound + 7) // 8


def test_merges_validation():
    with pytest.raises(ValueError, match="child outside"):
        pack_merges(np.array([[0, 2], [1, 1]]), 2)  # row 0 creates token 2: its children must be < 2
    with pytest.raises(ValueError, match="child outside"):
        pack_merges(np.array([[0, 1], [3, 0]]), 2)  # row 1 creates token 3
    pack_merges(np.array([[0, 1], [2, 2]]), 2)  # row 1 may use token 2
    merges = np.array([[0, 1], [2, 0], [3, 2]])
    data = pack_merges(merges, 2)
    for cut in range(len(data)):
        with pytest.raises(CorruptDataError, match="merge table"):
            unpack_merges(data[:cut], 3, 2)
    with pytest.raises(CorruptDataError, match="trailing"):
        unpack_merges(data + b"\0", 3, 2)
    with pytest.raises(CorruptDataError, match="unknown method"):
        unpack_merges(b"\x07" + data[1:], 3, 2)
    # values in the unused top of a truncated-binary range are unrepresentable by design;
    # a row can never reference itself or a later token
    rng = np.random.default_rng(0)
    for _ in range(200):
        junk = bytes([0]) + rng.integers(0, 256, size=rng.integers(0, 12), dtype=np.uint8).tobytes()
        try:
            out = unpack_merges(junk, 5, 3)
        except CorruptDataError:
            continue
        assert (out < 3 + np.arange(5)[:, None]).all() and (out >= 0).all()


# ----------------------------------------------------------------------------- corruption


@pytest.fixture(scope="module")
def samples():
    tokens = zipf_tokens(3000, 1024, seed=9)
    rng = np.random.default_rng(9)
    laplace = np.clip(np.round(rng.laplace(512, 3 + 40 * (np.arange(3000) > 1500))), 0, 1023).astype(np.int64)
    return {
        "rans": (tokens, encode_stream(tokens, 1024)),
        "packed": (tokens, encode_stream(tokens, 1024, coders=("packed",))),
        "const": (np.full(50, 7), encode_stream(np.full(50, 7), 1024)),
        "mag": (laplace, encode_stream(laplace, 1024, coders=("mag",))),
    }


def test_samples_use_expected_coders(samples):
    assert {name: f["coder"] for name, (_, f) in samples.items()} == {
        "rans": "rans", "packed": "packed", "const": "const", "mag": "mag"
    }


@pytest.mark.parametrize("coder, field", [("rans", "payload"), ("rans", "freq"), ("packed", "payload")])
def test_every_strict_prefix_is_refused(samples, coder, field):
    _, fields = samples[coder]
    data = fields[field]
    step = max(1, len(data) // 300)
    for cut in list(range(0, len(data), step)) + [len(data) - 1]:
        bad = dict(fields, **{field: data[:cut]})
        with pytest.raises(CorruptDataError, match=f"'{field}'"):
            decode_stream(bad, 1024)


@pytest.mark.parametrize("coder", ["rans", "packed", "const", "mag"])
def test_wrong_types_in_each_field(samples, coder):
    _, fields = samples[coder]
    for name, value in fields.items():
        for wrong in (None, 1.5, True, "x", [1], b"1" if not isinstance(value, bytes) else 3):
            if type(wrong) is type(value):
                continue
            bad = dict(fields, **{name: wrong})
            with pytest.raises(CorruptDataError, match=f"'{name}'"):
                decode_stream(bad, 1024)
    for name in fields:
        bad = {k: v for k, v in fields.items() if k != name}
        with pytest.raises(CorruptDataError, match=f"'{name}'"):
            decode_stream(bad, 1024)
    with pytest.raises(CorruptDataError, match="unexpected fields"):
        decode_stream(dict(fields, extra=1), 1024)


def test_not_a_dict_and_bad_coder(samples):
    with pytest.raises(CorruptDataError, match="must be a dict"):
        decode_stream([1, 2], 10)
    for name in ("zstd", "", "ANS", "r" * 1000):
        with pytest.raises(CorruptDataError, match="unknown coder"):
            decode_stream({"coder": name, "n": 1}, 10)
    # coders of development versions of the format ("ans", "cm", "cmt", "cms") are unknown too
    _, fields = samples["rans"]
    for name in ("ans", "cm", "cmt", "cms"):
        with pytest.raises(CorruptDataError, match="unknown coder"):
            decode_stream(dict(fields, coder=name), 1024)
        with pytest.raises(ValueError, match="unknown coders"):
            encode_stream(np.arange(10) % 3, 3, coders=(name,))


@pytest.mark.parametrize("coder", ["rans", "packed", "const", "mag"])
def test_n_inconsistent(samples, coder):
    tokens, fields = samples[coder]
    n = len(tokens)
    with pytest.raises(CorruptDataError, match="'n'"):
        decode_stream(dict(fields, n=-1), 1024)
    if coder != "const":
        for wrong in (n + 1, n - 1, 2 * n, 50 * n):
            with pytest.raises(CorruptDataError, match="'(payload|freq|n|pb|raw)'"):
                decode_stream(dict(fields, n=wrong), 1024)


@pytest.mark.parametrize("coder", ["rans", "packed", "const", "mag"])
def test_max_count_refused_before_allocating(samples, coder):
    tokens, fields = samples[coder]
    huge = dict(fields, n=10**15)
    # the count is checked first: the message names max_count, not an allocation failure
    with pytest.raises(CorruptDataError, match="exceeds max_count"):
        decode_stream(huge, 1024, max_count=10**6)
    with pytest.raises(CorruptDataError, match="exceeds max_count"):
        decode_stream(fields, 1024, max_count=len(tokens) - 1)
    decode_stream(fields, 1024, max_count=len(tokens))
    if coder != "const":  # without max_count, inconsistency with the stored data still refuses
        with pytest.raises(CorruptDataError):
            decode_stream(huge, 1024)


def test_out_of_range_symbols_and_tables(samples):
    _, fields = samples["const"]
    with pytest.raises(CorruptDataError, match="'symbol'"):
        decode_stream(dict(fields, symbol=1024), 1024)
    _, fields = samples["packed"]
    with pytest.raises(CorruptDataError, match="'width'"):
        decode_stream(dict(fields, width=11), 1024)
    # a packed token >= vocab_size (vocab not a power of two)
    _, data = pack_uints(np.array([0, 1000, 3]), 10)
    with pytest.raises(CorruptDataError, match="token 1000 >= vocab_size 999"):
        decode_stream({"coder": "packed", "n": 3, "width": 10, "payload": data}, 999)
    for coder in ("rans",):
        _, fields = samples[coder]
        # the table describes more used ids than vocab_size allows, or a different k
        with pytest.raises(CorruptDataError, match="'(freq|k)'"):
            decode_stream(fields, 100)
        for k in (2, fields["k"] - 1, fields["k"] + 1):
            with pytest.raises(CorruptDataError, match="'freq'"):
                decode_stream(dict(fields, k=k), 1024)
        with pytest.raises(CorruptDataError, match="'k'"):
            decode_stream(dict(fields, k=1), 1024)
        with pytest.raises(CorruptDataError, match="'q'"):
            decode_stream(dict(fields, q=41), 1024)
    _, fields = samples["rans"]
    for pb in (11, 21, 19):
        with pytest.raises(CorruptDataError, match="'pb'"):
            decode_stream(dict(fields, pb=pb), 1024)


@pytest.mark.parametrize("coder, field, seed", [("rans", "payload", 1), ("rans", "freq", 2), ("packed", "payload", 3),
                                                ("mag", "payload", 4), ("mag", "table", 5), ("mag", "raw", 6)])
def test_random_byte_flips(samples, coder, field, seed):
    tokens, fields = samples[coder]
    rng = np.random.default_rng(seed)  # fixed: hash() of a str changes from process to process
    data = bytearray(fields[field])
    refused = 0
    for _ in range(150):
        bad = bytearray(data)
        for _ in range(rng.integers(1, 4)):
            bad[rng.integers(len(bad))] ^= int(rng.integers(1, 256))
        try:
            out = decode_stream(dict(fields, **{field: bytes(bad)}), 1024)
        except CorruptDataError:
            refused += 1
            continue
        assert out.shape == (len(tokens),) and out.dtype == np.int32
        assert out.min() >= 0 and out.max() < 1024
    if coder != "packed" and field != "raw":  # raw low bits are as unchecked as packed ones
        assert refused > 100  # entropy-coded data carries strong internal consistency checks


def test_garbage_tables_never_crash():
    rng = np.random.default_rng(4)
    for _ in range(300):
        fields = {
            "coder": "rans",
            "n": int(rng.integers(2, 60)),
            "k": int(rng.integers(2, 8)),
            "q": int(rng.integers(0, 4)),
            "pb": 12,
            "freq": rng.integers(0, 256, size=rng.integers(0, 20), dtype=np.uint8).tobytes(),
            "payload": rng.integers(0, 256, size=4 * rng.integers(0, 6), dtype=np.uint8).tobytes(),
        }
        for coder in ("rans",):
            f = dict(fields, coder=coder)
            try:
                out = decode_stream(f, 300)
            except CorruptDataError:
                continue
            assert out.shape == (fields["n"],) and out.max() < 300


# ============================================================================ Rice sequences


@SETTINGS
@given(st.lists(st.one_of(st.integers(0, 3), st.integers(0, 2**40 - 1)), max_size=300))
def test_rice_sequences_round_trip_and_are_canonical(values):
    arr = np.array(values, dtype=np.int64)
    r, data = pack_rice(arr)
    assert unpack_rice(data, len(values), r).tolist() == values
    for cut in range(len(data)):  # every strict prefix is refused
        with pytest.raises(CorruptDataError):
            unpack_rice(data[:cut], len(values), r)
    with pytest.raises(CorruptDataError):
        unpack_rice(data + b"\x00", len(values), r)


def test_rice_parameter_fits_the_values():
    small = np.zeros(1000, np.int64)
    r, data = pack_rice(small)
    assert r == 0 and len(data) == 125  # one bit per zero
    assert pack_rice(np.array([2**40])) is None and pack_rice(np.array([-1])) is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**45), min_size=1, max_size=200), st.integers(1, 8))
def test_compiled_count_quantisation_equals_its_numpy_definition(counts, q):
    c = np.array(counts, dtype=np.int64)
    edges = np.array([(1 << j) + d for j in range(1, 46) for d in (-1, 0, 1)], dtype=np.int64)
    for arr in (c, edges):
        assert np.array_equal(R._quantize(arr, q), R._quantize_reference(arr, q))



def test_rice_param_is_the_smallest_sufficient_shift():
    """The adaptive Rice parameter from bit lengths is its definition: the smallest r with
    n << r >= a, capped at MAX_RICE_PARAM (every sum to 2**16 and around each power of two up to
    2**45, counts 1 to 1000)."""
    import numba

    from ubpe._kernels.entropy import MAX_RICE_PARAM, _rice_param

    @numba.njit
    def each(a, n, out):
        for i in range(a.shape[0]):
            out[i] = _rice_param(a[i], n[i])

    rng = np.random.default_rng(8)
    edges = (1 << np.arange(46, dtype=np.int64))[:, None] + np.arange(-2, 3)
    a = np.concatenate([np.arange(1 << 16), edges.reshape(-1), rng.integers(0, 1 << 45, 20000)]).astype(np.int64)
    for top in (1, 2, 15, 1000):
        n = rng.integers(1, top + 1, a.size).astype(np.int64)
        got = np.empty(a.size, np.int64)
        each(a, n, got)
        want = np.zeros(a.size, np.int64)
        for _ in range(MAX_RICE_PARAM):  # the loop's rule: one more while n << r < a
            want += ((n << want) < a) & (want < MAX_RICE_PARAM)
        assert np.array_equal(got, want)
        assert got.max() == MAX_RICE_PARAM  # the cap is reached


def test_a_container_stream_whose_coder_is_not_a_str_is_refused():
    """A corrupt container's stream may name its coder by any msgpack value, unhashable ones
    included (found by test_stages' mutations: a list crashed the reader with a TypeError)."""
    import ubpe
    from common import pack_any, unpack_any

    x = np.cumsum(np.random.default_rng(1).integers(-9, 10, (3000, 2)), axis=0).astype(np.int16)
    for predictor in ("none", "lpc", "decorrelate+delta1"):
        fields = unpack_any(ubpe.compress(x, predictor=predictor, level=1))
        for bad in ([1 << 40], {}, {"a": 1}, 1.5, None):
            with pytest.raises(CorruptDataError, match="'coder'"):
                ubpe.decompress(pack_any(dict(fields, stream=dict(fields["stream"], coder=bad))))


def test_cms2_is_not_offered_a_few_tokens_over_a_span_of_millions():
    """Its code covers every rank up to the span (``cms2.MAX_SPAN_PER_TOKEN``): a stream of 2 000
    tokens over 5 M ids goes to another coder, and still decodes to itself."""
    from ubpe.coders import cms2

    rng = np.random.default_rng(5)
    tokens = np.concatenate([rng.integers(0, 50, 1999), [5_000_000]]).astype(np.int64)
    assert 5_000_001 > cms2.MAX_SPAN_PER_TOKEN * tokens.size + (1 << 16)
    fields = coders.encode_stream(tokens, 5_000_001, coders=("rans", "packed", "cms2"))
    assert fields["coder"] != "cms2"
    assert np.array_equal(coders.decode_stream(fields, 5_000_001), tokens)
    near = tokens.copy()
    near[-1] = 400_000  # within the bound: offered (and smaller than packed on these tokens)
    assert coders.encode_stream(near, 400_001, coders=("packed", "cms2"))["coder"] == "cms2"
