"""Hostile input, second round (issue 27): each case the structure-aware fuzz and the hand-made
attacks found, built from bytes through the public API. Every one is the library's own error
(``ubpe.CorruptDataError``), raised before anything proportional to a declared size is allocated,
and ``decompress`` and ``decompress_to`` refuse the same bytes.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tracemalloc

import msgpack
import numpy as np
import pytest

import ubpe
from ubpe import CorruptDataError, Tokenizer, TextTokenizer, decompress, decompress_to, describe
from ubpe.format import container

#: Bytes a hostile container may make the reader allocate before it refuses (tracemalloc).
SMALL = 8 << 20


def walk(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.integers(-3, 4, n)).astype(np.int16)


@pytest.fixture(scope="module")
def one_stream() -> bytes:
    return ubpe.compress(walk(5000), level=1)


@pytest.fixture(scope="module")
def blocked() -> bytes:
    return ubpe.compress(walk(50_000, seed=1), level=1, block_size=4096)


def with_fields(data: bytes, **changes) -> bytes:
    fields = container.fields_of(data)
    fields.update(changes)
    return container.pack(fields)


def decode_to(data: bytes, **kw):
    return decompress_to(io.BytesIO(), io.BytesIO(data), **kw)


def refused_cheaply(fn, match: str | None = None) -> CorruptDataError:
    """The CorruptDataError ``fn()`` raises, after allocating at most SMALL bytes."""
    tracemalloc.start()
    try:
        with pytest.raises(CorruptDataError, match=match) as info:
            fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < SMALL, f"{peak} bytes allocated before refusing"
    return info.value


def nested_list(depth: int) -> bytes:
    """msgpack of a list holding a list ... ``depth`` deep, around a 0."""
    return b"\x91" * depth + b"\x00"


@pytest.mark.parametrize("shape", [[0, 2**63 - 1], [2**32, 2**32], [2**62, 4]])
def test_shapes_beyond_any_array_are_corrupt_data(one_stream, shape):
    data = with_fields(one_stream, shape=shape)
    for read in (decompress, describe, decode_to):
        refused_cheaply(lambda: read(data), match="shape")


def test_a_value_nested_a_thousand_deep_is_refused_with_a_short_message(one_stream):
    wire = msgpack.unpackb(one_stream[5:], strict_map_key=False)
    shape_key = next(k for k, v in wire.items() if isinstance(v, list))
    head = msgpack.Packer().pack_map_header(len(wire))
    body = b"".join((nested_list(1000) if k == shape_key else msgpack.packb(k))
                    + (b"" if k == shape_key else msgpack.packb(v, use_bin_type=True))
                    for k, v in wire.items())
    # the nested value stands in for the shape's key *and* value: the map stays well formed
    data = one_stream[:5] + head + body
    for read in (decompress, describe, decode_to):
        error = refused_cheaply(lambda: read(data))
        assert len(str(error)) < 400
    deep = one_stream[:5] + nested_list(1000)
    for read in (decompress, describe, decode_to, Tokenizer.from_bytes, TextTokenizer.from_bytes):
        error = refused_cheaply(lambda: read(deep))
        assert len(str(error)) < 400


def test_the_command_line_reports_a_hostile_file_in_one_line(tmp_path, one_stream):
    bad = tmp_path / "bad.ubpe"
    bad.write_bytes(one_stream[:5] + nested_list(1000))
    run = subprocess.run([sys.executable, "-m", "ubpe", "decompress", str(bad), "-o", str(tmp_path / "x.npy")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1
    assert len(run.stderr.strip().splitlines()) == 1 and "internal" not in run.stderr
    assert not (tmp_path / "x.npy").exists()


def test_trailing_bytes_refused_by_both_readers(one_stream, blocked):
    """A one-stream container is refused before a value is written; a blocked one read as a
    stream can only find them after its last block (the command line's output is atomic)."""
    for data, written in ((one_stream + b"\x00", 0), (blocked + b"\x00", None),
                          (blocked + b"\xda\x00", None)):  # the start of an incomplete msgpack str
        refused_cheaply(lambda: decompress(data), match="after the container")
        out = io.BytesIO()
        with pytest.raises(CorruptDataError, match="after the container"):
            decompress_to(out, io.BytesIO(data))
        if written is not None:
            assert len(out.getvalue()) == written


@pytest.mark.parametrize("block", [256, None, -1, 2**40, "4096"])
def test_a_blocked_container_with_a_wrong_block_size_is_corrupt_for_both_readers(blocked, block):
    data = with_fields(blocked, block=block)
    for read in (decompress, describe, decode_to):
        refused_cheaply(lambda: read(data))


@pytest.mark.parametrize("count", [2**31, 2**20])
def test_a_block_count_beyond_the_bytes_is_refused_before_allocating(blocked, count):
    fields = container.fields_of(blocked)
    head = container.blocked_head({k: v for k, v in fields.items() if k != "blocks"}, count)
    for read in (decompress, decode_to):
        refused_cheaply(lambda: read(head))


def test_max_output_size_bounds_a_partial_decode(one_stream):
    huge = with_fields(one_stream, shape=[2**29])
    error = refused_cheaply(lambda: decompress(huge, start=0, stop=1, max_output_size=1000),
                            match="max_output_size")
    assert "1000" in str(error)
