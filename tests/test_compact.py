"""Format version 7, the compact form (docs/format.md, "Version 7: the compact form"): the same
fields as version 6, keys and table values by number, defaults left out, behind ``b"ubpe"`` and
the version byte; translated at the pack/unpack boundary and checked as version 6."""

from __future__ import annotations

import io
import pathlib

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ubpe
from common import assert_same_array, check_truncations
from ubpe import container
from ubpe.container import compress, decompress, describe

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def walk(n: int, seed: int = 0, channels: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    shape = (n, channels) if channels else (n,)
    return np.cumsum(rng.integers(-4, 5, shape), axis=0).astype(np.int16)


def split(data: bytes) -> tuple[bytes, dict]:
    """(prefix, the compact map as msgpack gives it: keys by number)."""
    return data[:5], msgpack.unpackb(data[5:], raw=False, strict_map_key=False)


def join(prefix: bytes, tree: dict) -> bytes:
    return prefix + msgpack.packb(tree, use_bin_type=True)


def named_v6(data: bytes) -> bytes:
    """The same container written with named keys as version 6 (every v7 field means the same)."""
    fields = container._fields(data)
    fields["v"] = 6
    return msgpack.packb(fields, use_bin_type=True)


K = container._KEY_IDS_V7  # key name -> number


# ---------------------------------------------------------------------------- the writer


def test_compress_writes_version_7_behind_its_prefix():
    x = walk(1000, seed=1)
    data = compress(x)
    assert data[:5] == b"ubpe\x07" and container.FORMAT_VERSION == 7 == describe(data).version
    _, tree = split(data)
    assert all(type(k) is int for k in tree)  # no key by name
    assert K["layout"] not in tree and tree[K["dtype"]] == container.DTYPES_V7.index("<i2")
    assert_same_array(decompress(data), x)


def test_the_compact_form_is_smaller_by_the_names_it_leaves_out():
    x = walk(1000, seed=2)
    data = compress(x, delta=1, level=1)
    old = named_v6(data)
    assert_same_array(decompress(old), x)  # the same fields, read as version 6
    assert len(old) - len(data) >= 60, (len(old), len(data))
    container.WRITE_COMPACT = False
    try:
        written = compress(x, delta=1, level=1)
    finally:
        container.WRITE_COMPACT = True
    assert written[:1] != b"u" and describe(written).version < 7 and len(written) > len(data)


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(st.sampled_from([np.int8, np.uint8, np.int16, np.uint16, ">i4", "<u8", np.bool_]),
                  hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=60)),
       st.sampled_from([1, 2]))
def test_round_trips_are_exact_and_the_named_form_reads_the_same(x, level):
    if x.ndim == 2 and x.shape[1] > x.shape[0]:
        x = x.T
    data = compress(x, level=level)
    assert data[:5] == b"ubpe\x07"
    assert_same_array(decompress(data), x)
    assert_same_array(decompress(named_v6(data)), x)
    info = describe(data)
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
    assert info.version == 7 and info.blocks == 5
    assert info.header + info.model + info.freq + info.payload == info.size
    out = io.BytesIO()
    assert container.decompress_to(out, io.BytesIO(data)) == (x.dtype, x.shape)
    assert out.getvalue() == x.tobytes()
    assert_same_array(decompress(data, start=1500, stop=3100), x[1500:3100])
    _, tree = split(data)
    assert list(tree)[-1] == K["blocks"]
    block = msgpack.unpackb(tree[K["blocks"]][0], raw=False, strict_map_key=False)
    assert all(type(k) is int for k in block) and K["crc"] in block


def test_every_v7_fixture_is_compact_and_decodes():
    names = sorted(p.stem for p in FIXTURES.glob("v7_*.ubpe"))
    assert len(names) >= 16
    for name in names:
        data = (FIXTURES / f"{name}.ubpe").read_bytes()
        assert data[:5] == b"ubpe\x07", name
        model = FIXTURES / f"{name}.model"
        tok = ubpe.Tokenizer.from_bytes(model.read_bytes()) if model.exists() else None
        assert_same_array(decompress(data, tokenizer=tok), np.load(FIXTURES / f"{name}.npy"))


def test_old_versions_still_decode_next_to_v7():
    for name in ("v2_delta2_signal_int16", "v3_blocks_lpc_frames_int16", "v5_cms2_signal_int16",
                 "v6_blocks_lpc_midcross_uint16"):
        data = (FIXTURES / f"{name}.ubpe").read_bytes()
        assert data[:1] != b"u"
        assert_same_array(decompress(data), np.load(FIXTURES / f"{name}.npy"))


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
    (lambda t: t.__setitem__("dtype", t.pop(K["dtype"])), "written by name"),
    (lambda t: t.__setitem__(b"x", 1), "map key must be an int or a str"),
    (lambda t: t.__setitem__("magic", "ubpe"), "'magic' or 'v'"),
    (lambda t: t.__setitem__(K["layout"], "tc"), "'layout' at its default"),
    (lambda t: t.__setitem__(K["layout"], "ct"), "layout"),
    (lambda t: t[K["alphabet"]].__setitem__(K["w"], 0), "'w' at its default"),
    (lambda t: t[K["alphabet"]].__setitem__(K["gaps"], b""), "'gaps' at its default"),
    (lambda t: t.__setitem__(K["model"], {K["m"]: 0, K["merges"]: b""}), "no merges is left out"),
    (lambda t: t.__setitem__(K["model"], {K["a"]: 9, K["m"]: 1, K["merges"]: b"\x00"}), "'a' is written"),
    (lambda t: t[K["stream"]].__setitem__(K["n"], 800), "'n' equal to the values"),
    (lambda t: t[K["stream"]].__setitem__(K["n"], 799), "stream|expand|tokens"),
    (lambda t: t[K["stream"]].__setitem__(K["coder"], 40), "unknown number 40"),
    (lambda t: t[K["stream"]].__setitem__(K["coder"], "rans"), "written by name"),
    (lambda t: t[K["stream"]].__setitem__(K["coder"], "zz"), "coder"),
    (lambda t: t.__setitem__(K["dtype"], 21), "unknown number 21"),
    (lambda t: t.__setitem__(K["dtype"], "<i2"), "written by name"),
    (lambda t: t[K["front"]][0].__setitem__(K["stage"], 9), "unknown number 9"),
    (lambda t: t[K["front"]][0].__setitem__(K["stage"], "delta"), "written by name"),
    (lambda t: t.pop(K["crc"]), "missing"),
    (lambda t: t.__setitem__(K["crc"], "x"), "crc"),
])
def test_the_compact_map_is_checked(short, edit, message):
    with pytest.raises(ubpe.CorruptDataError, match=message):
        decompress(_edit(short, edit))


def test_a_key_twice_is_refused(short):
    prefix, tree = split(short)
    body = msgpack.packb(tree, use_bin_type=True)
    assert body[0] & 0xF0 == 0x80  # a fixmap: one more entry, the dtype again
    twice = bytes([body[0] + 1]) + body[1:] + msgpack.packb(K["dtype"]) + msgpack.packb(tree[K["dtype"]])
    with pytest.raises(ubpe.CorruptDataError, match="twice"):
        decompress(prefix + twice)


def test_the_prefix_is_checked(short):
    with pytest.raises(ubpe.FormatVersionError):
        decompress(b"ubpe\x08" + short[5:])
    for v in (0, 2, 6):
        with pytest.raises(ubpe.CorruptDataError, match="version"):
            decompress(b"ubpe" + bytes([v]) + short[5:])
    with pytest.raises(ubpe.CorruptDataError, match="truncated"):
        decompress(b"ubpe\x07")
    with pytest.raises(ubpe.CorruptDataError, match="not a ubpe file"):
        decompress(b"ubpx\x07" + short[5:])
    with pytest.raises(ubpe.CorruptDataError):
        decompress(short + b"\x00")


def test_named_keys_with_version_7_are_refused(short):
    fields = container._fields(short)
    with pytest.raises(ubpe.CorruptDataError, match="compact form"):
        decompress(msgpack.packb(fields, use_bin_type=True))  # "magic", "v": 7 and names


def test_a_block_of_the_compact_form_is_checked():
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


def test_truncations_of_a_v7_container_are_refused(short):
    assert check_truncations(short) == len(short)


def _v7_map_reference(pairs):
    """container._v7_map as one loop (its fallback), the definition its usual case follows."""
    d = {}
    for key, value in pairs:
        if type(key) is int:
            if not 0 <= key < len(container.KEYS_V7):
                raise ubpe.CorruptDataError(f"unknown key number {key}")
            key = container.KEYS_V7[key]
        elif type(key) is not str:
            raise ubpe.CorruptDataError("a map key must be an int or a str")
        elif key in container._KEY_IDS_V7:
            raise ubpe.CorruptDataError("written by name")
        if key in d:
            raise ubpe.CorruptDataError("appears twice")
        d[key] = value
    return d


_KEYS = st.one_of(st.integers(-2, len(container.KEYS_V7) + 1), st.sampled_from([True, False, 1.0, 0.0, None, b"n"]),
                  st.sampled_from(["dtype", "n", "user", "x"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_KEYS, st.integers(0, 3)), max_size=8))
def test_v7_map_matches_its_definition(pairs):
    # the one-comprehension usual case must accept exactly what the loop accepts (a bool or a
    # float key equal to an int, a key twice, an int out of the table: refused the same way)
    try:
        want = _v7_map_reference(pairs)
    except ubpe.CorruptDataError as e:
        with pytest.raises(ubpe.CorruptDataError) as got:
            container._v7_map(pairs)
        assert str(e).split(" (")[0].split("number ")[-1] in str(got.value)
        return
    got = container._v7_map(pairs)
    assert got == want and list(got) == list(want)
