"""Level 2's dense ids over a wide span: ``Alphabet.span`` is the alphabet of ``np.arange``, and
the alphabet field of a contiguous alphabet is written without passing over its values, the same
bytes as before; level 2 gives level 1's bytes on a heavy-tailed float series as it did."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ubpe
from ubpe.alphabet import Alphabet
from ubpe.format.fields import alphabet_field


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-100, 100)), st.integers(0, 5000))
def test_a_span_is_the_alphabet_of_its_range(lo, size):
    hi = min(lo + size, 2**63 - 1)
    a = Alphabet.span(lo, hi)
    b = Alphabet([int(v) for v in range(lo, hi + 1)]) if size < 50 else Alphabet(np.arange(hi - lo + 1) + np.int64(lo))
    assert a == b and len(a) == hi - lo + 1 and a.kind == "integers"
    assert alphabet_field(a) == {"n": hi - lo + 1, "lo": lo, "w": 0, "gaps": b""}
    y = np.array([lo, hi, (lo + hi) // 2], dtype=np.int64)
    assert a.to_values(a.to_ids(y)).tolist() == y.tolist()


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-100, 100)), st.integers(0, 3000),
       st.sampled_from(["<i8", "<i4", "<u8", "<i2", "<u1"]))
def test_a_span_maps_ids_and_values_as_the_alphabet_of_its_range(lo, size, dtype):
    """ids of values of any integer dtype, the values of ids in any dtype, values outside the
    span refused with the same error, the values, repr and equality: as the explicit alphabet's
    (a span makes its values only if they are read)."""
    hi = min(lo + size, 2**63 - 1)
    a, b = Alphabet.span(lo, hi), Alphabet(np.arange(hi - lo + 1) + np.int64(lo))
    info = np.iinfo(dtype)
    inside = [v for v in (lo, hi, (lo + hi) // 2, lo + 1) if info.min <= v <= info.max and v <= hi]
    outside = [v for v in (lo - 1, hi + 1, info.min, info.max) if info.min <= v <= info.max and not lo <= v <= hi]
    if inside:
        y = np.array(inside, dtype=dtype)
        ids = a.to_ids(y)
        assert ids.dtype == b.to_ids(y).dtype and ids.tolist() == b.to_ids(y).tolist()
        for out in (None, np.int64, np.int16, np.uint8):
            assert a.to_values(ids, out).dtype == b.to_values(ids, out).dtype
            assert a.to_values(ids, out).tolist() == b.to_values(ids, out).tolist()
    for v in outside:
        errors = []
        for alphabet in (a, b):
            with pytest.raises(ValueError) as e:
                alphabet.to_ids(np.array([v], dtype=dtype))
            errors.append(str(e.value))
        assert errors[0] == errors[1]
    assert repr(a) == repr(b) and a == b and a.values.tolist() == b.values.tolist()


def test_span_arguments_are_checked():
    with pytest.raises(ValueError):
        Alphabet.span(5, 4)
    with pytest.raises(ValueError):
        Alphabet.span(0, 2**31 - 1)
    with pytest.raises(TypeError):
        Alphabet.span(0.5, 3)


def test_the_alphabet_field_of_values_with_holes_is_unchanged():
    """Only a contiguous alphabet takes the short path; one with a hole, or of uint64 values past
    2**63, writes its gaps as before."""
    for values in ([3, 4, 5, 9], [-7, -6, 0], [2**63, 2**63 + 1, 2**64 - 1]):
        field = alphabet_field(Alphabet(values))
        assert field["n"] == len(values) and field["lo"] == values[0] and field["gaps"] != b""
    top = alphabet_field(Alphabet([2**64 - 3, 2**64 - 2, 2**64 - 1]))
    assert top == {"n": 3, "lo": 2**64 - 3, "w": 0, "gaps": b""}


def test_level_2_on_a_heavy_tailed_float_series_round_trips():
    """Quiet noise with a few huge excursions (dense ids over a span of millions)."""
    rng = np.random.default_rng(4)
    x = np.round(rng.normal(0, 3, 3000))
    x[rng.integers(0, 3000, 6)] = rng.integers(-4_000_000, 4_000_000, 6)
    x = x / 1000.0
    for level in (1, 2):
        data = ubpe.compress(x, level=level)
        assert ubpe.decompress(data).tobytes() == x.tobytes()
