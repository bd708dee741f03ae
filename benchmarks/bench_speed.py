"""Speed side by side (issue 28, target 5): ubpe at levels 1 and 2 against FLAC -8, WavPack -hh -x6
and pcodec, one core, contenders alternated, CPU and wall time, in one run.

    nice -n 5 python benchmarks/bench_speed.py                      # every set, 3 rounds
    python benchmarks/bench_speed.py --sets ecg seismic --rounds 5 --md benchmarks/results/speed.md

Sets (as benchmarks/bench_level1.py loads them): ``ecg``, ``seismic``, ``audio`` (the 32 short
files, each alone), ``neural`` (24 recordings joined), ``unseen`` (``--unseen`` recordings, each
alone). After an untimed first call of ubpe at each level, per input and per round every contender compresses and then decompresses once, in turn
(ubpe level 1, FLAC, ubpe level 2, WavPack, pcodec), so a loaded machine slows all alike; each
contender's best of ``--rounds`` is kept and a set's time is the sum over its inputs. ubpe and
pcodec run in this process (``time.process_time``; ubpe with ``threads=1``); FLAC and WavPack
run as processes and their CPU time is the child's user + system time (``os.wait4``), start-up
included: the start-up of ``flac --version`` and ``wavpack --version`` is printed. Every output
is checked to decode to its input. FLAC and WavPack take values of at most 24 bits: wider inputs
are left out of every column of their set, and named.

Printed: per set and codec, ratio (raw / compressed bytes) / compress / decompress in M values/s
of CPU time, the same in wall time, and each codec's CPU time over ubpe level 1's and level 2's.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _measure import add_json_arg, result_path, write_json  # noqa: E402
from bench_level1 import SETS, Flac, _child_cpu, load_sets  # noqa: E402

import ubpe  # noqa: E402
from ubpe import peers  # noqa: E402

CODECS = ["ubpe-1", "ubpe-2", "flac-8", "wavpack-hhx6", "pcodec"]


class WavPack:
    """One input as a .wav in a folder of its own, WavPack's encode and decode commands on it."""

    def __init__(self, x: np.ndarray, rate: int, folder: str) -> None:
        self.bits = peers.pcm_bits(x)
        self.dir = folder
        self.x = x
        if self.bits is None:
            return
        raw = peers._pcm_bytes(x, self.bits)
        Path(folder, "x.wav").write_bytes(peers._wav_header(len(raw), self.bits, rate) + peers._wav_samples(raw, self.bits))
        self.enc = ["wavpack", "-hh", "-x6", "-q", "-y", "x.wav", "-o", "x.wv"]
        self.dec = ["wvunpack", "-q", "-y", "--raw", "x.wv", "-o", "back.raw"]

    def check(self) -> int:
        raw = Path(self.dir, "back.raw").read_bytes()
        if self.bits == 8:  # wvunpack --raw writes 8-bit samples unsigned (the WAV rule)
            raw = (np.frombuffer(raw, np.uint8) ^ 0x80).astype(np.uint8).tobytes()
        if not np.array_equal(peers._from_pcm(raw, self.bits, self.x.dtype), self.x):
            raise AssertionError("WavPack did not round-trip")
        return Path(self.dir, "x.wv").stat().st_size


def _timed(fn) -> tuple[float, float, object]:
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.process_time() - c0, time.perf_counter() - w0, out


def measure_input(x: np.ndarray, rate: int, rounds: int, tmp: str, codecs: list[str]) -> dict:
    """Best-of-``rounds`` CPU and wall seconds and sizes of every codec on ``x``, alternated."""
    if "pcodec" in codecs:  # (imported only when asked for: main() skips it, with a note, when missing)
        from pcodec import ChunkConfig, standalone

    flac = Flac(x, rate, tempfile.mkdtemp(dir=tmp)) if "flac-8" in codecs else None
    wv = WavPack(x, rate, tempfile.mkdtemp(dir=tmp)) if "wavpack-hhx6" in codecs else None
    pcm = flac.bits if flac is not None else peers.pcm_bits(x)
    best: dict[str, dict[str, float]] = {c: dict(c_cpu=np.inf, c_wall=np.inf, d_cpu=np.inf, d_wall=np.inf)
                                         for c in codecs}
    size: dict[str, int] = {}
    for level in (1, 2):  # first calls (kernels loaded, caches filled): untimed
        if f"ubpe-{level}" in codecs:
            ubpe.decompress(ubpe.compress(x, level=level, threads=1), threads=1)
    for _ in range(rounds):
        for codec in codecs:
            if codec.startswith("ubpe"):
                level = int(codec[-1])
                c, w, data = _timed(lambda: ubpe.compress(x, level=level, threads=1))
                dc, dw, back = _timed(lambda: ubpe.decompress(data, threads=1))
                if back.dtype != x.dtype or not np.array_equal(back, x):
                    raise AssertionError(f"{codec} did not round-trip")
                size[codec] = len(data)
            elif codec == "pcodec":
                c, w, data = _timed(lambda: standalone.simple_compress(x, ChunkConfig()))
                dc, dw, back = _timed(lambda: standalone.simple_decompress(data))
                if not np.array_equal(back, x):
                    raise AssertionError("pcodec did not round-trip")
                size[codec] = len(data)
            else:
                peer = flac if codec == "flac-8" else wv
                if pcm is None:
                    continue
                c, w = _child_cpu(peer.enc, peer.dir)
                dc, dw = _child_cpu(peer.dec, peer.dir)
                size[codec] = peer.check()
            b = best[codec]
            b["c_cpu"], b["c_wall"] = min(b["c_cpu"], c), min(b["c_wall"], w)
            b["d_cpu"], b["d_wall"] = min(b["d_cpu"], dc), min(b["d_wall"], dw)
    return dict(values=int(x.size), raw=int(x.nbytes), pcm=pcm is not None, best=best, size=size)


def summarize(rows: list[dict], codecs: list[str]) -> dict[str, dict]:
    """Per codec: a set's ratio and M values/s (CPU, wall) over the inputs every codec took."""
    both = [r for r in rows if r["pcm"]] or rows
    n = sum(r["values"] for r in both)
    raw = sum(r["raw"] for r in both)
    out = {}
    for codec in codecs:
        if any(codec not in r["size"] for r in both):
            continue
        tot = {k: sum(r["best"][codec][k] for r in both) for k in ("c_cpu", "c_wall", "d_cpu", "d_wall")}
        out[codec] = dict(ratio=raw / sum(r["size"][codec] for r in both), values=n, inputs=len(both),
                          **{k + "_mvs": n / v / 1e6 for k, v in tot.items()}, **tot)
    return out


def table(results: dict[str, dict], startup: dict[str, float]) -> str:
    lines = ["| set | codec | ratio | compress M/s CPU | decompress M/s CPU | compress M/s wall "
             "| decompress M/s wall | compress CPU vs L1 / L2 | decompress CPU vs L1 / L2 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, per in results.items():
        l1, l2 = per.get("ubpe-1"), per.get("ubpe-2")
        for codec, s in per.items():
            vs_c = " / ".join(f"{ref['c_cpu'] / s['c_cpu']:.2f}" if ref else "-" for ref in (l1, l2))
            vs_d = " / ".join(f"{ref['d_cpu'] / s['d_cpu']:.2f}" if ref else "-" for ref in (l1, l2))
            lines.append(f"| {name} ({s['inputs']} inputs, {s['values']:,} values) | {codec} | {s['ratio']:.3f} "
                         f"| {s['c_cpu_mvs']:.2f} | {s['d_cpu_mvs']:.2f} | {s['c_wall_mvs']:.2f} "
                         f"| {s['d_wall_mvs']:.2f} | {vs_c} | {vs_d} |")
    lines += ["", "\"vs L1 / L2\": ubpe level 1's (level 2's) CPU time over the codec's: above 1, the codec "
              "is faster than that level. Start-up CPU of a process, included in its codec's times: "
              + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in startup.items()) + "."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="+", default=[s for s in SETS if s != "unseen"], choices=SETS)
    ap.add_argument("--codecs", nargs="+", default=CODECS, choices=CODECS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--unseen", type=Path, default=Path("/work/unseen-data"))
    ap.add_argument("--md", type=Path, help="also write the table here")
    add_json_arg(ap, "speed.json")
    args = ap.parse_args(argv)
    codecs = list(args.codecs)
    for codec in ("flac-8", "wavpack-hhx6"):
        why = peers.missing(codec) if codec in codecs else None
        if why:
            print(f"note: {codec} skipped: {why}")
            codecs.remove(codec)
    if "pcodec" in codecs and peers.missing("pcodec"):
        print(f"note: pcodec skipped: {peers.missing('pcodec')}")
        codecs.remove("pcodec")
    startup = {}
    for codec, cmd in (("flac-8", ["flac", "--version"]), ("wavpack-hhx6", ["wavpack", "--version"])):
        if codec in codecs:
            startup[codec] = min(_child_cpu(cmd, "/")[0] for _ in range(5))
    sets = load_sets(args.sets, args.unseen)
    results, rows_of = {}, {}
    with tempfile.TemporaryDirectory(prefix="ubpe-speed-") as tmp:
        for name, inputs in sets.items():
            rows = [measure_input(x, rate, args.rounds, tmp, codecs) for _n, x, rate in inputs]
            rows_of[name] = rows
            results[name] = summarize(rows, codecs)
            print(table({name: results[name]}, startup).split("\n\n")[0], flush=True)
    text = table(results, startup)
    print(text)
    if args.md:
        args.md.write_text("Command: `python benchmarks/bench_speed.py " + " ".join(argv or sys.argv[1:])
                           + "`\n\n" + text + "\n")
    write_json(result_path(args), dict(results=results, startup=startup, rounds=args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
