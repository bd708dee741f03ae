"""Standard lossless codecs on the shared real data: the baseline ubpe has to beat.

    python benchmarks/bench_codecs.py                 # all data sets (a few minutes)
    python benchmarks/bench_codecs.py --data ecg text --repeat 3

Data sets (see benchmarks/_data.py; UBPE_DATA overrides the data location):
    neural24-each    the first 24 neural recordings, each compressed alone, sizes summed
    neural24-concat  the same 24 concatenated into one signal (2.37 M int16 values)
    neural120-concat all 120 recordings concatenated (11.8 M values)
    ecg              MIT-BIH record 208 (108 000 int16 values)
    ecg              MIT-BIH record 208 (108 000 int16 values)
    seismic          CRLZ_HHZ.npy (32 768 int16 values, 100 Hz)
    audio-each       audio/*.wav, each file compressed alone, sizes summed (16-bit, 16 kHz)
    float-q          BW_UH4_EHZ.npy quantized with --step (see _data.float_quantized)
    text             taylorswift.txt (185 768 bytes)

For each: one table row per codec (zlib-9, bz2-9, xz-9e, zstd-19, brotli-11, pcodec, zpaq-m5,
flac-8, wavpack-hhx6; see _stdcodecs.py), with the compressed size, the ratio (raw bytes /
compressed), compress/decompress times (best of --repeat, every codec alike), and every codec
checked to decode back exactly. A codec whose binary or package is missing is skipped with a
printed message. Where the data README (shared/data/README.md) quotes a ratio for that codec
and data set, it is shown as `ref` and `check` says whether we reproduce it to its two decimals.

Result file: benchmarks/results/codecs.json (--json PATH to change, --no-json for none).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import _data  # noqa: E402
from _measure import add_json_arg, print_table, result_path, write_json  # noqa: E402
from _stdcodecs import ALL, codec_versions, missing_codecs, run_codecs, run_codecs_each  # noqa: E402

DATASETS = ["neural24-each", "neural24-concat", "neural120-concat", "ecg", "seismic", "audio-each", "float-q",
            "text"]
_REF_NAMES = {"bz2-9": "bz2-9", "xz-9e": "xz-9e", "zstd-19": "zstd-19", "brotli-11": "brotli-11",
              "pcodec": "pcodec", "flac -8": "flac-8", "flac": "flac-8", "zlib-9": "zlib-9",
              "wavpack -hhx6": "wavpack-hhx6"}


def reference_ratios() -> dict[str, dict[str, float]]:
    """Ratios quoted in the data README, keyed by our data set and codec names."""
    try:
        text = (_data.data_dir() / "README.md").read_text()
    except OSError:
        return {}
    refs: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        if not line.startswith("- ") or ":" not in line:
            continue
        label, items = line[2:].split(":", 1)
        low = label.lower()
        if "neural" in low and ("each" in low or "alone" in low):
            key = "neural24-each"
        elif "neural" in low and "24" in low:
            key = "neural24-concat"
        elif "ecg" in low:
            key = "ecg"
        elif "seismic" in low:
            key = "seismic"
        elif "audio" in low and ("each" in low or "alone" in low):
            key = "audio-each"
        elif "taylorswift" in low:
            key = "text"
        else:
            continue
        for name, ratio in re.findall(r"([A-Za-z0-9][\w -]*?)\s+(\d+(?:\.\d+)?)x", items):
            codec = _REF_NAMES.get(name.strip().lower())
            if codec:
                refs.setdefault(key, {})[codec] = float(ratio)
    return refs


def measure(name: str, codecs: list[str] | None, repeat: int, step: float) -> tuple[str, list[dict]]:
    kw = dict(repeat=repeat)
    if name == "neural24-each":
        sig = _data.neural(24)
        return (f"{len(sig)} files, {sum(map(len, sig)):,} values, each alone",
                run_codecs_each(sig, codecs, sample_rate=19531, **kw))
    if name == "audio-each":
        sig = [x for x, _rate in _data.audio()]
        return (f"{len(sig)} files, {sum(map(len, sig)):,} values, each alone",
                run_codecs_each(sig, codecs, sample_rate=16000, **kw))
    if name == "text":
        t = _data.text()
        return f"{len(t):,} bytes", run_codecs(t, codecs, **kw)
    x, rate = {
        "neural24-concat": lambda: (np.concatenate(_data.neural(24)), 19531),
        "neural120-concat": lambda: (np.concatenate(_data.neural(None)), 19531),
        "ecg": lambda: (_data.ecg(), 360),
        "seismic": lambda: (_data.seismic(), 100),
        "float-q": lambda: (_data.float_quantized(step), 100),
    }[name]()
    return f"{len(x):,} values of {x.dtype}", run_codecs(x, codecs, sample_rate=rate, **kw)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", nargs="+", choices=DATASETS, default=DATASETS, help="data sets to run")
    p.add_argument("--codecs", nargs="+", choices=ALL, help="codecs to run (default: all that apply)")
    p.add_argument("--repeat", type=int, default=1, help="timed runs per codec and direction (best reported)")
    p.add_argument("--step", type=float, default=_data.FLOAT_STEP, help="quantization step for float-q")
    add_json_arg(p, "codecs.json")
    a = p.parse_args(argv)
    if a.repeat < 1:
        p.error("--repeat must be at least 1")

    for name, why in missing_codecs():
        print(f"note: {name} rows skipped: {why}")
    refs = reference_ratios()
    all_rows = []
    mismatches = 0
    for name in a.data:
        what, rows = measure(name, a.codecs, a.repeat, a.step)
        for r in rows:
            ref = refs.get(name, {}).get(r["name"])
            r["ref"] = ref
            r["check"] = None if ref is None else ("ok" if abs(r["ratio"] - ref) <= 0.0051 else "MISMATCH")
            mismatches += r["check"] == "MISMATCH"
            all_rows.append(dict(data=name, **r))
        print_table(rows, ["name", "bytes", "ratio", "ref", "check", "compress_s", "decompress_s"],
                    title=f"== {name}: {what}")
    if mismatches:
        print(f"{mismatches} ratio(s) differ from the data README")
    write_json(result_path(a), dict(repeat=a.repeat, statistic="min", float_step=a.step, rows=all_rows),
               dict(codecs=codec_versions()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
