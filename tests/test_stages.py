"""The prediction stages (lpc, adaptive, rank) in containers: forced, automatic, untrusted."""

from __future__ import annotations

import random

import msgpack
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ubpe
from common import assert_same_array, check_mutations
from ubpe import CorruptDataError, compress, decompress, frontend, planner

FORCED = [p for p in planner.PREDICTORS]
INT_DTYPES = ["int8", "uint8", "<i2", ">i2", "uint16", "<i4", ">u4", "int64", "uint64"]


def walk(n: int, channels: int, seed: int, step: int = 9) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.integers(-step, step + 1, size=(n, channels)), axis=0)


def front_of(data: bytes) -> list:
    return msgpack.unpackb(data, raw=False)["front"]


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_every_forced_chain_round_trips_2d_every_dtype(dtype):
    x = walk(600, 3, seed=1).astype(dtype)
    for predictor in FORCED:
        data = compress(x, predictor=predictor, level=1)
        got = decompress(data)
        assert_same_array(got, x)
        names = [e["stage"] for e in front_of(data)]
        assert names == [name for name, _ in planner.PREDICTORS[predictor]]
        for entry in front_of(data):
            if entry["stage"] != "delta":
                assert len(entry["channels"]) == 3


def test_wrapping_extremes_and_ranks_of_a_sparse_grid():
    rng = np.random.default_rng(5)
    x = rng.choice(np.array([-(1 << 63), -1, 0, 5, (1 << 63) - 1], dtype=np.int64), size=(500, 2))
    for predictor in FORCED:
        assert_same_array(decompress(compress(x, predictor=predictor, level=1)), x)
    grid = (np.round(walk(3000, 1, seed=2, step=3)[:, 0]) * 64 + rng.integers(0, 2, 3000)).astype(np.int16)
    specs = planner.auto_chains(frontend.to_channels(grid))
    assert planner.PREDICTORS["rank+delta1"] in specs
    assert planner.PREDICTORS["rank+delta1"] not in planner.auto_chains(frontend.to_channels(walk(3000, 1, 3)))
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
    with pytest.raises(ValueError, match="tokenizer"):
        compress(x, tokenizer=tok, predictor="lpc")
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
    monkeypatch.setattr(planner, "FULL_FIT", 3000)
    monkeypatch.setattr(planner, "SAMPLE", 2048)
    monkeypatch.setattr(planner, "SCREEN_SAMPLE", 2048)
    monkeypatch.setattr(planner, "SCREEN_ABOVE", 3000)
    seen = []
    real = planner.frontend.forward

    def spy(x, chain):
        seen.append((x.shape, tuple(s.name for s in chain)))
        return real(x, chain)

    monkeypatch.setattr(planner.frontend, "forward", spy)
    rng = np.random.default_rng(8)
    x = (1000 * np.sin(np.arange(20000) / 11.0) + rng.integers(-2, 3, 20000)).astype(np.int16)
    data = compress(x, level=1)
    assert_same_array(decompress(data), x)
    full = [names for shape, names in seen if shape == (1, 20000)]
    screened = [names for shape, names in seen if shape[0] == planner.WINDOWS]
    level1_chains = planner.auto_chains(planner.frontend.to_channels(x), 1)
    assert len(screened) == len(level1_chains)  # every level-1 chain measured on the sample
    assert all('adaptive' not in names for names in screened + full)
    assert len(full) == planner.SCREEN_KEEP  # only the best go on in full
    assert data == compress(x, level=1)  # deterministic
    seen.clear()
    assert_same_array(decompress(compress(x, level=2)), x)
    full = [names for shape, names in seen if shape == (1, 20000)]
    # level 2 keeps no front end, the best chains overall and the best fast ones (level 1's)
    assert () in full and planner.SCREEN_KEEP <= len(full) <= 2 * planner.SCREEN_KEEP + 1


def _corrupt_params(data: bytes, rng: random.Random) -> bytes:
    tree = msgpack.unpackb(data, raw=False)
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
    return msgpack.packb(tree, use_bin_type=True)


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
    """The frozen v2 containers of the prediction stages decode, and record the chains named."""
    import pathlib

    fixtures = pathlib.Path(__file__).parent / "fixtures"
    chains = {"v2_lpc_signal_uint16": ["lpc"], "v2_lpc_adaptive_stereo_int16": ["lpc", "adaptive"],
              "v2_adaptive_delta1_frames_int16": ["delta", "adaptive"],
              "v2_rank_delta1_signal_int16": ["rank", "delta"]}
    for name, stages in chains.items():
        data = (fixtures / f"{name}.ubpe").read_bytes()
        assert [e["stage"] for e in front_of(data)] == stages
        assert_same_array(decompress(data), np.load(fixtures / f"{name}.npy"))
