"""CSV files as users have them: a header line, several columns, ``--column``, line numbers in
errors, and the header written back by ``ubpe decompress``."""

from __future__ import annotations

import numpy as np
import pytest

import ubpe
from ubpe import cli
from ubpe import io as uio


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def table(rows: int = 300, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.integers(-20, 21, (rows, 3)), axis=0)


@pytest.mark.parametrize("sep", [",", ";", "\t", " "])
def test_header_and_columns_by_name_and_index(tmp_path, sep):
    x = table(20)
    path = tmp_path / "t.csv"
    path.write_text("# exported\n" + sep.join(["time", "ecg", "resp"]) + "\n"
                    + "".join(sep.join(map(str, row)) + "\n" for row in x.tolist()))
    sig = uio.read_signal(path)
    assert sig.values.dtype == np.int64 and np.array_equal(sig.values, x)
    assert sig.source == {"format": "csv", "delimiter": sep, "columns": 3, "header": sep.join(["time", "ecg", "resp"])}
    for column in ("ecg", 1, "1"):
        one = uio.read_signal(path, column=column)
        assert np.array_equal(one.values, x[:, 1]) and one.source["column"] == 1
    assert np.array_equal(uio.read_values(path, fmt="csv"), x)


def test_header_detection_and_flat_line(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("value\n1\n2\n")  # a non-numeric first field: a header
    sig = uio.read_signal(path)
    assert sig.values.tolist() == [1, 2] and sig.source["header"] == "value"
    path.write_text("1.5,-2e3,nan\n4,5,6\n")  # numbers, floats included: no header
    assert uio.read_signal(path).values.shape == (2, 3) and "header" not in uio.read_signal(path).source


@pytest.mark.parametrize("text, column, exc, message", [
    ("a,b\n1,2\n3\n", None, ValueError, r"line 3: 1 fields, but the header has 2"),
    ("1,2\n3,4\n5,6,7\n", None, ValueError, r"line 3: 3 fields, but line 1 has 2"),
    ("a,b\n1,2\n3,x\n", None, ValueError, r"line 3, column 'b': 'x' is not a number"),
    ("a,b\n1,2\n3,x\n", "a", None, None),  # the bad field is in a column not read
    ("1,2\n3,\n", None, ValueError, r"line 2, column 1: empty field"),
    ("a,b\n1,2\n", "c", ValueError, r"no column named 'c' \(columns: 'a', 'b'\)"),
    ("1,2\n3,4\n", "c", ValueError, r"no column named 'c' \(columns: none"),
    ("a,b\n1,2\n", 2, ValueError, r"column index 2 is out of range: the file has 2 column\(s\)"),
    ("a,b\n1,2\n", -1, ValueError, r"column index -1 is out of range"),
    ("a,b\n1,2\n", 1.5, TypeError, r"column must be a name"),
])
def test_errors_name_the_line_and_column(tmp_path, text, column, exc, message):
    path = tmp_path / "t.csv"
    path.write_text(text)
    if exc is None:
        assert uio.read_values(path, column=column).tolist() == [1, 3]
        return
    with pytest.raises(exc, match=message) as info:
        uio.read_values(path, column=column)
    assert exc is TypeError or str(path) in str(info.value)


def test_column_only_for_csv(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.arange(3))
    with pytest.raises(ValueError, match="CSV files only"):
        uio.read_values(path, column=0)


def test_write_puts_the_header_back(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("time;ecg\n1;2\n3;4\n")
    one = uio.read_signal(path, column="ecg")
    uio.write_values(tmp_path / "one.csv", one.values, source=one.source)
    assert (tmp_path / "one.csv").read_text() == "ecg\n2\n4\n"
    both = uio.read_signal(path)
    uio.write_values(tmp_path / "both.csv", both.values, source=both.source)
    assert (tmp_path / "both.csv").read_text() == "time;ecg\n1;2\n3;4\n"


def test_cli_columns_round_trip(capsys, tmp_path):
    x = table()
    src = tmp_path / "in.csv"
    src.write_text("t,a,b\n" + "".join(",".join(map(str, row)) + "\n" for row in x.tolist()))
    packed = tmp_path / "a.ubpe"
    assert run(capsys, "-q", "compress", src, "-o", packed, "--column", "a", "--level", "1")[0] == 0
    assert ubpe.describe(packed.read_bytes()).source["column"] == 1
    assert run(capsys, "-q", "decompress", packed, "-o", tmp_path / "a.csv")[0] == 0
    assert (tmp_path / "a.csv").read_text() == "a\n" + "".join(f"{v}\n" for v in x[:, 1].tolist())
    code, out, _ = run(capsys, "inspect", packed)
    assert code == 0 and "csv, 3 column(s), column 1, header 't,a,b'" in out
    # every column: (frames, channels), written back with the header line
    assert run(capsys, "-q", "compress", src, "-o", tmp_path / "all.ubpe", "--level", "1")[0] == 0
    assert run(capsys, "-q", "decompress", tmp_path / "all.ubpe", "-o", tmp_path / "all.csv")[0] == 0
    assert (tmp_path / "all.csv").read_text() == src.read_text()
    # fit: each column is a document
    code, out, err = run(capsys, "fit", src, "-o", tmp_path / "m.ubpe", "--n-tokens", "2000")
    assert code == 0 and "3 document(s)" in out, err


def test_cli_column_errors(capsys, tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("t,a\n1,2\n3,4,5\n")
    code, _, err = run(capsys, "compress", src, "-o", tmp_path / "x.ubpe")
    assert code == 1 and "in.csv: line 3: 3 fields" in err
    src.write_text("t,a\n1,2\n")
    code, _, err = run(capsys, "compress", src, "-o", tmp_path / "x.ubpe", "--column", "z")
    assert code == 1 and "no column named 'z'" in err
    code, _, err = run(capsys, "compress", tmp_path / "in.csv", "-o", tmp_path / "x.ubpe", "--bytes", "--column", "0")
    assert code == 1 and "CSV files only" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


@pytest.mark.parametrize("source", [
    {"format": "csv", "delimiter": "|", "columns": 1},
    {"format": "csv", "delimiter": ",", "columns": 2, "header": "a"},
    {"format": "csv", "delimiter": ",", "columns": 2, "column": 2},
    {"format": "csv", "delimiter": ",", "columns": 0},
    {"format": "csv", "delimiter": ",", "columns": 1, "header": "a\nb"},
    {"format": "csv", "delimiter": ",", "columns": 1, "extra": 1},
    {"format": "csv", "columns": 1},
])
def test_corrupt_csv_source_is_a_data_error(capsys, tmp_path, source):
    data = ubpe.compress(np.arange(50) % 7, level=1, source=source)
    with pytest.raises(ubpe.CorruptDataError, match="csv metadata"):
        uio.check_source(ubpe.describe(data).source)
    (tmp_path / "x.ubpe").write_bytes(data)
    code, _, err = run(capsys, "decompress", tmp_path / "x.ubpe", "-o", tmp_path / "y.csv")
    assert code == 1 and "csv metadata" in err and not (tmp_path / "y.csv").exists()


def test_foreign_source_maps_are_left_alone(tmp_path):
    assert uio.check_source({"rate": 250}) is None and uio.check_source(None) is None
    assert uio.check_source({"format": "npy"}) == {"format": "npy"}  # checked: the .npy layout
    assert uio.check_source({"format": "npy", "name": "x.npy"}) == {"format": "npy"}
    with pytest.raises(ubpe.CorruptDataError):
        uio.check_source([1])


def test_a_long_header_is_dropped_with_a_warning(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(",".join(f"column_number_{i}" for i in range(100)) + "\n" + ",".join(["1"] * 100) + "\n")
    with pytest.warns(UserWarning, match="will not be written back"):
        sig = uio.read_signal(path)
    assert "header" not in sig.source and sig.values.shape == (1, 100)
    with pytest.warns(UserWarning, match="will not be written back"):
        assert uio.read_signal(path, column="column_number_7").values.tolist() == [1]


# ============================================================== decimal readings as numbers


def _readings(n: int = 2000, newline: str = "\n", seed: int = 1) -> bytes:
    """A logger's CSV: a header, an index, readings with two and one decimals, an integer column."""
    rng = np.random.default_rng(seed)
    t = 20 + np.cumsum(rng.normal(0, 0.1, n))
    p = 1012.5 + np.cumsum(rng.normal(0, 0.05, n))
    h = rng.integers(40, 61, n)
    lines = ["time,temp_c,pressure_hpa,humidity"] + [f"{i},{a:.2f},{b:.1f},{c}" for i, a, b, c in zip(range(n), t, p, h)]
    return (newline.join(lines) + newline).encode()


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_csv_of_decimal_readings_is_numbers_and_comes_back_byte_for_byte(capsys, tmp_path, newline):
    import lzma

    raw = _readings(newline=newline)
    src = tmp_path / "log.csv"
    src.write_bytes(raw)
    assert cli.main(["-q", "compress", str(src)]) == 0
    data = (tmp_path / "log.csv.ubpe").read_bytes()
    info = ubpe.describe(data)
    assert info.shape == (2000, 4) and info.front[0]["stage"] == "floatdec"  # numbers, not text
    assert info.front[0]["base"] == [0, 2, 1, 0]  # each column its own decimals, coded as integers
    assert cli.main(["-q", "decompress", str(tmp_path / "log.csv.ubpe"), "-o", str(tmp_path / "back.csv")]) == 0
    assert (tmp_path / "back.csv").read_bytes() == raw
    assert len(data) < 0.6 * len(lzma.compress(raw, preset=9 | lzma.PRESET_EXTREME))


def test_csv_whose_formatting_does_not_come_back_is_text_with_a_note(capsys, tmp_path):
    src = tmp_path / "mixed.csv"
    src.write_bytes(b"a,b\n1.5,2.25\n1.75,2.5\n2.0,3\n")  # decimals of varying length: no fixed format
    assert cli.main(["compress", str(src)]) == 0
    assert "byte for byte" in capsys.readouterr().err
    assert ubpe.describe((tmp_path / "mixed.csv.ubpe").read_bytes()).dtype == "|u1"  # its bytes
    assert cli.main(["-q", "decompress", str(tmp_path / "mixed.csv.ubpe"), "-o", str(tmp_path / "m.csv")]) == 0
    assert (tmp_path / "m.csv").read_bytes() == src.read_bytes()


def test_csv_column_formats_are_recorded_and_checked(tmp_path):
    src = tmp_path / "r.csv"
    src.write_bytes(_readings(50))
    sig = uio.read_signal(src)
    assert sig.source["formats"] == "d,2,1,d" and "newline" not in sig.source
    assert uio.values_bytes(src, sig.values, source=sig.source) == src.read_bytes()
    for bad in ("d,2,1", "d,2,1,x", "d,0,1,d", "d,16,1,d"):
        with pytest.raises(ubpe.CorruptDataError, match="formats"):
            uio.check_source({**sig.source, "formats": bad})
    with pytest.raises(ubpe.CorruptDataError, match="newline"):
        uio.check_source({**sig.source, "newline": "\r"})
