"""The "rank" stage's forward pass on values of at most 16 bits (ubpe.frontend.rank.rank_forward,
its table path, by ubpe._kernels.ranks) gives the ranks, rank dtype and params of the numpy
passes it replaced (the reference below), for every narrow width and byte order, strided
inputs, one value, a constant and both rank widths (at most 256 distinct values, and more)."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ubpe.format.bits import pack_varints
from ubpe.frontend import rank

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _reference(arr: np.ndarray) -> tuple[np.ndarray, dict]:
    """rank_forward's table path as it was (numpy's bincount and fancy indexing)."""
    bits = 8 * arr.dtype.itemsize
    dtype = arr.dtype.newbyteorder("=")
    k = dtype.itemsize
    a = np.ascontiguousarray(arr, dtype=dtype).view(f"u{k}")
    small = a ^ np.array(1 << (8 * k - 1), f"u{k}") if dtype.kind == "i" else a
    present = np.bincount(small, minlength=1 << bits) > 0
    values = np.flatnonzero(present).astype(np.uint64)
    count = values.shape[0]
    ktype = np.uint8 if count <= 256 else np.uint16
    ranks = (np.cumsum(present, dtype=np.int32) - 1).astype(ktype)[small]
    gaps = np.concatenate((values[:1], values[1:] - values[:-1] - np.uint64(1)))
    return ranks, {"count": int(count), "bits": bits, "unsigned": int(arr.dtype.kind == "u"),
                   "values": pack_varints(gaps)}


@st.composite
def narrow(draw):
    dtype = np.dtype(draw(st.sampled_from(["i1", "u1", "<i2", "<u2", ">i2", ">u2"])))
    bits = 8 * dtype.itemsize
    n = draw(st.integers((1 << bits) // rank.RANK_TABLE_NARROW, (1 << bits) // rank.RANK_TABLE + 3000))
    info = np.iinfo(dtype)
    kind = draw(st.sampled_from(["few", "many", "constant", "extremes"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if kind == "constant":
        v = np.full(n, draw(st.integers(int(info.min), int(info.max))), np.int64)
    elif kind == "extremes":
        v = rng.choice([int(info.min), int(info.min) + 1, -1, 0, 1, int(info.max) - 1, int(info.max)], n)
        v = np.clip(v, int(info.min), int(info.max))
    else:
        distinct = 200 if kind == "few" else 600  # ranks in uint8, and in uint16 (16 bits only)
        pool = rng.integers(int(info.min), int(info.max), distinct, endpoint=True)
        v = rng.choice(pool, n)
    arr = v.astype(dtype)
    if draw(st.booleans()):  # strided (a channel of frames x channels)
        arr = np.repeat(arr, 2)[::2]
    return arr


@SETTINGS
@given(narrow())
@example(np.zeros(4096, np.int16))
@example(np.arange(-128, 128, dtype=np.int8).repeat(2))
@example(np.array([0, 65535] * 2048, np.uint16))
def test_narrow_rank_forward_is_the_reference(arr):
    bits = 8 * arr.dtype.itemsize
    assert arr.shape[0] * rank.RANK_TABLE_NARROW >= 1 << bits  # (the table path)
    got, params = rank.rank_forward(arr)
    expected, expected_params = _reference(arr)
    assert got.dtype == expected.dtype
    assert np.array_equal(got, expected)
    assert params == expected_params
    assert np.array_equal(rank.rank_inverse(got, params), arr)


@SETTINGS
@given(st.sampled_from(["i1", "u1", "<i2", ">i2", ">u2", "<u4", ">i4"]), st.integers(1, 5000),
       st.integers(0, 2**32 - 1), st.sampled_from(["all", "every_other", "one"]), st.booleans())
def test_escaped_ids_table_pass_in_any_byte_order(dtype, n, seed, alphabet_kind, strided):
    """escaped_ids' one-table pass (ubpe._kernels.ranks.lookup_coded) in both byte orders and
    strided: the ids and positions of a plain search (the nearest alphabet value at or above)."""
    from ubpe.alphabet import Alphabet
    from ubpe.format.fields import escaped_ids

    rng = np.random.default_rng(seed)
    info = np.iinfo(np.dtype(dtype))
    flat = rng.integers(max(int(info.min), -300), min(int(info.max), 300), n, endpoint=True).astype(dtype)
    if strided:
        flat = np.repeat(flat, 2)[::2]
    lo, hi = int(flat.min()), int(flat.max())
    values = {"all": np.arange(lo, hi + 1), "every_other": np.arange(lo, hi + 2, 2),
              "one": np.array([hi])}[alphabet_kind]
    alphabet = Alphabet(values.astype(np.int64))
    ids, positions = escaped_ids(alphabet, flat)
    table = alphabet.values.astype(np.int64)
    wide = flat.astype(np.int64)
    want = np.minimum(np.searchsorted(table, wide), len(table) - 1).astype(np.int32)
    assert ids.dtype == np.int32 and np.array_equal(ids, want)
    assert np.array_equal(positions, np.flatnonzero(table[want] != wide))


@SETTINGS
@given(st.sampled_from(["i1", "u1", "<i2", ">i2", ">u2"]), st.integers(1 << 12, 9000), st.integers(0, 2**32 - 1),
       st.booleans())
def test_distinct_values_in_any_byte_order(dtype, n, seed, strided):
    """writer.distinct_values (ubpe.alphabet.distinct's histogram of the span, or its sort) in
    both byte orders and strided: np.unique's values and dtype."""
    from ubpe.api.writer import distinct_values

    info = np.iinfo(np.dtype(dtype))
    rng = np.random.default_rng(seed)
    flat = rng.integers(int(info.min), int(info.max), n, endpoint=True).astype(dtype)
    flat[: n // 3] = flat[0]
    if strided:
        flat = np.repeat(flat, 2)[::2]
    got, want = distinct_values(flat), np.unique(flat)
    assert got.dtype == want.dtype and np.array_equal(got, want)
