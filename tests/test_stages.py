"""The prediction stages (lpc, adaptive, rank) in containers: forced, automatic, untrusted."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ubpe
from chain_containers import compress_chain
from common import assert_same_array, check_mutations, pack_any, unpack_any
from ubpe import CorruptDataError, compress, decompress, frontend
from ubpe.frontend import adaptive, lpc
from ubpe.frontend.chains import PREDICTORS
from ubpe.planner import DEFAULT, auto_chains, configured

FORCED = list(PREDICTORS)
INT_DTYPES = ["int8", "uint8", "<i2", ">i2", "uint16", "<i4", ">u4", "int64", "uint64"]


def walk(n: int, channels: int, seed: int, step: int = 9) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.integers(-step, step + 1, size=(n, channels)), axis=0)


def front_of(data: bytes) -> list:
    return unpack_any(data)["front"]


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_every_forced_chain_round_trips_2d_every_dtype(dtype):
    x = walk(600, 3, seed=1).astype(dtype)
    for predictor in FORCED:
        data = compress(x, predictor=predictor, level=1)
        got = decompress(data)
        assert_same_array(got, x)
        names = [e["stage"] for e in front_of(data)]
        assert names == [name for name, _ in PREDICTORS[predictor]]
        for entry in front_of(data):
            if entry["stage"] == "decorrelate":
                assert len(entry["refs"]) == 3  # three channels: one reference each
            elif entry["stage"] != "delta":
                assert len(entry["channels"]) == 3


def test_wrapping_extremes_and_ranks_of_a_sparse_grid():
    rng = np.random.default_rng(5)
    x = rng.choice(np.array([-(1 << 63), -1, 0, 5, (1 << 63) - 1], dtype=np.int64), size=(500, 2))
    for predictor in FORCED:
        assert_same_array(decompress(compress(x, predictor=predictor, level=1)), x)
    grid = (np.round(walk(3000, 1, seed=2, step=3)[:, 0]) * 64 + rng.integers(0, 2, 3000)).astype(np.int16)
    specs = auto_chains(frontend.to_channels(grid), 2, DEFAULT)
    assert PREDICTORS["rank+delta1"] in specs
    assert PREDICTORS["rank+delta1"] not in auto_chains(frontend.to_channels(walk(3000, 1, 3)), 2, DEFAULT)
    data = compress(grid, predictor="rank+delta1", level=1)
    assert_same_array(decompress(data), grid)
    assert front_of(data)[0]["channels"][0]["count"] == len(np.unique(grid))


def test_empty_and_single_frame():
    for predictor in FORCED:
        for x in (np.zeros((0, 2), np.int16), np.array([7], np.int32), np.zeros(0, np.uint8)):
            assert_same_array(decompress(compress(x, predictor=predictor)), x)


@given(hnp.arrays(st.sampled_from([np.int8, np.uint16, np.int32, np.uint64]),
                  hnp.array_shapes(min_dims=1, max_dims=2, max_side=40)),
       st.sampled_from(FORCED))
def test_forced_chains_are_lossless(x, predictor):
    if x.ndim == 2 and x.shape[1] > x.shape[0]:
        x = x.T  # axis 0 is time: compress refuses more channels than frames
    assert_same_array(decompress(compress(x, predictor=predictor, level=1)), x)


def test_predictor_argument_errors():
    x = walk(100, 1, 0)[:, 0].astype(np.int16)
    with pytest.raises(TypeError):
        compress(x, predictor=1)
    with pytest.raises(ValueError, match="predictor"):
        compress(x, predictor="flac")
    with pytest.raises(ValueError, match="delta"):
        compress(x, predictor="lpc", delta=1)
    with pytest.raises(ValueError, match="bool"):
        compress(np.ones(10, bool), predictor="lpc")
    tok = ubpe.Tokenizer(None, 120).fit(np.tile(x, 20))
    # with a tokenizer any chain applies (a shared model fitted on that chain's residuals)
    data = compress(x, tokenizer=tok, predictor="lpc")
    assert ubpe.describe(data).front[0]["stage"] == "lpc"
    assert np.array_equal(ubpe.decompress(data), x)
    # the delta predictors are the delta argument under another name
    assert compress(x, predictor="delta2") == compress(x, delta=2)
    assert compress(x, predictor="none") == compress(x, delta=0)


def test_automatic_is_never_larger_than_any_forced_chain():
    rng = np.random.default_rng(7)
    smooth = (1000 * np.sin(np.arange(6000) / 13.0) + rng.integers(-3, 4, 6000)).astype(np.int16)
    for x in (smooth, walk(4000, 2, seed=4).astype(np.int32)):
        for level in (1, 2):
            sizes = {p: len(compress(x, predictor=p, level=level)) for p in FORCED}
            auto = compress(x, level=level)
            assert len(auto) <= min(sizes.values())
    # LPC wins on a smooth oscillation, and the automatic choice finds it
    assert front_of(compress(smooth, level=1))[0]["stage"] == "lpc"


def test_screening_beyond_full_fit(monkeypatch):
    """Beyond ``screen_sample`` values every chain is screened on ``screen_sample`` values
    (``screen_windows`` windows, each a channel of its own) and only the ``screen_keep``
    smallest go on in full; level 1 never runs adaptive prediction. (A spy on
    ``frontend.forward`` sees every chain's input. The exhaustive level 1, ``fast_level1=False``:
    the fast one screens on all the values up to ``fast_whole``, tests/test_level1.py; level 2's
    exhaustive search, ``lean_upto = full_fit``.)"""
    seen = []
    real = frontend.forward

    def spy(x, chain):
        seen.append((x.shape, tuple(s.name for s in chain)))
        return real(x, chain)

    monkeypatch.setattr(frontend, "forward", spy)
    rng = np.random.default_rng(8)
    x = (1000 * np.sin(np.arange(20000) / 11.0) + rng.integers(-2, 3, 20000)).astype(np.int16)
    with configured(full_fit=3000, sample=2048, screen_sample=2048, fast_level1=False, lean_upto=3000) as s:
        data = compress(x, level=1)
        assert_same_array(decompress(data), x)
        full = [names for shape, names in seen if shape == (1, 20000)]
        screened = [names for shape, names in seen if shape == (s.screen_windows, 2048 // s.screen_windows)]
        level1_chains = auto_chains(frontend.to_channels(x), 1, s)
        assert len(screened) == len(level1_chains)  # every level-1 chain measured on the sample
        assert all("adaptive" not in names for names in screened + full)
        assert len(full) == s.screen_keep  # only the best go on in full
        assert data == compress(x, level=1)  # deterministic
        seen.clear()
        assert_same_array(decompress(compress(x, level=2)), x)
        full = {names for shape, names in seen if shape == (1, 20000)}  # level 1's plan (step 9) repeats its own
        # level 2 keeps the best chains overall and the best fast ones (level 1's), and no front
        # end only when its screened size is within screen_first_within of the best: on a smooth
        # sine the raw values cost far more than any predictor's residuals, so it is not kept
        assert () not in full and s.screen_keep <= len(full) <= 2 * s.screen_keep
    with configured(full_fit=3000, sample=2048, screen_sample=2048, lean_upto=3000,
                    screen_first_within=float("inf")):
        seen.clear()
        compress(x, level=2)
    assert () in [names for shape, names in seen if shape == (1, 20000)]


def _corrupt_params(data: bytes, rng: random.Random) -> bytes:
    tree = unpack_any(data)
    entry = rng.choice([e for e in tree["front"] if e["stage"] != "delta"])
    ch = entry["channels"]
    kind = rng.randrange(6)
    if kind == 0:
        ch.pop()
    elif kind == 1:
        ch.append(dict(ch[0]))
    else:
        p = rng.choice(ch)
        key = rng.choice(sorted(p))
        v = p[key]
        if isinstance(v, bytes):
            p[key] = v[:-1] if (v and kind == 2) else v + bytes([rng.randrange(256)])
        elif isinstance(v, int):
            p[key] = rng.choice([v + 1, v - 1, -1, 1 << 40, 0])
        elif isinstance(v, list):
            p[key] = rng.choice([[], [[0, 0, 0]], [[1, 1, 1]] * 9, "x", [[5000, 3, 1]]])
        if kind == 5:
            del p[key]
    return pack_any(tree)


def test_mutated_stage_params_raise_only_corrupt_data_error():
    rng = random.Random(11)
    samples = []
    for predictor in ("lpc", "lpc+adaptive", "delta1+adaptive", "rank+delta1"):
        x = walk(700, 2, seed=3).astype(np.int16)
        samples.append((x, compress(x, predictor=predictor, level=1)))
    refused = 0
    for i in range(300):
        x, data = samples[i % len(samples)]
        try:
            got = decompress(_corrupt_params(data, rng))
        except CorruptDataError:
            refused += 1
            continue
        assert_same_array(got, x)  # a mutation that still decodes gives the values back (CRC)
    assert refused > 200
    # and the generic byte / field mutations of the shared fuzzer
    assert check_mutations(samples, seed=12, n_mutations=200) > 0


def test_frozen_prediction_fixtures():
    """The frozen containers of the prediction stages decode, and record the chains named; an
    unsigned input to "lpc" is offset to signed (``unsigned`` 1), in one stream and in blocks."""
    import pathlib

    fixtures = pathlib.Path(__file__).parent / "fixtures"
    chains = {"v1_lpc_mag_int16": ["lpc"], "v1_lpc_adaptive_midcross_uint16": ["lpc", "adaptive"],
              "v1_rank_delta1_frames": ["rank", "delta"], "v1_blocks_lpc_frames_int16": ["lpc"],
              "v1_blocks_grid_lpc_uint16": ["grid", "lpc"]}
    for name, stages in chains.items():
        data = (fixtures / f"{name}.ubpe").read_bytes()
        d = unpack_any(data)
        blocks = [unpack_any_block(d, b) for b in range(len(d["blocks"]))] if "blocks" in d else [d]
        for front in (b["front"] for b in blocks):
            assert [e["stage"] for e in front] == stages
        values = np.load(fixtures / f"{name}.npy")
        assert_same_array(decompress(data), values)
        if name == "v1_lpc_adaptive_midcross_uint16":
            assert values.dtype.kind == "u" and {c["unsigned"] for c in blocks[0]["front"][0]["channels"]} == {1}


def unpack_any_block(d: dict, b: int) -> dict:
    """Block ``b`` of a blocked container's named fields."""
    from common import unpack_block

    count = d["block"] * int(np.prod(d["shape"][1:])) if b < len(d["blocks"]) - 1 else \
        (d["shape"][0] - b * d["block"]) * int(np.prod(d["shape"][1:]))
    return unpack_block(d["blocks"][b], count)


@pytest.mark.parametrize("predictor", ["lpc", "lpc+adaptive", "grid+lpc"])
def test_unsigned_signal_crossing_the_middle_costs_what_its_signed_twin_costs(predictor):
    """A uint16 signal straddling 32768 compresses (almost) exactly as the same signal shifted
    into int16: the predictors see the same values (offset to signed), where reading the bits as
    signed would make every crossing of 32768 a jump of 65536."""
    rng = np.random.default_rng(5)
    t = np.arange(8000)
    s = (np.round(900 * np.sin(t / 9.0) + 300 * np.sin(t / 2.3) + rng.normal(0, 6, t.size)) * 2).astype(np.int16)
    u = (s.astype(np.int32) + 32768).astype(np.uint16)
    for level in (1, 2):
        signed, unsigned = compress(s, predictor=predictor, level=level), compress(u, predictor=predictor, level=level)
        assert_same_array(decompress(unsigned), u)
        assert len(unsigned) <= len(signed) + 16


def test_unsigned_param_contradicting_the_input_is_refused():
    """``unsigned`` must be 0 for a signed input and 1 for an unsigned one (the stage's input:
    the adaptive stage after "lpc" sees a signed residual either way)."""
    s = walk(500, 2, seed=3).astype(np.int16)
    u = (s.astype(np.int32) + 32768).astype(np.uint16)
    for x in (s, u):
        d = unpack_any(compress(x, predictor="lpc+adaptive", level=2))
        assert [c["unsigned"] for c in d["front"][0]["channels"]] == [int(x is u)] * 2
        for stage, bad in ((0, (0, 2) if x is u else (1, 2)), (1, (1, 2, -1))):
            for value in bad:
                e = {**d, "front": [dict(f) for f in d["front"]]}
                e["front"][stage]["channels"] = [dict(c) for c in e["front"][stage]["channels"]]
                e["front"][stage]["channels"][1]["unsigned"] = value
                with pytest.raises(CorruptDataError, match="unsigned"):
                    decompress(pack_any(e))


# ============================================================================ grid and decorrelate

from ubpe.frontend.decorrelate import DecorrelateStage  # noqa: E402

ALL_INT = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
SECOND = [None, ("delta", {"order": 1}), ("delta", {"order": 2}), ("lpc", {}), ("adaptive", {}), ("rank", {})]


def run_chain(x: np.ndarray, names: list) -> tuple[np.ndarray, list]:
    """``x`` (F, C) through the chain, params through msgpack and parse_chain, and back."""
    xc = frontend.to_channels(x)
    chain = [frontend.stage(n, **o) for n, o in names]
    y, record = frontend.forward(xc, chain)
    record = unpack_any(pack_any(record, use_bin_type=True), raw=False)
    checked = frontend.parse_chain(record, xc.dtype, xc.shape)
    assert y.dtype == frontend.chain_dtypes(checked, xc.dtype)[-1]
    back = frontend.inverse(y, checked, xc.dtype)
    assert_same_array(frontend.from_channels(back, x.shape), x)
    return y, record


@st.composite
def int_frames(draw):
    """(F, C) integers, C in 1..8, any dtype int8..uint64: random (extremes included), on a
    wrapped grid, constant, alternating between the extremes, or channel copies plus noise."""
    dtype = np.dtype(draw(st.sampled_from(ALL_INT)))
    info = np.iinfo(dtype)
    shape = (draw(st.integers(0, 40)), draw(st.integers(1, 8)))
    kind = draw(st.sampled_from(["random", "grid", "constant", "alternating", "copies"]))
    x = draw(hnp.arrays(dtype, shape))
    if kind == "grid":
        step = draw(st.integers(2, 1 << 12))
        offset = draw(st.integers(int(info.min), int(info.max)))
        x = ((x.astype(object) % 50) * step + offset).astype(object)
        x = np.array([[int(v - info.min) % (int(info.max) - int(info.min) + 1) + int(info.min) for v in r] for r in x],
                     dtype=dtype).reshape(shape)
    elif kind == "constant":
        x[:] = draw(st.sampled_from([int(info.min), int(info.max), 0]))
    elif kind == "alternating":
        x[::2], x[1::2] = info.min, info.max
    elif kind == "copies":
        x[:] = x[:, :1]
        x[::3] += dtype.type(1)
    return x


@given(int_frames(), st.sampled_from(["grid", "decorrelate"]), st.sampled_from(SECOND))
def test_grid_and_decorrelate_alone_and_chained_are_exact(x, name, second):
    names = [(name, {})] + ([second] if second else [])
    run_chain(x, names)
    run_chain(x, [("delta", {"order": 1}), (name, {})])  # and after another stage


@given(int_frames(), st.integers(1, 7))
def test_decorrelate_every_block_length(x, block):
    run_chain(x, [("decorrelate", {"block": block}), ("delta", {"order": 1})])


def test_stereo_modes_exhaustive_int8_and_the_mid_is_flacs():
    """Every (L, R) pair of int8 in every mode round trips; without wrap, M = (L + R) >> 1."""
    v = np.arange(-128, 128, dtype=np.int64)
    left, right = (a.ravel() for a in np.meshgrid(v, v))
    s = np.stack([left, right])
    st_ = DecorrelateStage(block=len(left))
    for mode in range(4):
        y, params = st_._stereo_forward(s, 8, modes=[mode])
        y8 = y.astype(np.int8)
        assert np.array_equal(y8.astype(np.int64), y)  # every output already in range
        assert_same_array(st_.inverse(y8, params), s.astype(np.int8))
        if mode == 3:
            nowrap = (left - right >= -128) & (left - right <= 127)
            assert np.array_equal(y[0][nowrap], ((left + right) >> 1)[nowrap])
            assert np.array_equal(y[1][nowrap], (left - right)[nowrap])
            assert (~nowrap).sum() > 0  # and the wrapped pairs above were exact too


@pytest.mark.parametrize("dtype", ALL_INT)
def test_stereo_modes_at_the_extremes(dtype):
    info = np.iinfo(dtype)
    ext = np.array([info.min, info.min + 1, -1 if info.min else 1, 0, 1, info.max - 1, info.max], dtype=dtype)
    left, right = (a.ravel() for a in np.meshgrid(ext, ext))
    x = np.stack([left, right])
    stage = DecorrelateStage(block=7)
    s = x.view(f"i{x.dtype.itemsize}").astype(np.int64)
    for modes in ([0] * 7, [1] * 7, [2] * 7, [3] * 7, [3, 0, 1, 2, 3, 2, 1]):
        y, params = stage._stereo_forward(s, 8 * x.dtype.itemsize, modes=modes)
        y = y.astype(stage.output_dtype(x.dtype, params))
        assert_same_array(stage.inverse(y, params).view(x.dtype), x)


def correlated_stereo(shared_data) -> np.ndarray:
    import wave
    with wave.open(str(shared_data / "audio" / "xylofon.wav")) as w:  # 16-bit mono
        left = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.int64)
    rng = np.random.default_rng(21)
    right = np.round(0.9 * np.concatenate(([0], left[:-1])) + rng.normal(0, 4, left.size))
    return np.stack([left, right], axis=1).astype(np.int16)


def test_decorrelate_beats_independent_channels_on_correlated_stereo(shared_data):
    x = correlated_stereo(shared_data)
    for chain, alone in (("decorrelate+lpc", "lpc"), ("decorrelate+delta1", "delta1")):
        joint = compress(x, predictor=chain, level=1)
        assert_same_array(decompress(joint), x)
        assert len(joint) < len(compress(x, predictor=alone, level=1))
        assert set(front_of(joint)[0]["modes"]) - {0}  # some block left independence
    # four channels: copies of the pair with noise refer to earlier channels
    rng = np.random.default_rng(22)
    quad = np.concatenate([x, x + rng.integers(-2, 3, x.shape).astype(np.int16)], axis=1)
    y, record = run_chain(quad, [("decorrelate", {})])
    assert record[0]["refs"] == [[], [0], [0], [1]] or record[0]["refs"][2:] == [[0], [1]]
    assert record[0]["refs"][0] == [] and all(abs(w - 4096) < 200 for w in record[0]["weights"][2] + record[0]["weights"][3])


def test_decorrelate_leaves_independent_channels_alone():
    rng = np.random.default_rng(23)  # Laplacian steps, as prediction residuals are
    x = np.cumsum(np.round(rng.laplace(0, 30, (20000, 3))), axis=0).astype(np.int32)
    _, record = run_chain(x, [("decorrelate", {})])
    assert record[0]["refs"] == [[], [], []] and record[0]["weights"] == [[], [], []]
    _, record = run_chain(x[:, :2], [("decorrelate", {})])
    assert set(record[0]["modes"]) == {0}


def electrode_array(frames: int, channels: int, seed: int = 31) -> np.ndarray:
    """``(frames, channels)`` int16 shaped like a linear electrode array: interference common to
    every channel (mains hum, reference drift), local fields that decay with the distance
    between electrodes, and each electrode's own Laplacian noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(frames)
    common = 40 * np.sin(2 * np.pi * t / 400) + np.cumsum(rng.normal(0, 2, frames))
    sources = np.cumsum(rng.normal(0, 6, (5, frames)), axis=1)
    where = rng.uniform(0, channels, 5)
    gain = np.exp(-np.abs(np.arange(channels)[:, None] - where[None, :]) / max(channels / 8, 2))
    x = common[None, :] + gain @ sources + rng.laplace(0, 3, (channels, frames))
    return np.round(x.T).astype(np.int16)


@given(st.sampled_from(ALL_INT), st.integers(3, 6), st.integers(0, 30), st.randoms(use_true_random=False))
def test_many_channel_prediction_is_the_reference_arithmetic(dtype, channels, frames, rnd):
    """Any valid references and weights decode as the plain-Python reference computes (values
    at the dtype's extremes included: the sum wraps modulo 2**64, the result modulo 2**bits);
    the forward pass writes what the reference writes with the params it recorded."""
    from reference_predict import channels_predicted
    dtype = np.dtype(dtype)
    info, bits = np.iinfo(dtype), 8 * dtype.itemsize
    values = [int(info.min), int(info.max), 0, -1 if info.min else 1]
    x = np.array([[rnd.choice(values) if rnd.random() < 0.3 else rnd.randint(int(info.min), int(info.max))
                   for _ in range(frames)] for _ in range(channels)], dtype=dtype)
    refs = [sorted(rnd.sample(range(c), rnd.randint(0, min(c, DecorrelateStage.MAX_REFS)))) for c in range(channels)]
    weights = [[rnd.choice([1, -1]) * rnd.randint(1, DecorrelateStage.WEIGHT_LIMIT - 1) for _ in r] for r in refs]
    stage = DecorrelateStage()
    params = stage.check({"refs": refs, "weights": weights}, dtype, x.shape)
    signed = x.view(f"i{dtype.itemsize}")
    expected = channels_predicted(signed.astype(object).tolist(), bits, refs, weights, inverse=True)
    assert stage.inverse(signed, params).tolist() == expected
    y, recorded = stage.forward(x)
    assert y.tolist() == channels_predicted(signed.astype(object).tolist(), bits, recorded["refs"], recorded["weights"])
    assert_same_array(stage.inverse(y, recorded).view(dtype), x)


def test_electrode_array_channels_are_predicted_from_their_neighbours():
    """64 electrodes sharing interference and decaying fields: channels refer to one or more
    earlier ones with weights fitted to them (not only plain differences), and the container
    is smaller than each channel compressed alone."""
    x = electrode_array(6000, 64)
    _, record = run_chain(x, [("decorrelate", {})])
    refs, weights = record[0]["refs"], record[0]["weights"]
    assert refs[0] == [] and sum(1 for r in refs if r) >= 48
    assert any(len(r) >= 2 for r in refs)
    assert any(abs(w - 4096) > 200 for ws in weights for w in ws)
    joint = compress(x, level=1)
    assert_same_array(decompress(joint), x)
    assert front_of(joint)[0]["stage"] == "decorrelate"
    alone = sum(len(compress(np.ascontiguousarray(x[:, c]), level=1)) for c in range(x.shape[1]))
    assert len(joint) < alone, (len(joint), alone)


@pytest.mark.parametrize("channels", [1, 3, 17, 384, 1024])
def test_any_channel_count_round_trips(channels):
    """Up to 1 024 channels (electrode arrays) compress and decode exactly, the decorrelate
    chain too; channels that share nothing keep no reference."""
    x = electrode_array(channels + 40, channels, seed=channels)  # more frames than channels, as compress asks
    for predictor in ("auto", "decorrelate+lpc") if channels > 1 else ("auto",):
        assert_same_array(decompress(compress(x, predictor=predictor, level=1)), x)
    rng = np.random.default_rng(channels)
    independent = np.cumsum(rng.laplace(0, 50, (3000, min(channels, 17))), axis=0).astype(np.int32)
    _, record = run_chain(independent, [("decorrelate", {})])
    if independent.shape[1] != 2:
        assert all(r == [] for r in record[0]["refs"])


def test_grid_stage_output_and_cost():
    rng = np.random.default_rng(24)
    k = np.cumsum(rng.integers(-3, 4, (5000, 3)), axis=0) + 300
    x = (k * 64 - 1000).astype(np.int16)
    x[:, 2] = 17  # a dead channel: offset = value, no widening
    y, record = run_chain(x, [("grid", {})])
    p = record[0]
    assert y.dtype == np.uint8 and p["width"] == 8 and [c["step"] for c in p["channels"]] == [64, 64, 2]
    # the channel's indices, moved up by a constant (towards where the predictors see the values
    # divided, 128 + x // 64, as far as uint8 allows): offset + step * index is the value
    lift = y[0].astype(np.int64) - (k[:, 0] - k[:, 0].min())
    assert (lift == lift[0]).all() and 0 <= lift[0] <= 255 - int(y[0].max()) + lift[0]
    assert np.array_equal(p["channels"][0]["offset"] + 64 * y[0].astype(np.int64), x[:, 0])
    assert not y[2].any()
    # a channel without a grid passes unchanged and costs a params map of a few bytes
    x[:, 1] += np.arange(5000, dtype=np.int16) % 2
    y, record = run_chain(x, [("grid", {})])
    assert y.dtype == np.uint16 and np.array_equal(y[1].view(np.int16), x[:, 1])
    assert len(pack_any(record[0]["channels"][1])) < 40
    # uint64 and int64 extremes: the grid spans the whole range
    for dtype in ("int64", "uint64"):
        info = np.iinfo(dtype)
        e = np.array([[info.min], [info.max], [info.min]], dtype=dtype)
        y, record = run_chain(e, [("grid", {})])
        assert y.dtype == np.uint8 and y.tolist() == [[0, 1, 0]]
    # the grid stage and rank on the neural-like grid agree on the levels
    x8 = (np.arange(100) % 5 * 64 + 3).astype(np.uint16)
    y, _ = run_chain(x8, [("grid", {}), ("delta", {"order": 1})])
    assert y.dtype == np.int8


def _container(x: np.ndarray, name: str) -> dict:
    data = compress(x, predictor=f"{name}+delta1", level=1)
    assert_same_array(decompress(data), x)
    return unpack_any(data)


HOSTILE_GRID = [
    lambda p: p["channels"][0].update(step=0),
    lambda p: p["channels"][0].update(step=1 << 16),
    lambda p: p["channels"][0].update(offset=1 << 15),
    lambda p: p["channels"][0].update(offset=32000, step=60000),  # the first k > 0 overflows
    lambda p: p["channels"][0].update(step=1, offset=0),  # identity with a narrow width
    lambda p: p["channels"][0].update(bits=32),
    lambda p: p["channels"][0].update(unsigned=1),
    lambda p: p.update(width=64),
    lambda p: p.update(width=32),
    lambda p: p.update(width=12),
    lambda p: p.update(width=True),
    lambda p: p["channels"].pop(),
    lambda p: p.update(channels=p["channels"] * 2),
    lambda p: p.pop("width"),
    lambda p: p.update(extra=1),
    lambda p: p["channels"][1].update(step=1 << 14),  # width 8 cannot index this grid
]

HOSTILE_DECORRELATE = [
    lambda p: p.update(block=0),
    lambda p: p.update(block=1 << 30),
    lambda p: p.update(block=7),  # modes no longer one per block
    lambda p: p.update(modes=p["modes"][:-1]),
    lambda p: p.update(modes=b"\x04" + p["modes"][1:]),
    lambda p: p.update(modes=list(p["modes"])),
    lambda p: p.update(refs=[-1, 0]),
    lambda p: p.pop("modes"),
]

HOSTILE_REFS = [
    lambda p: p.update(refs=[[], [0], [2]]),
    lambda p: p.update(refs=[[0], [], []]),
    lambda p: p.update(refs=[[], [-1], [0]]),
    lambda p: p.update(refs=[[], [True], [0]]),
    lambda p: p.update(refs=[[], [0]]),
    lambda p: p.update(refs="abc"),
    lambda p: p.update(refs=[[], [0], [1, 0]], weights=[[], [4096], [1, 1]]),
    lambda p: p.update(refs=[[], [0], [0, 0]], weights=[[], [4096], [1, 1]]),
    lambda p: p.update(refs=[[], [0], [0, 1]], weights=[[], [4096], [1]]),
    lambda p: p.update(refs=[[], [0], [0]], weights=[[], [4096], [0]]),
    lambda p: p.update(refs=[[], [0], [0]], weights=[[], [4096], [1 << 15]]),
    lambda p: p.update(refs=[[], [0], [0]], weights=[[], [4096], [1.5]]),
    lambda p: p.update(refs=[[], [0], [0]], weights=[[], [4096]]),
    lambda p: p.update(refs=[[], [], [0, 1, 0, 1, 0]], weights=[[], [], [1] * 5]),
    lambda p: p.pop("weights"),
    lambda p: p.update(block=4096, modes=b""),
]


@pytest.mark.parametrize("name,channels,mutations", [("grid", 2, HOSTILE_GRID),
                                                     ("decorrelate", 2, HOSTILE_DECORRELATE),
                                                     ("decorrelate", 3, HOSTILE_REFS)])
def test_hostile_grid_and_decorrelate_params(name, channels, mutations):
    rng = np.random.default_rng(25)
    x = (np.cumsum(rng.integers(-2, 3, (3000, channels)), axis=0) * 64 + 5).astype(np.int16)
    x[:, 1] = x[:, 0] + rng.integers(-1, 2, 3000).astype(np.int16) * 64  # correlated, on the grid
    x[:300, 1] = 5
    tree = _container(x, name)
    if name == "grid":
        assert tree["front"][0]["width"] == 8
    for mutate in mutations:
        bad = unpack_any(pack_any(tree))
        entry = bad["front"][0]
        mutate(entry)
        with pytest.raises(CorruptDataError, match="grid|decorrelate"):  # not the checksum
            decompress(pack_any(bad))
    # and the shared fuzzer's byte and field mutations
    assert check_mutations([(x, pack_any(tree))], seed=26, n_mutations=150) > 0


def test_adaptive_stage_batches_channels_like_the_transform():
    """One kernel call for all channels gives each channel's adaptive_forward; channels with
    different cascades (possible in a container) are inverted group by group."""
    rng = np.random.default_rng(27)
    for dtype in ("int16", "uint64", "int8"):
        x = frontend.to_channels(np.cumsum(rng.integers(-30, 31, (700, 3)), axis=0).astype(dtype))
        y, params = frontend.stage("adaptive").forward(x)
        for c in range(3):
            r, p = adaptive.adaptive_forward(x[c])
            assert np.array_equal(y[c], r) and params["channels"][c] == p
        custom = [[3, 5, 0], [8, 12, 1]]
        r1, p1 = adaptive.adaptive_forward(x[1], stages=custom)
        y[1] = r1
        params["channels"][1] = p1
        checked = frontend.parse_chain([{"stage": "adaptive", **params}], x.dtype, x.shape)
        assert_same_array(frontend.inverse(y, checked, x.dtype), x)


@given(int_frames(), st.sampled_from(["grid", "decorrelate"]), st.sampled_from(["delta1", "lpc", "lpc+adaptive", "rank+delta1"]))
def test_grid_and_decorrelate_containers_are_lossless(x, name, rest):
    """Whole containers (planner, tokenizer, coder, CRC) with the new stages forced first."""
    assume(x.shape[0] >= x.shape[1])  # compress refuses more channels than frames
    chain = ((name, {}),) + PREDICTORS[rest]
    data = compress_chain(x, chain, level=1)
    assert [e["stage"] for e in front_of(data)] == [n for n, _ in chain]
    assert_same_array(decompress(data), x)


def test_lpc_stage_options_search_blocks_and_windows():
    from ubpe.frontend.lpc import LPC_BLOCKS, LpcStage
    from ubpe.frontend.lpc import _local_bits as _estimated_bits

    rng = np.random.default_rng(28)
    t = np.arange(30_000)
    chirp = np.round(3000 * np.sin(t * t / 4e6) + rng.normal(0, 5, t.size))  # spectrum moves fast
    x = frontend.to_channels(np.stack([chirp, np.cumsum(rng.integers(-9, 10, t.size))], axis=1).astype(np.int16))
    y0, p0 = frontend.stage("lpc").forward(x)
    for c in range(2):  # the default: lpc_forward's window, the cheapest of LPC_BLOCKS by estimate
        block = p0["channels"][c]["block"]
        assert block in LPC_BLOCKS and p0["channels"][c] == lpc.lpc_forward(x[c], block=block)[1]
        costs = {b: _estimated_bits(r, b) + 8 * len(p["coefs"]) + 24 * len(p["orders"])
                 for b in LPC_BLOCKS for r, p in [lpc.lpc_forward(x[c], block=b)]}
        assert costs[block] == min(costs.values())
    # a channel no longer than the first block: one block, written as by blocks=(4096,)
    short = x[:, :4096].copy()
    assert frontend.stage("lpc").forward(short)[1] == frontend.stage("lpc", blocks=[4096]).forward(short)[1]
    stage = frontend.stage("lpc", blocks=[512, 4096, 16384], window=["tukey", "welch"])
    y, params = stage.forward(x)
    for c in range(2):
        chosen = params["channels"][c]["block"]
        costs = {}
        for block in (512, 4096, 16384):
            r, p = lpc.lpc_forward(x[c], block=block, window=("tukey", "welch"))
            costs[block] = _estimated_bits(r, block) + 8 * len(p["coefs"]) + 24 * len(p["orders"])
        assert costs[chosen] == min(costs.values())
    checked = frontend.parse_chain([{"stage": "lpc", **params}], x.dtype, x.shape)
    assert_same_array(frontend.inverse(y, checked, x.dtype), x)
    with pytest.raises(TypeError):
        LpcStage(blocks=4096)
    with pytest.raises(ValueError):
        LpcStage(blocks=[])
    with pytest.raises(ValueError):
        LpcStage(blocks=[0])
    with pytest.raises(ValueError):
        LpcStage(window="kaiser")
