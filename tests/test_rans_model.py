"""The rANS decoder's compiled model kernels (ubpe._kernels.ransmodel) compute exactly the integers
of their numpy definitions in ubpe.coders.rans (``_dequantize``, ``_normalize``,
``_check_histogram``), which the decoder ran before: the same frequencies, so the same tokens
from the same bytes, and the same streams refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ubpe._kernels import ransmodel
from ubpe.coders import decode_stream, encode_stream
from ubpe.coders import rans as R
from ubpe.errors import CorruptDataError


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**41), min_size=2, max_size=300), st.integers(0, 40))
def test_dequantized_codes_equal_the_numpy_definition(codes, q):
    c = np.array(codes, dtype=np.int64)
    model = np.empty_like(c)
    total = ransmodel.dequantize_codes(c, q, model)
    expect = R._dequantize(c, q)
    if expect is None:
        assert total == -1
    else:
        assert np.array_equal(model, expect) and total == int(expect.sum())


@settings(max_examples=300, deadline=None)
@given(st.data(), st.integers(R.RANS_MIN_PB, R.RANS_MAX_PB))
def test_normalized_frequencies_equal_the_numpy_definition(data, pb):
    k = data.draw(st.integers(2, min(300, 1 << pb)))
    big = data.draw(st.sampled_from([3, 100, 2**20, R.RANS_MAX_TOTAL // k - 1]))
    counts = np.array(data.draw(st.lists(st.integers(0, big), min_size=k, max_size=k)), dtype=np.int64)
    counts[0] += counts.sum() == 0  # (a total of at least 1)
    freqs = np.empty_like(counts)
    ransmodel.normalize_counts(counts, int(counts.sum()), pb, freqs)
    expect = R._normalize(counts, pb)
    assert np.array_equal(freqs, expect) and int(freqs.sum()) == 1 << pb and freqs.min() >= 1


def test_normalization_breaks_ties_of_remainders_toward_the_lower_index():
    counts = np.ones(5, dtype=np.int64)  # 4096 - 5 spare slots over 5 equal counts: 4091 = 5 * 818 + 1
    freqs = np.empty_like(counts)
    ransmodel.normalize_counts(counts, 5, 12, freqs)
    assert freqs.tolist() == [820, 819, 819, 819, 819] == R._normalize(counts, 12).tolist()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**45), min_size=1, max_size=200), st.integers(0, 8), st.data())
def test_histogram_check_equals_the_numpy_definition(hist, q, data):
    h = np.array(hist, dtype=np.int64)
    codes = R._quantize(h, q)
    if data.draw(st.booleans()):  # a stored code that disagrees
        i = data.draw(st.integers(0, h.size - 1))
        codes[i] += data.draw(st.sampled_from([-1, 1, 7]))
    try:
        R._check_histogram(h, codes, q)
        expect = True
    except CorruptDataError:
        expect = False
    assert ransmodel.histogram_matches(h, codes, q) is expect


@pytest.mark.parametrize("seed", [5, 6])
def test_rans_streams_round_trip_and_a_damaged_table_is_refused(seed):
    rng = np.random.default_rng(seed)
    tokens = np.minimum(rng.geometric(0.05, 5000), 200) - 1
    stream = encode_stream(tokens, 200, coders=("packed", "rans"))
    assert stream["coder"] == "rans"
    assert np.array_equal(decode_stream(stream, 200), tokens)
    freq = bytearray(stream["freq"])
    freq[len(freq) // 2] ^= 0x10
    with pytest.raises(CorruptDataError):
        decode_stream({**stream, "freq": bytes(freq)}, 200)
