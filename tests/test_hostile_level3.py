"""Hostile level-3 ("mixsignal") payloads that pass every checksum: a hostile writer recomputes
the header CRC-32 of a front-end record (docs/format.md; ``ubpe/level3/format.py``'s byte layout), so
the checks behind it must hold on their own. Each case is built from bytes, without running a
kernel, and decoding it is ``ubpe.CorruptDataError``.
"""

from __future__ import annotations

import zlib

import msgpack
import numpy as np
import pytest

from common import leb128
from ubpe import CorruptDataError, decompress, level3
from ubpe.format import container

FRAMES = 300
INT16 = 2  #: level 3's dtype code of "<i2"


def raw_payload(x: np.ndarray) -> bytes:
    """Level-3 bytes of mode 1 (the values as they are): version 4, int16, (frames, 1)."""
    return bytes([4, INT16, 2]) + leb128(x.shape[0]) + leb128(1) + bytes([level3.MODE_RAW]) + x.astype("<i2").tobytes()


def front_record(inner: bytes, stages: list, frames: int = FRAMES) -> bytes:
    """Mode 2 around ``inner``: the stage record and the CRC-32 of the head, as a writer makes it."""
    head = bytearray([4, INT16, 2]) + leb128(frames) + leb128(1) + bytes([level3.MODE_FRONT])
    record = msgpack.packb(stages, use_bin_type=True)
    head += leb128(len(record)) + record
    return bytes(head) + zlib.crc32(head).to_bytes(4, "little") + inner


def mixsignal_container(payload: bytes, x: np.ndarray) -> bytes:
    """A ``compress(level=3)`` container of ``x`` ((frames, 1) int16) whose payload is ``payload``."""
    return container.pack({"dtype": "<i2", "shape": list(x.shape), "front": [],
                           "stream": {"coder": "mixsignal", "n": int(x.size), "payload": payload},
                           "crc": container.values_crc(x.dtype, list(x.shape), x.reshape(-1))})


@pytest.fixture(scope="module")
def values() -> np.ndarray:
    return np.cumsum(np.random.default_rng(0).integers(-3, 4, FRAMES)).astype(np.int16).reshape(FRAMES, 1)


def test_the_raw_payload_decodes(values):
    """(The cases below differ from a valid container only where they say.)"""
    assert np.array_equal(decompress(mixsignal_container(raw_payload(values), values)), values)


@pytest.mark.parametrize("depth", [2, 3000])
def test_a_front_end_record_inside_another_is_corrupt_data(values, depth):
    """The writer applies one chain (its output is coded without a front end): records nested
    as deep as the bytes allow were a RecursionError."""
    payload = raw_payload(values)
    for _ in range(depth):
        payload = front_record(payload, [])
    for read in (level3.decode, lambda d: decompress(mixsignal_container(d, values))):
        with pytest.raises(CorruptDataError, match="front-end record"):
            read(payload)


def test_an_empty_front_end_record_is_corrupt_data(values):
    with pytest.raises(CorruptDataError, match="empty front-end record"):
        level3.decode(front_record(raw_payload(values), []))


def model_head(frames: int, value_range: int = 10) -> bytes:
    """Level-3 bytes of mode 0 up to the payload: version 4, int16, (frames,), lo 0, step 1, no
    table, shift 0, one channel of ``value_range``, the base parameters."""
    return (bytes([4, INT16, 1]) + leb128(frames) + bytes([level3.MODE_MODEL]) + leb128(0) + leb128(1) + leb128(0)
            + bytes([0]) + leb128(0) + leb128(value_range) + leb128(0))


def test_a_declared_size_this_machine_cannot_allocate_is_corrupt_data():
    """40 bytes declaring 2**30 frames (the default ``max_values``): the kernel's work array of
    8 GiB was a MemoryError where the address space is limited (here to 3 GiB)."""
    import subprocess
    import sys

    payload = model_head(1 << 30) + bytes(24)
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); import ubpe; "
            "from ubpe import level3\n"
            "try:\n    level3.decode(bytes.fromhex(sys.argv[1]))\n"
            "except ubpe.CorruptDataError as e:\n    print('refused', e)\n")
    run = subprocess.run([sys.executable, "-c", code, payload.hex()], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.startswith("refused") and "max_values" in run.stdout, run.stderr[-2000:]


def run_header_mutations(n_mutations: int, seed: int, timeout: float) -> dict:
    """tests/level3_heads.py's structure-aware mutations in a child process (a crash of a kernel
    fails the test instead of the run; a hang, by the timeout)."""
    import json
    import pathlib
    import subprocess
    import sys

    tests = pathlib.Path(__file__).parent
    run = subprocess.run([sys.executable, str(tests / "level3_heads.py"), str(n_mutations), str(seed)],
                         capture_output=True, text=True, timeout=timeout, cwd=tests)
    assert run.returncode == 0, f"the child exited with {run.returncode}\n{run.stderr[-3000:]}"
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert not report["failures"], "\n".join(str(f) for f in report["failures"][:10])
    return report


def test_header_fields_mutated_raise_only_corrupt_data():
    """Each field of the level-3 header changed alone (shape, version, dtype, parameters at and
    beyond their bounds, lo, step, shift, ranges, LPC params, payload; a front-end record's stages
    and its inner header with the CRC-32 recomputed): CorruptDataError, or values (the
    container's CRC is the check of those)."""
    report = run_header_mutations(300, seed=1, timeout=600)
    assert report["refused"] > 200


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3])
def test_header_fields_mutated_many(seed):
    run_header_mutations(5000, seed=seed, timeout=3000)


@pytest.mark.parametrize("max_values, error", [(-1, ValueError), (2.5, TypeError), ("9", TypeError), (None, TypeError),
                                               (True, TypeError)])
def test_a_bad_max_values_is_an_argument_error(values, max_values, error):
    """(-1 and 2.5 were CorruptDataError "frames 300 exceeds -1", "9" a TypeError of a comparison.)"""
    for read in (level3.decode, level3.describe_head):
        with pytest.raises(error, match="max_values"):
            read(raw_payload(values), max_values=max_values)
