"""Blocked containers: blocks of frames that share one model, coded and decoded on several
threads, decoded in part (spec: docs/format.md, "Blocks")."""

from __future__ import annotations

import io
import random
import tracemalloc
import warnings

import numpy as np
import pytest

import ubpe
from common import pack_any, pack_block, unpack_any, unpack_block, assert_same_array, check_roundtrip, check_truncations, mutate
from ubpe import compress, compress_to, decompress, decompress_to, describe
from ubpe.planner.settings import configured

BLOCK = 4096  # values per block in these tests: small inputs, many blocks


def walk(n: int, seed: int = 0, dtype=np.int16, channels: int = 0, step: int = 1) -> np.ndarray:
    """A random walk (smooth enough for every predictor), ``(n,)`` or ``(n, channels)``."""
    rng = np.random.default_rng(seed)
    shape = (n, channels) if channels else (n,)
    return (np.cumsum(rng.integers(-3, 4, shape), axis=0) * step).astype(dtype)


def unpack(data: bytes) -> dict:
    """A container's named fields (ubpe.format.container.fields_of; its blocks stay bytes)."""
    return unpack_any(data)


def pack(fields: dict) -> bytes:
    return pack_any(fields)


def _block_count(d: dict, b: int) -> int:
    """Values in block ``b`` of a container's named fields ``d``."""
    frames, channels = d["shape"][0], int(np.prod(d["shape"][1:]))
    return (min((b + 1) * d["block"], frames) - b * d["block"]) * channels


def block_of(data: bytes, b: int) -> dict:
    """The named fields of block ``b`` of a blocked container."""
    d = unpack(data)
    return unpack_block(d["blocks"][b], _block_count(d, b))


def with_block(data: bytes, b: int, edit) -> bytes:
    """``data`` with block ``b``'s map replaced by ``edit(map)``."""
    d = unpack(data)
    count = _block_count(d, b)
    blk = unpack_block(d["blocks"][b], count)
    d["blocks"][b] = pack_block(edit(blk), count)
    return pack(d)


@pytest.fixture(scope="module")
def signal() -> tuple[np.ndarray, bytes]:
    x = walk(6 * BLOCK + 123, seed=1)
    return x, compress(x, block_size=BLOCK, level=1, threads=1)


# ---------------------------------------------------------------------------- layout of the bytes


def test_an_input_beyond_one_block_is_cut_into_blocks_of_frames(signal):
    x, data = signal
    info = describe(data)
    assert info.version == 1 and info.blocks == 7 and info.block_frames == BLOCK
    assert info.n_values == x.size and len(info.coders) == 7
    d = unpack(data)
    assert sorted(d) == sorted(["dtype", "shape", "alphabet", "model", "block", "blocks"])
    assert all(isinstance(b, bytes) for b in d["blocks"])


def test_a_block_of_channels_holds_block_size_values():
    x = walk(3 * BLOCK, seed=2, channels=3)
    info = describe(compress(x, block_size=BLOCK, level=1))
    assert info.block_frames == BLOCK // 3 and info.blocks == -(-x.shape[0] // (BLOCK // 3))


@pytest.mark.parametrize("n", [0, 1, BLOCK - 1, BLOCK])
def test_inputs_of_at_most_one_block_are_written_as_before(n):
    """Same bytes as without blocks (the one-stream form)."""
    x = walk(n, seed=3)
    data = compress(x, block_size=BLOCK, level=1)
    assert data == compress(x, block_size=0, level=1)
    assert "blocks" not in unpack(data)


def test_the_default_block_size_leaves_inputs_up_to_2_20_values_alone():
    from ubpe.api.writer import DEFAULT_BLOCK_SIZE

    assert DEFAULT_BLOCK_SIZE == 1 << 20  # (as compress's docstring says)
    x = walk(50_000, seed=4)
    assert compress(x, level=1) == compress(x, block_size=0, level=1)


def test_block_size_zero_never_cuts(signal):
    x, _ = signal
    assert describe(compress(x, block_size=0, level=1)).blocks == 1


@pytest.mark.parametrize("level", [1, 2])
def test_the_bytes_do_not_depend_on_the_number_of_threads(level):
    x = walk(5 * BLOCK, seed=5, channels=2)
    one = compress(x, block_size=BLOCK, level=level, threads=1)
    assert compress(x, block_size=BLOCK, level=level, threads=2) == one
    assert compress(x, block_size=BLOCK, level=level, threads=5) == one
    for threads in (1, 2, 5):
        assert_same_array(decompress(one, threads=threads), x)


@pytest.mark.parametrize("level", [1, 2])
def test_one_stream_bytes_do_not_depend_on_the_threads_that_plan_it(level):
    """The planner measures chains side by side (screening beyond Settings.screen_sample values included)."""
    x = walk(70_000, seed=28, channels=2)
    one = compress(x, block_size=0, level=level, threads=1)
    assert compress(x, block_size=0, level=level, threads=2) == one
    assert describe(one).blocks == 1


# ---------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("level", [1, 2])
@pytest.mark.parametrize("dtype", ["|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", ">i2", ">u8"])
def test_round_trip_of_every_integer_dtype(dtype, level):
    x = walk(3 * BLOCK + 7, seed=6, dtype=np.dtype(dtype), step=1 if np.dtype(dtype).itemsize == 1 else 37)
    data = compress(x, block_size=BLOCK, level=level)
    assert describe(data).blocks == 4
    assert_same_array(decompress(data), x)


@pytest.mark.parametrize("level", [1, 2])
def test_round_trip_of_frames_and_channels(level):
    x = walk(2 * BLOCK, seed=7, dtype=np.int32, channels=4) * 1000
    data = compress(x, block_size=BLOCK, level=level)
    assert describe(data).blocks == 8 and describe(data).channels == 4
    assert_same_array(decompress(data), x)


def test_round_trip_of_three_dimensions_bool_and_floats():
    x3 = walk(2 * BLOCK, seed=8, channels=6).reshape(-1, 2, 3)
    assert_same_array(decompress(compress(x3, block_size=BLOCK, level=1)), x3)
    bits = walk(3 * BLOCK, seed=9) % 2 == 0
    assert_same_array(decompress(compress(bits, block_size=BLOCK, level=1)), bits)
    grid = walk(3 * BLOCK, seed=10).astype(np.float32) * 0.25
    data = compress(grid, block_size=BLOCK, level=1)
    assert describe(data).front[0]["stage"] == "floatgrid"
    assert decompress(data).tobytes() == grid.tobytes()
    wave = np.sin(np.arange(3 * BLOCK) / 40.0)
    lossy = compress(wave, step=0.001, block_size=BLOCK, level=1)
    assert describe(lossy).lossy and np.abs(decompress(lossy) - wave).max() <= 0.0005 + 1e-12


@pytest.mark.parametrize("predictor", ["delta1+adaptive", "lpc", "rank+delta1", "decorrelate+lpc"])
def test_every_block_restarts_its_predictor(predictor):
    """Each block is put through the chain on its own: decoding one block needs no other."""
    x = walk(4 * BLOCK, seed=11, channels=2) * 3
    data = compress(x, block_size=BLOCK, level=1, predictor=predictor)
    fronts = [block_of(data, b)["front"] for b in range(describe(data).blocks)]
    assert [e["stage"] for e in fronts[0]] == [name.rstrip("1") for name in predictor.split("+")]
    assert all(len(f) == len(fronts[0]) for f in fronts)
    assert_same_array(decompress(data), x)
    b = 2  # the other blocks garbage: block 2 still decodes
    d = unpack(data)
    d["blocks"] = [raw if i == b else b"\x00" for i, raw in enumerate(d["blocks"])]
    frames = BLOCK // 2
    assert_same_array(decompress(pack(d), start=b * frames, stop=(b + 1) * frames), x[b * frames:(b + 1) * frames])


def test_values_outside_the_sample_join_the_alphabet():
    """The model is fitted on a sample; the blocks' other values extend its alphabet (the merges
    renumbered), so none needs an escape."""
    x = np.tile(np.array([3, -1, 4, 1, 5, 9, 2, 6], np.int16), 4 * BLOCK)
    x[1000:1100] = np.arange(20_000, 20_100)  # far from every sampled value (between two windows)
    with configured(sample=2048):
        data = compress(x, block_size=BLOCK, level=1, delta=0)
    info = describe(data)
    assert info.escapes == 0 and info.n_merges > 0 and info.alphabet_size == 8 + 100
    assert_same_array(decompress(data), x)


def test_with_n_tokens_values_outside_the_sample_are_escaped():
    """A vocabulary of n_tokens stays that size: the values the sample did not see are escaped."""
    x = np.tile(np.array([3, -1, 4, 1, 5, 9, 2, 6], np.int16), 4 * BLOCK)
    x[1000:1100] = np.arange(20_000, 20_100)
    with configured(sample=2048):
        data = compress(x, block_size=BLOCK, level=1, delta=0, n_tokens=20)
    info = describe(data)
    assert info.escapes == 100 and info.alphabet_size == 8 and info.alphabet_size + info.n_merges <= 20
    assert_same_array(decompress(data), x)


@pytest.mark.slow
def test_beyond_the_vocabulary_limit_values_are_escaped():
    """Blocks whose values would take the alphabet beyond the format's 2**24 tokens keep the
    sample's alphabet; every other value is escaped."""
    from ubpe.coders import MAX_VOCAB

    x = np.arange(MAX_VOCAB + 4 * BLOCK, dtype=np.int32) * 3
    with configured(sample=2048):
        data = compress(x, level=1, predictor="none", block_size=1 << 20)
    info = describe(data)
    assert info.blocks > 1 and info.alphabet_size == 2048 and info.escapes == x.size - 2048
    assert_same_array(decompress(data), x)


def test_the_model_is_fitted_on_sample_values():
    """Distinct values and a fixed vocabulary (no values added to the alphabet): the alphabet is
    the sample's, Settings.sample values, and every other value is escaped."""
    x = np.arange(16 * BLOCK, dtype=np.int32)
    with configured(sample=4 * BLOCK), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # distinct values: no pair to merge
        data = compress(x, block_size=BLOCK, level=1, predictor="none", n_tokens=4 * BLOCK + 8)
    info = describe(data)
    assert info.alphabet_size == 4 * BLOCK and info.escapes == 12 * BLOCK
    assert_same_array(decompress(data), x)


def test_forced_front_ends_and_n_tokens_apply_to_every_block(signal):
    x, _ = signal
    data = compress(x, block_size=BLOCK, level=1, delta=2, n_tokens=300)
    info = describe(data)
    assert info.delta == 2 and info.alphabet_size + info.n_merges <= 300
    assert all(block_of(data, b)["front"] == [{"stage": "delta", "order": 2}] for b in range(info.blocks))
    assert_same_array(decompress(data), x)


def test_blocks_cost_little_ratio():
    x = walk(16 * BLOCK, seed=14)
    whole = len(compress(x, block_size=0, level=1))
    blocked = len(compress(x, block_size=4 * BLOCK, level=1))
    assert blocked < 1.02 * whole


# ---------------------------------------------------------------------------- partial decoding


@pytest.mark.parametrize("start, stop", [
    (0, None), (None, 10), (BLOCK - 1, BLOCK + 1), (BLOCK, 2 * BLOCK), (5, 3 * BLOCK + 5),
    (-200, None), (-(6 * BLOCK + 123), -1), (6 * BLOCK, 10 ** 9), (100, 100), (300, 200), (-10 ** 9, 10 ** 9),
])
def test_a_frame_range_decodes_to_the_slice(signal, start, stop):
    x, data = signal
    assert_same_array(decompress(data, start=start, stop=stop), x[start:stop])
    assert_same_array(decompress(data, start=start, stop=stop, threads=2), x[start:stop])


def test_a_frame_range_of_channels_decodes_to_the_slice():
    x = walk(3 * BLOCK, seed=15, dtype=np.uint16, channels=3)
    data = compress(x, block_size=BLOCK, level=1)
    assert_same_array(decompress(data, start=1000, stop=5000), x[1000:5000])


def test_a_frame_range_of_one_stream_is_the_slice_of_it():
    x = walk(1000, seed=16, channels=2)
    assert_same_array(decompress(compress(x), start=10, stop=-10), x[10:-10])
    with pytest.raises(ValueError, match="0-d"):
        decompress(compress(np.int16(5)), start=0)


def test_only_the_blocks_of_the_range_are_decoded(signal):
    x, data = signal
    d = unpack(data)
    d["blocks"][0] = b"garbage"
    d["blocks"][6] = b"garbage"
    damaged = pack(d)
    assert_same_array(decompress(damaged, start=BLOCK, stop=6 * BLOCK), x[BLOCK:6 * BLOCK])
    with pytest.raises(ubpe.CorruptDataError, match="block 0"):
        decompress(damaged)


@pytest.mark.parametrize("kwargs", [{"threads": 0}, {"threads": -1}, {"block_size": -1}])
def test_arguments_are_checked(kwargs):
    with pytest.raises(ValueError):
        compress(walk(100), **kwargs)


def test_decompress_arguments_are_checked(signal):
    _, data = signal
    with pytest.raises(ValueError):
        decompress(data, threads=0)
    with pytest.raises(TypeError):
        decompress(data, start=1.5)


# ---------------------------------------------------------------------------- corruption


def test_a_corrupt_block_is_named(signal):
    _, data = signal

    def flip(blk):
        payload = bytearray(blk["stream"]["payload"])
        payload[len(payload) // 2] ^= 0x10
        blk["stream"]["payload"] = bytes(payload)
        return blk

    with pytest.raises(ubpe.CorruptDataError, match=r"block 3 \(frames 12288 to 16384\)"):
        decompress(with_block(data, 3, flip), threads=2)


def test_swapped_blocks_fail_their_checksum(signal):
    """A block's CRC covers its first frame: equal blocks in the wrong place are refused."""
    _, data = signal
    d = unpack(data)
    d["blocks"][1], d["blocks"][2] = d["blocks"][2], d["blocks"][1]
    with pytest.raises(ubpe.CorruptDataError, match="block 1 .*checksum"):
        decompress(pack(d), threads=1)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(block=0), "block"),
    (lambda d: d.update(block=BLOCK + 1), "block 0 "),  # (its stream's n, left out, is the 4097 values)
    (lambda d: d.update(block=2 * BLOCK), "4 blocks"),
    (lambda d: d.update(block=10 ** 12), "block"),
    (lambda d: d.update(block="4096"), "block"),
    (lambda d: d["blocks"].pop(), "7 blocks"),
    (lambda d: d["blocks"].append(d["blocks"][0]), "7 blocks"),
    (lambda d: d.update(blocks=b"".join(d["blocks"])), "blocks"),
    (lambda d: d["blocks"].__setitem__(4, [1, 2]), "block 4"),
    (lambda d: d.update(crc=0), "crc"),
    (lambda d: d.update(stream={}), "stream"),
    (lambda d: d.update(front=[{"stage": "delta", "order": 1}]), "front"),
    (lambda d: d.update(shape=[]), "0-d"),
    (lambda d: d.update(shape=[0]), "at least one"),
    (lambda d: d.pop("block"), "missing"),
])
def test_the_block_index_is_checked(signal, edit, message):
    _, data = signal
    d = unpack(data)
    edit(d)
    with pytest.raises(ubpe.CorruptDataError, match=message):
        decompress(pack(d))


@pytest.mark.parametrize("edit, message", [
    (lambda b: b.update(extra=1), "extra"),
    (lambda b: b.pop("crc"), "crc"),
    (lambda b: b.update(crc=-1), "crc"),
    (lambda b: b.update(stream=[1]), "stream"),
    (lambda b: b.update(front=[{"stage": "delta", "order": 9}]), "order"),
    (lambda b: b.update(front=[{"stage": "lpc"}]), "lpc"),
    (lambda b: b["stream"].update(n=10 ** 9), "'n'"),
    (lambda b: b.update(esc=b"\x01\xff\xff\x7f\x00"), "esc"),
])
def test_each_block_is_checked_and_named(signal, edit, message):
    _, data = signal

    def apply(blk):
        edit(blk)
        return blk

    with pytest.raises(ubpe.CorruptDataError, match=f"block 5 .*{message}"):
        decompress(with_block(data, 5, apply))
    with pytest.raises(ubpe.CorruptDataError, match="block 5"):
        describe(with_block(data, 5, apply)) if message not in ("'n'", "esc") else decompress(
            with_block(data, 5, apply), start=5 * BLOCK, stop=5 * BLOCK + 1)


def test_a_block_with_a_predictor_for_another_length_is_refused():
    """Per-block parameters (LPC orders per LPC block) are checked against the block's frames."""
    x = walk(3 * BLOCK, seed=17)
    data = compress(x, block_size=BLOCK, level=1, predictor="lpc")
    # block 0's own predictor, said to be for LPC blocks of a quarter of its frames: one order
    # where four are due (another block's params need not differ: level 1 may fit them alike)
    (entry,) = block_of(data, 0)["front"]
    other = [{**entry, "channels": [{**entry["channels"][0], "block": BLOCK // 4}]}]
    with pytest.raises(ubpe.CorruptDataError, match="block 0"):
        decompress(with_block(data, 0, lambda b: {**b, "front": other}))


def test_truncated_blocked_containers_are_refused():
    x = walk(3 * 256, seed=18)
    data = compress(x, block_size=256, level=1)
    assert describe(data).blocks == 3
    assert check_truncations(data) == len(data)


def test_mutated_blocked_containers_decode_exactly_or_raise(signal):
    x, data = signal
    rng = random.Random(19)
    for i in range(400):
        if i % 2:
            bad = mutate(data, rng)
        else:  # inside one block's map
            b = rng.randrange(7)
            d = unpack(data)
            d["blocks"][b] = mutate(d["blocks"][b], rng)
            bad = pack(d)
        try:
            got = decompress(bad)
        except (ubpe.CorruptDataError, ubpe.FormatVersionError):
            continue
        assert_same_array(got, x)


# ---------------------------------------------------------------------------- streaming


@pytest.mark.parametrize("channels", [0, 3])
def test_compress_to_writes_the_same_bytes_from_a_memory_map(tmp_path, channels):
    x = walk(5 * BLOCK + 11, seed=20, dtype=np.dtype(">i4"), channels=channels)
    path = tmp_path / "x.npy"
    np.save(path, x)
    mapped = np.load(path, mmap_mode="r")
    with open(tmp_path / "x.ubpe", "wb") as f:
        written = compress_to(f, mapped, block_size=BLOCK, level=1, threads=2)
    data = (tmp_path / "x.ubpe").read_bytes()
    assert written == len(data) and data == compress(x, block_size=BLOCK, level=1)
    assert_same_array(decompress(data), x)


def test_compress_to_writes_one_stream_containers_too(tmp_path):
    out = io.BytesIO()
    x = walk(1000, seed=21)
    assert compress_to(out, x, level=1) == len(out.getvalue())
    assert out.getvalue() == compress(x, level=1)


def test_compress_to_holds_a_few_blocks_in_memory(tmp_path):
    """A memory-mapped input is read block by block: the peak of allocations does not grow with
    the input (the in-memory path holds every block's front-end output at once)."""

    def peak(fn) -> int:
        tracemalloc.start()
        try:
            fn()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    with configured(sample=BLOCK):  # the model fitted on one block's values
        compress(walk(4 * BLOCK, dtype=np.int32), block_size=BLOCK, level=1)  # compiled before measuring
        peaks = {}
        for blocks in (32, 256):
            x = walk(blocks * BLOCK, seed=22, dtype=np.int32)
            np.save(tmp_path / f"{blocks}.npy", x)
            mapped = np.load(tmp_path / f"{blocks}.npy", mmap_mode="r")
            with open(tmp_path / f"{blocks}.ubpe", "wb") as out:  # (a BytesIO's copies as it grows would count)
                peaks[blocks] = peak(lambda: compress_to(out, mapped, block_size=BLOCK, level=1, threads=2))
        in_memory = peak(lambda: compress(mapped, block_size=BLOCK, level=1, threads=2))
    # the input grows by 3.7 MB
    assert peaks[256] < peaks[32] + x.nbytes / 4 and x.nbytes < in_memory


@pytest.mark.parametrize("fmt", ["npy", "npy-fortran", "raw"])
def test_the_command_line_streams_the_same_bytes(tmp_path, fmt):
    """``ubpe compress --stream`` (automatic for large .npy and raw files) reads the input
    memory-mapped and writes block by block: the same container as reading it whole."""
    from ubpe import cli
    from ubpe import io as uio

    x = walk(3 * BLOCK + 5, seed=23, dtype=np.dtype("<u2"), channels=0 if fmt == "raw" else 2)
    path = tmp_path / ("x.raw" if fmt == "raw" else "x.npy")
    if fmt == "raw":
        x.tofile(path)
    else:
        np.save(path, np.asfortranarray(x) if fmt == "npy-fortran" else x)
    extra = ["--dtype", "<u2"] if fmt == "raw" else []
    mapped = uio.map_signal(path, dtype="<u2" if fmt == "raw" else None)
    assert isinstance(mapped.values, np.memmap) and mapped.source == uio.read_signal(path, dtype="<u2" if fmt == "raw" else None).source
    for name, flags in (("whole.ubpe", []), ("streamed.ubpe", ["--stream"])):
        assert cli.main(["compress", str(path), "-o", str(tmp_path / name), "-q", "--level", "1",
                         "--block-size", str(BLOCK), *extra, *flags]) == 0
    streamed = (tmp_path / "streamed.ubpe").read_bytes()
    assert streamed == (tmp_path / "whole.ubpe").read_bytes()
    assert describe(streamed).blocks > 1 and describe(streamed).source["format"] == fmt[:3]
    for flags in ([], ["--stream"]):
        out = tmp_path / f"y{len(flags)}.{fmt[:3]}"
        assert cli.main(["decompress", str(tmp_path / "streamed.ubpe"), "-o", str(out), "-q", *flags]) == 0
        assert out.read_bytes() == path.read_bytes()


def test_decompress_to_writes_the_values_block_by_block():
    x = walk(5 * BLOCK + 3, seed=25, dtype=np.dtype(">i4"), channels=2)
    data = compress(x, block_size=BLOCK, level=1)
    out = io.BytesIO()
    seen = []
    got = decompress_to(out, io.BytesIO(data), threads=2,
                                  header=lambda dtype, shape, source: seen.append((dtype, shape)) or b"H")
    assert got == seen[0] == (x.dtype, x.shape)
    assert out.getvalue() == b"H" + x.tobytes()
    one = walk(1000, seed=26)  # a one-stream container: decoded whole, written the same way
    out = io.BytesIO()
    assert decompress_to(out, io.BytesIO(compress(one))) == (one.dtype, one.shape)
    assert out.getvalue() == one.tobytes()


def test_decompress_to_names_a_corrupt_block_and_refuses_what_follows(signal):
    _, data = signal
    bad = with_block(data, 4, lambda b: {**b, "crc": (b["crc"] + 1) % 2**32})
    with pytest.raises(ubpe.CorruptDataError, match="block 4 .*checksum"):
        decompress_to(io.BytesIO(), io.BytesIO(bad))
    with pytest.raises(ubpe.CorruptDataError, match="other data"):
        decompress_to(io.BytesIO(), io.BytesIO(data + b"\x00"))
    for cut in (len(data) - 1, len(data) - 3000, len(data) // 2):
        with pytest.raises(ubpe.CorruptDataError):
            decompress_to(io.BytesIO(), io.BytesIO(data[:cut]))


def test_decompress_to_holds_a_few_blocks_in_memory(tmp_path):
    """Read from a file, a blocked container is decoded block by block: the peak of allocations
    (the model's tables, a few blocks) does not grow with the values."""
    peaks = {}
    for blocks in (32, 256):
        x = walk(blocks * BLOCK, seed=27, dtype=np.int32)
        data = compress(x, block_size=BLOCK, level=1)
        (tmp_path / "x.ubpe").write_bytes(data)
        decompress_to(io.BytesIO(), io.BytesIO(data))  # compiled before measuring
        tracemalloc.start()
        try:
            with open(tmp_path / "x.ubpe", "rb") as src, open(tmp_path / "x.raw", "wb") as out:
                decompress_to(out, src, threads=2)
            peaks[blocks] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert (tmp_path / "x.raw").read_bytes() == x.tobytes()
    # 8 times the values (224 more blocks), and the peak grows by less than four blocks: with two
    # threads, how many blocks are in flight at the peak depends on the scheduling (on a loaded
    # machine it grew by about 1.7 blocks, at every commit since the test was written)
    assert peaks[256] < peaks[32] + 4 * BLOCK * x.itemsize


# ---------------------------------------------------------------------------- threads


def _kernels() -> dict[str, object]:
    """Every compiled kernel (numba dispatcher) of ubpe._kernels, by module and name."""
    import importlib
    import pkgutil

    from numba.core.registry import CPUDispatcher

    import ubpe._kernels

    found = {}
    for info in pkgutil.iter_modules(ubpe._kernels.__path__, "ubpe._kernels."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == module.__name__:
                found[f"{info.name}.{name}"] = obj
    return found


def test_every_kernel_releases_the_gil():
    """What makes threads pay: coding and decoding a block runs in kernels compiled with
    ``nogil=True``, so the threads of compress and decompress run side by side.
    The kernels a blocked level-2 container's coding and decoding ran are among them."""
    x = walk(65536, seed=24)
    kwargs = dict(block_size=65536 // 2, level=2, predictor="none", threads=2)
    data = compress(x, **kwargs)
    assert describe(data).coders == ("cms2", "cms2")
    assert_same_array(decompress(data, threads=2), x)
    kernels = _kernels()
    assert len(kernels) > 20
    held = sorted(name for name, k in kernels.items() if not k.targetoptions.get("nogil"))
    assert held == []
    ran = {name for name, k in kernels.items() if k.signatures}
    assert any(name.startswith("ubpe._kernels.cmsignal2.") for name in ran)  # the block coder's


# ---------------------------------------------------------------------------- a given model


@pytest.fixture(scope="module")
def shared_model():
    from ubpe.signal import delta
    from ubpe.tokenizer import Tokenizer

    return Tokenizer(None, 120).fit(delta(walk(20_000, seed=29), 1))


@pytest.mark.parametrize("embed", [True, False])
def test_a_given_model_codes_every_block(shared_model, embed):
    """A fleet's shared model over a long recording: the blocks use it as it is, embedded or
    referenced by its digest; a value outside its alphabet is escaped."""
    x = walk(6 * BLOCK, seed=30)
    x[5000] += 3000  # a jump: its difference is outside the model's alphabet
    kwargs = dict(tokenizer=shared_model, embed=embed, delta=1, block_size=BLOCK, level=1)
    data = compress(x, threads=1, **kwargs)
    assert compress(x, threads=2, **kwargs) == data
    info = describe(data)
    # escaped: the jump's two differences, and blocks' first values (each block restarts the delta)
    assert info.blocks == 6 and info.embedded == embed and 2 <= info.escapes <= 2 + 6
    assert info.digest == (None if embed else shared_model.model.digest)
    assert_same_array(decompress(data, tokenizer=None if embed else shared_model), x)
    assert_same_array(decompress(data, tokenizer=None if embed else shared_model, start=BLOCK - 3, stop=BLOCK + 3),
                      x[BLOCK - 3:BLOCK + 3])
    if not embed:
        with pytest.raises(ubpe.CorruptDataError, match="references its model"):
            decompress(data)


def test_a_given_model_without_escapes_refuses_a_value_outside_it(shared_model):
    x = walk(3 * BLOCK, seed=31)
    x[2 * BLOCK + 10] += 3000  # in a block the sample does not see
    with pytest.raises(ValueError):
        compress(x, tokenizer=shared_model, delta=1, block_size=BLOCK, level=1, escape=False)


@pytest.mark.parametrize("mode", ["classic", "sequence"])
def test_a_given_model_s_merges_code_the_blocks(mode):
    from ubpe.tokenizer import Tokenizer

    pattern = np.array([3, -1, 4, 1, 5, 9, 2, 6, 5, 3, 5], np.int16)
    tok = Tokenizer(None, 20, mode=mode).fit(np.tile(pattern, 50))
    x = np.tile(pattern, 3 * BLOCK // len(pattern) + 1)
    data = compress(x, tokenizer=tok, delta=0, block_size=BLOCK, level=1)
    info = describe(data)
    assert info.blocks == 4 and info.n_merges > 0 and info.n_tokens < x.size / 4
    assert info.method == ("replay" if mode == "classic" else tok.model.method)
    assert_same_array(decompress(data), x)


def test_max_output_size_applies_to_the_frames_asked_for(signal):
    x, data = signal
    cap = 3 * BLOCK * x.itemsize
    with pytest.raises(ubpe.CorruptDataError, match="max_output_size"):
        decompress(data, max_output_size=cap)
    assert_same_array(decompress(data, max_output_size=cap, start=BLOCK, stop=4 * BLOCK), x[BLOCK:4 * BLOCK])
    with pytest.raises(ubpe.CorruptDataError, match="max_output_size"):
        decompress(data, max_output_size=cap, start=BLOCK, stop=4 * BLOCK + 1)
    one = compress(x, block_size=0, level=1)  # one stream: decoded whole, whatever the range
    with pytest.raises(ubpe.CorruptDataError, match="frames 0 to 10 need .* bytes decoded"):
        decompress(one, max_output_size=cap, start=0, stop=10)


def test_one_byte_values_are_cut_into_larger_blocks_by_default():
    """Text and bytes keep one adaptive stream up to DEFAULT_BYTE_BLOCK_SIZE (blocks restart the
    coder's learning: 5 % on 2.5 MB of text); wider values are cut at DEFAULT_BLOCK_SIZE."""
    from ubpe.api.writer import DEFAULT_BLOCK_SIZE, DEFAULT_BYTE_BLOCK_SIZE

    assert DEFAULT_BYTE_BLOCK_SIZE == 1 << 26  # (as compress's docstring says)
    n = DEFAULT_BLOCK_SIZE + 4096
    rng = np.random.default_rng(2)
    text = rng.integers(97, 100, n).astype(np.uint8)
    assert ubpe.describe(ubpe.compress(text, level=1)).blocks == 1
    assert ubpe.describe(ubpe.compress(text, level=1, block_size=DEFAULT_BLOCK_SIZE)).blocks == 2
    wide = text.astype(np.int16)
    assert ubpe.describe(ubpe.compress(wide, level=1)).blocks == 2


def test_the_blocked_form_plans_with_the_exhaustive_search():
    """The plan of the blocked form is made once, on a sample of a longer input: level 2's lean
    search (sized for one input's own cost) is not used there, but is for an input alone. So
    the lean search's settings change no byte of a blocked container."""
    x = np.random.default_rng(1).integers(-100, 100, 8 * BLOCK).astype(np.int16)  # static and cms2 within bytes
    blocked = check_roundtrip(x, level=2, block_size=BLOCK)
    check_roundtrip(x, level=2)
    with configured(lean_static_within=0.0):  # the lean search builds no static candidate
        assert compress(x, level=2, block_size=BLOCK) == blocked
        assert describe(compress(x, level=2)).coder == "cms2"
