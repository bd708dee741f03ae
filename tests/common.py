"""Helpers shared by the container tests: round trips, truncations and mutations of containers."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterator
from typing import Any

import msgpack
import numpy as np

import ubpe
from ubpe import compress, decompress, describe
from ubpe.planner import configured
from ubpe.tokenizer import Tokenizer


def json_without_jit(code: str, cwd: Any) -> Any:
    """Run ``code`` in a new Python with NUMBA_DISABLE_JIT set (the kernels as plain Python; this
    checkout first on the path) and return the JSON of its last printed line."""
    import json
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, NUMBA_DISABLE_JIT="1", PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, env=env,
                         timeout=300, cwd=cwd, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def assert_same_array(got: np.ndarray, expected: np.ndarray) -> None:
    """Equal values, dtype (byte order included) and shape."""
    assert isinstance(got, np.ndarray)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.dtype.str == expected.dtype.str, (got.dtype.str, expected.dtype.str)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert np.array_equal(got, expected)


def check_roundtrip(values: Any, **kwargs: Any) -> bytes:
    """Compress ``values`` with ``kwargs``, decompress, check bit-exactness; return the bytes."""
    tokenizer = kwargs.get("tokenizer")
    data = compress(values, **kwargs)
    assert isinstance(data, bytes)
    got = decompress(data, tokenizer=tokenizer if kwargs.get("embed", True) is False else None)
    if isinstance(values, (bytes, bytearray, memoryview)):
        expected = np.frombuffer(bytes(values), dtype=np.uint8)
    elif isinstance(values, np.ndarray):
        expected = values
    else:
        expected = np.asarray(values, dtype=np.int64)
    assert_same_array(got, expected)
    return data


def check_truncations(data: bytes, decode: Callable[[bytes], Any] = decompress) -> int:
    """Every strict prefix of ``data`` must raise ``CorruptDataError``; return how many were tried."""
    for k in range(len(data)):
        try:
            decode(data[:k])
        except ubpe.CorruptDataError:
            continue
        raise AssertionError(f"the prefix of {k} of {len(data)} bytes did not raise CorruptDataError")
    return len(data)


# ---------------------------------------------------------------------------- mutations

# Values that a field substitution puts in place of a field: other types, extremes, garbage.
_SUBSTITUTES: list[Any] = [
    None, True, False, 0, 1, -1, 2, 255, 65535, 2**31 - 1, 2**31, 2**32, 2**40, 2**62, 2**63 - 1,
    -(2**63), 2**64 - 1, 0.5, float("nan"), "", "ubpe", "x" * 70, b"", b"\x00", b"\xff" * 9,
    [], [0], [2**40], [1, 2, 3], [-1], {}, {"a": 1}, msgpack.ExtType(1, b"x"),
]


def _paths(obj: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Paths (tuples of keys / indices) of every field inside nested maps and lists."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield prefix + (i,)
            yield from _paths(v, prefix + (i,))


def _get(obj: Any, path: tuple) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def _set(obj: Any, path: tuple, value: Any) -> None:
    _get(obj, path[:-1])[path[-1]] = value


def substitute(data: bytes, rng: random.Random) -> bytes:
    """``data`` with one field replaced (another type, an extreme, a bit flip, a resize), deleted,
    or a field added, then re-packed. A container is mutated in its wire form (keys by number)
    behind its unchanged prefix."""
    prefix = b""
    if data[:4] in (b"ubpe", b"ubpg"):  # (a grouped container's map has str keys)
        prefix, data = data[:5], data[5:]
    tree = msgpack.unpackb(data, raw=False, strict_map_key=False)
    paths = list(_paths(tree))
    path = rng.choice(paths)
    old = _get(tree, path)
    action = rng.random()
    if action < 0.1 and isinstance(_get(tree, path[:-1]), dict):
        del _get(tree, path[:-1])[path[-1]]
    elif action < 0.15 and isinstance(_get(tree, path[:-1]), dict):
        _get(tree, path[:-1])[rng.choice(["zz", 99, 13, "dtype"]) if prefix else "zz"] = rng.choice(_SUBSTITUTES)
    elif isinstance(old, bytes) and old and action < 0.6:
        b = bytearray(old)
        choice = rng.random()
        if choice < 0.5:
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif choice < 0.75:
            del b[rng.randrange(len(b)):]
        else:
            b += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        _set(tree, path, bytes(b))
    elif isinstance(old, float) and action < 0.6:  # the float stages' step and offset
        _set(tree, path, rng.choice([old * 2, old / 2, -old, old + 1.0, 0.0, float("inf"), 1e-310,
                                     float(np.nextafter(old, np.inf)), float(np.nextafter(old, -np.inf))]))
    elif isinstance(old, int) and not isinstance(old, bool) and action < 0.6:
        delta = rng.choice([-1, 1, 2, -2, 7, 1000, -(old or 1), old or 1])
        _set(tree, path, old + delta)
    else:
        _set(tree, path, rng.choice(_SUBSTITUTES))
    return prefix + msgpack.packb(tree, use_bin_type=True)


def byte_mutation(data: bytes, rng: random.Random) -> bytes:
    """``data`` with random byte flips, a truncation, an insertion or a deletion."""
    b = bytearray(data)
    kind = rng.random()
    if kind < 0.5:
        for _ in range(rng.choice([1, 1, 1, 2, 3, 8])):
            i = rng.randrange(len(b))
            b[i] = rng.randrange(256) if rng.random() < 0.5 else b[i] ^ (1 << rng.randrange(8))
    elif kind < 0.7:
        del b[rng.randrange(len(b)):]
    elif kind < 0.85:
        i = rng.randrange(len(b) + 1)
        b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 5)))
    else:
        i = rng.randrange(len(b))
        del b[i:i + rng.randrange(1, 5)]
    return bytes(b)


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One random mutation: half byte-level, half field-level (a window container of version 2
    or later, whose fields are bytes and varints rather than msgpack: byte-level only)."""
    if (data[:4] == b"ubpw" and len(data) > 4 and data[4] >= 2) or data[:1] >= b"\xf5":  # (version 5: one lead byte)
        return byte_mutation(data, rng)
    return byte_mutation(data, rng) if rng.random() < 0.5 else substitute(data, rng)


# ---------------------------------------------------------------------------- fuzzing (child)


def fuzz_samples() -> list[tuple[str, np.ndarray, bytes, Any]]:
    """Small containers covering every coder and both model modes: (name, values, bytes, tokenizer)."""
    rng = np.random.default_rng(7)
    walk = np.cumsum(rng.integers(-2, 3, 600)).astype(np.int16) * 64
    text = np.frombuffer(b"the cat sat on the mat; the rat sat on the cat. " * 12, dtype=np.uint8)
    noise = rng.integers(0, 2**40, 64, dtype=np.uint64) * np.uint64(3)
    grid = np.tile(np.arange(12, dtype=np.int32), 40).reshape(24, 20)
    skewed = np.minimum(rng.geometric(0.3, 2500), 40).astype(np.uint8)
    tok = Tokenizer(None, len(np.unique(walk)) + 40).fit(walk)
    tok2 = Tokenizer(None, 60).fit(skewed)
    big_walk = np.cumsum(rng.integers(-2, 3, 3000)).astype(np.int32)
    quarters = (np.cumsum(rng.integers(-3, 4, (300, 2)), axis=0) / 4).astype(">f4")  # exact grid 2**-2
    smooth = np.sin(np.arange(500) / 11.0) + rng.normal(0, 0.02, 500)
    lossy = compress(smooth, step=0.002)
    tail = rng.integers(-40, 40, 400).astype(np.int32)
    tail[::50] += rng.integers(-2**20, 2**20, 8).astype(np.int32)  # a few far values
    # ADC codes with skewed low digits: the "mult" stage, two channels
    lowbits = (np.round(np.cumsum(rng.normal(0, 4, (1500, 2)), axis=0)) * 4
               + (rng.random((1500, 2)) < 0.1) * rng.integers(1, 4, (1500, 2))).astype(np.int16)
    decimals = np.round(np.cumsum(rng.normal(0, 0.5, (600, 2)), axis=0), 1)
    decimals[[7, 300, 450], [0, 1, 0]] = [np.inf, -0.0, 1 / 3]
    wide_floats = np.round(np.cumsum(rng.normal(0, 1e4, 800)), 6)  # wide integers: low bits out of the chain
    calibrated = np.cumsum(rng.integers(-20, 21, 700)).astype(np.float32) * np.float32(0.37 / 4096)
    binary = (np.sin(np.arange(700, dtype=np.float32) * np.float32(0.05)) * np.float32(0.3)).astype("<f4")
    out = [
        ("walk", walk, compress(walk), None),
        ("text", text, compress(text), None),
        ("skewed", skewed, compress(skewed), None),
        ("skewed_rans", skewed, compress(skewed, level=1), None),  # rANS
        ("big_walk", big_walk, compress(big_walk), None),
        ("skewed_referenced", skewed[:1500], compress(skewed[:1500], tokenizer=tok2, embed=False), tok2),
        ("noise", noise, compress(noise), None),  # no merges: packed or ans over raw ids
        ("grid2d", grid, compress(grid), None),
        ("const", np.zeros(50, np.uint8), compress(np.zeros(50, np.uint8)), None),
        ("bool", np.arange(300) % 3 == 0, compress(np.arange(300) % 3 == 0), None),
        ("empty", np.zeros((0, 4), ">i4"), compress(np.zeros((0, 4), ">i4")), None),
        ("embedded_tok", walk[:200], compress(walk[:200], tokenizer=tok), None),
        ("referenced", walk[100:400], compress(walk[100:400], tokenizer=tok, embed=False), tok),
        ("floatgrid", quarters, compress(quarters), None),  # float stages: the values decoded
        ("quantize", decompress(lossy), lossy, None),  # (for "quantize": dequantized) are the reference
        ("rice_alphabet", tail, compress(tail, predictor="none", level=1), None),  # Rice-coded gaps
        # blocked containers: per-block LPC over channels; "cms2" blocks with merges
        ("blocks_lpc", grid, compress(grid, block_size=100, predictor="lpc", level=1), None),
        ("blocks_cm", big_walk, compress(big_walk, block_size=1000, predictor="none", n_tokens=300), None),
        ("mult", lowbits, compress(lowbits, predictor="mult+lpc", level=1), None),
        ("blocks_mult", lowbits, compress(lowbits, predictor="mult+delta1", level=1, block_size=1000), None),
    ]
    # the other stages and the "mag" coder (their own seed: the samples above are unchanged)
    rng = np.random.default_rng(8)
    t = np.arange(2000)  # a tone in noise whose loudness changes: "mag" behind LPC (the fused decode)
    loud = np.round(2000 * np.sin(t / 30) + rng.laplace(0, 1, t.size) * np.repeat(rng.uniform(1, 400, 4), 500))
    loud = loud.astype(np.int16)
    frames = np.cumsum(rng.integers(-3, 4, (400, 3)), axis=0).astype(np.int16) * 5
    wide = np.cumsum(rng.integers(-2, 3, 800)).astype(np.int32) * 6 + 3
    near = np.stack([walk, walk + rng.integers(-4, 5, walk.size).astype(np.int16)], axis=1)
    out += [
        ("mag_lpc", loud, compress(loud, predictor="lpc", level=1), None),
        ("adaptive", loud[:1500], compress(loud[:1500], predictor="lpc+adaptive", level=2), None),
        ("rank", frames, compress(frames, predictor="rank+delta1", level=1), None),
        ("grid", wide, compress(wide, predictor="grid+delta1", level=1), None),
        ("decorrelate", near, compress(near, predictor="decorrelate+lpc", level=1), None),
    ]
    # lossless floats: the decimal mode with exceptions and low bits, a multiplier, the binary
    # mode with raw remainders, and the decimal mode in blocks (no NaN: the check compares with
    # array_equal)
    out += [
        ("floatdec", decimals, compress(decimals, level=1), None),
        ("floatdec_shift", wide_floats, compress(wide_floats, level=1), None),
        ("floatdec_mult", calibrated, compress(calibrated, level=1), None),
        ("floatbin", binary, compress(binary, level=1), None),
        ("blocks_floatdec", decimals, compress(decimals, level=1, block_size=200), None),
    ]
    # the decimal mode's adjustments (its own seed): in ulps (float32 counts times a factor, a
    # few ulps off) and finer digits (readings of 2 decimals, a few of 4)
    rng = np.random.default_rng(30)
    noisy = np.cumsum(rng.integers(-20, 21, 700)).astype(np.float32) * np.float32(0.00128)
    noisy = (noisy.view(np.int32) + np.where(rng.random(700) < 0.4, rng.integers(-3, 4, 700), 0).astype(np.int32)).view(
        np.float32)
    walk = np.cumsum(rng.normal(0, 0.4, 900))
    finer = np.where(rng.random(900) < 0.02, np.round(walk, 4), np.round(walk, 2))
    out += [
        ("floatdec_ulp", noisy, compress(noisy, level=1), None),
        ("floatdec_fine", finer, compress(finer, level=1), None),
    ]
    # level 3: the "mixsignal" stream (ubpe.level3), two channels (its own seed)
    rng = np.random.default_rng(29)
    sine = (np.round(300 * np.sin(np.arange(800) / 37.0) + rng.normal(0, 20, 800)) // 8 * 8).astype(np.int16)
    level3_pair = np.stack([sine, np.roll(sine, 1)], 1)
    with configured(channel_groups=False):  # one "mixsignal" stream (its two channels grouped would be smaller)
        out += [("level3", level3_pair, compress(level3_pair, level=3), None)]
    # level 3 version 6: the exact-value contexts ("xctx", ubpe._kernels.mixctx) on hourly readings
    # in whole degrees and percent, 1 500 frames of two channels (its own seed)
    rng = np.random.default_rng(33)
    t = np.arange(1500)
    day = np.sin(2 * np.pi * (t % 24) / 24)
    slow = np.cumsum(rng.normal(0, 0.6, t.size))
    temp = np.round((np.round(50 + 12 * day + slow + rng.normal(0, 0.7, t.size)) - 32) * 50 / 9)
    hum = np.clip(np.round(80 - 15 * day - 0.8 * slow), 0, 100)
    hourly = np.stack([temp, hum], 1).astype(np.int16)
    with configured(channel_groups=False):
        out += [("level3_xctx", hourly, compress(hourly, level=3), None)]
    # "floatpack": a short float32 trace, counts times a calibration factor (its own seed)
    rng = np.random.default_rng(31)
    trace = np.round(rng.normal(170, 24, 100)).astype(np.float32) * np.float32(1.431e-5)
    out += [("floatpack", trace, compress(trace, level=1), None)]
    # "hold": a reading in whole units that holds and steps by one now and then (its own seed)
    rng = np.random.default_rng(38)
    held = (950 + np.cumsum(np.where(rng.random(3000) < 0.02, rng.choice(np.array([-1, 1]), 3000), 0))).astype(np.int16)
    out += [("hold", held, compress(held, level=2), None)]
    # grouped containers (ubpe/api/groups.py): three unrelated channels; runs of a 1-D array
    from ubpe.api.groups import grouped_bytes

    rng = np.random.default_rng(30)
    unrelated = np.stack([np.cumsum(rng.integers(-3, 4, 1000)), rng.integers(0, 2, 1000) * 64,
                          np.repeat(rng.integers(-90, 90, 10), 100)], 1).astype(np.int16)
    runs = np.concatenate([sine[:300], sine[300:600] // 2, rng.integers(-9, 9, 100).astype(np.int16)])
    out += [("groups", unrelated, compress(unrelated, level=1), None),
            ("groups_runs", runs, grouped_bytes(runs, [(300, [0, 0], [0, 300]), (100, [0], [600])], level=1), None)]
    # window containers (ubpe/shared/) with their shared model: version 3 primed (a predictor
    # restarted at the window), cold, shaped with a source, a split variant's primed digits; version 2;
    # version 4 (the window's own predictor); version 5
    from ubpe.shared import compress_window, fit_shared

    rng = np.random.default_rng(31)
    noise, resonance = rng.normal(0, 30, 2400), np.zeros(2400)
    for i in range(2, 2400):  # a resonance whose level steps every 300 values
        resonance[i] = 1.6 * resonance[i - 1] - 0.8 * resonance[i - 2] + noise[i]
    stepped = (resonance + np.repeat(rng.integers(-2000, 2000, 8), 300)).astype(np.int16)
    model = fit_shared([stepped[i:i + 300] for i in range(0, 1800, 300)], history=1200)
    quiet = (stepped[-300:] // 8).astype(np.int16)  # unlike the training end: coded cold
    adc = (np.cumsum(rng.integers(-6, 7, 2100)) * 4 + (rng.random(2100) < 0.15) * rng.integers(1, 4, 2100)
           + 1).astype(np.int16)
    split = fit_shared([adc[i:i + 300] for i in range(0, 1800, 300)], history=1200)
    window, shaped, digits = stepped[-300:], stepped[-300:].reshape(150, 2), adc[-300:]

    def v(x, m, version, **options):
        return compress_window(x, m, compress(x), version=version, **options)

    out += [("window", window, v(window, model, 3), model),
            ("window_cold", quiet, v(quiet, model, 3), model),
            ("window_shaped", shaped, v(shaped, model, 3, source={"name": "w.npy"}), model),
            ("window_split", digits, v(digits, split, 3), split),
            ("window_v2", window, v(window, model, 2), model)]
    # version 5 (what compress writes): primed with the implied skip, cold, shaped with a
    # source (count and extras), split, a window of another dtype and length
    out += [("window_v5", window, compress(window, tokenizer=model), model),
            ("window_v5_cold", quiet, compress(quiet, tokenizer=model), model),
            ("window_v5_shaped", shaped, compress(shaped, tokenizer=model, source={"name": "w.npy"}), model),
            ("window_v5_split", digits, compress(digits, tokenizer=split), split),
            ("window_v5_dtype", window[:250].astype(np.int32), compress(window[:250].astype(np.int32), tokenizer=model),
             model)]
    # version 4: a window whose resonance moved carries its own predictor (its own seed)
    rng = np.random.default_rng(32)
    noise, moving = rng.normal(0, 30, 2100), np.zeros(2100)
    for i in range(2, 2100):
        a1, a2 = (1.6, -0.8) if i < 1800 else (-1.2, -0.6)
        moving[i] = a1 * moving[i - 1] + a2 * moving[i - 2] + noise[i]
    moving = moving.astype(np.int16)
    own = fit_shared([moving[i:i + 300] for i in range(0, 1800, 300)], history=1200)
    out += [("window_v4", moving[-300:], v(moving[-300:], own, 4), own),
            ("window_v5_own", moving[-300:], compress(moving[-300:], tokenizer=own), own)]
    return out


def _outcome(read: Callable[[], Any]) -> Any:
    """``read()``'s result, or the string "refused" for a library error (other errors propagate)."""
    try:
        return read()
    except ubpe.UBPEError:
        return "refused"


def _same_bits(got: Any, expected: np.ndarray) -> bool:
    """Whether ``got`` is an array of ``expected``'s dtype and shape holding the same bytes (NaN
    payloads and -0.0 included, which ``np.array_equal`` does not tell apart or match)."""
    return (isinstance(got, np.ndarray) and got.dtype.str == expected.dtype.str and got.shape == expected.shape
            and np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes())


def readers_agree(data: bytes, values: np.ndarray, tok: Any, cap: int) -> tuple[str | None, bool]:
    """Why the four readers disagree on ``data`` (None when they agree), and whether
    ``decompress`` refused it. The readers agree when ``decompress`` refuses
    or gives exactly ``values``; ``decompress_to`` refuses exactly when it does and otherwise
    writes the same bytes; ``describe`` refuses only what ``decompress`` refuses and then
    declares its dtype and shape; a partial decode of the first frames gives those frames."""
    full = _outcome(lambda: decompress(data, tokenizer=tok, max_output_size=cap))
    refused = isinstance(full, str)
    problem = _disagreement(data, values, tok, cap, full)
    return problem, refused


def _disagreement(data: bytes, values: np.ndarray, tok: Any, cap: int, full: Any) -> str | None:
    import io

    if not isinstance(full, str) and not _same_bits(full, values):
        return "decompress returned different data"
    refused = isinstance(full, str)
    out = io.BytesIO()
    streamed = _outcome(lambda: ubpe.decompress_to(out, io.BytesIO(data), tokenizer=tok, max_output_size=cap))
    if isinstance(streamed, str) != refused:
        return f"decompress {'refused' if refused else 'decoded'}, decompress_to did not"
    if not refused and out.getvalue() != np.ascontiguousarray(full).tobytes():
        return "decompress_to wrote other bytes"
    info = _outcome(lambda: describe(data))
    if not refused:
        if info == "refused":
            return "describe refused a container decompress decodes"
        if (np.dtype(info.dtype).str, tuple(info.shape)) != (full.dtype.str, full.shape):
            return "describe declared another dtype or shape"
        if full.ndim >= 1 and full.shape[0] > 0:
            stop = max(1, full.shape[0] // 3)
            part = _outcome(lambda: decompress(data, tokenizer=tok, max_output_size=cap, start=0, stop=stop))
            if isinstance(part, str) or not _same_bits(part, full[:stop]):
                return "a partial decode differs from the full one"
    return None


#: The share of mutants of a one-stream container whose checksum is recomputed for what they
#: decode to, so that the checksum hides nothing from the readers' checks after it.
CRC_RECOMPUTED_SHARE = 0.3


def with_crc_recomputed(data: bytes, tok: Any) -> tuple[bytes, np.ndarray] | None:
    """``data`` (a one-stream container) with its ``crc`` set to the checksum of the values it
    decodes to without the checksum check, and those values; None when it is not one-stream,
    does not parse, or is refused for another reason. Only for the fuzzing child process: the
    check is switched off by replacing ``values_crc`` in ``ubpe.format.container`` for one call."""
    from ubpe.format import container

    try:
        fields = container.fields_of(data)
    except ubpe.UBPEError:
        return None
    if not isinstance(fields, dict) or "crc" not in fields or "blocks" in fields:
        return None
    original = container.values_crc
    container.values_crc = lambda dtype, shape, flat: fields["crc"]  # every checksum "matches"
    try:
        values = decompress(data, tokenizer=tok, max_output_size=1 << 24)
    except ubpe.UBPEError:
        return None
    finally:
        container.values_crc = original
    fields["crc"] = container.values_crc(values.dtype, values.shape, np.ascontiguousarray(values).reshape(-1))
    try:
        return container.pack(fields), values
    except Exception:  # noqa: BLE001 - a mutated field the packer cannot write back: not this test's
        return None


def fuzz_main(n_mutations: int, seed: int) -> int:
    """Run ``n_mutations`` mutations over :func:`fuzz_samples`, each read by ``decompress``,
    ``decompress_to``, ``describe`` and a partial decode (:func:`readers_agree`); print a JSON
    report; exit status."""
    import json
    import time

    rng = random.Random(seed)
    samples = fuzz_samples()
    stats = {"mutations": 0, "refused": 0, "decoded_equal": 0, "crc_recomputed": 0, "failures": [],
             "slowest_s": 0.0}
    for i in range(n_mutations):
        name, values, data, tok = samples[i % len(samples)]
        mutated = mutate(data, rng)
        t0 = time.perf_counter()
        try:
            if rng.random() < CRC_RECOMPUTED_SHARE:
                resealed = with_crc_recomputed(mutated, tok)
                if resealed is not None:  # the readers must agree on what it now decodes to
                    mutated, values = resealed
                    stats["crc_recomputed"] += 1
            problem, refused = readers_agree(mutated, values, tok, 1 << 24)
        except Exception as e:  # noqa: BLE001 - any other exception is the failure we look for
            problem, refused = f"{type(e).__name__}: {e}", False
        if problem is not None:
            stats["failures"].append({"sample": name, "i": i, "error": problem[:300], "data": mutated.hex()[:2000]})
        elif refused:
            stats["refused"] += 1
        else:
            stats["decoded_equal"] += 1
        stats["slowest_s"] = max(stats["slowest_s"], time.perf_counter() - t0)
        stats["mutations"] += 1
    print(json.dumps(stats))
    return 1 if stats["failures"] else 0


def check_mutations(samples: list[tuple[np.ndarray, bytes]], seed: int, n_mutations: int) -> int:
    """Mutate the containers of ``(values, container)`` pairs in turn and decompress them.

    Each mutation must raise a library error or decode to exactly the original values (dtype
    included). Returns how many were refused, which callers require to be positive.
    """
    r = random.Random(seed)
    refused = 0
    for i in range(n_mutations):
        values, data = samples[i % len(samples)]
        try:
            got = decompress(mutate(data, r), max_output_size=1 << 20)
        except ubpe.UBPEError:
            refused += 1
            continue
        assert got.dtype.str == values.dtype.str and np.array_equal(got, values)
    return refused



def check_window_mutations(samples: list[tuple[Any, np.ndarray, bytes]], seed: int, n_mutations: int) -> int:
    """Flip bytes of the window containers of ``(model, values, container)`` triples in turn and
    decompress them with their model: each must raise ``CorruptDataError`` or
    ``FormatVersionError``, or decode to exactly the original values (dtype included). Returns
    how many were refused."""
    r = random.Random(seed)
    refused = 0
    for i in range(n_mutations):
        model, values, data = samples[i % len(samples)]
        try:
            got = decompress(byte_mutation(data, r), tokenizer=model, max_output_size=1 << 20)
        except (ubpe.CorruptDataError, ubpe.FormatVersionError):
            refused += 1
            continue
        assert got.dtype == values.dtype and np.array_equal(got, values)
    return refused


def leb128(v: int) -> bytes:
    """Unsigned LEB128 of ``v >= 0``, written out by hand for the tests that build containers
    byte by byte (seven bits a byte, low first, the high bit set on all but the last)."""
    out = bytearray()
    while True:
        out.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
        v >>= 7
        if not v:
            return bytes(out)


def pack_model_file(fields: dict) -> bytes:
    """Model-file bytes holding the body ``fields`` (its checksum right)."""
    return model_file_of_body(msgpack.packb(fields, use_bin_type=True))


def model_file_of_body(body: bytes) -> bytes:
    """Model-file bytes holding the (possibly damaged) ``body`` bytes, its checksum right."""
    return msgpack.packb({"magic": "ubpe.tokenizer", "version": 1, "body": body,
                          "sha256": hashlib.sha256(body).digest()}, use_bin_type=True)


def model_body(data: bytes) -> dict:
    """The body fields of a model file's bytes (``Tokenizer.to_bytes()``), unchecked."""
    return msgpack.unpackb(msgpack.unpackb(data, raw=False)["body"], raw=False)


# ---------------------------------------------------------------------------- container fields


def unpack_any(data: bytes, **options: Any) -> Any:
    """``msgpack.unpackb(data)``, but a container (``b"ubpe"``, its version, a map) as its named
    fields (its blocks stay bytes: :func:`unpack_block`)."""
    from ubpe.format import container

    if bytes(data[:4]) == b"ubpe":
        return container.fields_of(bytes(data))
    return msgpack.unpackb(data, **{"raw": False, **options})


def pack_any(tree: Any, **options: Any) -> bytes:
    """``msgpack.packb(tree)``, but a container's named fields (as :func:`unpack_any` gives them,
    edited or not: a map with "dtype" and "shape") as a container."""
    from ubpe.format import container

    if isinstance(tree, dict) and "dtype" in tree and "shape" in tree:
        return container.pack(tree)
    return msgpack.packb(tree, **{"use_bin_type": True, **options})


def unpack_block(raw: bytes, count: int) -> Any:
    """A block's named fields (``count`` values)."""
    from ubpe.format import container

    return container.block_fields(raw, count)


def pack_block(fields: Any, count: int) -> bytes:
    """A block's bytes (``count`` values), its fields named."""
    from ubpe.format import container

    if isinstance(fields, dict):
        return container.pack_block(fields, count)
    return msgpack.packb(fields, use_bin_type=True)


# ---------------------------------------------------------------------------- frozen fixtures


def make_fixtures() -> Any:
    """The module tests/fixtures/make_fixtures.py (the script that wrote the frozen fixtures)."""
    import importlib.util
    import pathlib
    import sys

    path = pathlib.Path(__file__).parent / "fixtures" / "make_fixtures.py"
    if "make_fixtures" not in sys.modules:
        spec = importlib.util.spec_from_file_location("make_fixtures", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules["make_fixtures"] = module
    return sys.modules["make_fixtures"]


def random_mag_stats(seed: int, rates: int, density: float, top: int) -> tuple[np.random.Generator, np.ndarray]:
    """(the generator, after its draws; int64 counts (rates, N_CONTEXTS, N_BUCKETS)) as the "mag"
    residual coder's statistics: each cell nonzero with probability ``density``, counts in
    1..``top``; half the time one context of equal counts (3), so that remainders tie."""
    from ubpe._kernels import residual

    rng = np.random.default_rng(seed)
    shape = (rates, residual.N_CONTEXTS, residual.N_BUCKETS)
    stats = np.where(rng.random(shape) < density, rng.integers(1, top + 1, shape), 0).astype(np.int64)
    if rng.random() < 0.5:  # equal counts in a context: remainders tie
        stats[:, rng.integers(shape[1])] = np.where(rng.random(shape[2]) < 0.6, 3, 0)
    return rng, stats
