"""Level 1 against FLAC -8, side by side in one run: ratio, compress and decompress speed per set
(issue 28, target 1: level 1 compresses at least as fast as FLAC -8 and decodes at least 1.5 times
as fast, one core, CPU time, its ratio at least FLAC's).

    python benchmarks/bench_level1.py                       # every set, 5 rounds
    python benchmarks/bench_level1.py --sets ecg seismic --rounds 9
    python benchmarks/bench_level1.py --md benchmarks/results/level1.md

Sets: ``ecg``, ``seismic``, ``audio`` (the 32 files, each compressed alone), ``neural`` (the first 24
recordings joined into one array), ``unseen`` (every recording of ``--unseen``, default
/work/unseen-data, each alone; FLAC takes values of at most 24 bits: a recording wider than that
is left out of the set's FLAC columns and of ubpe's, and named). Each input is written to raw
little-endian PCM once; FLAC runs as ``flac -8 --no-padding --no-seektable`` on it (mono), and
``flac -d`` back, as :mod:`ubpe.peers` runs it.

Timing: per input and per round, in this order, each contender once: ``ubpe.compress(x, level=1,
threads=1)``, FLAC's encode, ``ubpe.decompress``, FLAC's decode (alternated, so a loaded machine
slows both alike); the best of ``--rounds`` of each is kept, and a set's time is the sum over its
inputs. ubpe's CPU time is this process's (``time.process_time``); FLAC's is its process's, user
+ system (``os.wait4``'s rusage), its start-up included: the time of ``flac --version`` (a process
that starts, prints and exits) is printed as the start-up, once. Wall times of both are printed
too. M values/s = the set's values / the set's time. Every container is checked to decode to its
input, and every FLAC file to its PCM.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _data  # noqa: E402
from _measure import add_json_arg, result_path, write_json  # noqa: E402

import ubpe  # noqa: E402
from ubpe import peers  # noqa: E402

SETS = ["ecg", "seismic", "audio", "neural", "unseen"]


def load_sets(names: list[str], unseen: Path) -> dict[str, list[tuple[str, np.ndarray, int]]]:
    """Set -> its inputs as (name, 1-D integer values, sample rate)."""
    out: dict[str, list[tuple[str, np.ndarray, int]]] = {}
    for name in names:
        if name == "ecg":
            out[name] = [("ecg", _data.ecg(), 360)]
        elif name == "seismic":
            out[name] = [("seismic", _data.seismic(), 100)]
        elif name == "audio":
            out[name] = [(f"audio/{i}", x, rate) for i, (x, rate) in enumerate(_data.audio())]
        elif name == "neural":
            out[name] = [("neural24", np.concatenate(_data.neural(24)), 19531)]
        elif name == "unseen":
            import bench_unseen

            paths = sorted(str(p) for p in unseen.iterdir() if p.suffix in bench_unseen.SUFFIXES)
            out[name] = [(f"unseen/{n}", x, max(1, round(rate or 1000))) for n, x, rate in bench_unseen.load(paths, "0", 0.0)]
    return out


def _child_cpu(cmd: list[str], cwd: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run of ``cmd``: its process's user + system time."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise RuntimeError(f"{cmd[0]} failed: {proc.stderr.read().decode(errors='replace')[-300:]}")
    proc.stderr.close()
    return usage.ru_utime + usage.ru_stime, wall


def flac_startup(rounds: int) -> float:
    """The least CPU seconds of ``flac --version``: a FLAC process's start-up and exit."""
    return min(_child_cpu(["flac", "--version"], "/")[0] for _ in range(max(rounds, 5)))


class Flac:
    """One input as raw PCM in a folder of its own, FLAC's encode and decode commands on it."""

    def __init__(self, x: np.ndarray, rate: int, folder: str) -> None:
        self.bits = peers.pcm_bits(x)
        self.dir = folder
        self.x = x
        if self.bits is None:
            return
        Path(folder, "x.raw").write_bytes(peers._pcm_bytes(x, self.bits))
        fmt = ["--force-raw-format", "--endian=little", "--sign=signed", "--channels=1", f"--bps={self.bits}",
               f"--sample-rate={rate}"]
        self.enc = ["flac", "-8", "--no-padding", "--no-seektable", "--silent", "-f", *fmt, "-o", "x.flac", "x.raw"]
        self.dec = ["flac", "-d", "--silent", "-f", "--force-raw-format", "--endian=little", "--sign=signed",
                    "-o", "back.raw", "x.flac"]

    def check(self) -> int:
        back = peers._from_pcm(Path(self.dir, "back.raw").read_bytes(), self.bits, self.x.dtype)
        if not np.array_equal(back, self.x):
            raise AssertionError("FLAC did not round-trip")
        return Path(self.dir, "x.flac").stat().st_size


def measure(inputs: list[tuple[str, np.ndarray, int]], rounds: int, tmp: str) -> dict:
    """Best-of-``rounds`` times and sizes of ubpe level 1 and FLAC -8 on ``inputs``, alternated."""
    rows = []
    for k, (name, x, rate) in enumerate(inputs):
        flac = Flac(x, rate, tempfile.mkdtemp(dir=tmp))
        data = ubpe.compress(x, level=1, threads=1)  # (first calls: caches; untimed)
        back = ubpe.decompress(data)
        if back.dtype != x.dtype or not np.array_equal(back, x):
            raise AssertionError(f"{name}: level 1 did not round-trip")
        best = {key: float("inf") for key in ("uc", "ucw", "ud", "udw", "fc", "fcw", "fd", "fdw")}
        for _ in range(rounds):
            w0, c0 = time.perf_counter(), time.process_time()
            data = ubpe.compress(x, level=1, threads=1)
            c1, w1 = time.process_time(), time.perf_counter()
            best["uc"], best["ucw"] = min(best["uc"], c1 - c0), min(best["ucw"], w1 - w0)
            if flac.bits is not None:
                c, w = _child_cpu(flac.enc, flac.dir)
                best["fc"], best["fcw"] = min(best["fc"], c), min(best["fcw"], w)
            w0, c0 = time.perf_counter(), time.process_time()
            ubpe.decompress(data)
            c1, w1 = time.process_time(), time.perf_counter()
            best["ud"], best["udw"] = min(best["ud"], c1 - c0), min(best["udw"], w1 - w0)
            if flac.bits is not None:
                c, w = _child_cpu(flac.dec, flac.dir)
                best["fd"], best["fdw"] = min(best["fd"], c), min(best["fdw"], w)
        row = dict(name=name, values=int(x.size), raw=int(x.nbytes), ubpe_bytes=len(data),
                   flac_bytes=flac.check() if flac.bits is not None else None, **best)
        info = ubpe.describe(data)
        row["chain"] = "+".join(e["stage"] for e in info.front) or "none"
        row["coder"] = info.coder
        rows.append(row)
    return rows


def summary(rows: list[dict]) -> dict:
    """A set's totals over the inputs FLAC takes (and the names of those it does not)."""
    both = [r for r in rows if r["flac_bytes"] is not None]
    n = sum(r["values"] for r in both)
    raw = sum(r["raw"] for r in both)
    tot = {k: sum(r[k] for r in both) for k in ("uc", "ucw", "ud", "udw", "fc", "fcw", "fd", "fdw")}
    out = dict(inputs=len(both), values=n, ubpe_ratio=raw / sum(r["ubpe_bytes"] for r in both),
               flac_ratio=raw / sum(r["flac_bytes"] for r in both),
               left_out=[r["name"] for r in rows if r["flac_bytes"] is None])
    for k, v in tot.items():
        out[k + "_mvs"] = n / v / 1e6
    out["compress_cpu_ratio"] = tot["fc"] / tot["uc"]  # > 1: ubpe is faster
    out["decompress_cpu_ratio"] = tot["fd"] / tot["ud"]
    out["compress_wall_ratio"] = tot["fcw"] / tot["ucw"]
    out["decompress_wall_ratio"] = tot["fdw"] / tot["udw"]
    return out


def table(results: dict[str, dict], startup: float) -> str:
    lines = [
        "| set | inputs | values | ratio ubpe / FLAC | compress M/s CPU ubpe / FLAC (x) | wall (x) "
        "| decompress M/s CPU ubpe / FLAC (x) | wall (x) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, s in results.items():
        lines.append(
            f"| {name} | {s['inputs']} | {s['values']} | {s['ubpe_ratio']:.3f} / {s['flac_ratio']:.3f} "
            f"| {s['uc_mvs']:.2f} / {s['fc_mvs']:.2f} ({s['compress_cpu_ratio']:.2f}) "
            f"| {s['ucw_mvs']:.2f} / {s['fcw_mvs']:.2f} ({s['compress_wall_ratio']:.2f}) "
            f"| {s['ud_mvs']:.1f} / {s['fd_mvs']:.1f} ({s['decompress_cpu_ratio']:.2f}) "
            f"| {s['udw_mvs']:.1f} / {s['fdw_mvs']:.1f} ({s['decompress_wall_ratio']:.2f}) |")
    lines.append("")
    lines.append(f"(x) = FLAC's time / ubpe's: above 1, ubpe is faster. FLAC's times include its process "
                 f"start-up: `flac --version` takes {startup * 1e3:.2f} ms of CPU.")
    left = {k: s["left_out"] for k, s in results.items() if s["left_out"]}
    if left:
        lines.append("Left out (values beyond FLAC's 24 bits): " + "; ".join(
            f"{k}: {', '.join(v)}" for k, v in left.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="+", default=SETS, choices=SETS)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--unseen", type=Path, default=Path("/work/unseen-data"))
    ap.add_argument("--md", type=Path, help="also write the table (and every input's row) here")
    ap.add_argument("--each", action="store_true", help="print every input's row")
    add_json_arg(ap, "level1.json")
    args = ap.parse_args(argv)
    if not peers.flac_available():
        print("flac is not installed (apt-get install flac)")
        return 1
    sets = load_sets(args.sets, args.unseen)
    startup = flac_startup(args.rounds)
    results, rows_of = {}, {}
    with tempfile.TemporaryDirectory(prefix="ubpe-level1-") as tmp:
        for name, inputs in sets.items():
            rows = measure(inputs, args.rounds, tmp)
            rows_of[name] = rows
            results[name] = s = summary(rows)
            print(f"{name:8s} ratio {s['ubpe_ratio']:.3f} / {s['flac_ratio']:.3f}  compress CPU "
                  f"{s['uc_mvs']:.2f} / {s['fc_mvs']:.2f} M/s (x{s['compress_cpu_ratio']:.2f})  decompress CPU "
                  f"{s['ud_mvs']:.1f} / {s['fd_mvs']:.1f} M/s (x{s['decompress_cpu_ratio']:.2f})", flush=True)
            if args.each:
                for r in rows:
                    print(f"   {r['name']:40s} {r['values']:8d} {r['chain']:12s} {r['coder']:5s} "
                          f"ubpe {r['ubpe_bytes']:8d} B {r['uc'] * 1e3:7.2f} ms {r['ud'] * 1e3:6.2f} ms | flac "
                          f"{r['flac_bytes'] or 0:8d} B {r['fc'] * 1e3:7.2f} ms {r['fd'] * 1e3:6.2f} ms")
    text = table(results, startup)
    print()
    print(text)
    if args.md:
        header = (f"# Level 1 against FLAC -8\n\n`python benchmarks/bench_level1.py {' '.join(argv or sys.argv[1:])}` "
                  f"(best of {args.rounds} rounds, contenders alternated; one core; CPU time).\n\n")
        each = ["", "| input | values | chain | coder | ubpe B | FLAC B | compress ms ubpe / FLAC | decompress ms ubpe / FLAC |",
                "|---|---|---|---|---|---|---|---|"]
        for rows in rows_of.values():
            for r in rows:
                fb = r["flac_bytes"]
                each.append(f"| {r['name']} | {r['values']} | {r['chain']} | {r['coder']} | {r['ubpe_bytes']} | "
                            f"{fb if fb is not None else '-'} | {r['uc'] * 1e3:.2f} / "
                            f"{r['fc'] * 1e3 if fb is not None else float('nan'):.2f} | {r['ud'] * 1e3:.2f} / "
                            f"{r['fd'] * 1e3 if fb is not None else float('nan'):.2f} |")
        args.md.write_text(header + text + "\n" + "\n".join(each) + "\n")
    write_json(result_path(args), dict(startup_s=startup, sets=results, rows=rows_of), extra={"argv": argv})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
