"""Second held-out set: ubpe levels 1, 2, 3 against the standard lossless codecs and Sac on
recordings of kinds the first unseen set lacks (stereo/24-bit/8-bit audio, speech, music, EMG,
64-channel EEG, accelerometer, weather; built by ``unseen2_data.py``), each compressed alone,
every claim checked and every breach flagged.

    python benchmarks/bench_unseen2.py /work/unseen2 --md benchmarks/results/unseen2.md
    python benchmarks/bench_unseen2.py DIR --only emg drum --no-sac --json out.json

Inputs: every ``*.npy`` of DIR (sorted), in its own dtype and shape (1-D, or 2-D (frames,
channels)); the sample rate (FLAC/WavPack/Sac headers only) from the ``_<N>hz`` name ending.
A missing directory, file or peer is skipped with a printed note.

ubpe: ``ubpe.compress(x, level=L, threads=1)`` for L = 1, 2, 3, each decoded and compared with
the input (dtype, shape and values); an exception or a wrong round trip is recorded, not raised.
Speed: M values/s on CPU time (``time.process_time``), one call each, after a warm-up that
compiles (or loads) the kernels for every dtype/shape kind in the set.

Peers: ``ubpe.peers.run_codecs`` (zlib-9, bz2-9, xz-9e, zstd-19, brotli-11, pcodec, zpaq-m5,
flac-8, wavpack-hhx6; each round-trip checked). Unsigned ADC/8-bit codes are given to FLAC and
WavPack as signed PCM after subtracting the half range (as a .wav stores them), so they get the
narrowest bit depth; 8-bit values go to pcodec widened to 16 bits (it takes no narrower). Sac (``--normal``, ``$UBPE_SAC`` or ``/work/peers/build-sac/sac``; values
that fit 16 bits, one mono .wav a channel, sizes summed over the channels; ``_level3_peers``,
cached in results/unseen2-peers.json) and, with ``--paq8px``, paq8px -8 the same way.

Flags (the project's claims): CRASH (an exception), LOSSY (a wrong round trip), NONDETERMINISTIC
(two calls gave different bytes), PEER<L2 (a standard codec smaller than level 2), L3>L2, SAC<L3
and PAQ8PX<L3 (level 3's peers smaller than it), L1>FLAC, and SLOW (level 2 compress below 0.5 M
values/s, level 3 below 0.15 M values/s, best CPU time of --repeat calls; inputs of at least
100 000 values only, as fixed costs dominate below).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _level3_peers as l3peers  # noqa: E402
from _measure import RESULTS  # noqa: E402
from bench_unseen import rate_from_name  # noqa: E402

import ubpe  # noqa: E402
from ubpe import peers  # noqa: E402

LEVELS = (1, 2, 3)
SLOW = {2: 0.5e6, 3: 0.15e6}
SLOW_MIN_VALUES = 100_000  #: the speed floors are judged on inputs at least this long (fixed costs dominate below)
STRONG = ("sac", "paq8px")  #: level 3's peers (level 2's claim is against the others)
SAC_DEFAULT = "/work/peers/build-sac/sac"
PEER_CACHE = RESULTS / "unseen2-peers.json"


def signed_for_pcm(x: np.ndarray) -> np.ndarray:
    """Unsigned codes as signed PCM (minus half of the narrowest of 8/16/24-bit ranges that holds
    them), as a .wav stores them; signed input as it is."""
    if x.dtype.kind != "u" or x.size == 0:
        return x
    hi = int(x.max())
    for bits, dt in ((8, np.int8), (16, np.int16), (24, np.int32)):
        if hi < 1 << bits:
            return (x.astype(np.int64) - (1 << (bits - 1))).astype(dt)
    return x


def run_level(x: np.ndarray, level: int, repeat: int) -> dict:
    """Level ``level`` on ``x``: bytes, round trip, the best CPU time of ``repeat`` calls each way
    (the first call of a dtype/shape may still compile a kernel), and whether the calls' bytes agree."""
    out: dict = {}
    try:
        cs, tc, td = [], [], []
        for _ in range(max(1, repeat)):
            c0 = time.process_time()
            cs.append(ubpe.compress(x, level=level, threads=1))
            tc.append(time.process_time() - c0)
        for _ in range(max(1, repeat)):
            c0 = time.process_time()
            back = ubpe.decompress(cs[0])
            td.append(time.process_time() - c0)
    except Exception as e:  # noqa: BLE001 - recorded and flagged
        out["error"] = f"{type(e).__name__}: {e}"
        out["traceback"] = traceback.format_exc()
        return out
    c = cs[0]
    ok = isinstance(back, np.ndarray) and back.dtype == x.dtype and back.shape == x.shape and np.array_equal(back, x)
    out.update(bytes=len(c), compress_cpu_s=min(tc), decompress_cpu_s=min(td), lossless=bool(ok),
               deterministic=all(o == c for o in cs), first_compress_cpu_s=tc[0], first_decompress_cpu_s=td[0])
    try:
        info = ubpe.describe(c)
        out["coder"] = str(getattr(info, "coder", "?"))
    except Exception as e:  # noqa: BLE001
        out["coder"] = f"describe failed: {type(e).__name__}"
    return out


def run_external(kind: str, exe: str | None, x: np.ndarray, rate: float, cache) -> dict | None:
    """Sac or paq8px over the channels (sizes summed), or None where a channel does not fit."""
    cols = [x] if x.ndim == 1 else [x[:, i] for i in range(x.shape[1])]
    total, cpu = 0, 0.0
    for col in cols:
        col = np.ascontiguousarray(col)
        if kind == "sac":
            r = l3peers.run_sac(exe, col, rate, cache, best=False)
        else:
            r = l3peers.run_paq8px(exe, col, rate, cache)
        if r is None:
            return None
        total += r["bytes"]
        cpu += r.get("compress_cpu_s", 0.0)
    return dict(bytes=total, compress_cpu_s=cpu, channels=len(cols))


def measure(name: str, x: np.ndarray, rate: float, a, cache) -> dict:
    res = dict(recording=name, dtype=str(x.dtype), shape=list(x.shape), values=int(x.size), raw=int(x.nbytes),
               rate=rate, levels={}, codecs={}, flags=[])
    for lv in LEVELS:
        res["levels"][lv] = r = run_level(x, lv, a.repeat)
        if "error" in r:
            res["flags"].append(f"CRASH L{lv}")
        elif not r["lossless"]:
            res["flags"].append(f"LOSSY L{lv}")
        elif not r["deterministic"]:
            res["flags"].append(f"NONDETERMINISTIC L{lv}")
        print(f"   L{lv}: {r.get('bytes', r.get('error'))} "
              f"({r.get('compress_cpu_s', 0):.2f} s / {r.get('decompress_cpu_s', 0):.2f} s CPU)", flush=True)
    sr = max(1, round(rate))
    names = [n for n in a.codecs if n not in peers.PCM_CODECS]
    if x.dtype.itemsize == 1 and "pcodec" in names:  # pcodec takes 16/32/64-bit values: widened
        names.remove("pcodec")
        wide = x.astype(np.uint16 if x.dtype.kind == "u" else np.int16)
        for r in peers.run_codecs(wide, names=["pcodec"], sample_rate=sr):
            res["codecs"]["pcodec"] = dict(bytes=r["bytes"], compress_s=r["compress_s"], fed="widened to 16 bits")
    for r in peers.run_codecs(x, names=names, sample_rate=sr):
        res["codecs"][r["name"]] = dict(bytes=r["bytes"], compress_s=r["compress_s"])
    pcm = signed_for_pcm(x)
    if peers.pcm_bits(pcm) is not None:
        names = [n for n in a.codecs if n in peers.PCM_CODECS]
        if x.ndim == 2 and x.shape[1] > 8:
            names = [n for n in names if n != "flac-8"]  # FLAC holds at most 8 channels
            print("   note: flac-8 skipped: more than 8 channels")
        for r in peers.run_codecs(pcm, names=names or None, sample_rate=sr) if names else []:
            res["codecs"][r["name"]] = dict(bytes=r["bytes"], compress_s=r["compress_s"], pcm_bits=r.get("pcm_bits"))
    else:
        print("   note: flac-8/wavpack skipped: values wider than 24 bits")
    for kind, exe in (("sac", a.sac), ("paq8px", a.paq8px)):
        if exe is None:
            continue
        t0 = time.perf_counter()
        r = run_external(kind, exe, x, rate, cache)
        if r is None:
            print(f"   note: {kind} skipped: values do not fit 16 bits")
        else:
            res["codecs"][kind] = r
            print(f"   {kind}: {r['bytes']} ({time.perf_counter() - t0:.1f} s)", flush=True)
    lv = res["levels"]
    l1, l2, l3 = (lv[k].get("bytes") if lv[k].get("lossless") else None for k in LEVELS)
    if l2 is not None:
        for k, v in res["codecs"].items():
            if v["bytes"] < l2 and k not in STRONG:
                res["flags"].append(f"PEER<L2 {k} {v['bytes'] / l2 - 1:+.2%}")
        if l3 is not None and l3 > l2:
            res["flags"].append(f"L3>L2 {l3 / l2 - 1:+.2%}")
        for k in STRONG:
            if l3 is not None and k in res["codecs"] and res["codecs"][k]["bytes"] < l3:
                res["flags"].append(f"{k.upper()}<L3 {res['codecs'][k]['bytes'] / l3 - 1:+.2%}")
        for k, floor in SLOW.items():
            r = lv[k]
            if x.size >= SLOW_MIN_VALUES and "compress_cpu_s" in r and x.size / max(r["compress_cpu_s"], 1e-9) < floor:
                res["flags"].append(f"SLOW L{k} {x.size / r['compress_cpu_s'] / 1e6:.2f} M/s")
    if l1 is not None and "flac-8" in res["codecs"] and l1 > res["codecs"]["flac-8"]["bytes"]:
        res["flags"].append(f"L1>FLAC {l1 / res['codecs']['flac-8']['bytes'] - 1:+.2%}")
    return res


def warm_up(xs: list[np.ndarray]) -> None:
    """Compile or load the kernels for every (dtype, ndim) in the set, at every level."""
    seen = set()
    rng = np.random.default_rng(0)
    for x in xs:
        key = (x.dtype.str, x.ndim)
        if key in seen:
            continue
        seen.add(key)
        n = 4000
        w = np.cumsum(rng.integers(-3, 4, (n,) + x.shape[1:]), axis=0) + (100 if x.dtype.kind == "u" else 0)
        w = w.astype(x.dtype)
        for lv in LEVELS:
            try:
                ubpe.decompress(ubpe.compress(w, level=lv, threads=1))
            except Exception as e:  # noqa: BLE001 - the measured run records it
                print(f"note: warm-up {key} L{lv}: {type(e).__name__}: {e}")


def reference() -> np.ndarray | None:
    """The shared ECG (MIT-BIH 208), the speed reference measured in the same process, or None."""
    try:
        import _data

        return _data.ecg()
    except Exception as e:  # noqa: BLE001 - a missing reference is a note
        print(f"note: no speed reference (shared ECG): {type(e).__name__}: {e}")
        return None


def reference_speeds(x: np.ndarray, repeat: int) -> dict:
    out = {}
    for lv in LEVELS:
        r = run_level(x, lv, repeat)
        out[lv] = x.size / r["compress_cpu_s"] / 1e6 if "compress_cpu_s" in r else float("nan")
    print("reference (shared ECG) compress M values/s: " + " ".join(f"L{k} {v:.2f}" for k, v in out.items()))
    return out


def fmt_ratio(raw: int, b: int | None) -> str:
    return "-" if b is None else f"{raw / b:.3f}"


def markdown(results: list[dict], cmd: str, versions: dict) -> str:
    peer_cols = ["flac-8", "wavpack-hhx6", "pcodec", "zstd-19", "xz-9e", "bz2-9", "brotli-11", "zpaq-m5", "sac",
                 "paq8px"]
    peer_cols = [c for c in peer_cols if any(c in r["codecs"] for r in results)]
    cols = ["recording", "dtype", "shape", "L1", "L2", "L3"] + peer_cols + ["best peer vs L2", "L3 vs best",
                                                                             "L1/L2/L3 M/s (CPU, compress)",
                                                                             "L2/L3 M/s decompress", "coder L2/L3"]
    out = [f"Command: `{cmd}`", "",
           "Ratios: raw bytes (itemsize a value) / compressed bytes, larger is better. "
           "'best peer vs L2' = best peer's bytes / level 2's - 1 (> 0: level 2 is smaller). "
           "'L3 vs best' the same for level 3 against the best peer, Sac and paq8px included. "
           "Speeds: M values/s on CPU time, one call, threads=1.", "",
           "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in results:
        lv, raw = r["levels"], r["raw"]
        b = {k: (lv[k].get("bytes") if lv[k].get("lossless") else None) for k in LEVELS}
        cells = [r["recording"], r["dtype"], "x".join(map(str, r["shape"]))]
        cells += ["ERR" if "error" in lv[k] else ("LOSSY" if not lv[k]["lossless"] else fmt_ratio(raw, b[k]))
                  for k in LEVELS]
        cells += [fmt_ratio(raw, r["codecs"][c]["bytes"]) if c in r["codecs"] else "-" for c in peer_cols]
        std = {k: v for k, v in r["codecs"].items() if k not in ("sac", "paq8px")}
        best = min(std, key=lambda k: std[k]["bytes"]) if std else None
        cells.append(f"{best} {std[best]['bytes'] / b[2] - 1:+.2%}" if best and b[2] else "-")
        allp = r["codecs"]
        bestall = min(allp, key=lambda k: allp[k]["bytes"]) if allp else None
        cells.append(f"{bestall} {allp[bestall]['bytes'] / b[3] - 1:+.2%}" if bestall and b[3] else "-")
        sp = [f"{r['values'] / lv[k]['compress_cpu_s'] / 1e6:.2f}" if "compress_cpu_s" in lv[k] else "-"
              for k in LEVELS]
        cells.append(" / ".join(sp))
        dp = [f"{r['values'] / lv[k]['decompress_cpu_s'] / 1e6:.2f}" if "decompress_cpu_s" in lv[k] else "-"
              for k in (2, 3)]
        cells.append(" / ".join(dp))
        cells.append(f"{lv[2].get('coder', '-')} / {lv[3].get('coder', '-')}")
        out.append("| " + " | ".join(cells) + " |")
    out += ["", "Flags:", ""]
    any_flag = False
    for r in results:
        if r["flags"]:
            any_flag = True
            out.append(f"- {r['recording']}: " + "; ".join(r["flags"]))
    if not any_flag:
        out.append("- none")
    out += ["", "Versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v), ""]
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir", type=Path)
    p.add_argument("--only", nargs="*", default=None, help="recordings whose name contains one of these words")
    p.add_argument("--codecs", nargs="*", default=list(peers.ALL))
    p.add_argument("--repeat", type=int, default=2, help="calls per level each way (best CPU time kept)")
    p.add_argument("--no-sac", action="store_true")
    p.add_argument("--paq8px", action="store_true", help="also paq8px -8 ($UBPE_PAQ8PX or paq8px on PATH)")
    p.add_argument("--md", type=Path, default=None)
    p.add_argument("--json", type=Path, default=None)
    a = p.parse_args(argv)
    if not a.dir.is_dir():
        print(f"note: no recordings at {a.dir}: nothing to do")
        return 0
    files = sorted(a.dir.glob("*.npy"))
    if a.only:
        files = [f for f in files if any(w in f.stem for w in a.only)]
    if not files:
        print(f"note: no .npy files in {a.dir}")
        return 0
    for codec, why in peers.missing_codecs():
        print(f"note: {codec} skipped: {why}")
    a.codecs = [c for c in a.codecs if peers.missing(c) is None]
    a.sac = None
    if not a.no_sac:
        os.environ.setdefault("UBPE_SAC", SAC_DEFAULT)
        a.sac = l3peers.binary("sac")
        if a.sac is None:
            print("note: Sac skipped: no binary ($UBPE_SAC, /work/peers/build-sac/sac or sac on PATH)")
    if a.paq8px:
        a.paq8px = l3peers.binary("paq8px")
        if a.paq8px is None:
            print("note: paq8px skipped: no binary ($UBPE_PAQ8PX or paq8px on PATH)")
    else:
        a.paq8px = None
    cache = l3peers.Cache(PEER_CACHE)
    xs = [(f.stem, np.load(f), rate_from_name(f) or 1000.0) for f in files]
    t0 = time.perf_counter()
    warm_up([x for _, x, _ in xs])
    print(f"warm-up {time.perf_counter() - t0:.0f} s")
    refs = []
    ref = reference()
    if ref is not None:
        refs.append(reference_speeds(ref, a.repeat))
    results = []
    for name, x, rate in xs:
        print(f"-- {name}: {x.dtype} {x.shape} at {rate:g} Hz", flush=True)
        results.append(measure(name, x, rate, a, cache))
        if results[-1]["flags"]:
            print("   FLAGS: " + "; ".join(results[-1]["flags"]), flush=True)
    if ref is not None:
        refs.append(reference_speeds(ref, a.repeat))
    cmd = "python benchmarks/bench_unseen2.py " + " ".join(argv if argv is not None else sys.argv[1:])
    versions = dict(peers.codec_versions(), ubpe=getattr(ubpe, "__version__", "?"))
    md = markdown(results, cmd, versions)
    if refs:
        md += ("\nReference in the same process (shared ECG, MIT-BIH 208, 108 000 int16 values), compress M values/s "
               "on CPU time, before and after the set: " + "; ".join(
                   " ".join(f"L{k} {v:.2f}" for k, v in r.items()) for r in refs) + f" (load average at the end: "
               f"{os.getloadavg()[0]:.1f})\n")
    print(md)
    if a.md:
        a.md.write_text(md)
    if a.json:
        a.json.write_text(json.dumps(dict(command=cmd, results=results), indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
