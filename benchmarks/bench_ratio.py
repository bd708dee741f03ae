"""Headline compression benchmark: ubpe.compress against the standard codecs on the shared data,
side by side in one run, with a PASS/FAIL verdict for each target of the issue.

    python benchmarks/bench_ratio.py                   # everything (~7.5 min, most of it neural120-concat)
    python benchmarks/bench_ratio.py --quick           # without neural120-concat (~2 min)
    python benchmarks/bench_ratio.py --variant d1:level=1,delta=1 --json benchmarks/results/ratio.json

Data (benchmarks/_data.py):
    neural24-each     the first 24 neural recordings by name, each compressed alone (sums)
    neural24-concat   the same 24 concatenated (2.4 M int16 values)
    neural120-concat  all 120 concatenated (11.8 M values)
    ecg               MIT-BIH record 208 (108 000 values)
    text              taylorswift.txt (185 768 bytes, compressed as uint8 values)

Codecs (benchmarks/_stdcodecs.py, each round-trip checked): zlib-9, bz2-9, xz-9e (lzma preset 9
| extreme), zstd-19, brotli-11, pcodec (signals only) and flac-8 (signals only, when the `flac`
binary is installed). Their times are single runs.

ubpe rows: ``ubpe.compress(x)`` with its defaults (a model fitted on x and embedded; the delta
front end and the vocabulary size chosen automatically when this version of compress does so),
plus one row per further option found in ``ubpe.compress``'s signature at run time (each
non-default ``level`` the container module publishes in ``LEVELS``, or its ``MAX_LEVEL``; a
``coder`` or ``coders`` option when the "cm" context-mixing coder exists), plus any ``--variant
LABEL:key=value,...`` given on the command line. Columns:
    bytes, ratio, bits/val   the container of ``compress(x, **options)`` (ratio = raw int16 or
                             text bytes / compressed; bits per value = 8 * bytes / values)
    fit+comp_s               that call, model fitting included (single run)
    comp_s, comp_Mv/s        compression "with an existing model": a Tokenizer is fitted once
                             on the data (same vocabulary size and delta order as the default
                             container chose), then ``compress(x, tokenizer=tok, delta=k)`` is
                             timed, best of --repeat
    decomp_s, dec_Mv/s       ``decompress`` of that container, best of --repeat (checked exact)
    vs zstd-19 ... vs bz2-9  WIN when the ubpe container is smaller than that codec's output
A second table gives ``ubpe.inspect``'s part sizes (header, model, freq, payload) per ubpe row.

Targets (issue text), summarised at the end per ubpe row kind:
    smaller than zstd-19, xz-9e and brotli-11 on the neural recordings (each file alone and
    together: neural24-each, neural24-concat, neural120-concat) and on the text;
    compression at least 5 M values/s with an existing model; decompression at least
    50 M values/s (judged on every data set, the slowest counts).
Timings are wall clock on a shared 2-core machine, best of --repeat for ubpe (single runs for
the codecs): indicative.
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
from _measure import add_json_arg, print_table, time_call, write_json  # noqa: E402
from _stdcodecs import flac_available, run_codecs, run_codecs_each  # noqa: E402

import ubpe  # noqa: E402

DATASETS = ["neural24-each", "neural24-concat", "neural120-concat", "ecg", "text"]
QUICK_DATASETS = ["neural24-each", "neural24-concat", "ecg", "text"]
RIVALS = ["zstd-19", "xz-9e", "brotli-11", "bz2-9"]
SIZE_TARGET_RIVALS = ["zstd-19", "xz-9e", "brotli-11"]
SIZE_TARGET_DATA = ["neural24-each", "neural24-concat", "neural120-concat", "text"]
TARGET_COMP = 5e6
TARGET_DEC = 50e6
FIT_ONLY = {"n_tokens", "n_candidates", "min_count", "weighting", "window", "delta"}


# ---------------------------------------------------------------- data


def load(name: str) -> tuple[list, int]:
    """(list of inputs compressed separately, sample rate for FLAC)."""
    if name == "neural24-each":
        return _data.neural(24), 19531
    if name == "neural24-concat":
        return [np.concatenate(_data.neural(24))], 19531
    if name == "neural120-concat":
        return [np.concatenate(_data.neural(None))], 19531
    if name == "ecg":
        return [_data.ecg()], 360
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


def chosen_model(info) -> tuple[int, int]:
    """(delta order, vocabulary size) the container used."""
    return int(getattr(info, "delta", 0) or 0), int(info.alphabet_size or 0) + int(info.n_merges or 0)


def run_ubpe(inputs: list, label: str, opts: dict, repeat: int, has_delta: bool) -> dict:
    """Every input compressed alone with ``opts``; sizes, parts and times summed over inputs."""
    from ubpe import signal

    tot = dict(bytes=0, fit_comp_s=0.0, comp_s=0.0, decomp_s=0.0, reuse_bytes=0,
               header=0, model=0, freq=0, payload=0, tokens=0, merges=0)
    coders, deltas, alphabets = {}, {}, set()
    reuse_opts = {k: v for k, v in opts.items() if k not in FIT_ONLY}
    fit_opts = {k: v for k, v in opts.items() if k in FIT_ONLY - {"n_tokens", "delta"}}
    for x in inputs:
        arr = as_array(x)
        t0 = time.perf_counter()
        c = ubpe.compress(x, **opts)
        tot["fit_comp_s"] += time.perf_counter() - t0
        back = ubpe.decompress(c)
        if back.dtype != arr.dtype or not np.array_equal(back, arr):
            raise AssertionError(f"{label} did not round-trip")
        info = ubpe.inspect(c)
        tot["bytes"] += len(c)
        for part in ("header", "model", "freq", "payload"):
            tot[part] += getattr(info, part)
        tot["tokens"] += info.n_tokens
        tot["merges"] += info.n_merges or 0
        coders[info.coder] = coders.get(info.coder, 0) + 1
        k, vocab = chosen_model(info)
        deltas[k] = deltas.get(k, 0) + 1
        alphabets.add(info.alphabet_size)

        # "with an existing model": fit once (untimed), then time compress with it
        src = signal.delta(arr, k) if k else arr
        tok = ubpe.Tokenizer(None, vocab, **fit_opts).fit(src)
        kw = dict(reuse_opts, tokenizer=tok)
        if has_delta:
            kw["delta"] = k
        t_c = time_call(ubpe.compress, x, warmup=1, repeat=repeat, **kw)
        c2 = t_c.result
        t_d = time_call(ubpe.decompress, c2, warmup=1, repeat=repeat)
        if t_d.result.dtype != arr.dtype or not np.array_equal(t_d.result, arr):
            raise AssertionError(f"{label} (existing model) did not round-trip")
        tot["comp_s"] += t_c.best_s
        tot["decomp_s"] += t_d.best_s
        tot["reuse_bytes"] += len(c2)

    def tally(d):
        return ", ".join(f"{k}" if len(inputs) == 1 else f"{k} x{n}" for k, n in sorted(d.items(), key=str))

    tot.update(name=label, coder=tally(coders), delta=tally(deltas),
               alphabet=alphabets.pop() if len(alphabets) == 1 else f"{min(alphabets)}..{max(alphabets)}")
    return tot


# ---------------------------------------------------------------- main


def measure_dataset(name: str, variants, repeat: int, has_delta: bool) -> tuple[list[dict], list[dict], int, int]:
    inputs, rate = load(name)
    n_values = sum(len(as_array(x)) for x in inputs)
    raw = sum(raw_size(x) for x in inputs)
    rows, parts = [], []
    for label, opts in variants:
        print(f"-- {name}: {label}", flush=True)
        u = run_ubpe(inputs, label, opts, repeat, has_delta)
        rows.append(dict(name=label, bytes=u["bytes"], comp_s=u["comp_s"], decomp_s=u["decomp_s"],
                         **{"fit+comp_s": u["fit_comp_s"]}, ubpe=True))
        parts.append(dict(data=name, row=label, size=u["bytes"], header=u["header"], model=u["model"],
                          freq=u["freq"], payload=u["payload"], coder=u["coder"], delta=u["delta"],
                          A=u["alphabet"], merges=u["merges"], tokens=u["tokens"],
                          reuse_size=u["reuse_bytes"]))
    print(f"-- {name}: standard codecs", flush=True)
    if len(inputs) > 1:
        codec_rows = run_codecs_each(inputs)
    else:
        codec_rows = run_codecs(inputs[0], sample_rate=rate) if rate else run_codecs(inputs[0])
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
    return rows, parts, n_values, raw


def summarise(all_rows: list[dict], variants) -> list[dict]:
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
            w = min(mine, key=lambda x: x["comp_Mv/s"])
            out.append(dict(row=label, target="compress >= 5 M values/s (existing model)", data=f"all {len(mine)}",
                            measured=f"min {w['comp_Mv/s']:.1f} M/s ({w['data']})",
                            result="PASS" if w["comp_Mv/s"] * 1e6 >= TARGET_COMP else "FAIL"))
            w = min(mine, key=lambda x: x["dec_Mv/s"])
            out.append(dict(row=label, target="decompress >= 50 M values/s", data=f"all {len(mine)}",
                            measured=f"min {w['dec_Mv/s']:.1f} M/s ({w['data']})",
                            result="PASS" if w["dec_Mv/s"] * 1e6 >= TARGET_DEC else "FAIL"))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="skip neural120-concat")
    p.add_argument("--data", nargs="+", choices=DATASETS, help="data sets (default: all, or the --quick subset)")
    p.add_argument("--repeat", type=int, default=3, help="timed runs of ubpe compress/decompress (best reported)")
    p.add_argument("--variant", action="append", default=[], metavar="LABEL:key=value,...",
                   help="extra ubpe row with these compress options (repeatable)")
    add_json_arg(p)
    a = p.parse_args(argv)

    datasets = a.data or (QUICK_DATASETS if a.quick else DATASETS)
    variants, notes = discover_variants()
    variants += [parse_variant(v) for v in a.variant]
    has_delta = "delta" in pyinspect.signature(ubpe.compress).parameters
    for n in notes:
        print(n)
    print("ubpe rows: " + "; ".join(f"{lab} {opts or '(defaults)'}" for lab, opts in variants))
    if not flac_available():
        print("note: `flac` not on PATH, FLAC rows skipped (apt-get install flac)")

    # numba: compile (or load from cache) everything compress/decompress use, before timing
    warm = np.cumsum(np.random.default_rng(0).integers(-3, 4, 30000)).astype(np.int16)
    for _, opts in variants:
        for x in (warm, bytes(warm.astype(np.uint8))):
            ubpe.decompress(ubpe.compress(x, **opts))

    all_rows, all_parts, tables = [], [], []
    cols = ["name", "bytes", "ratio", "bits/val", "comp_s", "comp_Mv/s", "decomp_s", "dec_Mv/s", "fit+comp_s"]
    cols += [f"vs {c}" for c in RIVALS]
    for name in datasets:
        rows, parts, n_values, raw = measure_dataset(name, variants, a.repeat, has_delta)
        rows.sort(key=lambda r: r["bytes"])
        title = f"== {name}: {n_values:,} values, {raw:,} raw bytes"
        print()
        print_table(rows, cols, title=title)
        tables.append((rows, title))
        all_rows += rows
        all_parts += parts

    print("\n==================== all tables ====================\n")
    for rows, title in tables:
        print_table(rows, cols, title=title)
    print_table(all_parts, title="== ubpe container parts (ubpe.inspect, bytes; sums for neural24-each); "
                "reuse_size = the existing-model container timed above")
    summary = summarise(all_rows, variants)
    print_table(summary, title="== targets (ubpe: comp/dec timed best of "
                f"{a.repeat}; codecs single runs; shared machine, indicative)")
    write_json(a.json, dict(args=vars(a), variants=[dict(label=l, options=o) for l, o in variants],
                            rows=all_rows, parts=all_parts, summary=summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
