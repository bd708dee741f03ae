"""Level 1's compiled replacements of numpy passes (issue 28, target 1) give the numbers of the
code they replaced: ``ubpe._kernels.tally.token_counts`` is ``np.bincount`` (every integer width,
strided, byte orders the caller converts), ``_pack_coefs`` (by ``tally.pack_bits``) the bytes of
the bit matrix and ``np.packbits`` it replaced, ``encode_stream`` the same stream with either
count, and ``auto_chains``' distinct-value count the bincount's."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ubpe import coders
from ubpe._kernels import tally
from ubpe.frontend.lpc import MAX_PRECISION, _pack_coefs
from ubpe.planner import chains as planner_chains
from ubpe.planner.settings import DEFAULT

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _pack_reference(coefs: np.ndarray, widths: np.ndarray) -> bytes:
    """``_pack_coefs`` as it was: a bit matrix, masked to each width, by ``np.packbits``."""
    if coefs.size == 0:
        return b""
    t = np.arange(MAX_PRECISION, dtype=np.int64)
    raw = coefs.astype(np.int64) & ((np.int64(1) << widths) - 1)
    bits = ((raw[:, None] >> t) & 1).astype(np.uint8)
    return np.packbits(bits[t[None, :] < widths[:, None]], bitorder="little").tobytes()


@st.composite
def coefficient_blocks(draw):
    """Blocks of LPC coefficients as the stage writes them: a precision 2..16 a block, each
    coefficient of that many bits (two's complement), the widths repeated per coefficient."""
    blocks = draw(st.lists(st.tuples(st.integers(2, MAX_PRECISION), st.integers(0, 32)), max_size=12))
    coefs, widths = [], []
    for prec, order in blocks:
        lo, hi = -(1 << (prec - 1)), (1 << (prec - 1)) - 1
        coefs += draw(st.lists(st.integers(lo, hi), min_size=order, max_size=order))
        widths += [prec] * order
    return np.array(coefs, np.int64), np.array(widths, np.int64)


@SETTINGS
@given(coefficient_blocks())
@example((np.array([-32768, 32767, -1, 0, 1], np.int64), np.array([16, 16, 16, 2, 2], np.int64)))
@example((np.zeros(0, np.int64), np.zeros(0, np.int64)))
def test_pack_coefs_same_bytes(case):
    coefs, widths = case
    assert _pack_coefs(coefs, widths) == _pack_reference(coefs, widths)


def test_pack_coefs_extremes_and_padding():
    # every precision's extremes, an odd total of bits: the last byte's spare bits are zero
    for prec in range(2, MAX_PRECISION + 1):
        coefs = np.array([-(1 << (prec - 1)), (1 << (prec - 1)) - 1, -1], np.int64)
        widths = np.full(3, prec, np.int64)
        got = _pack_coefs(coefs, widths)
        assert got == _pack_reference(coefs, widths)
        assert len(got) == (3 * prec + 7) // 8
    # a wrong bit order or a bit too many would show here: 1 in 3 bits, then -1 in 2 bits
    assert _pack_coefs(np.array([1, -1], np.int64), np.array([3, 2], np.int64)) == bytes([0b00011001])


@SETTINGS
@given(st.sampled_from(["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8"]), st.integers(1, 300),
       st.lists(st.integers(0, 299), max_size=400), st.booleans())
def test_token_counts_is_bincount(dtype, vocab, tokens, strided):
    vocab = min(vocab, int(np.iinfo(dtype).max) + 1)
    a = np.array([t % vocab for t in tokens], dtype=dtype)
    if strided:
        a = np.repeat(a, 2)[::2]
    counts = np.zeros(vocab, np.int64)
    tally.token_counts(a, counts)
    assert np.array_equal(counts, np.bincount(a.astype(np.int64), minlength=vocab))


@SETTINGS
@given(st.sampled_from(["<i4", ">i4", "<i8", "u2", "i2"]), st.lists(st.integers(0, 40), min_size=1, max_size=300))
def test_encode_stream_same_with_either_count(dtype, tokens):
    # encode_stream counts native integer tokens by token_counts, others by np.bincount: the same
    # stream map for the same tokens in any width or byte order
    a = np.array(tokens, dtype=dtype)
    native = np.array(tokens, dtype=np.int64)
    vocab = int(native.max()) + 1
    swapped = native.astype(native.dtype.newbyteorder())  # (not native: np.bincount's path)
    assert not swapped.dtype.isnative
    assert coders.encode_stream(a, vocab, coders=coders.coders_for(1)) == \
        coders.encode_stream(swapped, vocab, coders=coders.coders_for(1))


@SETTINGS
@given(st.sampled_from(["i1", "u1", "i2", "u2"]), st.integers(1, 3),
       st.lists(st.integers(-128, 127), min_size=1, max_size=200), st.integers(0, 8))
def test_auto_chains_rank_choice(dtype, channels, values, spread):
    # auto_chains offers "rank+delta1" by the count of distinct values: the marks' count is the
    # bincount's (here checked through the offer, against the count computed as before); the
    # values spread (sparse: rank offered) with two neighbours (no grid: the chains on x itself)
    info = np.iinfo(dtype)
    v = np.clip(np.array([0] * 2 * channels + values, np.int64) << spread, info.min, info.max)
    v[:2 * channels] = [0] * channels + [1] * channels  # (frames 0 and 1: every channel 0, then 1)
    v = v.astype(dtype)
    frames = v.shape[0] // channels
    if frames == 0:
        return
    x = v[:frames * channels].reshape(frames, channels).T  # (channels, frames), as compress gives it
    assert not planner_chains.has_grid(np.ascontiguousarray(x))
    lo, hi = int(x.min()), int(x.max())
    count = int(np.count_nonzero(np.bincount(x.reshape(-1).astype(np.int64) - lo)))
    expected = count >= 2 and count * DEFAULT.rank_sparsity <= hi - lo + 1
    specs = planner_chains.auto_chains(np.ascontiguousarray(x), 1, DEFAULT)
    assert (planner_chains.PREDICTORS["rank+delta1"] in specs) == expected


@SETTINGS
@given(st.sampled_from(["i1", "u1", "i2", "u2", "i4", "u4", "i8"]), st.lists(st.integers(-(1 << 20), 1 << 20),
                                                                           min_size=1, max_size=300), st.booleans())
def test_offset_passes_are_numpys(dtype, values, strided):
    # offset_counts is np.bincount(y - lo), gather_offsets table[y - lo], offsets (y - lo) as int32
    info = np.iinfo(dtype)
    y = np.clip(np.array(values, np.int64), max(info.min, -(1 << 20)), min(info.max, 1 << 20)).astype(dtype)
    if strided:
        y = np.repeat(y, 2)[::2]
    lo, hi = int(y.min()), int(y.max())
    d = y.astype(np.int64) - lo
    counts = np.zeros(hi - lo + 1, np.int64)
    tally.offset_counts(y, lo, counts)
    assert np.array_equal(counts, np.bincount(d, minlength=hi - lo + 1))
    table = (np.cumsum(counts > 0) - 1).astype(np.int32)
    out = np.empty(y.shape[0], np.int32)
    tally.gather_offsets(y, lo, table, out)
    assert np.array_equal(out, table[d])
    tally.offsets(y, lo, out)
    assert np.array_equal(out, d.astype(np.int32))


@st.composite
def lpc_signals(draw):
    """A channel the LPC stage analyses: a random walk, a tone or noise, int16 or int32, with
    bursts (blocks whose loudness moves: the refit runs), of up to 3 blocks of 512 samples."""
    n = draw(st.integers(0, 1400))
    dtype = draw(st.sampled_from([np.int16, np.int32, np.uint16]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["walk", "tone", "noise"]))
    t = np.arange(n)
    if kind == "walk":
        v = np.cumsum(rng.integers(-40, 41, n))
    elif kind == "tone":
        v = 3000 * np.sin(t * 0.07) + rng.normal(0, 3, n)
    else:
        v = rng.normal(0, 200, n)
    loud = np.where((t // 97) % 3 == 0, 20.0, 1.0)
    v = np.rint(v * loud)
    info = np.iinfo(dtype)
    return np.clip(v, info.min, info.max).astype(dtype)


@SETTINGS
@given(lpc_signals(), st.booleans(), st.sampled_from([1, 3]), st.sampled_from([1, 4]))
def test_lpc_stage_shares_the_signal(x, reweight, candidates, every):
    # LpcStage analyses a channel at each block length and refits it from one int64 signal and
    # the params as arrays (_forward_signal, _reweight_signal): the residual and params of
    # lpc_forward at the cheaper block length, refitted by lpc_reweight, as before
    from test_level1_fin import stage_as_before

    from ubpe.frontend.lpc import LpcStage

    blocks = (512, 1024)
    stage = LpcStage(blocks=blocks, reweight=reweight, candidates=candidates, costed_every=every)
    y, params = stage.forward(x[None, :])
    r, p = stage_as_before(x, blocks, reweight, stage)
    assert np.array_equal(y[0], r) and y.dtype == r.dtype
    assert params["channels"][0] == p


@SETTINGS
@given(st.lists(st.integers(0, 5), max_size=300))
def test_nonzero_cells_is_the_mask(cells):
    # _value_counts' counts[counts > 0] by one compiled pass: the same cells in the same order
    counts = np.array(cells, np.int64)
    out = np.empty(counts.shape[0], np.int64)
    k = tally.nonzero_cells(counts, out)
    assert np.array_equal(out[:k], counts[counts > 0])
