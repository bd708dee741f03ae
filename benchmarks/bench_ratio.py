"""Headline compression benchmark: ubpe.compress against the standard codecs on every shared
data set, side by side in one run, with a PASS/FAIL verdict for each target of the issue.

    python benchmarks/bench_ratio.py            # everything (writes benchmarks/results/ratio.json)
    python benchmarks/bench_ratio.py --quick    # the small data sets (results/ratio-quick.json)
    python benchmarks/bench_ratio.py --data ecg text --repeat 5 --json /tmp/x.json
    python benchmarks/bench_ratio.py --variant d1:level=1,delta=1

Data (benchmarks/_data.py; *-each: every file compressed alone, sizes and times summed):
    neural24-each     the first 24 neural recordings by name (2.4 M int16 values)
    neural24-concat   the same 24 concatenated
    neural120-concat  all 120 concatenated (11.8 M values)
    ecg               MIT-BIH record 208 (108 000 int16 values)
    seismic           CRLZ_HHZ.npy (32 768 int16 counts, 100 Hz)
    audio-each        the 32 audio/*.wav (16-bit mono, 16 kHz)
    float-q           BW_UH4_EHZ.npy (23 033 float64) quantized as round(x / --step); step 1.0 by
                      default (int16, the integer part: the fractions are correction residue)
    text              taylorswift.txt (185 768 bytes, compressed as uint8 values)

Codecs (benchmarks/_stdcodecs.py, each round-trip checked): zlib-9, bz2-9, xz-9e, zstd-19,
brotli-11, zpaq-m5, and for signals pcodec, flac-8, wavpack-hhx6. A codec whose program or
package is missing is skipped with a printed note (and listed in the result file).

Every row of a data set's table is ONE container: its size, its own compress time and its own
decompress time, all timed the same way: --repeat wall-clock calls of compress and --repeat of
decompress, the best of each (ubpe and codecs alike, no untimed warm-up call per row; numba
compilation is done once before any timing and excluded). For ubpe, compress is exactly
``ubpe.compress(x, **options)``: model fitting and the planner's search included. Rows:
``ubpe`` with the defaults, one row per other ``level`` the container publishes in ``LEVELS``,
a ``coder=cm`` row when compress has a ``coder`` option, and each ``--variant
LABEL:key=value,...``. Columns: bytes; ratio = raw bytes (the array's dtype, or the text) /
bytes; bits/val = 8 * bytes / values; comp_s, comp_Mv/s; decomp_s, dec_Mv/s; vs CODEC: WIN when
the ubpe container is smaller than that codec's output.

Separate tables: the ubpe container parts (``describe``: header, model, freq, payload, coder,
front end) and "ubpe, shared model": a Tokenizer fitted BEFOREHAND (not timed; the vocabulary
size and delta order the default container chose), then ``compress(x, tokenizer=tok,
embed=False, delta=k)`` and ``decompress(c, tokenizer=tok)``, same timing policy; its bytes are
the container plus the model file as stored (``len(tok.to_bytes())``).

Targets (issue text), summarised at the end: smaller than zstd-19, xz-9e and brotli-11 on the
neural recordings (each alone and together) and on the text; decompression at least 50 M
values/s (every data set, the slowest counts); compression with an existing model at least
5 M values/s (the shared-model table). Timings on a shared machine are indicative only.
"""

from __future__ import annotations

import argparse
import ast
import inspect as pyinspect
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _data  # noqa: E402
from _measure import add_json_arg, print_table, result_path, write_json  # noqa: E402
from _stdcodecs import codec_versions, missing_codecs, run_codecs, run_codecs_each  # noqa: E402

import ubpe  # noqa: E402

DATASETS = ["neural24-each", "neural24-concat", "neural120-concat", "ecg", "seismic", "audio-each", "float-q",
            "text"]
QUICK_DATASETS = ["ecg", "seismic", "audio-each", "float-q", "text"]
FLOAT_STEP = _data.FLOAT_STEP
RIVALS = ["zstd-19", "xz-9e", "brotli-11", "bz2-9"]
SIZE_TARGET_RIVALS = ["zstd-19", "xz-9e", "brotli-11"]
SIZE_TARGET_DATA = ["neural24-each", "neural24-concat", "neural120-concat", "text"]
TARGET_COMP = 5e6
TARGET_DEC = 50e6


# ---------------------------------------------------------------- data


def load(name: str, step: float = 1.0) -> tuple[list, int]:
    """(list of inputs compressed separately, sample rate for FLAC and WavPack)."""
    if name == "neural24-each":
        return _data.neural(24), 19531
    if name == "neural24-concat":
        return [np.concatenate(_data.neural(24))], 19531
    if name == "neural120-concat":
        return [np.concatenate(_data.neural(None))], 19531
    if name == "ecg":
        return [_data.ecg()], 360
    if name == "seismic":
        return [_data.seismic()], 100
    if name == "audio-each":
        return [x for x, _rate in _data.audio()], 16000
    if name == "float-q":
        return [_data.float_quantized(step)], 100
    if name == "text":
        return [_data.text()], 0
    raise KeyError(name)


def as_array(x) -> np.ndarray:
    return np.frombuffer(x, dtype=np.uint8) if isinstance(x, (bytes, bytearray)) else np.asarray(x)


def raw_size(x) -> int:
    return len(x) if isinstance(x, (bytes, bytearray)) else as_array(x).nbytes


# ---------------------------------------------------------------- ubpe variants


def parse_variant(spec: str) -> tuple[str, dict]:
    """'LABEL:key=value,key=value' -> (label, options); values read as Python literals."""
    label, _, rest = spec.partition(":")
    opts = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        try:
            opts[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            opts[key.strip()] = value.strip()
    return f"ubpe {label}", opts


def discover_variants() -> tuple[list[tuple[str, dict]], list[str]]:
    """ubpe rows to run: the defaults, plus the options this version of compress offers."""
    params = pyinspect.signature(ubpe.compress).parameters
    variants: list[tuple[str, dict]] = [("ubpe", {})]
    notes = [f"ubpe.compress options: {', '.join(k for k in params if k != 'values')}"]
    from ubpe import container, entropy

    if "level" in params:
        default = params["level"].default
        levels = getattr(container, "LEVELS", None)
        top = getattr(container, "MAX_LEVEL", None)
        if levels:  # the default row is labelled with its level, one more row per other level
            variants[0] = (f"ubpe level={default} (default)", {})
            variants += [(f"ubpe level={lv}", {"level": lv}) for lv in levels if lv != default]
        elif top is not None and top != default:
            variants.append((f"ubpe level={top}", {"level": top}))
        else:
            notes.append("compress has a `level` option but publishes no LEVELS: pass --variant NAME:level=N")
    for key in ("coder", "coders"):
        if key in params and "cm" in getattr(entropy, "CODERS", ()):
            value = "cm" if key == "coder" else ("cm",)
            variants.append((f"ubpe {key}=cm", {key: value}))
    return variants, notes


def describe(c: bytes):
    """``ubpe.describe`` (``ubpe.inspect`` in versions before the rename)."""
    return (getattr(ubpe, "describe", None) or ubpe.inspect)(c)


def best_of(fn, arg, repeat: int, **kw):
    """(last result, best wall seconds) of ``repeat`` timed calls: the codecs' policy too."""
    best, out = float("inf"), None
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter_ns()
        out = fn(arg, **kw)
        best = min(best, (time.perf_counter_ns() - t0) / 1e9)
    return out, best


def check_same(back, x, label: str) -> None:
    arr = as_array(x)
    if back.dtype != arr.dtype or back.shape != arr.shape or not np.array_equal(back, arr):
        raise AssertionError(f"{label} did not round-trip")


def run_ubpe(inputs: list, label: str, opts: dict, repeat: int) -> dict:
    """One container per input, ``compress(x, **opts)``; sizes, parts and best times summed.

    compress_s is the whole call (model fitting and the planner's search included), best of
    ``repeat``; decompress_s is ``decompress`` of that same container, best of ``repeat``.
    """
    tot = dict(bytes=0, compress_s=0.0, decompress_s=0.0, header=0, model=0, freq=0, payload=0,
               tokens=0, merges=0)
    coders, fronts, alphabets, models = {}, {}, set(), []
    for x in inputs:
        c, tc = best_of(ubpe.compress, x, repeat, **opts)
        back, td = best_of(ubpe.decompress, c, repeat)
        check_same(back, x, label)
        info = describe(c)
        tot["bytes"] += len(c)
        tot["compress_s"] += tc
        tot["decompress_s"] += td
        for part in ("header", "model", "freq", "payload"):
            tot[part] += int(getattr(info, part, 0) or 0)
        tot["tokens"] += int(info.n_tokens or 0)
        tot["merges"] += int(info.n_merges or 0)
        coders[info.coder] = coders.get(info.coder, 0) + 1
        front = str(getattr(info, "frontend", None) or getattr(info, "delta", None))
        fronts[front] = fronts.get(front, 0) + 1
        alphabets.add(info.alphabet_size)
        stages = getattr(info, "front", None) or ()
        plain_delta = all(isinstance(st, dict) and st.get("stage") == "delta" for st in stages)
        models.append((int(getattr(info, "delta", 0) or 0), int(info.alphabet_size or 0) + int(info.n_merges or 0),
                       plain_delta))

    def tally(d):
        return ", ".join(f"{k}" if len(inputs) == 1 else f"{k} x{n}" for k, n in sorted(d.items(), key=str))

    tot.update(name=label, coder=tally(coders), front=tally(fronts), models=models,
               alphabet=alphabets.pop() if len(alphabets) == 1 else f"{min(alphabets)}..{max(alphabets)}")
    return tot


def run_shared_model(inputs: list, models: list, repeat: int) -> dict:
    """The "existing model" use: a Tokenizer fitted beforehand (untimed, same vocabulary size and
    delta order as the default container chose), then ``compress(x, tokenizer=tok, embed=False,
    delta=k)`` and ``decompress(c, tokenizer=tok)``, each best of ``repeat``. The size counts the
    container plus the model as it is stored (``len(tok.to_bytes())``), so it is comparable."""
    from ubpe import signal

    tot = dict(bytes=0, container=0, model_file=0, compress_s=0.0, decompress_s=0.0)
    for x, (k, vocab, _plain) in zip(inputs, models):
        arr = as_array(x)
        src = signal.delta(arr, k) if k else arr
        tok = ubpe.Tokenizer(None, vocab).fit(src)
        c, tc = best_of(ubpe.compress, x, repeat, tokenizer=tok, embed=False, delta=k)
        back, td = best_of(ubpe.decompress, c, repeat, tokenizer=tok)
        check_same(back, x, "ubpe, shared model")
        stored = len(tok.to_bytes())
        tot["container"] += len(c)
        tot["model_file"] += stored
        tot["bytes"] += len(c) + stored
        tot["compress_s"] += tc
        tot["decompress_s"] += td
    return tot


# ---------------------------------------------------------------- main


def measure_dataset(name: str, variants, repeat: int, shared: bool, step: float):
    inputs, rate = load(name, step)
    n_values = sum(as_array(x).size for x in inputs)
    raw = sum(raw_size(x) for x in inputs)
    rows, parts, shared_rows = [], [], []
    for label, opts in variants:
        print(f"-- {name}: {label}", flush=True)
        u = run_ubpe(inputs, label, opts, repeat)
        rows.append(dict(name=label, bytes=u["bytes"], comp_s=u["compress_s"], decomp_s=u["decompress_s"],
                         ubpe=True))
        parts.append(dict(data=name, row=label, size=u["bytes"], header=u["header"], model=u["model"],
                          freq=u["freq"], payload=u["payload"], coder=u["coder"], front=u["front"],
                          A=u["alphabet"], merges=u["merges"], tokens=u["tokens"]))
        if shared and not opts and not all(plain for _k, _v, plain in u["models"]):
            # compress(tokenizer=...) takes only a delta front end: another chain would make
            # the shared-model row a different configuration, so it is left out, not faked
            print(f"-- {name}: ubpe, shared model skipped: the default front end is not a plain delta chain")
        elif shared and not opts:
            print(f"-- {name}: ubpe, shared model", flush=True)
            m = run_shared_model(inputs, u["models"], repeat)
            shared_rows.append(dict(data=name, name="ubpe, shared model", bytes=m["bytes"],
                                    container=m["container"], model_file=m["model_file"],
                                    comp_s=m["compress_s"], decomp_s=m["decompress_s"],
                                    **{"comp_Mv/s": n_values / m["compress_s"] / 1e6,
                                       "dec_Mv/s": n_values / m["decompress_s"] / 1e6,
                                       "ratio": raw / m["bytes"]}))
    print(f"-- {name}: standard codecs", flush=True)
    if len(inputs) > 1:
        codec_rows = run_codecs_each(inputs, sample_rate=rate, repeat=repeat)
    else:
        codec_rows = run_codecs(inputs[0], sample_rate=rate, repeat=repeat)
    for r in codec_rows:
        rows.append(dict(name=r["name"], bytes=r["bytes"], comp_s=r["compress_s"],
                         decomp_s=r["decompress_s"], ubpe=False))
    rival = {r["name"]: r["bytes"] for r in rows if not r["ubpe"]}
    for r in rows:
        r.update(data=name, ratio=raw / r["bytes"], **{"bits/val": 8 * r["bytes"] / n_values},
                 **{"comp_Mv/s": n_values / r["comp_s"] / 1e6, "dec_Mv/s": n_values / r["decomp_s"] / 1e6})
        for c in RIVALS:
            if r["ubpe"] and c in rival:
                r[f"vs {c}"] = "WIN" if r["bytes"] < rival[c] else "LOSE"
    return rows, parts, shared_rows, n_values, raw


def summarise(all_rows: list[dict], shared_rows: list[dict], variants) -> list[dict]:
    out = []
    for label, _ in variants:
        mine = [r for r in all_rows if r["name"] == label]
        for data in SIZE_TARGET_DATA:
            r = next((x for x in mine if x["data"] == data), None)
            if r is None:
                continue
            for c in SIZE_TARGET_RIVALS:
                rv = next((x for x in all_rows if x["data"] == data and x["name"] == c), None)
                if rv is None:
                    continue
                out.append(dict(row=label, target=f"smaller than {c}", data=data,
                                measured=f"{r['bytes']:,} vs {rv['bytes']:,} B ({r['bytes'] / rv['bytes'] - 1:+.1%})",
                                result="PASS" if r["bytes"] < rv["bytes"] else "FAIL"))
        if mine:
            w = min(mine, key=lambda x: x["dec_Mv/s"])
            out.append(dict(row=label, target="decompress >= 50 M values/s", data=f"all {len(mine)}",
                            measured=f"min {w['dec_Mv/s']:.1f} M/s ({w['data']})",
                            result="PASS" if w["dec_Mv/s"] * 1e6 >= TARGET_DEC else "FAIL"))
    if shared_rows:
        w = min(shared_rows, key=lambda x: x["comp_Mv/s"])
        out.append(dict(row="ubpe, shared model", target="compress >= 5 M values/s with an existing model",
                        data=f"all {len(shared_rows)}", measured=f"min {w['comp_Mv/s']:.1f} M/s ({w['data']})",
                        result="PASS" if w["comp_Mv/s"] * 1e6 >= TARGET_COMP else "FAIL"))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the small data sets only (" + ", ".join(QUICK_DATASETS) + ")")
    p.add_argument("--data", nargs="+", choices=DATASETS, help="data sets (default: all, or the --quick subset)")
    p.add_argument("--repeat", type=int, default=3,
                   help="timed runs of every compress and decompress, ubpe and codecs alike (best reported)")
    p.add_argument("--step", type=float, default=FLOAT_STEP,
                   help=f"quantization step of the float seismogram (default {FLOAT_STEP})")
    p.add_argument("--no-shared-model", action="store_true", help="skip the 'ubpe, shared model' table")
    p.add_argument("--variant", action="append", default=[], metavar="LABEL:key=value,...",
                   help="extra ubpe row with these compress options (repeatable)")
    add_json_arg(p, "ratio-quick.json" if "--quick" in (argv or sys.argv) else "ratio.json")
    a = p.parse_args(argv)

    datasets = a.data or (QUICK_DATASETS if a.quick else DATASETS)
    variants, notes = discover_variants()
    variants += [parse_variant(v) for v in a.variant]
    for n in notes:
        print(n)
    print("ubpe rows: " + "; ".join(f"{lab} {opts or '(defaults)'}" for lab, opts in variants))
    missing = missing_codecs()
    for codec, why in missing:
        print(f"note: {codec} skipped: {why}")

    # numba: compile (or load from cache) everything compress/decompress use, before timing
    warm = np.cumsum(np.random.default_rng(0).integers(-3, 4, 30000)).astype(np.int16)
    for _, opts in variants:
        for x in (warm, bytes(warm.astype(np.uint8))):
            ubpe.decompress(ubpe.compress(x, **opts))

    t_start = time.perf_counter()
    all_rows, all_parts, all_shared, tables = [], [], [], []
    cols = ["name", "bytes", "ratio", "bits/val", "comp_s", "comp_Mv/s", "decomp_s", "dec_Mv/s"]
    cols += [f"vs {c}" for c in RIVALS]
    for name in datasets:
        rows, parts, shared, n_values, raw = measure_dataset(name, variants, a.repeat, not a.no_shared_model, a.step)
        rows.sort(key=lambda r: r["bytes"])
        title = f"== {name}: {n_values:,} values, {raw:,} raw bytes"
        print()
        print_table(rows, cols, title=title)
        tables.append((rows, title))
        all_rows += rows
        all_parts += parts
        all_shared += shared

    policy = f"every compress and decompress best of {a.repeat} wall-clock runs (ubpe and codecs alike)"
    print("\n==================== all tables ====================\n")
    print(f"Each row is one container: its size, its compress time (ubpe: model fitting and search "
          f"included) and its decompress time; {policy}; numba compilation excluded.\n")
    for rows, title in tables:
        print_table(rows, cols, title=title)
    print_table(all_parts, title="== ubpe container parts (describe, bytes; sums over the files of *-each)")
    if all_shared:
        print_table(all_shared, ["data", "name", "bytes", "container", "model_file", "ratio", "comp_s",
                                 "comp_Mv/s", "decomp_s", "dec_Mv/s"],
                    title="== ubpe, shared model: a model fitted beforehand (not timed), compress(x, tokenizer=tok, "
                          "embed=False); bytes = container + model file (to_bytes)")
    summary = summarise(all_rows, all_shared, variants)
    print_table(summary, title=f"== targets ({policy}; shared machine, indicative)")
    wall = time.perf_counter() - t_start
    print(f"measured in {wall:.0f} s")
    write_json(result_path(a), dict(variants=[dict(label=lab, options=o) for lab, o in variants],
                                    rows=all_rows, parts=all_parts, shared_model=all_shared, summary=summary),
               extra=dict(args=vars(a), timing_policy=policy, float_step=a.step, wall_s=wall,
                          codecs=codec_versions(), codecs_skipped=dict(missing)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
