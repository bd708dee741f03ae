"""The wire form of format version 1 (docs/format.md): ``b"ubpe"``, the version byte, then one
msgpack map whose keys are numbers (their index in ``ubpe.format.container.KEYS``), whose dtype,
coder and stage values are numbers too, and whose fields at their default are left out. The
reader names them back and refuses any other spelling, so that every container has one form."""

from __future__ import annotations

import io

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ubpe
from common import _SUBSTITUTES, assert_same_array, check_truncations
from conftest import examples
from ubpe import compress, decompress, describe
from ubpe.format import container
from ubpe.format.groups import GROUPS_MAGIC

K = {name: i for i, name in enumerate(container.KEYS)}  # key name -> number


def walk(n: int, seed: int = 0, channels: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    shape = (n, channels) if channels else (n,)
    return np.cumsum(rng.integers(-4, 5, shape), axis=0).astype(np.int16)


def split(data: bytes) -> tuple[bytes, dict]:
    """(prefix, the wire map as msgpack gives it: keys by number)."""
    return data[:5], msgpack.unpackb(data[5:], raw=False, strict_map_key=False)


def join(prefix: bytes, tree: dict) -> bytes:
    return prefix + msgpack.packb(tree, use_bin_type=True)


# ---------------------------------------------------------------------------- the writer


def test_compress_writes_version_1_behind_its_prefix():
    x = walk(1000, seed=1)
    data = compress(x)
    assert data[:5] == b"ubpe\x01" and container.FORMAT_VERSION == 1 == describe(data).version
    _, tree = split(data)
    assert all(type(k) is int for k in tree)  # no key by name
    assert tree[K["dtype"]] == container.DTYPES.index("<i2")
    assert_same_array(decompress(data), x)


def test_fields_at_their_default_are_left_out():
    """No front end, a range alphabet's gap width and gaps, a model without merges and a
    stream's count of the values: not written (the reader puts them back)."""
    x = np.random.default_rng(1).integers(0, 7, 50).astype(np.uint8)
    data = compress(x, delta=0, level=1)
    _, tree = split(data)
    assert K["front"] not in tree and K["model"] not in tree
    assert set(tree[K["alphabet"]]) == {K["n"], K["lo"]} and K["n"] not in tree[K["stream"]]
    named = container.fields_of(data)
    assert named["front"] == [] and named["model"] == {"a": 7, "m": 0, "merges": b""}
    assert named["alphabet"] == {"n": 7, "lo": 0, "w": 0, "gaps": b""} and named["stream"]["n"] == 50
    assert container.pack(named) == data  # named fields give back the same bytes


@settings(max_examples=examples(40), deadline=None)  # costly: conftest.examples
@given(hnp.arrays(st.sampled_from([np.int8, np.uint8, np.int16, np.uint16, ">i4", "<u8", np.bool_]),
                  hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=60)),
       st.sampled_from([1, 2]))
def test_round_trips_are_exact_and_the_named_fields_pack_to_the_same_bytes(x, level):
    if x.ndim == 2 and x.shape[1] > x.shape[0]:
        x = x.T
    data = compress(x, level=level)
    assert_same_array(decompress(data), x)
    info = describe(data)
    if data[:4] == GROUPS_MAGIC:  # (channels grouped where that is smaller, "Grouped containers" in
        # docs/format.md: its own prefix, version 1, and its groups' containers inside; a CI run drew
        # 56 x 19 sparse uint64 values grouped at level 1)
        assert data[4] == 1 and info.size == len(data) and info.groups >= 2
        return
    assert data[:5] == b"ubpe\x01"
    assert container.pack(container.fields_of(data)) == data
    assert info.header + info.model + info.freq + info.payload == info.size == len(data)


def test_source_keys_of_the_table_and_of_the_user_round_trip():
    meta = {"format": "wav", "rate": 8000, "site": "lab", "n": 3, "ubpe": b"\x00"}
    data = compress(walk(500, seed=3), source=meta)
    assert describe(data).source == meta
    _, tree = split(data)
    assert set(tree[K["source"]]) == {K["format"], K["rate"], "site", K["n"], "ubpe"}


def test_blocked_containers_stream_and_slice():
    x = walk(5000, seed=4, channels=2)
    data = compress(x, block_size=2000, level=1, threads=1)
    info = describe(data)
    assert info.version == 1 and info.blocks == 5
    assert info.header + info.model + info.freq + info.payload == info.size
    out = io.BytesIO()
    assert ubpe.decompress_to(out, io.BytesIO(data)) == (x.dtype, x.shape)
    assert out.getvalue() == x.tobytes()
    assert_same_array(decompress(data, start=1500, stop=3100), x[1500:3100])
    _, tree = split(data)
    assert list(tree)[-1] == K["blocks"]
    block = msgpack.unpackb(tree[K["blocks"]][0], raw=False, strict_map_key=False)
    assert all(type(k) is int for k in block) and K["crc"] in block


# ---------------------------------------------------------------------------- the reader's checks


@pytest.fixture(scope="module")
def short() -> bytes:
    return compress(walk(800, seed=5), delta=1, level=1)


def _edit(short: bytes, edit) -> bytes:
    prefix, tree = split(short)
    edit(tree)
    return join(prefix, tree)


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.__setitem__(99, 1), "unknown key number 99"),
    (lambda t: t.__setitem__(-1, 1), "unknown key number -1"),
    (lambda t: t.__setitem__("dtype", t.pop(K["dtype"])), "written by name"),
    (lambda t: t.__setitem__(b"x", 1), "map key must be an int or a str"),
    (lambda t: t.__setitem__("magic", "ubpe"), "unexpected"),
    (lambda t: t.__setitem__(K["front"], []), "'front' at its default"),
    (lambda t: t[K["alphabet"]].__setitem__(K["w"], 0), "'w' at its default"),
    (lambda t: t[K["alphabet"]].__setitem__(K["gaps"], b""), "'gaps' at its default"),
    (lambda t: t.__setitem__(K["model"], {K["m"]: 0, K["merges"]: b""}), "no merges is left out"),
    (lambda t: t.__setitem__(K["model"], {K["a"]: 9, K["m"]: 1, K["merges"]: b"\x00"}), "'a' is not written"),
    (lambda t: t[K["stream"]].__setitem__(K["n"], 800), "'n' equal to the values"),
    (lambda t: t[K["stream"]].__setitem__(K["n"], 799), "stream|expand|tokens"),
    (lambda t: t[K["stream"]].__setitem__(K["coder"], 40), "unknown number 40"),
    (lambda t: t[K["stream"]].__setitem__(K["coder"], "rans"), "written by name"),
    (lambda t: t[K["stream"]].__setitem__(K["coder"], "zz"), "coder"),
    (lambda t: t.__setitem__(K["dtype"], 21), "unknown number 21"),
    (lambda t: t.__setitem__(K["dtype"], "<i2"), "written by name"),
    (lambda t: t[K["front"]][0].__setitem__(K["stage"], 60), "unknown number 60"),
    (lambda t: t[K["front"]][0].__setitem__(K["stage"], "delta"), "written by name"),
    (lambda t: t.pop(K["crc"]), "missing"),
    (lambda t: t.__setitem__(K["crc"], "x"), "crc"),
])
def test_the_wire_map_is_checked(short, edit, message):
    with pytest.raises(ubpe.CorruptDataError, match=message):
        decompress(_edit(short, edit))


@pytest.mark.parametrize("value", [v for v in _SUBSTITUTES if not (type(v) is int and 0 <= v < len(container.CODERS))],
                         ids=repr)
def test_a_coder_of_any_other_type_is_refused(short, value):
    """Not only an unknown number: a list, a map, bytes, a float (each raised TypeError once)."""
    message = "written by name" if value == {"a": 1} else "coder"  # (a map's keys are checked first)
    with pytest.raises(ubpe.CorruptDataError, match=message):
        decompress(_edit(short, lambda t: t[K["stream"]].__setitem__(K["coder"], value)))
    with pytest.raises(ubpe.CorruptDataError, match=message):
        describe(_edit(short, lambda t: t[K["stream"]].__setitem__(K["coder"], value)))


def test_a_key_twice_is_refused(short):
    prefix, tree = split(short)
    body = msgpack.packb(tree, use_bin_type=True)
    assert body[0] & 0xF0 == 0x80  # a fixmap: one more entry, the dtype again
    twice = bytes([body[0] + 1]) + body[1:] + msgpack.packb(K["dtype"]) + msgpack.packb(tree[K["dtype"]])
    with pytest.raises(ubpe.CorruptDataError, match="twice"):
        decompress(prefix + twice)


def test_the_prefix_is_checked(short):
    with pytest.raises(ubpe.FormatVersionError):
        decompress(b"ubpe\x02" + short[5:])
    with pytest.raises(ubpe.CorruptDataError, match="version"):
        decompress(b"ubpe\x00" + short[5:])
    with pytest.raises(ubpe.CorruptDataError, match="truncated"):
        decompress(b"ubpe\x01")
    with pytest.raises(ubpe.CorruptDataError, match="not a ubpe file"):
        decompress(b"ubpx\x01" + short[5:])
    with pytest.raises(ubpe.CorruptDataError, match="other data"):
        decompress(short + b"\x00")


def test_named_keys_are_refused(short):
    fields = container.fields_of(short)
    with pytest.raises(ubpe.CorruptDataError, match="not a ubpe file"):
        decompress(msgpack.packb(fields, use_bin_type=True))  # a map alone, without the prefix
    with pytest.raises(ubpe.CorruptDataError, match="written by name"):
        decompress(short[:5] + msgpack.packb(fields, use_bin_type=True))


def test_a_block_of_the_wire_form_is_checked():
    x = walk(3000, seed=6)
    data = compress(x, block_size=1000, level=1, threads=1)
    prefix, tree = split(data)
    block = msgpack.unpackb(tree[K["blocks"]][1], raw=False, strict_map_key=False)
    for bad, message in (({**block, K["front"]: []}, "'front' at its default"),
                         ({**block, 77: 0}, "unknown key number 77"),
                         ({**block, "crc": 0}, "written by name")):
        edited = dict(tree)
        edited[K["blocks"]] = list(tree[K["blocks"]])
        edited[K["blocks"]][1] = msgpack.packb(bad, use_bin_type=True)
        with pytest.raises(ubpe.CorruptDataError, match=f"block 1 .*{message}"):
            decompress(join(prefix, edited))


def test_truncations_are_refused(short):
    assert check_truncations(short) == len(short)


def _named_map_reference(pairs):
    """How a wire map's keys are named, as one loop: an int is a key's number, a str a name that
    is not in the table (a source key of the user's); anything else, a number out of the table,
    a name of the table or a key twice is refused."""
    d = {}
    for key, value in pairs:
        if type(key) is int:
            if not 0 <= key < len(container.KEYS):
                raise ubpe.CorruptDataError(f"unknown key number {key}")
            key = container.KEYS[key]
        elif type(key) is not str:
            raise ubpe.CorruptDataError("a map key must be an int or a str")
        elif key in K:
            raise ubpe.CorruptDataError("written by name")
        if key in d:
            raise ubpe.CorruptDataError("appears twice")
        d[key] = value
    return d


_KEYS = st.one_of(st.integers(-2, len(container.KEYS) + 1), st.sampled_from([True, False, 1.0, 0.0, None, b"n"]),
                  st.sampled_from(["dtype", "n", "user", "x"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_KEYS, st.integers(0, 3)), max_size=8))
def test_every_map_s_keys_follow_their_definition(pairs):
    """Any map of a container (here its ``source``, written by hand: keys twice, a bool or a
    float key equal to an int) is named as the reference does, or refused as it is."""
    packer = msgpack.Packer(use_bin_type=True)
    data = (b"ubpe\x01" + packer.pack_map_header(2) + packer.pack(K["dtype"]) + packer.pack(0)
            + packer.pack(K["source"]) + packer.pack_map_pairs(pairs))
    try:
        want = _named_map_reference(pairs)
    except ubpe.CorruptDataError as e:
        with pytest.raises(ubpe.CorruptDataError) as got:
            container.fields_of(data)
        assert str(e).split(" (")[0].split("number ")[-1] in str(got.value)
        return
    got = container.fields_of(data)["source"]
    assert got == want and list(got) == list(want)
