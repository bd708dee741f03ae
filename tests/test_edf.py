"""EDF, EDF+ and BDF files (issue 30): read, compressed and written back byte for byte; malformed
headers name their field. Real files: pyedflib's test data (its wheel ships them), read by
pyedflib too to cross-check the samples ubpe reads."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import ubpe
from ubpe import edf
from ubpe import io as uio
from ubpe.cli import main

PYEDFLIB = importlib.util.find_spec("pyedflib")
PYEDFLIB_DATA = (pathlib.Path(PYEDFLIB.origin).parent / "tests" / "data") if PYEDFLIB else None
REAL_FILES = sorted(PYEDFLIB_DATA.glob("*.[eb]df")) if PYEDFLIB_DATA and PYEDFLIB_DATA.is_dir() else []


def field(text: str | bytes, width: int) -> bytes:
    raw = text.encode("ascii") if isinstance(text, str) else text
    assert len(raw) <= width
    return raw + b" " * (width - len(raw))


def tal(onset: float, text: str = "") -> bytes:
    """An EDF+ time-stamped annotation list: the record's time keeping, then one annotation."""
    out = f"+{onset:g}".encode() + b"\x14\x14\x00"
    if text:
        out += f"+{onset + 0.25:g}".encode() + b"\x14" + text.encode() + b"\x14\x00"
    return out


def edf_file(signals: list[np.ndarray], spr: list[int], *, bdf: bool = False, labels: list[str] | None = None,
             annotations: list[bytes] | None = None, annotation_spr: int = 0, tail: bytes = b"",
             records: int | None = None, reserved: str = "EDF+C", patient: bytes = b"X X X X") -> bytes:
    """An EDF (or BDF) file: ``signals[i]`` of ``spr[i]`` samples per record, and optionally an
    annotation signal of ``annotation_spr`` samples per record holding ``annotations[r]``."""
    width = 3 if bdf else 2
    n = len(signals[0]) // spr[0]
    labels = list(labels or [f"ch{i}" for i in range(len(signals))])
    spr = list(spr)
    if annotations is not None:
        labels.append("BDF Annotations" if bdf else "EDF Annotations")
        spr.append(annotation_spr)
    ns = len(spr)
    head = (field(b"\xffBIOSEMI" if bdf else b"0", 8) + field(patient, 80) + field("Startdate X", 80)
            + field("01.02.03", 8) + field("04.05.06", 8) + field(str(256 * (ns + 1)), 8) + field(reserved, 44)
            + field(str(n if records is None else records), 8) + field("1", 8) + field(str(ns), 4))
    lo, hi = -(1 << (8 * width - 1)), (1 << (8 * width - 1)) - 1
    columns = [[field(label, 16) for label in labels], [field("AgAgCl", 80)] * ns, [field("uV", 8)] * ns,
               [field("-3200", 8)] * ns, [field("3200", 8)] * ns, [field(str(lo), 8)] * ns, [field(str(hi), 8)] * ns,
               [field("HP:0.1Hz", 80)] * ns, [field(str(s), 8) for s in spr], [field("", 32)] * ns]
    head += b"".join(b"".join(c) for c in columns)
    data = b""
    for r in range(n):
        for i, s in enumerate(spr):
            if i < len(signals):
                chunk = np.asarray(signals[i][r * s:(r + 1) * s], dtype="<i4")
                data += (chunk.astype("<i2").tobytes() if width == 2
                         else np.ascontiguousarray(chunk.reshape(-1, 1).view(np.uint8)[:, :3]).tobytes())
            else:
                text = annotations[r]
                assert len(text) <= s * width
                data += text + b"\x00" * (s * width - len(text))
    return head + data + tail


def some_signals(rng: np.random.Generator, records: int, spr: list[int], scale: float = 300) -> list[np.ndarray]:
    return [np.round(np.cumsum(rng.normal(0, scale / 10, records * s))).clip(-30000, 30000).astype(np.int32)
            for s in spr]


def round_trip(raw: bytes, tmp_path: pathlib.Path, name: str = "night.edf", level: int = 2) -> bytes:
    """The file ``raw`` read, compressed (at ``level``), decompressed and written again: its bytes."""
    path = tmp_path / name
    path.write_bytes(raw)
    signal = uio.read_signal(path)
    data = ubpe.compress(signal.values, source=signal.source, level=level)
    out = tmp_path / ("back-" + name)
    uio.write_values(out, ubpe.decompress(data), source=ubpe.describe(data).source, overwrite=True)
    return out.read_bytes()


# ============================================================================ round trips


def test_signals_of_several_rates_and_annotations_come_back_byte_for_byte(tmp_path):
    rng = np.random.default_rng(1)
    records, spr = 20, [256, 128, 1, 256]
    notes = [tal(r, "lights off" if r == 3 else "") for r in range(records)]
    raw = edf_file(some_signals(rng, records, spr), spr, annotations=notes, annotation_spr=30)
    assert round_trip(raw, tmp_path) == raw
    values, rate, source = edf.read("x.edf", raw)
    assert values.shape == (records * sum(spr),) and values.dtype == np.int16 and rate is None
    assert any(key.startswith("notes") for key in source)  # the annotations as text, apart


def test_signals_of_one_rate_are_channels(tmp_path):
    rng = np.random.default_rng(2)
    sigs = some_signals(rng, 10, [200] * 3)
    raw = edf_file(sigs, [200] * 3, annotations=[tal(r) for r in range(10)], annotation_spr=8)
    values, rate, _ = edf.read("x.edf", raw)
    assert values.shape == (2000, 3) and rate == 200.0
    assert np.array_equal(values, np.stack(sigs, axis=1))
    assert round_trip(raw, tmp_path) == raw


def test_bdf_24_bit_samples_and_odd_bytes_come_back(tmp_path):
    rng = np.random.default_rng(3)
    spr = [100, 50]
    sigs = [(s * 200).clip(-(1 << 23), (1 << 23) - 1) for s in some_signals(rng, 6, spr)]
    sigs[0][:3] = [-(1 << 23), (1 << 23) - 1, -1]
    raw = edf_file(sigs, spr, bdf=True, reserved="24BIT", tail=b"\x07" * 5, patient=b"Jos\xe9"[:3] + b"\x01 \x00")
    values, _, source = edf.read("x.bdf", raw)
    assert values.dtype == np.int32 and values.min() == -(1 << 23) and values.max() == (1 << 23) - 1
    assert round_trip(raw, tmp_path, "x.bdf") == raw


def test_plain_edf_without_annotations_and_a_running_record_count(tmp_path):
    rng = np.random.default_rng(4)
    raw = edf_file(some_signals(rng, 4, [64]), [64], reserved="", records=-1)
    values, _, _ = edf.read("x.edf", raw)
    assert values.shape == (256, 1)
    assert round_trip(raw, tmp_path) == raw


def test_the_command_line_round_trip(tmp_path, capsys):
    rng = np.random.default_rng(5)
    spr = [128, 32]
    raw = edf_file(some_signals(rng, 30, spr), spr, annotations=[tal(r) for r in range(30)], annotation_spr=10)
    (tmp_path / "night.edf").write_bytes(raw)
    assert main(["-q", "compress", str(tmp_path / "night.edf"), "-o", str(tmp_path / "night.ubpe")]) == 0
    assert main(["-q", "decompress", str(tmp_path / "night.ubpe"), "-o", str(tmp_path / "back.edf")]) == 0
    assert (tmp_path / "back.edf").read_bytes() == raw
    assert (tmp_path / "night.ubpe").stat().st_size < len(raw) // 2


def first_records(raw: bytes, count: int) -> bytes:
    """The EDF/BDF file ``raw`` cut to its first ``count`` data records (its header's record
    count changed to match): the same header fields, fewer samples."""
    header = int(raw[184:192])
    records = int(raw[236:244])
    record_bytes = (len(raw) - header) // records
    return (raw[:236] + f"{count:<8d}".encode() + raw[244:header]) + raw[header:header + count * record_bytes]


def samples_seen_before(path: pathlib.Path) -> bool:
    """Whether an earlier file of REAL_FILES holds the same data records as ``path`` (pyedflib's
    test_legacy.edf is test_generator.edf's samples under a plain-EDF header)."""
    def records(p: pathlib.Path) -> bytes:
        raw = p.read_bytes()
        return raw[int(raw[184:192]):]

    return any(records(p) == records(path) for p in REAL_FILES[:REAL_FILES.index(path)])


@pytest.mark.skipif(not REAL_FILES, reason="pyedflib's test files are not installed")
@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.name)
def test_real_files_round_trip_and_match_pyedflib(path, tmp_path):
    import pyedflib

    raw = path.read_bytes()
    # a file whose samples an earlier one round-trips already: its own header, on 10 records
    kept = first_records(raw, 10) if samples_seen_before(path) else raw
    assert round_trip(kept, tmp_path, path.name, level=1) == kept  # (level 2's groups: test_groups.py)
    values, _, source = edf.read(path.name, raw)
    layout = edf.check_source(source)[2]
    reader = pyedflib.EdfReader(str(path))
    try:
        kept = [i for i in range(len(layout.spr)) if i not in layout.apart]
        plain = reader.filetype in (pyedflib.FILETYPE_EDF, pyedflib.FILETYPE_BDF)  # annotations are signals there
        theirs = [i for i in range(len(layout.spr)) if plain or i not in layout.apart]
        assert reader.signals_in_file == len(theirs)
        compared = 0
        for j, i in enumerate(theirs):
            if i not in kept:
                continue
            k = kept.index(i)
            start = sum(layout.records * layout.spr[h] for h in kept[:k])
            ours = values[:, k] if layout.uniform else values[start:start + layout.records * layout.spr[i]]
            assert np.array_equal(ours, reader.readSignal(j, digital=True))
            compared += 1
        assert compared == len(kept)
    finally:
        reader.close()


# ============================================================================ malformed headers


def good_file() -> bytes:
    return edf_file(some_signals(np.random.default_rng(0), 3, [10, 5]), [10, 5])


@pytest.mark.parametrize("start, value, match", [
    (0, b"1       ", "'version'"),
    (252, b"x   ", "'number of signals'"),
    (252, b"0   ", "'number of signals'"),
    (184, b"123     ", "'header bytes'"),
    (236, b"ten     ", "'number of data records'"),
    (236, b"9       ", "'number of data records'.*truncated"),
    (244, b"one     ", "'duration of a data record'"),
    (8, b"\xe9", "'patient'.*not ASCII"),
    (256 + 2 * (16 + 80 + 8 + 8 + 8 + 8 + 8 + 80), b"5.5     ", "'samples per data record' of signal 0"),
    (256 + 2 * (16 + 80 + 8 + 8 + 8), b"99999999", "'digital minimum' of signal 0"),
    (256 + 2 * (16 + 80 + 8), b"abc     ", "'physical minimum' of signal 0"),
])
def test_malformed_headers_name_their_field(start, value, match, tmp_path):
    raw = bytearray(good_file())
    raw[start:start + len(value)] = value
    path = tmp_path / "bad.edf"
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=match):
        uio.read_signal(path)


def test_truncated_and_overlong_files_are_refused(tmp_path):
    raw = good_file()
    path = tmp_path / "bad.edf"
    for data, match in [(raw[:200], "at least 256"), (raw[:700], "truncated"), (raw + b"\x00" * 3000, "after the last")]:
        path.write_bytes(data)
        with pytest.raises(ValueError, match=match):
            uio.read_signal(path)


def test_damaged_source_maps_are_corrupt_data():
    raw = edf_file(some_signals(np.random.default_rng(0), 4, [10]), [10], annotations=[tal(r) for r in range(4)],
                   annotation_spr=6)
    values, _, source = edf.read("x.edf", raw)
    assert edf.to_bytes(values, "x.edf", source) == raw
    for damaged, match in [({**source, "header": source["header"][:-1]}, "stored header"),
                           ({**source, "extra": 1}, "unexpected"),
                           ({**source, "notes": b"ubpe\x01junk"}, None),
                           ({k: v for k, v in source.items() if k != "notes"}, "shape")]:
        with pytest.raises((ubpe.CorruptDataError, ValueError), match=match):
            edf.to_bytes(values, "x.edf", damaged)
    with pytest.raises(ValueError, match="do not fit"):
        edf.to_bytes(values[:-1], "x.edf", source)
