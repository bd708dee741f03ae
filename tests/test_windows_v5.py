"""Window containers of version 5 (docs/format.md, "Window containers"): one lead byte for magic
and version, the fields in 6 bytes (no model digest, the count with the dtype, a 2-byte CRC,
``below`` only when the skip is not the implied one), and a window's own "cms2" code."""

from __future__ import annotations

import numpy as np
import pytest
from common import check_truncations, check_window_mutations, leb128
from hypothesis import given, settings
from hypothesis import strategies as st

import ubpe
from ubpe import CorruptDataError, FormatVersionError, fit_shared
from ubpe.shared import DTYPES, compress_window, is_window

N = 1000


@pytest.fixture(scope="module")
def walk():
    """A model of 10 windows of a random walk, and 5 more windows of it."""
    x = np.cumsum(np.random.default_rng(50).integers(-9, 10, 15 * N)).astype(np.int16)
    return fit_shared([x[i * N:(i + 1) * N] for i in range(10)]), [x[i * N:(i + 1) * N] for i in range(10, 15)]


@pytest.fixture(scope="module")
def moved():
    """A model of 10 windows of wide noise, and a window of narrow noise elsewhere."""
    rng = np.random.default_rng(51)
    x = rng.normal(0, 2000, 10 * N).astype(np.int16)
    return fit_shared([x[i * N:(i + 1) * N] for i in range(10)]), rng.normal(3000, 20, N).astype(np.int16)


def _v(model, x, version=5, **options):
    return compress_window(x, model, ubpe.compress(x), version=version, **options)


def _v5(head: int, n: int, dtype: int, *tail: bytes) -> bytes:
    """A version-5 window container laid out as docs/format.md says (a reference writer): the
    lead byte, ``head``, the count ``16 n + dtype``, then the rest given."""
    return bytes([0xF5, head]) + leb128(16 * n + dtype) + b"".join(tail)


def test_version_5_is_written_and_at_least_7_bytes_smaller_than_versions_3_and_4(walk):
    model, windows = walk
    for w in windows:
        new, old = ubpe.compress(w, tokenizer=model), _v(model, w, 4)
        assert new[0] == 0xF5 and is_window(new) and old[:4] == b"ubpw"
        # lead byte for magic and version (-4), no digest (-2), CRC 2 bytes (-2), mostly no below (-1)
        assert len(new) <= len(old) - 7
        assert np.array_equal(ubpe.decompress(new, tokenizer=model), w)
        info = ubpe.describe(new)
        assert (info.version, info.n_values, info.dtype, info.shape, info.digest) == (5, N, "<i2", (N,), "")


def test_version_5_layout_of_a_primed_window_with_the_implied_skip(walk):
    model, windows = walk
    good = ubpe.compress(windows[0], tokenizer=model)
    head = good[1]
    near = head >> 5
    assert head & 0x18 == 0 and near < 7  # primed, no extras, no below: the skip is the implied one + near
    count = leb128(16 * N + DTYPES.index("<i2"))
    assert good[2:2 + len(count)] == count
    crc, rest = good[2 + len(count):4 + len(count)], good[4 + len(count):]
    assert _v5(head, N, 2, crc, rest) == good
    assert len(good) - len(rest) == 6  # lead, head, count 2, CRC 2
    from ubpe.format.container import values_crc

    assert int.from_bytes(crc, "little") == values_crc(np.dtype("<i2"), [N], windows[0]) & 0xFFFF  # its low 16 bits
    # the same window with near 7 and an explicit below (bound - implied skip - near): the same stream
    from ubpe.shared.coder import _skip_bound
    from ubpe.shared.v5 import implied_skip

    v = model.variants[head & 7]
    below = _skip_bound(v) - implied_skip(v, N) - near
    spelt = _v5(head | 0xE0, N, 2, leb128(below), crc, rest)
    assert np.array_equal(ubpe.decompress(spelt, tokenizer=model), windows[0])


def test_hostile_version_5_fields_are_refused(walk):
    model, windows = walk
    good = ubpe.compress(windows[0], tokenizer=model)
    head = good[1]
    crc, rest = good[4:6], good[6:]
    v = len(model.variants)
    for hostile in (
            _v5(head | 0x10, N, 2, crc, rest),  # the extras flag: the CRC's first byte read as extras
            _v5((head & 0x17) | 0x28, N, 2, crc, rest),  # cold with near 1
            _v5(head & 0x17 | 0x08, N, 2, crc, rest),  # cold: the bytes shift
            _v5((head & 0x1F) | (((head >> 5) + 1) % 7) << 5, N, 2, crc, rest),  # another near: the bytes shift
            _v5(head, N, 12, crc, rest),  # no such dtype
            _v5((head & 0xF8) | v, N, 2, crc, rest),  # no such variant
            _v5(head, 0, 2, crc, rest),  # no values
            _v5(head, 10**12, 2, crc, rest),  # more than max_output_size
            _v5(head, 10**5, 2, crc, rest),  # more values than the bytes can hold
            _v5(head | 0xE0, N, 2, leb128(10**9), crc, rest),  # skip below zero
            _v5(head | 0x10, N, 2, b"\x00", crc, rest),  # extras 0
            _v5(head | 0xE0, N, 2, leb128(0), crc, rest),  # the skip at its bound: more than the stream shares
            _v5(head | 0x10, N, 2, b"\x40", crc, rest),  # an extras bit that means nothing
            _v5(head | 0x10, N, 2, b"\x01", leb128(2), leb128(7), leb128(7), crc, rest),  # shape product
            _v5(head | 0x10, N, 2, b"\x02", leb128(1), b"\x05", crc, rest),  # a bad escape field
            _v5(head | 0x10, N, 2, b"\x08", bytes([40, 3]), crc, rest),  # a predictor of order 41
            _v5(head, N, 2, bytes([crc[0] ^ 1, crc[1]]), rest),  # the CRC
            _v5(head, N, 2, crc, rest[:-1]),  # a coder byte less
            _v5(head, N, 2, crc),  # no coder bytes
            b"ubpw\x05" + good[1:],  # version 5 spelt long
            bytes([0xF5, head]) + b"\xff" * 20,  # a varint that never ends
    ):
        with pytest.raises(CorruptDataError):
            ubpe.decompress(hostile, tokenizer=model, max_output_size=1 << 20)
    with pytest.raises(FormatVersionError):
        ubpe.decompress(bytes([0xF6]) + good[1:], tokenizer=model)
    with pytest.raises(FormatVersionError):
        ubpe.describe(b"ubpw\x06" + good[1:])


def test_a_window_unlike_the_training_windows_carries_its_own_code(moved):
    model, w = moved
    new = ubpe.compress(w, tokenizer=model)
    head, extras = new[1], new[4]
    assert head & 0x08 and head & 0x10 and extras & 0x10  # cold, with its own code
    assert len(new) < len(_v(model, w, 4)) - 10  # (measured: 1 011 bytes against 1 055 in version 4)
    assert np.array_equal(ubpe.decompress(new, tokenizer=model), w)


def test_hostile_own_code_fields_are_refused(moved):
    model, w = moved
    good = ubpe.compress(w, tokenizer=model)
    head, count = good[1], good[2:4]
    assert good[4] == 0x10  # the extras byte: only the code
    from ubpe._kernels.cmsignal2 import parse_header

    v = model.variants[head & 7]
    mode, center, counts, used = parse_header(good[5:], v.size)
    tail = good[5 + used:]  # CRC and coder bytes
    k = [int(c) for c in counts[1:]]
    pre = bytes([0xF5, head]) + count + b"\x10"
    for hostile in (
            pre + bytes([3]) + leb128(center) + bytes([len(k)]) + b"".join(map(leb128, k)) + tail,  # mode 3
            pre + bytes([mode]) + leb128(v.size) + bytes([len(k)]) + b"".join(map(leb128, k)) + tail,  # center
            pre + bytes([mode]) + leb128(center) + bytes([0]) + tail,  # no lengths
            pre + bytes([mode]) + leb128(center) + bytes([31]) + tail,  # longer than 30
            pre + bytes([mode]) + leb128(center) + bytes([len(k)]) + b"".join(map(leb128, k[:-1] + [k[-1] + 2])) + tail,
            pre + bytes([mode]) + leb128(center) + bytes([1]) + leb128(2) + tail,  # complete, but 2 of size tokens
            pre + bytes([mode]) + leb128(center) + bytes([len(k)]) + leb128(1 << 20) + tail,  # a count too large
    ):
        with pytest.raises(CorruptDataError):
            ubpe.decompress(hostile, tokenizer=model, max_output_size=1 << 20)


def test_a_wrong_model_is_refused_without_a_digest(walk, moved):
    model, windows = walk
    data = ubpe.compress(windows[1], tokenizer=model)
    with pytest.raises(CorruptDataError, match="shared model|window"):
        ubpe.decompress(data)
    with pytest.raises(CorruptDataError):
        ubpe.decompress(data, tokenizer=moved[0])


def test_every_strict_prefix_and_mutation_of_version_5_is_refused_or_exact(walk, moved):
    model, windows = walk
    samples = [(model, windows[2], ubpe.compress(windows[2], tokenizer=model)),
               (model, windows[3].reshape(500, 2), ubpe.compress(windows[3].reshape(500, 2), tokenizer=model,
                                                                  source={"name": "w.npy"})),
               (moved[0], moved[1], ubpe.compress(moved[1], tokenizer=moved[0]))]
    assert all(d[0] == 0xF5 for _, _, d in samples)
    for m, _, data in samples:
        assert check_truncations(data, lambda d: ubpe.decompress(d, tokenizer=m)) == len(data)
    assert check_window_mutations(samples, 55, 450) > 350


def test_version_5_is_deterministic(walk):
    model, windows = walk
    assert ubpe.compress(windows[4], tokenizer=model) == ubpe.compress(windows[4].copy(), tokenizer=model)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_any_window_round_trips_and_is_never_larger_than_alone(walk, data):
    model, _ = walk
    dtype = data.draw(st.sampled_from(DTYPES))
    info = np.iinfo(np.dtype(dtype))
    n = data.draw(st.integers(1, 1500))
    scale = data.draw(st.sampled_from([0, 1, 9, 300, 30000]))
    seed = data.draw(st.integers(0, 2**32 - 1))
    x = np.cumsum(np.random.default_rng(seed).integers(-scale, scale + 1, n)) + data.draw(
        st.sampled_from([0, int(info.min), int(info.max)]))
    w = np.clip(x, info.min, info.max).astype(dtype)
    alone = ubpe.compress(w)
    packed = compress_window(w, model, alone)
    assert len(packed) <= len(alone)
    back = ubpe.decompress(packed, tokenizer=model)
    assert back.dtype == w.dtype and np.array_equal(back, w)


@pytest.fixture(scope="module")
def jumps():
    """A model of 10 windows of a resonance whose level steps every window (so that an LMS
    cascade pays: the model is fitted with one), and 3 more windows of it."""
    rng = np.random.default_rng(52)
    e, x = rng.normal(0, 30, 13 * N), np.zeros(13 * N)
    for i in range(2, 13 * N):
        x[i] = 1.6 * x[i - 1] - 0.8 * x[i - 2] + e[i]
    x = (x + np.repeat(rng.integers(-8000, 8000, 13), N)).astype(np.int16)
    return fit_shared([x[i * N:(i + 1) * N] for i in range(10)], variants=8), [x[i * N:(i + 1) * N]
                                                                              for i in range(10, 13)]


def test_a_windows_first_residual_held_apart_spares_the_lms_cascade_the_jump(jumps):
    model, windows = jumps
    assert any(v.adaptive for v in model.variants)
    held = 0
    for w in windows:
        new = ubpe.compress(w, tokenizer=model)
        assert np.array_equal(ubpe.decompress(new, tokenizer=model), w)
        if new[1] & 0x10 and new[4 if new[1] >> 5 < 7 else 5] & 0x20:
            held += 1
            assert model.variants[new[1] & 7].adaptive
    assert held  # (measured: 3 of 3)


def test_a_first_residual_held_apart_is_checked(walk):
    model, windows = walk
    good = ubpe.compress(windows[0], tokenizer=model)
    head, count, crc, rest = good[1], good[2:4], good[4:6], good[6:]
    assert not head & 0x10
    for value in (0, 1, -7, 1 << 40):  # the stream's first residual is not 0: refused
        z = 2 * value if value >= 0 else -2 * value - 1
        with pytest.raises(CorruptDataError):
            ubpe.decompress(bytes([0xF5, head | 0x10]) + count + b"\x20" + leb128(z) + crc + rest, tokenizer=model)
    with pytest.raises(CorruptDataError):  # a first residual whose varint never ends
        ubpe.decompress(bytes([0xF5, head | 0x10]) + count + b"\x20" + b"\xff" * 12 + crc + rest, tokenizer=model)
