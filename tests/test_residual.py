"""The "mag" coder (ubpe.coders.mag over ubpe._kernels.residual): round trips, size, hostile data,
its place in level 1's containers."""

from __future__ import annotations

import os

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ubpe._kernels import residual as R
from ubpe.coders import coders_for, decode_stream, encode_stream
from ubpe.coders import mag as M
from ubpe.errors import CorruptDataError

SETTINGS = settings(
    deadline=None,
    max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def mag(tokens, vocab: int) -> dict:
    """Force the "mag" coder (no competitor): the encoder's size gate uses the packed size."""
    fields = encode_stream(np.asarray(tokens), vocab, coders=("mag",))
    return fields


def roundtrip(tokens, vocab: int) -> dict:
    tokens = np.asarray(tokens)
    fields = mag(tokens, vocab)
    back = msgpack.unpackb(msgpack.packb(fields), raw=False)
    out = decode_stream(back, vocab, max_count=len(tokens))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, tokens)
    return fields


def laplace_tokens(n: int, vocab: int, seed: int, slow: bool = True) -> np.ndarray:
    """Residual-like ids: a Laplacian around vocab // 2 whose scale varies slowly (or not)."""
    rng = np.random.default_rng(seed)
    scale = np.exp(3 * np.sin(np.arange(n) / 700.0)) * 8 if slow else np.full(n, 30.0)
    x = np.round(rng.laplace(0, scale)).astype(np.int64) + vocab // 2
    return np.clip(x, 0, vocab - 1)


@st.composite
def streams(draw):
    vocab = draw(st.sampled_from([1, 2, 3, 255, 256, 4097, 65536, 1 << 20, 1 << 24]) | st.integers(1, 1 << 24))
    n = draw(st.integers(0, 2000))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["uniform", "laplace", "constant", "alternating", "bounds", "wide"]))
    if kind == "uniform":
        t = rng.integers(0, vocab, size=n)
    elif kind == "laplace":
        t = np.clip(np.round(rng.laplace(vocab // 2, 1 + vocab / 50, size=n)), 0, vocab - 1)
    elif kind == "constant":
        t = np.full(n, int(rng.integers(0, vocab)))
    elif kind == "alternating":
        t = np.where(np.arange(n) % 2 == 0, 0, vocab - 1)
    elif kind == "bounds":
        t = rng.choice(np.array([0, vocab - 1]), size=n)
    else:  # "wide": mostly small, sometimes the far ends of the vocabulary
        t = np.where(rng.random(n) < 0.05, rng.choice(np.array([0, vocab - 1]), size=n), vocab // 2 + rng.integers(-3, 4, size=n))
        t = np.clip(t, 0, vocab - 1)
    return np.asarray(t, dtype=np.int64), vocab


@SETTINGS
@given(streams())
def test_mag_roundtrip_bit_exact(case):
    tokens, vocab = case
    fields = mag(tokens, vocab)
    if fields["coder"] == "mag":  # packed/const win on n == 0 or one symbol: still must decode
        assert set(fields) == set(M.FIELDS)
    out = decode_stream(msgpack.unpackb(msgpack.packb(fields), raw=False), vocab, max_count=len(tokens))
    np.testing.assert_array_equal(out, tokens)


@pytest.mark.parametrize("vocab", [2, 3, 256, 65536, 1 << 24])
def test_mag_extremes(vocab):
    # the largest distances the format allows: zigzag(t - center) near 2**25
    t = np.array([0, vocab - 1] * 50 + [vocab // 2] * 100, dtype=np.int64)
    for center_side in (t, t[::-1]):
        f = roundtrip(center_side, vocab)
        assert f["coder"] == ("mag" if vocab > 2 else "packed")  # 1-bit packing wins for V = 2 (V = 3: 83 B, packed 85)


def test_mag_running_magnitude_through_every_context():
    """Magnitudes swept up and down across 2**0 .. 2**22: the decoder's running magnitude
    passes through every context, below and above its table of small magnitudes
    (residual.SMALL_V), at each boundary."""
    from ubpe._kernels import residual as kr

    vocab = 1 << 24
    mags = np.concatenate([np.geomspace(1, 1 << 22, 3000), np.geomspace(1 << 22, 1, 3000)])
    rng = np.random.default_rng(3)
    t = vocab // 2 + np.round(mags * rng.choice([-1.0, 1.0], mags.size) * rng.random(mags.size)).astype(np.int64)
    assert mags.max() * 4 > 4 * kr.SMALL_V
    for cut in (t, t[: kr.SMALL_V], np.repeat(t[::7], 3)):
        f = M._encode_mag(cut, budget=1 << 30)
        np.testing.assert_array_equal(decode_stream(f, vocab), cut)


def test_mag_n1_and_two_symbols():
    # the encoder itself on n = 1 (a single symbol) and on a tiny stream; "const" and "packed"
    # win these in encode_stream, but the coder must still be exact on them
    for t in ([5], [3, 4], [0, 9, 0]):
        f = M._encode_mag(np.array(t), budget=1000)
        assert f is not None and f["coder"] == "mag"
        np.testing.assert_array_equal(decode_stream(f, 10), t)


def test_mag_deterministic():
    t = laplace_tokens(20000, 4096, seed=3)
    a = msgpack.packb(encode_stream(t, 4096))
    b = msgpack.packb(encode_stream(t.copy(), 4096))
    assert a == b


def test_mag_smaller_than_rans_on_varying_scale():
    t = laplace_tokens(50000, 65536, seed=1)
    m = msgpack.packb(encode_stream(t, 65536, coders=("mag",)))
    r = msgpack.packb(encode_stream(t, 65536, coders=("rans",)))
    assert msgpack.unpackb(m)["coder"] == "mag"
    assert len(m) < 0.95 * len(r)
    # the default coders include "mag" and so pick it here
    assert encode_stream(t, 65536)["coder"] == "mag"


def test_mag_not_chosen_when_larger():
    # a uniform stream: magnitude classes carry no information, rans/packed win
    t = np.random.default_rng(5).integers(0, 4096, size=20000)
    assert encode_stream(t, 4096)["coder"] != "mag"


def test_mag_merged_tokens_large_ids():
    # a residual around 100 of a 200-symbol alphabet plus merged tokens 200..999 (large ids)
    rng = np.random.default_rng(7)
    t = laplace_tokens(5000, 200, seed=7, slow=False)
    merged = rng.random(t.size) < 0.1
    t[merged] = rng.integers(200, 1000, size=int(merged.sum()))
    roundtrip(t, 1000)


# ----------------------------------------------------------------------------- hostile data


@pytest.fixture(scope="module")
def sample():
    t = laplace_tokens(3000, 512, seed=11)
    f = mag(t, 512)
    assert f["coder"] == "mag"
    return t, f


@pytest.mark.parametrize("field", ["table", "payload", "raw"])
def test_every_truncation_refused(sample, field):
    _, f = sample
    data = f[field]
    for cut in range(len(data)):
        g = dict(f)
        g[field] = data[:cut]
        with pytest.raises(CorruptDataError):
            decode_stream(g, 512)


def test_payload_cut_at_a_word_is_refused_in_bounds(sample):
    # mag_decode renormalises without a branch: past the last word it reads that word again
    # (never out of bounds) and reports running out at the end, or the first error the tokens
    # decoded from then on show; every cut is refused, the short cuts as "truncated"
    _, f = sample
    data = f["payload"]
    assert len(data) % 4 == 0 and len(data) >= 16
    messages = set()
    for cut in range(8, len(data), 4):
        with pytest.raises(CorruptDataError) as e:
            decode_stream(dict(f, payload=data[:cut]), 512)
        messages.add(str(e.value).split(":")[0])
    assert "field 'payload'" in messages
    words = np.frombuffer(data, "<u4")
    fr = np.zeros((R.N_CONTEXTS, R.N_BUCKETS), dtype=np.int64)
    assert R.table_decode(np.frombuffer(f["table"], np.uint8), f["pb"], fr) == R.OK
    statuses = set()
    for cut in range(2, len(words)):
        out = np.zeros(f["n"], np.int32)
        statuses.add(R.mag_decode(words[:cut].copy(), np.frombuffer(f["raw"], np.uint8), f["center"], f["rate"],
                                  fr, f["pb"], 512, out, M._NO_LPC))
    assert statuses <= {R.ERR_TRUNCATED, R.ERR_CONTEXT, R.ERR_SYMBOL, R.ERR_RAW} and R.ERR_TRUNCATED in statuses


@pytest.mark.parametrize("field", ["table", "payload", "raw"])
def test_random_mutations_corrupt_or_exact_length(sample, field):
    t, f = sample
    rng = np.random.default_rng(len(field))
    data = bytearray(f[field])
    for _ in range(300):
        g = dict(f)
        d = bytearray(data)
        for _ in range(int(rng.integers(1, 4))):
            i = int(rng.integers(0, len(d)))
            d[i] ^= 1 << int(rng.integers(0, 8))
        g[field] = bytes(d)
        try:
            out = decode_stream(g, 512)
        except CorruptDataError:
            continue
        assert out.shape == t.shape  # a mutation the checks cannot see still decodes n tokens in range
        assert out.min() >= 0 and out.max() < 512


@pytest.mark.parametrize("name,value", [
    ("center", -1), ("center", 512), ("rate", R.MIN_RATE - 1), ("rate", R.MAX_RATE + 1),
    ("pb", R.MIN_PB - 1), ("pb", R.MAX_PB + 1), ("n", -1), ("center", "1"), ("table", 3), ("raw", None),
    ("pb", True),
])
def test_bad_fields(sample, name, value):
    _, f = sample
    g = dict(f)
    g[name] = value
    with pytest.raises(CorruptDataError):
        decode_stream(g, 512)


def test_huge_n_refused_before_allocating(sample):
    _, f = sample
    g = dict(f, n=1 << 40)
    with pytest.raises(CorruptDataError):
        decode_stream(g, 512)
    with pytest.raises(CorruptDataError):
        decode_stream(dict(f, n=f["n"] + 1), 512)
    with pytest.raises(CorruptDataError):
        decode_stream(dict(f), 512, max_count=f["n"] - 1)


def test_extra_and_missing_fields(sample):
    _, f = sample
    with pytest.raises(CorruptDataError):
        decode_stream(dict(f, extra=1), 512)
    g = dict(f)
    del g["raw"]
    with pytest.raises(CorruptDataError):
        decode_stream(g, 512)


def test_wrong_vocab_refused(sample):
    # the same stream read with a smaller vocabulary: tokens beyond it are refused
    t, f = sample
    with pytest.raises(CorruptDataError):
        decode_stream(f, int(t.max()))


def test_garbage_tables_never_crash():
    rng = np.random.default_rng(2)
    for _ in range(500):
        buf = rng.integers(0, 256, size=int(rng.integers(0, 60)), dtype=np.uint8)
        freqs = np.zeros((R.N_CONTEXTS, R.N_BUCKETS), dtype=np.int64)
        status = R.table_decode(buf, 12, freqs)
        assert status in (R.OK, R.ERR_TRUNCATED, R.ERR_RANGE, R.ERR_TRAILING)
        if status == R.OK:
            assert freqs.min() >= 0 and freqs.max() <= 1 << 12


def test_table_roundtrip_kernel():
    rng = np.random.default_rng(4)
    for _ in range(50):
        counts = np.zeros((R.N_CONTEXTS, R.N_BUCKETS), dtype=np.int64)
        rows = rng.choice(R.N_CONTEXTS, size=int(rng.integers(1, 10)), replace=False)
        for r in rows:
            lo = int(rng.integers(0, R.N_BUCKETS))
            hi = int(rng.integers(lo, R.N_BUCKETS))
            counts[r, lo:hi + 1] = rng.integers(0, 1000, size=hi - lo + 1)
            counts[r, lo] += 1
            counts[r, hi] += 1
        freqs = M._mag_freqs(counts, 12)
        assert (freqs.sum(axis=1)[rows] == 1 << 12).all()
        bits = R.table_encode(freqs, 12, np.zeros(0, dtype=np.uint8))
        buf = np.zeros((bits + 7) // 8, dtype=np.uint8)
        assert R.table_encode(freqs, 12, buf) == bits
        back = np.zeros_like(freqs)
        assert R.table_decode(buf, 12, back) == R.OK
        np.testing.assert_array_equal(back, freqs)


# ----------------------------------------------------------------------------- in containers


def _stream_without_mag(data: bytes) -> tuple[int, int]:
    """(bytes of the container's "mag" stream, bytes of the smallest stream level 1's other coders
    give the same tokens)."""
    import ubpe
    from ubpe.format.container import fields_of

    info = ubpe.describe(data)
    stream = fields_of(data)["stream"]
    assert stream["coder"] == "mag"
    vocab = info.alphabet_size + info.n_merges
    tokens = decode_stream(stream, vocab)
    others = tuple(c for c in coders_for(1) if c != "mag")
    return len(msgpack.packb(stream)), len(msgpack.packb(encode_stream(tokens, vocab, coders=others)))


def test_level1_container_with_a_dense_range():
    """A Laplacian signal with holes in its range: level 1 writes "mag" over a dense id range
    (no alphabet gaps stored), decodes exactly, and its stream is smaller than any other level-1
    coder's on the same tokens."""
    import ubpe
    from ubpe.format.container import fields_of

    rng = np.random.default_rng(12)
    x = np.round(rng.laplace(0, 40 * np.exp(2 * np.sin(np.arange(30000) / 900.0)))).astype(np.int16)
    data = ubpe.compress(x, level=1, predictor="none")
    np.testing.assert_array_equal(ubpe.decompress(data), x)
    d = fields_of(data)
    assert d["stream"]["coder"] == "mag"
    assert d["alphabet"]["w"] == 0 and d["alphabet"]["n"] == int(x.max()) - int(x.min()) + 1
    assert ubpe.describe(data).coder == "mag"
    with_mag, without = _stream_without_mag(data)
    assert with_mag < 0.95 * without


def test_level1_dense_ids_for_mag_over_a_wide_sparse_range(monkeypatch):
    """A short residual of wide values (a Laplacian with rare spikes of +-10**5: about 2 500
    distinct values over a range far beyond 16 times as many and 2**16): level 1 codes "mag" over
    the dense range (no gaps stored, where the list of distinct values took hundreds of bytes),
    decodes exactly, is smaller than with the bare alphabet it stored before, and never sizes
    "rans" over that range (a frequency a symbol of it)."""
    import ubpe
    from ubpe.format.container import fields_of
    from ubpe.planner import candidates, fast
    from ubpe.planner.settings import DEFAULT

    rng = np.random.default_rng(3)
    x = np.round(rng.laplace(0, 400, 10_000)).astype(np.int32)
    spikes = rng.choice(x.shape[0], 40, replace=False)
    x[spikes] = rng.integers(-100_000, 100_000, spikes.shape[0])
    a, lo, hi = np.unique(x).shape[0], int(x.min()), int(x.max())
    assert not candidates.dense_fits(a, lo, hi) and candidates.dense_mag_fits(a, lo, hi)
    data = ubpe.compress(x, level=1, predictor="none")
    np.testing.assert_array_equal(ubpe.decompress(data), x)
    d = fields_of(data)
    assert d["stream"]["coder"] == "mag"
    assert d["alphabet"]["n"] == hi - lo + 1 and len(d["alphabet"]["gaps"]) == 0
    found = fast.layouts(x.astype(np.int64), DEFAULT)
    assert ("dense", "mag") in found.costs and ("dense", "rans") not in found.costs
    monkeypatch.setattr(fast, "dense_mag_fits", candidates.dense_fits)  # the rule before: bare ids only
    bare = ubpe.compress(x, level=1, predictor="none")
    assert fields_of(bare)["alphabet"]["n"] == a and len(fields_of(bare)["alphabet"]["gaps"]) > 500
    assert len(data) < 0.98 * len(bare)


def test_level1_audio_smaller_with_mag(shared_data):
    import ubpe
    from ubpe.io import read_values

    files = sorted((shared_data / "audio").glob("*.wav"), key=lambda p: p.name.encode())[:3]
    xs = [read_values(f) for f in files]
    after = [ubpe.compress(x, level=1) for x in xs]
    for x, c in zip(xs, after):
        np.testing.assert_array_equal(ubpe.decompress(c), x)
    sizes = [_stream_without_mag(c) for c in after]
    assert sum(m for m, _ in sizes) < 0.97 * sum(o for _, o in sizes)


def test_table_decode_matches_bit_by_bit_reading(sample):
    # the 64-bit window gives the plain reference's status and frequencies
    # (tests/reference_mag_table.py) on valid tables (big and small values: escapes), their
    # cuts and bit flips, and random bytes
    import reference_mag_table as ref

    rng = np.random.default_rng(7)
    bufs = []
    for k in range(40):
        counts = np.zeros((R.N_CONTEXTS, R.N_BUCKETS), dtype=np.int64)
        for r in rng.choice(R.N_CONTEXTS, size=int(rng.integers(1, 12)), replace=False):
            lo = int(rng.integers(0, R.N_BUCKETS))
            hi = int(rng.integers(lo, R.N_BUCKETS))
            counts[r, lo:hi + 1] = rng.integers(0, [2, 50, 1 << 13, 1 << 30][k % 4], size=hi - lo + 1)
            counts[r, lo] = counts[r, hi] = max(int(counts[r, lo]), 1)
        pb = [R.MIN_PB, R.MAX_PB][k % 2]
        freqs = M._mag_freqs(counts, pb)
        nbits = R.table_encode(freqs, pb, np.zeros(0, np.uint8))
        buf = np.zeros((nbits + 7) // 8, dtype=np.uint8)
        R.table_encode(freqs, pb, buf)
        bufs.append(buf)
        bufs += [buf[:cut] for cut in range(buf.shape[0])] if k < 8 else [buf[:int(rng.integers(0, buf.shape[0]))]]
        bufs.append(np.append(buf, np.uint8(k % 3)))  # a byte beyond the last: trailing
        flipped = buf.copy()
        if flipped.size:
            flipped[int(rng.integers(0, flipped.size))] ^= np.uint8(1 << int(rng.integers(0, 8)))
        bufs.append(flipped)
    bufs += [rng.integers(0, 256, size=int(rng.integers(0, 80)), dtype=np.uint8) for _ in range(200)]
    bufs.append(np.frombuffer(sample[1]["table"], np.uint8))
    statuses = set()
    for buf in bufs:
        for pb in (R.MIN_PB, R.MAX_PB, 30):
            got = np.zeros((R.N_CONTEXTS, R.N_BUCKETS), dtype=np.int64)
            st = R.table_decode(buf, pb, got)
            want_st, want = ref.decode(buf.tobytes(), pb)
            assert st == want_st
            statuses.add(st)
            if st == R.OK:
                np.testing.assert_array_equal(got, want)
    assert {R.OK, R.ERR_TRUNCATED, R.ERR_RANGE, R.ERR_TRAILING} <= statuses


@pytest.mark.parametrize("name,value", [
    ("center", 511), ("center", 512), ("center", True), ("rate", R.MAX_RATE), ("rate", np.int64(4)), ("pb", 0),
    ("pb", R.MAX_PB), ("pb", 12), ("table", None), ("payload", "x"), ("raw", 7),
])
def test_mag_fields_usual_case_matches_field_by_field(sample, name, value):
    # the same outcome (tokens, or the same message) with the one-test usual case as with the
    # fields read as bytearrays (which only the field-by-field path takes)
    t, f = sample
    g = dict(f, **{name: value})
    slow = dict(g, **{k: bytearray(g[k]) for k in ("table", "payload", "raw") if isinstance(g[k], bytes)})
    try:
        want = decode_stream(slow, 512)
    except CorruptDataError as e:
        with pytest.raises(CorruptDataError) as got:
            decode_stream(g, 512)
        assert str(got.value) == str(e)
        return
    np.testing.assert_array_equal(decode_stream(g, 512), want)
