"""Hostile containers whose fields nest maps and lists as deep as msgpack allows: refused as
``ubpe.CorruptDataError`` by every reader (the writer nests 7 deep; ``container.MAX_NESTING``)."""

from __future__ import annotations

import io

import msgpack
import numpy as np
import pytest

import ubpe
from ubpe import CorruptDataError, decompress, decompress_to, describe
from ubpe.format import container


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def wire_with(data: bytes, path: tuple, value) -> bytes:
    """``data`` with the field at ``path`` (names) set to ``value``, packed without the writer's
    renaming (whose recursion the depth would exhaust): the wire map's keys as they are."""
    fields = container.fields_of(data)
    numbered = msgpack.unpackb(container.pack(fields)[5:], raw=False, strict_map_key=False)
    where = numbered
    for name in path[:-1]:
        where = where[container.KEYS.index(name)]
    where[container.KEYS.index(path[-1])] = value
    return data[:5] + msgpack.packb(numbered, use_bin_type=True)


@pytest.fixture(scope="module")
def one_stream() -> bytes:
    rng = np.random.default_rng(0)
    return ubpe.compress(np.cumsum(rng.integers(-3, 4, 3000)).astype(np.int16), level=1)


def readers():
    return [decompress, describe, lambda d: decompress_to(io.BytesIO(), io.BytesIO(d))]


@pytest.mark.parametrize("depth", [33, 500, 1000])
def test_a_stream_field_nested_deep_is_corrupt_data_for_every_reader(one_stream, depth):
    """A rANS stream's ``freq`` 517 lists deep made ``describe`` (and ``ubpe decompress``, exit 3)
    raise RecursionError: describe re-packs each field to measure it."""
    assert container.fields_of(one_stream)["stream"]["coder"] == "rans"
    data = wire_with(one_stream, ("stream", "freq"), nested(depth))
    for read in readers():
        with pytest.raises(CorruptDataError):
            read(data)


def test_the_nesting_limit_is_not_the_writers(one_stream):
    """32 deep is not refused for its depth (decoding refuses the field for its type)."""
    data = wire_with(one_stream, ("stream", "freq"), nested(container.MAX_NESTING - 2))
    for read in readers():
        try:
            read(data)
        except CorruptDataError as e:
            assert "nested" not in str(e)


def test_the_command_line_refuses_it_in_one_line(one_stream, tmp_path, capsys):
    """(It was exit code 3, "internal error", with a traceback.)"""
    from ubpe.cli import main

    bad = tmp_path / "deep.ubpe"
    bad.write_bytes(wire_with(one_stream, ("stream", "freq"), nested(600)))
    for argv in (["-q", "decompress", str(bad), "-o", str(tmp_path / "x.npy")], ["inspect", str(bad)]):
        capsys.readouterr()
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "internal" not in err
    assert not (tmp_path / "x.npy").exists()
