"""Level-2 (default) decompression speed per data set, split by part, in process time:
python benchmarks/bench_level2_decode.py [--sets ecg,seismic,audio,float-q,float-step,neural] [--repeat R]
                                         [--cache DIR] [--json out] [--peers]

Each signal is compressed once (``ubpe.compress(x, level=2, threads=1)``; with ``--cache`` the
containers are kept in DIR, keyed by set, so that two trees can be timed on the same bytes),
then ``ubpe.decompress`` is timed with ``time.process_time`` (the least of R runs per
container, summed over the set). Printed per set, in M values/s of the whole decompress and
in milliseconds summed over the set:

* ``cms2``: the "cms2" decoder (``cmsignal2.cms2_decode``: header parse and the kernel), and
  ``ns/b``: its time per coded binary decision (the code lengths of the decoded ranks);
* ``lms``: the adaptive cascade's inverse kernel (``lms_cascade_rows``); ``lpc``: the LPC
  inverse kernel (``lpc_filter``);
* ``rest``: everything else (container parsing, other stages, dequantize, Python overhead);
* ``enc``: the "cms2" encoder (``cms2_encode``, plan and kernel) re-run on each decoded token
  stream, the least of R runs; its bytes are checked against the container's payload.

float-step is ``ubpe.compress(BW_UH4_EHZ.npy float64, step=1)`` (lossy: decoded within 0.5).
Process time, not wall clock: the machines are shared. Issue target: >= 1 M values/s.

With ``--peers`` a second table compares, per integer set, the whole ``ubpe.decompress`` at
level 2 with level 1 (``ubpe.compress(x, level=1, threads=1)``) and with ``flac -d`` of
``flac -8`` (``ubpe.peers``' options; a process per file, its start-up included, CPU time its
user + system time), alternated container by container in each of R rounds, CPU and wall time
(the least per container, summed over the set), in M values/s. Issue 28's target: level 2
decodes >= 5 M values/s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

import ubpe
from ubpe._kernels import cmsignal2
from ubpe._kernels import predict as predict_kernels

try:
    from . import _data
except ImportError:  # run as a script
    import _data

SETS = ("ecg", "seismic", "audio", "float-q", "float-step", "neural")


def load(name: str) -> list[tuple[np.ndarray, dict]]:
    """(signal, compress options) of set ``name``."""
    if name == "ecg":
        return [(_data.ecg(), {})]
    if name == "seismic":
        return [(_data.seismic(), {})]
    if name == "neural":
        return [(x, {}) for x in _data.neural(4)]
    if name == "audio":
        return [(x, {}) for x, _rate in _data.audio()]
    if name == "float-q":
        return [(_data.float_quantized(), {})]
    if name == "float-step":
        return [(np.load(_data.data_dir() / "float" / "BW_UH4_EHZ.npy"), dict(step=1))]
    raise ValueError(f"unknown set {name!r}; sets: {', '.join(SETS)}")


class Timed:
    """Wraps ``module.attr`` so that its calls' process time is summed into ``self.s``."""

    def __init__(self, module, attr: str, keep=None):
        self.module, self.attr, self.fn, self.s, self.keep = module, attr, getattr(module, attr), 0.0, keep
        setattr(module, attr, self)

    def __call__(self, *args, **kwargs):
        t = time.process_time()
        r = self.fn(*args, **kwargs)
        self.s += time.process_time() - t
        if self.keep is not None:
            self.keep.append((args, r))
        return r

    def restore(self) -> None:
        setattr(self.module, self.attr, self.fn)


def containers(name: str, cache: str | None) -> list[tuple[np.ndarray, bytes]]:
    """(signal, container) of each signal of set ``name`` (compressed here or read from cache)."""
    items = load(name)
    path = os.path.join(cache, f"{name}.npz") if cache else None
    if path and os.path.exists(path):
        z = np.load(path)
        return [(x, z[f"c{i}"].tobytes()) for i, (x, _o) in enumerate(items)]
    out = [(x, ubpe.compress(x, level=2, threads=1, **o)) for x, o in items]
    if path:
        os.makedirs(cache, exist_ok=True)
        np.savez(path, **{f"c{i}": np.frombuffer(c, np.uint8) for i, (_x, c) in enumerate(out)})
    return out


def decisions(buf: np.ndarray, vocab_size: int, tokens: np.ndarray) -> int:
    """How many binary decisions the "cms2" payload ``buf`` codes for ``tokens`` (its header's
    code lengths of the tokens' ranks)."""
    mode, center, cnt, _hl = cmsignal2.parse_header(buf[:cmsignal2.MAX_HEADER].tobytes(), vocab_size)
    t = tokens.astype(np.int64)
    P = np.full(t.size, center, np.int64)
    if mode >= 1:
        P[1:] = t[:-1]
    if mode == 2:
        P[2:] = np.clip(2 * t[1:-1] - t[:-2], 0, vocab_size - 1)
    return int(np.repeat(np.arange(cnt.size), cnt)[cmsignal2._ranks(t, P, vocab_size)].sum())


def measure(name: str, repeat: int, cache: str | None) -> dict:
    items = containers(name, cache)
    for x, c in items:  # check once, outside the timings
        y = ubpe.decompress(c)
        if x.dtype.kind == "f":
            assert y.shape == x.shape and float(np.max(np.abs(y - x))) <= 0.5 + 1e-9
        else:
            assert y.dtype == x.dtype and np.array_equal(y, x), "round trip failed"
    total = 0.0
    parts = dict(cms2=0.0, lms=0.0, lpc=0.0)
    calls: list = []
    for x, c in items:
        best = None
        for _ in range(repeat):
            calls.clear()
            w = dict(cms2=Timed(cmsignal2, "cms2_decode", keep=calls), lms=Timed(predict_kernels, "lms_cascade_rows"),
                     lms1=Timed(predict_kernels, "lms_stage"), lpc=Timed(predict_kernels, "lpc_filter"))
            t = time.process_time()
            ubpe.decompress(c)
            s = time.process_time() - t
            for v in w.values():
                v.restore()
            if best is None or s < best[0]:
                best = (s, {k: v.s for k, v in w.items()})
        total += best[0]
        for k in parts:
            parts[k] += best[1][k]
        parts["lms"] += best[1]["lms1"]
    n = sum(x.size for x, _c in items)
    bits, enc = 0, 0.0
    for (buf, vocab_size, out), _status in calls_all(items):
        bits += decisions(buf, vocab_size, out)
        tokens = out.copy()
        eb = np.zeros(buf.size + 64, np.uint8)
        best = float("inf")
        for _ in range(repeat):
            t = time.process_time()
            length = cmsignal2.cms2_encode(tokens, vocab_size, eb)
            best = min(best, time.process_time() - t)
        assert length == buf.size and np.array_equal(eb[:length], buf), "cms2 encoder bytes differ"
        enc += best
    rest = total - sum(parts.values())
    return dict(values=n, seconds=total, mvs=n / total / 1e6, cms2_ms=parts["cms2"] * 1e3,
                decisions=bits, ns_per_decision=parts["cms2"] * 1e9 / max(bits, 1), lms_ms=parts["lms"] * 1e3,
                lpc_ms=parts["lpc"] * 1e3, rest_ms=rest * 1e3, enc_ms=enc * 1e3)


def calls_all(items) -> list:
    """The (buf, vocab_size, out) arguments and status of every cms2_decode call of the set."""
    calls: list = []
    w = Timed(cmsignal2, "cms2_decode", keep=calls)
    try:
        for _x, c in items:
            ubpe.decompress(c)
    finally:
        w.restore()
    return calls


def _flac(x: np.ndarray, folder: Path, i: int) -> tuple[Path, int]:
    """``flac -8`` of signal ``x`` (as ``ubpe.peers`` runs it) written in ``folder``: (file, bits)."""
    from ubpe import peers

    bits = peers.pcm_bits(x)
    raw, out = folder / f"x{i}.raw", folder / f"x{i}.flac"
    raw.write_bytes(peers._pcm_bytes(x, bits))
    subprocess.run(["flac", "-8", "--no-padding", "--no-seektable", "--silent", "-f", "--force-raw-format",
                    "--endian=little", "--sign=signed", "--channels=1", f"--bps={bits}", "--sample-rate=44100",
                    "-o", str(out), str(raw)], check=True)
    return out, bits


def _flac_decode(path: Path, x: np.ndarray, bits: int, check: bool) -> tuple[float, float]:
    """(CPU, wall) seconds of one ``flac -d`` of ``path`` (the child's user + system time)."""
    from ubpe import peers

    back = path.with_suffix(".back")
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(["flac", "-d", "--silent", "-f", "--force-raw-format", "--endian=little", "--sign=signed",
                    "-o", str(back), str(path)], check=True)
    t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    if check:
        assert np.array_equal(peers._from_pcm(back.read_bytes(), bits, x.dtype), x), "flac round trip failed"
    return r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, t1 - t0


def _decode_times(c: bytes) -> tuple[float, float]:
    """(CPU, wall) seconds of one ``ubpe.decompress(c)``."""
    t0, w0 = time.process_time(), time.perf_counter()
    ubpe.decompress(c)
    return time.process_time() - t0, time.perf_counter() - w0


def peers_row(name: str, repeat: int, cache: str | None) -> dict | None:
    """Level 2 vs level 1 vs FLAC -8 decode of set ``name`` (module docstring), or None for a
    set FLAC cannot take (floats)."""
    items = containers(name, cache)
    if any(x.dtype.kind not in "iu" for x, _c in items) or not shutil_which("flac"):
        return None
    level1 = [ubpe.compress(x, level=1, threads=1) for x, _c in items]
    best: dict = {}
    with tempfile.TemporaryDirectory(prefix="ubpe-l2dec-") as tmp:
        flacs = [_flac(x, Path(tmp), i) for i, (x, _c) in enumerate(items)]
        flac_bytes = sum(f.stat().st_size for f, _b in flacs)
        for (x, _c2), c1, (f, bits) in zip(items, level1, flacs):
            assert np.array_equal(ubpe.decompress(c1), x), "level 1 round trip failed"
            _flac_decode(f, x, bits, check=True)
        for _ in range(repeat):
            for i, ((x, c2), c1, (f, bits)) in enumerate(zip(items, level1, flacs)):
                for who, fn in (("l2", lambda: _decode_times(c2)), ("l1", lambda: _decode_times(c1)),
                                ("flac", lambda: _flac_decode(f, x, bits, check=False))):
                    cpu, wall = fn()
                    old = best.get((who, i), (float("inf"), float("inf")))
                    best[who, i] = (min(old[0], cpu), min(old[1], wall))
    n = sum(x.size for x, _c in items)
    row: dict = dict(values=n, bytes_l2=sum(len(c) for _x, c in items), bytes_l1=sum(len(c) for c in level1),
                     bytes_flac=flac_bytes)
    for who in ("l2", "l1", "flac"):
        cpu = sum(best[who, i][0] for i in range(len(items)))
        wall = sum(best[who, i][1] for i in range(len(items)))
        row[f"{who}_cpu_mvs"] = n / max(cpu, 1e-9) / 1e6
        row[f"{who}_wall_mvs"] = n / max(wall, 1e-9) / 1e6
    return row


def shutil_which(cmd: str) -> str | None:
    import shutil

    return shutil.which(cmd)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--repeat", type=int, default=3, help="runs per container, the fastest kept")
    ap.add_argument("--cache", help="keep the containers in this directory (compress once)")
    ap.add_argument("--json", help="write the rows to this file")
    ap.add_argument("--peers", action="store_true", help="also level 2 vs level 1 vs FLAC -8 decode (CPU, wall)")
    args = ap.parse_args(argv)
    x = _data.ecg()[:3000]
    ubpe.decompress(ubpe.compress(x, level=2, threads=1))  # compile outside the timings
    rows = {}
    print(f"{'set':<11}{'values':>8}{'M/s':>7}{'total':>8}{'cms2':>8}{'ns/b':>7}{'lms':>7}{'lpc':>7}"
          f"{'rest':>7}{'enc':>8}   (ms, process time)", flush=True)
    for name in args.sets.split(","):
        r = measure(name, args.repeat, args.cache)
        rows[name] = r
        print(f"{name:<11}{r['values']:>8}{r['mvs']:>7.2f}{r['seconds'] * 1e3:>8.1f}{r['cms2_ms']:>8.1f}"
              f"{r['ns_per_decision']:>7.1f}{r['lms_ms']:>7.1f}{r['lpc_ms']:>7.1f}{r['rest_ms']:>7.1f}"
              f"{r['enc_ms']:>8.1f}", flush=True)
    if args.peers:
        print(f"\n{'decode M values/s':<18}{'level 2 cpu':>12}{'wall':>7}{'level 1 cpu':>12}{'wall':>7}"
              f"{'flac -8 cpu':>12}{'wall':>7}{'l1/l2':>7}{'flac/l2':>8}   (CPU ratios)", flush=True)
        for name in args.sets.split(","):
            r = peers_row(name, args.repeat, args.cache)
            if r is None:
                continue
            rows[name]["peers"] = r
            print(f"{name:<18}{r['l2_cpu_mvs']:>12.2f}{r['l2_wall_mvs']:>7.2f}{r['l1_cpu_mvs']:>12.2f}"
                  f"{r['l1_wall_mvs']:>7.2f}{r['flac_cpu_mvs']:>12.2f}{r['flac_wall_mvs']:>7.2f}"
                  f"{r['l1_cpu_mvs'] / r['l2_cpu_mvs']:>7.1f}{r['flac_cpu_mvs'] / r['l2_cpu_mvs']:>8.1f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
