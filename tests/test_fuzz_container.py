"""Mutated containers (byte flips, truncations, field substitutions) raise only library errors,
and the readers agree on each: ``decompress_to`` refuses what ``decompress`` refuses and writes
the same bytes otherwise, ``describe`` refuses nothing ``decompress`` decodes, a partial decode
equals the full one's frames (tests/common.py: readers_agree). On 30 % of the mutants of one-stream
containers the checksum is recomputed for what they decode to (with_crc_recomputed), so that it
hides nothing from the checks after it.

The mutations run in a child process so that a crash of a compiled kernel (a segfault) is
reported as a test failure instead of killing the test run; a hang is caught by a timeout.
A mutated container that still decodes must give back exactly the original values (the CRC
guarantees it).
"""

from __future__ import annotations

import json
import math
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import ubpe
from common import _SUBSTITUTES, check_mutations, check_truncations, fuzz_samples, pack_any, unpack_any, unpack_block
from ubpe import compress, decompress, describe, level3
from ubpe._kernels import mixsignal
from ubpe.api.arguments import MAX_DELTA

TESTS = pathlib.Path(__file__).parent


@pytest.fixture(scope="module")
def samples() -> list:
    """``fuzz_samples()``, the child's containers (deterministic), built once for this module's tests."""
    return fuzz_samples()


def run_child(n_mutations: int, seed: int, timeout: float) -> dict:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import common; "
        "sys.exit(common.fuzz_main(int(sys.argv[2]), int(sys.argv[3])))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(TESTS), str(n_mutations), str(seed)],
        capture_output=True, text=True, timeout=timeout,
    )
    if proc.returncode < 0:
        pytest.fail(f"the fuzzing child crashed with signal {-proc.returncode}\n{proc.stderr[-3000:]}")
    lines = proc.stdout.strip().splitlines()
    if not lines:
        pytest.fail(f"the fuzzing child printed nothing (exit {proc.returncode})\n{proc.stderr[-3000:]}")
    report = json.loads(lines[-1])
    assert report["mutations"] == n_mutations
    failures = report["failures"]
    assert not failures, f"{len(failures)} mutations escaped:\n" + "\n".join(
        f"{f['sample']} #{f['i']}: {f['error']}\n  {f['data'][:200]}" for f in failures[:10]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return report


def test_mutations_raise_only_library_errors():
    """(A mutation that makes decoding hang fails the test by the child's timeout.)"""
    report = run_child(2400, seed=1, timeout=600)
    assert report["refused"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3, 4, 5])
def test_mutations_many(seed):
    run_child(25_000, seed=seed, timeout=1200)


def test_every_strict_prefix_raises(samples):
    for name, values, data, tok in samples:
        check_truncations(data, lambda d: decompress(d, tokenizer=tok))


def test_the_child_samples_cover_every_coder_and_stage(samples):
    """The child-process mutations run over ``fuzz_samples()``: every coder of the registry and
    every front-end stage is among them, in one stream and in blocks, embedding its model or
    referencing it, with and without merges."""
    from ubpe.coders import CODERS
    from ubpe.frontend import STAGES

    infos = {name: describe(data) for name, _, data, _ in samples}
    assert {c for info in infos.values() for c in info.coders} == set(CODERS)
    assert {e["stage"] for info in infos.values() for e in info.front} == set(STAGES)
    assert any(info.blocks > 1 for info in infos.values()) and any(not info.embedded for info in infos.values())
    cm = [info for info in infos.values() if info.coder == "cms2"]
    assert any(info.n_merges for info in cm) and any(info.n_merges == 0 for info in cm)
    assert any(info.delta for info in cm) and any(not info.embedded for info in cm)


def test_child_samples_include_lossless_float_containers(samples):
    """The mutations cover the lossless float stages' fields: bases, shifts and low bits,
    exceptions, the decimal mode's adjustments (in ulps and finer digits), the binary mode's
    remainders, in one stream and in blocks."""
    by_name = {name: (values, data) for name, values, data, _ in samples}
    fronts = {}
    for name in ("floatdec", "floatdec_shift", "floatdec_mult", "floatbin", "blocks_floatdec", "floatdec_ulp",
                 "floatdec_fine"):
        values, data = by_name[name]
        tree = unpack_any(data)
        if "blocks" in tree:
            front = unpack_block(tree["blocks"][0], tree["block"] * (values.shape[1] if values.ndim > 1 else 1))["front"]
        else:
            front = tree["front"]
        fronts[name] = front[0]
    assert fronts["floatdec"]["stage"] == "floatdec" and "esc" in fronts["floatdec"]
    assert "low" in fronts["floatdec_shift"] and type(fronts["floatdec_mult"]["base"][0]) is float
    assert fronts["floatbin"]["stage"] == "floatbin" and fronts["floatbin"].get("raw")
    assert fronts["blocks_floatdec"]["stage"] == "floatdec"
    assert "adj" in fronts["floatdec_ulp"] and "fine" not in fronts["floatdec_ulp"]
    assert fronts["floatdec_fine"].get("fine") and fronts["floatdec_fine"]["adj"]["coder"] != "const"


def test_child_samples_include_a_level_3_container(samples):
    """The child-process mutations cover the "mixsignal" stream (``compress(level=3)``)."""
    by_name = {name: data for name, _, data, _ in samples}
    tree = unpack_any(by_name["level3"])
    assert tree["stream"]["coder"] == "mixsignal" and "alphabet" not in tree
    xctx = unpack_any(by_name["level3_xctx"])["stream"]
    assert xctx["coder"] == "mixsignal" and xctx["payload"][0] in (6, 10)  # version 6 (10 with the lags)
    assert level3.format.model_params(bytes(xctx["payload"]))[mixsignal.PRM_XCTX] > 0  # the exact-value contexts


def test_child_samples_include_mult_containers(samples):
    """The "mult" stage's fields (bases, offsets, the digits' stream) in one stream and in blocks."""
    by_name = {name: (values, data) for name, values, data, _ in samples}
    for name in ("mult", "blocks_mult"):
        values, data = by_name[name]
        tree = unpack_any(data)
        if "blocks" in tree:
            count = tree["block"] * values.shape[1]
            front = unpack_block(tree["blocks"][0], count)["front"]
        else:
            front = tree["front"]
        assert front[0]["stage"] == "mult" and any(c["base"] > 1 for c in front[0]["channels"])
        assert front[0]["low"]["coder"] in ("rans", "mag")


def test_delta_containers_mutated_in_process():
    """Containers with each delta order, mutated (bytes and fields, ``front`` included): a library
    error or the exact values. Small and in-process; the child-process run above covers the
    automatically chosen orders of the shared samples."""
    rng = np.random.default_rng(3)
    walk = np.cumsum(rng.integers(-3, 4, 400)).astype(np.int16) * 16
    wide = np.cumsum(rng.integers(-2, 3, 300)).astype(np.uint64) + np.uint64(2**64 - 150)
    frames = np.cumsum(rng.integers(-3, 4, (150, 3)), axis=0).astype(">i4")
    samples = [(x, compress(x, delta=k)) for x in (walk, wide) for k in range(1, MAX_DELTA + 1)]
    # channels, and source metadata of every value type
    source = {"format": "wav", "rate": 48000, "gain": 0.5, "signed": True, "tag": b"\x00\xff", "neg": -3}
    samples += [(frames, compress(frames, delta=1, source=source)), (frames, compress(frames, level=1))]
    assert check_mutations(samples, seed=11, n_mutations=1200) > 0
    # every substitute for the chain, a stage, its order or the source is refused (or, being the
    # same value, decodes to the same values)
    chains = [[{"stage": "delta", "order": k}] for k in range(-1, MAX_DELTA + 2)]
    for values, data in samples:
        tree = unpack_any(data)
        for sub in _SUBSTITUTES + chains + [{"x": 1}, {"rate": [1]}, {"": 1}, {"k" * 65: 1}, {"s": "x" * 1025}]:
            for where in ("front", "stage", "order", "source", "source.rate"):
                t = unpack_any(data)
                if where in ("front", "source"):
                    t[where] = sub
                elif where == "source.rate":
                    if "source" not in t:
                        continue
                    t["source"]["rate"] = sub
                elif t["front"]:
                    t["front"][0][where] = sub
                else:
                    continue
                mutated = pack_any(t)
                try:
                    got = decompress(mutated)
                except ubpe.CorruptDataError:
                    continue
                # (an int "stage" is a stage's number: 0 is "delta")
                assert unpack_any(mutated)["front"] == tree["front"] and np.array_equal(got, values)


def test_float_stage_params_substituted():
    """Every substitute for a float stage's params (step, offset, exp, width, the stage itself)
    is refused, or decodes to exactly the values of the original container (the CRC decides)."""
    rng = np.random.default_rng(13)
    quarters = (np.cumsum(rng.integers(-3, 4, 200)) / 4).astype(np.float16)
    smooth = np.cos(np.arange(300) / 7.0) + rng.normal(0, 0.01, 300)
    signed_zeros = np.round(np.cumsum(rng.normal(0, 0.4, 300)) / 4)  # -0.0 among them: "negzero"
    samples = [compress(quarters, level=1), compress(smooth, bits=10, level=1), compress(smooth, step=1e-3, level=1),
               compress(signed_zeros, level=1)]
    floats = [0.0, -0.0, 1.0, -1.0, 1e-310, 2.0**-1022, 1e308, math.inf, -math.inf, math.nan, 2**53, 2.0**1023]
    refused = 0
    for data in samples:
        tree = unpack_any(data)
        expected = decompress(data)
        keys = [k for k in tree["front"][0] if k != "stage"] + ["stage"]
        for key in keys:
            for sub in _SUBSTITUTES + floats + [tree["front"][0][key]]:
                t = unpack_any(data)
                t["front"][0][key] = sub
                try:
                    got = decompress(pack_any(t), max_output_size=1 << 20)
                except ubpe.CorruptDataError:
                    refused += 1
                    continue
                assert got.dtype.str == expected.dtype.str and got.tobytes() == expected.tobytes(), (key, sub)
    assert refused > 3 * len(_SUBSTITUTES)


def test_context_mixing_containers_mutated_in_process():
    """Level-2 "cms2" and "cmt2" containers, mutated (bytes, fields, the payload's bytes and
    length, the token count): a library error or the exact values."""
    import ubpe.tokenizer

    rng = np.random.default_rng(5)
    text = np.frombuffer(b"she sells sea shells by the sea shore; the shells she sells are sea shells. " * 6,
                         np.uint8)
    walk = np.cumsum(rng.integers(-3, 4, 500)).astype(np.int16) * 16
    prose = np.frombuffer(open(ubpe.tokenizer.__file__, "rb").read()[:3000], np.uint8)
    samples = [(text, compress(text)), (text, compress(text, n_tokens=len(np.unique(text)) + 12)),
               (walk, compress(walk, delta=1)), (prose, compress(prose))]
    # text through its bytes: the text coder; with merges, or values: the signal coder
    assert [describe(data).coder for _, data in samples] == ["cmt2", "cms2", "cms2", "cmt2"]
    assert check_mutations(samples, seed=12, n_mutations=900) > 0
    for values, data in samples:
        tree = unpack_any(data)
        payload = tree["stream"]["payload"]
        variants = []
        for i in range(0, len(payload), max(len(payload) // 40, 1)):
            for bit in (0, 7):
                p = bytearray(payload)
                p[i] ^= 1 << bit
                variants.append(("payload", bytes(p)))
        variants += [("payload", payload[:-1]), ("payload", payload + b"\x00"), ("payload", b""),
                     ("payload", payload[:len(payload) // 2])]
        n = tree["stream"]["n"]
        variants += [("n", n - 1), ("n", n + 1), ("n", 0), ("n", 10**9)]
        for key, value in variants:
            t = unpack_any(data)
            t["stream"][key] = value
            with pytest.raises(ubpe.CorruptDataError):
                decompress(pack_any(t), max_output_size=1 << 20)


def test_child_samples_include_window_containers():
    """The mutations cover window containers' fields: version 3 primed (an LPC variant restarted
    at the window), cold, with a shape and a source, a split variant's primed digits; version 2;
    version 4 (the window's own predictor)."""
    samples = {name: (values, data, tok) for name, values, data, tok in fuzz_samples()}
    heads = {}
    for name in ("window", "window_cold", "window_shaped", "window_split", "window_v2", "window_v4"):
        values, data, model = samples[name]
        assert data[:4] == b"ubpw" and isinstance(model, ubpe.SharedModel)
        heads[name] = data
    assert [heads[n][4] for n in heads] == [3, 3, 3, 3, 2, 4]
    assert heads["window_cold"][7] & 1 and not heads["window"][7] & 1 and heads["window_shaped"][8] & 1
    window_model = samples["window"][2]
    assert len(window_model.variants[(heads["window"][7] >> 1) & 7].coefs) >= 2
    split = samples["window_split"][2]
    assert split.variants[(heads["window_split"][7] >> 1) & 7].base > 1
