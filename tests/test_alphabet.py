"""Alphabet: values <-> ids, for ranges, arbitrary integers and hashable symbols."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ubpe
from ubpe import Alphabet


def test_range_alphabet_is_the_identity():
    a = Alphabet(256)
    assert len(a) == 256 and a.kind == "range"
    x = np.array([0, 7, 255], dtype=np.uint8)
    assert a.to_ids(x).tolist() == [0, 7, 255]
    assert a.to_ids(x).dtype == np.int32
    assert a.to_values(np.array([255, 0]), dtype=np.uint8).dtype == np.uint8


def test_integer_values_get_ids_in_ascending_order():
    a = Alphabet([2**40, -5, 7, 7])
    assert len(a) == 3 and a.kind == "integers"
    assert a.to_ids([7, -5, 2**40]).tolist() == [1, 0, 2]
    assert a.to_values(np.array([0, 2])).tolist() == [-5, 2**40]


def test_symbols_keep_the_given_order():
    a = Alphabet("cab")
    assert a.to_ids("abc").tolist() == [1, 2, 0]
    assert a.to_values(np.array([0, 1])).tolist() == ["c", "a"]
    assert Alphabet({"b", "a"}).to_ids("ab").tolist() == [0, 1]  # sets are sorted


def test_from_data_takes_the_distinct_values_of_several_arrays():
    a = Alphabet.from_data(np.array([5, -3, 5], dtype=np.int16), [np.array([100, 5], dtype=np.int64)])
    assert a.values.tolist() == [-3, 5, 100]
    assert Alphabet.from_data(b"abca").values.tolist() == [97, 98, 99]
    assert len(Alphabet.from_data("hello")) == 4


def test_from_data_is_numpys_unique_for_every_integer_dtype_and_span():
    rng = np.random.default_rng(5)
    for dtype in ("i1", "u1", "i2", "u2", "i4", "u4", "i8", "?"):
        for span in (1, 3, 300, 1 << 12, 1 << 40):  # dense (a histogram) and sparse (a sort)
            info = np.iinfo(dtype) if dtype != "?" else None
            if info is None:
                x = rng.integers(0, 2, 200).astype(bool)
            else:
                lo = int(rng.integers(info.min, max(info.min + 1, info.max - span)))
                x = np.clip(lo + rng.integers(0, span, 200), info.min, info.max).astype(dtype)
                x[:2] = info.min, info.max  # the widest span of the dtype
                x = x[2:] if span < 1 << 12 else x
            for a in (x, x[::3], np.tile(x, 30)):  # 6 000 values: a span of 300 or less takes the histogram
                got = Alphabet.from_data(a).values
                assert got.dtype == np.int64 and got.tolist() == np.unique(a).astype(np.int64).tolist()
    two = Alphabet.from_data(np.array([7, 2, 7], np.uint8), np.array([-1, 300], np.int16))
    assert two.values.tolist() == [-1, 2, 7, 300]


@pytest.mark.parametrize(
    "alphabet, seq, value, position",
    [
        (Alphabet(4), np.array([0, 3, 4, 1]), 4, 2),
        (Alphabet(4), np.array([0, -1], dtype=np.int8), -1, 1),
        (Alphabet([10, 20]), np.array([10, 20, 15]), 15, 2),
        (Alphabet([-(2**62), 2**62]), np.array([2**62, 0]), 0, 1),
        (Alphabet([1, 2]), np.array([1, 2**64 - 1], dtype=np.uint64), 2**64 - 1, 1),
        (Alphabet("ab"), "abz", "'z'", 2),
    ],
)
def test_a_value_outside_the_alphabet_is_named_with_its_position(alphabet, seq, value, position):
    with pytest.raises(ValueError, match=rf"value {value} at position {position} "):
        alphabet.to_ids(seq)


@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=50))
def test_integer_alphabets_map_back_and_forth(values):
    a = Alphabet(values)
    x = np.array(values, dtype=np.int64)
    np.testing.assert_array_equal(a.to_values(a.to_ids(x)), x)
    assert Alphabet.from_dict(a.to_dict()) == a


def test_serialization_round_trips_and_rejects_garbage():
    for a in (Alphabet(17), Alphabet([3, -1, 2**63 - 1]), Alphabet([0, 2**64 - 1]), Alphabet("xyz")):
        assert Alphabet.from_dict(a.to_dict()) == a
    for bad in (None, {}, {"kind": "range", "size": -1}, {"kind": "integers", "dtype": "<i8", "values": b"\x01"},
                {"kind": "integers", "dtype": "<i8", "values": np.array([2, 1]).astype("<i8").tobytes()},
                {"kind": "symbols", "values": ["a", "a"]}, {"kind": "nope"}):
        with pytest.raises(ubpe.CorruptDataError):
            Alphabet.from_dict(bad)
    with pytest.raises(TypeError, match="cannot be saved"):
        Alphabet([("tuple", 1)]).to_dict()


U64_HIGH = st.integers(2**63 - 3, 2**64 - 1)  # around and above 2**63, where int64 would wrap


@given(st.lists(st.one_of(U64_HIGH, st.integers(0, 2**64 - 1)), min_size=1, max_size=30, unique=True),
       st.data())
def test_to_ids_is_exact_for_uint64_values_above_2_63(values, data):
    a = Alphabet(values)
    seq = np.array(data.draw(st.lists(st.sampled_from(values), min_size=1, max_size=40)), dtype=np.uint64)
    ids = a.to_ids(seq)
    assert a.to_values(ids, dtype=np.uint64).tolist() == seq.tolist()
    assert ids.tolist() == [sorted(values).index(v) for v in seq.tolist()]
    # a neighbour of an alphabet value that is not in it is named, never mapped to a near id
    absent = [v ^ 1 for v in values if (v ^ 1) not in values]
    if absent:
        with pytest.raises(ValueError, match=str(absent[0])):
            a.to_ids(np.array([absent[0]], dtype=np.uint64))


INT64_EDGES = st.sampled_from([-(2**63), -(2**63) + 1, -1, 0, 1, 2**63 - 2, 2**63 - 1])


@given(st.lists(st.one_of(INT64_EDGES, st.integers(-(2**63), 2**63 - 1)), min_size=1, max_size=30, unique=True),
       st.data())
def test_to_ids_is_exact_for_int64_extremes(values, data):
    a = Alphabet(values)
    seq = data.draw(st.lists(st.sampled_from(values), min_size=1, max_size=40))
    for arr in (np.array(seq, dtype=np.int64), seq):
        ids = a.to_ids(arr)
        assert a.to_values(ids, dtype=np.int64).tolist() == seq
    if min(values) >= 0:  # the same values given as uint64 map to the same ids
        assert a.to_ids(np.array(seq, dtype=np.uint64)).tolist() == a.to_ids(np.array(seq)).tolist()
    if 2**63 - 1 in values:  # 2**63 as uint64 must not wrap onto -2**63
        with pytest.raises(ValueError):
            a.to_ids(np.array([2**63], dtype=np.uint64))


def test_sorted_integer_array_is_the_same_alphabet_as_its_list():
    """Alphabet(sorted distinct int array) takes a fast path; it must equal the list's."""
    for arr in (np.arange(-5, 300, 3, dtype=np.int16), np.array([2**62, 2**63 - 1], np.int64),
                np.arange(0, 70_000, dtype=np.uint32), np.array([7], np.int8)):
        fast, slow = Alphabet(arr), Alphabet(arr.tolist())
        assert fast.kind == slow.kind == "integers" and len(fast) == len(slow)
        assert np.array_equal(np.asarray(fast.values), np.asarray(slow.values))
        probe = arr[::2]
        assert np.array_equal(fast.to_ids(probe), slow.to_ids(probe))
    unsorted = np.array([3, 1, 2], np.int32)  # not the fast path: still sorted and distinct
    assert np.asarray(Alphabet(unsorted).values).tolist() == [1, 2, 3]
