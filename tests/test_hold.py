"""The "hold" coder: streams mostly of one token (slow readings on a coarse grid, differenced)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ubpe
from ubpe import coders
from ubpe.errors import CorruptDataError

from reference_hold import hold_payload


def slow_reading(n: int, seed: int, rate: float = 0.01) -> np.ndarray:
    """A level that holds and steps by one now and then, often straight back (a reading on the
    edge of two levels), as a station pressure in whole hPa."""
    rng = np.random.default_rng(seed)
    steps = np.where(rng.random(n) < rate, rng.choice([-1, 1], n), 0)
    back = np.flatnonzero(steps)[:-1] + rng.integers(1, 4, max(np.count_nonzero(steps) - 1, 0))
    steps[back[back < n]] = -steps[np.flatnonzero(steps)[:-1][back < n]]
    return (950 + np.cumsum(steps)).astype(np.int16)


held_streams = st.integers(2, 40).flatmap(lambda v: st.tuples(
    st.just(v), st.integers(0, v - 1),
    st.lists(st.one_of(st.just(-1), st.integers(0, v - 1)), min_size=1, max_size=300)))


@settings(max_examples=60, deadline=None)
@given(held_streams)
def test_hold_payload_equals_the_reference_and_round_trips(case):
    v, z, raw = case
    tokens = [z if t < 0 else t for t in raw]  # mostly z
    if tokens.count(max(set(tokens), key=tokens.count)) * 2 < len(tokens) or len(set(tokens)) < 2:
        return  # (offered only to streams at least half one token, of two tokens or more)
    stream = coders.encode_stream(np.array(tokens), v, coders=("packed", "hold"))
    if stream["coder"] == "hold":
        assert stream["payload"] == hold_payload(tokens, v)
    else:  # larger than bit packing: the reference says so too
        assert len(hold_payload(tokens, v)) + 8 >= len(coders.encode_stream(np.array(tokens), v, coders=("packed",))["payload"])
    assert coders.decode_stream(stream, v).tolist() == tokens


def test_a_slow_reading_is_smaller_with_hold_and_round_trips():
    x = slow_reading(40_000, 1)
    d = np.diff(x.astype(np.int64)) + 1
    tokens = d.astype(np.int32)
    with_hold = coders.encode_stream(tokens, 3, coders=("packed", "rans", "cms2", "hold"))
    without = coders.encode_stream(tokens, 3, coders=("packed", "rans", "cms2"))
    assert with_hold["coder"] == "hold"
    assert len(with_hold["payload"]) < 0.97 * len(without["payload"])
    for level in (2, 3):  # (level 3 keeps level 2's container or a smaller one)
        data = ubpe.compress(x, level=level)
        assert level == 3 or ubpe.describe(data).coders == ("hold",)
        assert len(data) <= len(ubpe.compress(x, level=2))
        assert np.array_equal(ubpe.decompress(data), x)
        assert ubpe.compress(x, level=level) == data  # deterministic


def test_hold_is_not_offered_without_holds():
    tokens = np.random.default_rng(2).integers(0, 16, 5000)
    assert coders.encode_stream(tokens, 16, coders=("packed", "rans", "hold"))["coder"] != "hold"


@pytest.mark.parametrize("mutate, message", [
    (lambda p: bytes([0x7F]) + p[1:], "not below vocab_size"),
    (lambda p: bytes([0x81, 0x00]) + p[1:], "minimally"),
    (lambda p: bytes([0x80, 0x80, 0x80, 0x80, 0x80]), "cut or longer"),
    (lambda p: p[:1] + bytes(len(p) - 1), "payload"),
    (lambda p: p[:-3], "payload"),
])
def test_a_corrupt_hold_payload_is_refused(mutate, message):
    tokens = np.diff(slow_reading(5000, 3).astype(np.int64)) + 1
    stream = coders.encode_stream(tokens, 3, coders=("packed", "hold"))
    assert stream["coder"] == "hold"
    bad = dict(stream, payload=mutate(stream["payload"]))
    with pytest.raises(CorruptDataError, match=message):
        coders.decode_stream(bad, 3)


def test_hold_min_share_decides_where_hold_is_offered():
    from ubpe.planner import configured

    tokens = (np.diff(slow_reading(5000, 4).astype(np.int64)) + 1).astype(np.int32)
    assert coders.encode_stream(tokens, 3, coders=("packed", "rans", "hold"))["coder"] == "hold"
    with configured(hold_min_share=1.01):  # (no token is more than all of them)
        assert coders.encode_stream(tokens, 3, coders=("packed", "rans", "hold"))["coder"] != "hold"


def test_a_hold_stream_asking_for_more_tokens_than_its_payload_may_hold_is_refused():
    """n is bounded by the payload's length (64 tokens a bit) before anything of size n is allocated."""
    with pytest.raises(CorruptDataError, match="more tokens than"):
        coders.decode_stream({"coder": "hold", "n": 1 << 40, "payload": b"\x01" + bytes(10)}, 3)
