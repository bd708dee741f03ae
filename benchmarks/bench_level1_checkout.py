"""Level-1 ``ubpe.compress`` and ``decompress`` CPU time per set, this checkout against another
(e.g. main), each run in its own subprocess, alternated round by round with FLAC -8 on the same
inputs in the same run; per input the least of every run.

    UBPE_DATA=/work/shared/data nice -n 5 python benchmarks/bench_level1_checkout.py /work/wt/base
        [--sets ecg,seismic,audio,neural,files] [--files a.npy b.npy] [--rounds 3] [--repeat 3]

Sets as benchmarks/bench_speed.py's (ecg, seismic, audio: the 32 short files each alone, neural:
the 24 recordings joined), and ``files``: the ``--files`` .npy arrays, each alone (frames x
channels; FLAC gets raw PCM of the values' bit depth, ``ubpe.peers.pcm_bits``, the channels as
its channels, as ``ubpe.peers`` gives them). Each subprocess imports ``ubpe`` from its
checkout (``PYTHONPATH``), compresses and decompresses every input ``--repeat`` times with
``threads=1`` (``time.process_time``) and prints the least and the bytes. FLAC runs in this
process between the checkouts' subprocesses: its child's user + system CPU time, start-up
included (``flac --version``'s is printed). Ratios are raw bytes (itemsize a value) / bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _checkout import child_result

HERE = Path(__file__).resolve().parent


def _signals(name: str, files: list[str]) -> list[tuple[str, np.ndarray]]:
    sys.path.insert(0, str(HERE))
    import _data

    if name == "ecg":
        return [("ecg", _data.ecg())]
    if name == "seismic":
        return [("seismic", _data.seismic())]
    if name == "audio":
        return [(f"audio/{i}", x) for i, (x, _rate) in enumerate(_data.audio())]
    if name == "neural":
        return [("neural24", np.concatenate(_data.neural(24)))]
    if name == "files":
        return [(Path(f).stem, np.load(f)) for f in files]
    raise ValueError(f"unknown set {name!r}")


def child(sets: list[str], files: list[str], repeat: int) -> None:
    """In a checkout (``ubpe`` from ``PYTHONPATH``): print {"file", "sets": {set: [[name, values,
    compress cpu, decompress cpu, bytes], ...]}}."""
    import ubpe

    for x in (_signals("ecg", [])[0][1][:3000], _signals("ecg", [])[0][1]):  # kernels loaded outside the timings
        ubpe.decompress(ubpe.compress(x, level=1, threads=1))
    out: dict = {}
    for name in sets:
        rows = []
        for label, x in _signals(name, files):
            ubpe.decompress(ubpe.compress(x, level=1, threads=1))  # (a dtype's first call: untimed)
            cpu = dcpu = float("inf")
            for _ in range(repeat):
                t = time.process_time()
                data = ubpe.compress(x, level=1, threads=1)
                cpu = min(cpu, time.process_time() - t)
                t = time.process_time()
                back = ubpe.decompress(data)
                dcpu = min(dcpu, time.process_time() - t)
            if back.dtype != x.dtype or not np.array_equal(back, x):
                raise AssertionError(f"{label}: level 1 did not round-trip")
            rows.append([label, int(x.size), cpu, dcpu, len(data)])
        out[name] = rows
    print(json.dumps({"file": ubpe.__file__, "sets": out}))


def flac_times(sets: list[str], files: list[str], tmp: str) -> dict:
    """Set -> [[values, compress cpu, decompress cpu, bytes] per input]: FLAC -8 on raw PCM of the
    values' bit depth, the channels of a 2-D input as FLAC's channels (None for an input FLAC
    cannot take)."""
    from bench_level1 import _child_cpu

    from ubpe import peers

    out: dict = {}
    for name in sets:
        rows = []
        for _label, x in _signals(name, files):
            bits = peers.pcm_bits(x)
            channels = 1 if x.ndim == 1 else x.shape[1]
            if bits is None or channels > 8:
                rows.append(None)
                continue
            folder = tempfile.mkdtemp(dir=tmp)
            Path(folder, "x.raw").write_bytes(peers._pcm_bytes(np.ascontiguousarray(x), bits))
            fmt = ["--force-raw-format", "--endian=little", "--sign=signed", f"--channels={channels}",
                   f"--bps={bits}", "--sample-rate=48000"]
            enc = ["flac", "-8", "--no-padding", "--no-seektable", "--silent", "-f", *fmt, "-o", "x.flac", "x.raw"]
            dec = ["flac", "-d", "--silent", "-f", "--force-raw-format", "--endian=little", "--sign=signed",
                   "-o", "back.raw", "x.flac"]
            c = _child_cpu(enc, folder)[0]
            d = _child_cpu(dec, folder)[0]
            back = peers._from_pcm(Path(folder, "back.raw").read_bytes(), bits, x.dtype).reshape(x.shape)
            if not np.array_equal(back, x):
                raise AssertionError("FLAC did not round-trip")
            rows.append([int(x.size), c, d, Path(folder, "x.flac").stat().st_size])
        out[name] = rows
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("other", help="the other checkout (its ubpe package imported from it)")
    ap.add_argument("--sets", default="ecg,seismic,audio,neural")
    ap.add_argument("--files", nargs="*", default=[])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--python", default=sys.executable, help="the interpreter of both subprocesses")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    sets = args.sets.split(",")
    files = [str(Path(f).resolve()) for f in args.files]
    if args.child:
        child(sets, files, args.repeat)
        return
    sys.path.insert(0, str(HERE))
    from bench_level1 import flac_startup

    trees = [str(Path(args.other).resolve()), str(HERE.parent)]
    best: dict = {}
    flac_best: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for tree in trees:
                res = child_result(args.python, str(Path(__file__).resolve()), tree,
                                   [args.other, "--child", "--sets", args.sets, "--repeat", str(args.repeat),
                                    "--files", *files])
                for name, rows in res["sets"].items():
                    kept = best.setdefault((tree, name), [list(r) for r in rows])
                    for k, r in enumerate(rows):
                        kept[k][2], kept[k][3] = min(kept[k][2], r[2]), min(kept[k][3], r[3])
                        kept[k][4] = r[4]
                for name, rows in flac_times(sets, files, tmp).items():
                    kept = flac_best.setdefault(name, [None if r is None else list(r) for r in rows])
                    for k, r in enumerate(rows):
                        if r is not None:
                            kept[k][1], kept[k][2] = min(kept[k][1], r[1]), min(kept[k][2], r[2])
        startup = flac_startup(args.rounds)
    print(f"flac --version CPU: {startup * 1e3:.1f} ms (start-up, in each FLAC time below)")
    print("| set | input | values | other: ratio, compress / decompress M/s CPU | this: ratio, compress / "
          "decompress M/s CPU | other / this compress CPU (above 1: this is faster) | FLAC -8: ratio, compress / decompress M/s CPU |")
    print("|---|---|---:|---:|---:|---:|---:|")

    def line(name: str, label: str, o: list, t: list, f: list | None, itemsize: float) -> None:
        n = t[1]
        fl = "n/a" if f is None else (f"{n * itemsize / f[3]:.3f}, {n / f[1] / 1e6:.2f} / {n / f[2] / 1e6:.2f}")
        print(f"| {name} | {label} | {n:,} | {n * itemsize / o[4]:.3f}, {n / o[2] / 1e6:.2f} / {n / o[3] / 1e6:.2f} "
              f"| {n * itemsize / t[4]:.3f}, {n / t[2] / 1e6:.2f} / {n / t[3] / 1e6:.2f} | {o[2] / t[2]:.2f} | {fl} |")

    for name in sets:
        o, t, f = best[(trees[0], name)], best[(trees[1], name)], flac_best[name]
        items = {lab: x.dtype.itemsize for lab, x in _signals(name, files)}
        if len(t) > 1:
            for k in range(len(t)):
                line(name, t[k][0], o[k], t[k], f[k], items[t[k][0]])
        n = sum(r[1] for r in t)
        raw = sum(r[1] * items[r[0]] for r in t)
        fsum = None if any(r is None for r in f) else [n] + [sum(r[i] for r in f) for i in (1, 2, 3)]
        line(name, "all", ["", n, sum(r[2] for r in o), sum(r[3] for r in o), sum(r[4] for r in o)],
             ["", n, sum(r[2] for r in t), sum(r[3] for r in t), sum(r[4] for r in t)], fsum, raw / n)


if __name__ == "__main__":
    main()
