"""Unseen recordings: ubpe's default and level 1 against the standard lossless codecs on
recordings outside shared/data (the project never tuned on them), each compressed alone.

    python benchmarks/bench_unseen.py /tmp/unseen-data           # every .npy/.wav/.csv/.txt there
    python benchmarks/bench_unseen.py a.wav b.npy ecg.csv --column 2 --rate 360
    python benchmarks/bench_unseen.py DIR --md out.md --json out.json

Inputs: a directory (its .npy, .wav, .csv and .txt files, sorted) or files. ``.npy``: a 1-D
integer array, or floats that are all whole numbers (made int16 when they fit, else int32).
``.wav``: integer PCM (8/16/24/32 bits); each channel of a multi-channel file is a recording.
``.csv``/``.txt``: one column (``--column``, an index or a header name; default 0) of integers;
lines starting with ``#`` and a non-numeric header line are skipped. The sample rate (it only
goes into the FLAC/WavPack headers) comes from the .wav header, else from ``_<N>hz`` at the end
of the file name (``ecg_360hz.npy``; ``0p1hz`` for 0.1 Hz), else ``--rate``.

Per recording: ``ubpe.compress(x)`` (the default level) and ``level=1``, each decoded and checked
equal to the input; then every codec of ``ubpe.peers`` (as bench_signals: zlib-9, bz2-9, xz-9e,
zstd-19, brotli-11, pcodec, zpaq-m5, flac-8, wavpack-hhx6; a missing one is skipped with a printed
note; FLAC and WavPack only on values that fit in 24 bits). Ratio = the array's bytes (its
itemsize a value) / compressed bytes. "vs best" = the best peer's bytes / ubpe default's - 1
(> 0: ubpe is smaller; < 0: ubpe loses by that much), as bench_signals' margin. Sizes are
the point; times are one call each (``--repeat``) and are printed only in the JSON.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import wave
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _measure import add_json_arg, print_table, result_path, write_json  # noqa: E402
from _stdcodecs import ALL as CODECS  # noqa: E402
from _stdcodecs import codec_versions, missing_codecs, run_codecs  # noqa: E402
from bench_ratio import best_of, check_same  # noqa: E402
from bench_signals import chain_of  # noqa: E402

import ubpe  # noqa: E402

SUFFIXES = (".npy", ".wav", ".csv", ".txt")
UBPE_ROWS = [("ubpe", {}), ("ubpe L1", {"level": 1})]
PCM = ["flac-8", "wavpack-hhx6"]


# ---------------------------------------------------------------- loading


def as_int(x: np.ndarray, what: str) -> np.ndarray:
    """A 1-D integer array; whole-number floats become int16 when they fit, else int32/int64."""
    x = np.asarray(x)
    if x.ndim != 1:
        raise ValueError(f"{what}: expected a 1-D signal, got shape {x.shape}")
    if x.dtype.kind in "iu":
        return x
    if x.dtype.kind != "f" or not np.all(np.isfinite(x)) or not np.all(x == np.round(x)):
        raise ValueError(f"{what}: not integers ({x.dtype})")
    for dt in (np.int16, np.int32, np.int64):
        if x.size == 0 or (np.iinfo(dt).min <= x.min() and x.max() <= np.iinfo(dt).max):
            return x.astype(dt)
    raise ValueError(f"{what}: values beyond int64")


def rate_from_name(path: Path) -> float | None:
    m = re.search(r"_(\d+(?:p\d+)?)hz$", path.stem, re.IGNORECASE)
    return float(m.group(1).replace("p", ".")) if m else None


def read_wav(path: Path) -> list[tuple[str, np.ndarray, float]]:
    with wave.open(str(path)) as w:
        ch, width, rate, raw = w.getnchannels(), w.getsampwidth(), w.getframerate(), w.readframes(w.getnframes())
    if width == 1:
        a = np.frombuffer(raw, np.uint8).astype(np.int16) - 128  # 8-bit .wav is unsigned
        a = a.astype(np.int8)
    elif width == 3:
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        v = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        a = np.where(v >= 1 << 23, v - (1 << 24), v).astype(np.int32)
    else:
        a = np.frombuffer(raw, {2: "<i2", 4: "<i4"}[width]).astype({2: np.int16, 4: np.int32}[width])
    a = a.reshape(-1, ch)
    if ch == 1:
        return [(path.name, a[:, 0].copy(), float(rate))]
    return [(f"{path.name}:ch{i}", a[:, i].copy(), float(rate)) for i in range(ch)]


def read_column(path: Path, column: str) -> np.ndarray:
    delim = "," if path.suffix.lower() == ".csv" else None
    vals, idx = [], None
    with open(path) as f:
        for line in f:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            cells = [c.strip() for c in (line.split(delim) if delim else line.split())]
            if idx is None:
                if column.lstrip("-").isdigit():
                    idx = int(column)
                elif column in cells:  # the header line
                    idx = cells.index(column)
                    continue
                else:
                    raise ValueError(f"{path}: no column {column!r} in the first line")
            try:
                vals.append(float(cells[idx]))
            except ValueError:
                if not vals:  # a header line
                    continue
                raise
    return as_int(np.array(vals), str(path))


def load(paths: list[str], column: str, rate: float) -> list[tuple[str, np.ndarray, float]]:
    files: list[Path] = []
    for p in map(Path, paths):
        files += sorted(q for q in p.iterdir() if q.suffix.lower() in SUFFIXES) if p.is_dir() else [p]
    out = []
    for f in files:
        suf = f.suffix.lower()
        if suf == ".wav":
            out += read_wav(f)
            continue
        x = as_int(np.load(f), str(f)) if suf == ".npy" else read_column(f, column)
        out.append((f.name, x, rate_from_name(f) or rate))
    return out


# ---------------------------------------------------------------- measuring


def measure(name: str, x: np.ndarray, rate: float, repeat: int) -> dict:
    res = dict(recording=name, values=x.size, dtype=str(x.dtype), rate=rate, raw=x.nbytes, ubpe={}, codecs={})
    for label, opts in UBPE_ROWS:
        c, tc = best_of(ubpe.compress, x, repeat, **opts)
        back, td = best_of(ubpe.decompress, c, repeat)
        check_same(back, x, f"{name} {label}")
        res["ubpe"][label] = dict(bytes=len(c), compress_s=tc, decompress_s=td, chain=chain_of(c))
    for r in run_codecs(x, sample_rate=max(1, round(rate)), repeat=repeat):
        res["codecs"][r["name"]] = dict(bytes=r["bytes"], compress_s=r["compress_s"], decompress_s=r["decompress_s"])
    return res


def row(r: dict) -> dict:
    raw, u = r["raw"], r["ubpe"]
    out = {"recording": r["recording"], "values": r["values"], "dtype": r["dtype"],
           "ubpe": raw / u["ubpe"]["bytes"], "ubpe L1": raw / u["ubpe L1"]["bytes"]}
    if r["codecs"]:
        best = min(r["codecs"], key=lambda k: r["codecs"][k]["bytes"])
        out["best peer"] = best
        out["peer ratio"] = raw / r["codecs"][best]["bytes"]
        out["vs best"] = f"{r['codecs'][best]['bytes'] / u['ubpe']['bytes'] - 1:+.2%}"
    for k in PCM:
        out[k] = raw / r["codecs"][k]["bytes"] if k in r["codecs"] else None
    out["chain / coder"] = u["ubpe"]["chain"]
    return out


def markdown(rows: list[dict]) -> str:
    cols = ["recording", "values", "dtype", "ubpe", "ubpe L1", "best peer", "peer ratio", "vs best"] + PCM + [
        "chain / coder"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = []
        for c in cols:
            v = r.get(c)
            cells.append("-" if v is None else f"{v:,}" if isinstance(v, int) else f"{v:.3f}"
                         if isinstance(v, float) else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="+", help="recordings (.npy/.wav/.csv/.txt) or directories of them")
    p.add_argument("--column", default="0", help="column of a .csv/.txt: index or header name (default 0)")
    p.add_argument("--rate", type=float, default=1000.0, help="sample rate when the file gives none (Hz)")
    p.add_argument("--repeat", type=int, default=1, help="timed calls per compress/decompress (best kept)")
    p.add_argument("--md", type=Path, default=None, help="also write the table as markdown here")
    add_json_arg(p)
    a = p.parse_args(argv)

    recs = load(a.paths, a.column, a.rate)
    for codec, why in missing_codecs():
        print(f"note: {codec} skipped: {why}")
    warm = np.cumsum(np.random.default_rng(0).integers(-3, 4, 30000)).astype(np.int16)
    for _, opts in UBPE_ROWS:  # numba compilation (or cache loading) outside the timings
        ubpe.decompress(ubpe.compress(warm, **opts))
    t0 = time.perf_counter()
    results = []
    for name, x, rate in recs:
        print(f"-- {name}: {x.size:,} {x.dtype} values at {rate:g} Hz", flush=True)
        results.append(measure(name, x, rate, a.repeat))
    rows = [row(r) for r in results]
    print()
    print_table(rows, title="== ratio (raw / compressed); vs best: best peer's bytes / ubpe default's - 1")
    lose = [r for r in results
            if r["codecs"] and r["ubpe"]["ubpe"]["bytes"] > min(c["bytes"] for c in r["codecs"].values())]
    print(f"ubpe default larger than the best peer on {len(lose)} of {len(results)} recordings"
          + (": " + ", ".join(row(r)["recording"] for r in lose) if lose else ""))
    print(f"measured in {time.perf_counter() - t0:.0f} s")
    md = markdown(rows)
    if a.md:
        a.md.write_text(md)
        print(f"wrote {a.md}")
    write_json(result_path(a), dict(recordings=results, ratio=rows),
               extra=dict(args={k: str(v) for k, v in vars(a).items()}, codecs=codec_versions(),
                          codecs_skipped=dict(missing_codecs()), known_codecs=CODECS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
