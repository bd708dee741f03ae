"""Level 3 (issue 29): ubpe's level-3 signal coder against ubpe level 2, paq8px -8 and Sac --best,
every recording compressed alone, one table of ratios.

    python benchmarks/bench_level3.py                        # everything (peers from the cache)
    python benchmarks/bench_level3.py --only ecg seis        # recordings whose name has a word
    python benchmarks/bench_level3.py --peers-only           # fill the peers' cache, nothing else
    python benchmarks/bench_level3.py --no-peers --no-l2     # level 3 alone (tuning runs)
    UBPE_PAQ8PX=/path/paq8px UBPE_SAC=/path/sac python benchmarks/bench_level3.py

Recordings: the shared data's ECG (MIT-BIH 208, 360 Hz) and seismometer (CRLZ_HHZ, 100 Hz),
the 32 audio files each alone (16 kHz), the first 24 neural files each alone and joined
(``neural24-joined``: the 24 arrays end to end, 19 531 Hz), and every ``*.npy`` of
``--unseen`` (default ``/work/unseen-data``; the rate from the ``_<N>hz`` name ending).

Rows: ``L2`` = ``ubpe.compress(x, threads=1)`` (the container, level 2, the default);
``L3`` = ``ubpe.level3.encode(x)`` (the coder's bytes, which a container wraps with a few
dozen bytes of header; see the module); ``paq8px`` = ``paq8px -8``, ``sac`` = ``sac --best``
on the audio (``--normal`` elsewhere: ``--sac-best GROUP..``): how each peer is fed is in ``_level3_peers.py``
and printed per recording. Ratio = the array's bytes (its itemsize a value) / compressed bytes;
every output is decoded and compared. ``L3 vs best`` = the smaller peer's bytes / L3's - 1
(> 0: level 3 is smaller). Speeds of level 3 are values/s on CPU time (``time.process_time``,
one thread), both ways, the best of ``--repeat`` calls; the wall clock goes in the JSON.
Peer results are cached (``results/level3-peers.json``; sizes are deterministic).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _data  # noqa: E402
import _level3_peers as peers  # noqa: E402
from _measure import RESULTS, add_json_arg, print_table, result_path, write_json  # noqa: E402

import ubpe  # noqa: E402

UNSEEN = Path("/work/unseen-data")
PEER_CACHE = RESULTS / "level3-peers.json"


def recordings(unseen: Path) -> list[tuple[str, str, np.ndarray, float]]:
    """(group, name, 1-D integer array, sample rate) of every benchmark recording."""
    from bench_unseen import as_int, rate_from_name

    out = [("ecg", "ecg", _data.ecg(), 360.0), ("seismic", "seismic", _data.seismic(), 100.0)]
    files = sorted((_data.data_dir() / "audio").glob("*.wav"), key=lambda p: p.name.encode())
    for path, (x, rate) in zip(files, _data.audio()):
        out.append(("audio", f"audio/{path.stem}", x, float(rate)))
    neural = _data.neural(24)
    rate = float(_data.neural_rate())
    for path, x in zip(_data.neural_files(24), neural):
        out.append(("neural-each", f"neural/{path.stem[:8]}", x, rate))
    out.append(("neural24-joined", "neural24-joined", np.concatenate(neural), rate))
    if unseen.is_dir():
        for path in sorted(unseen.glob("*.npy")):
            x = as_int(np.load(path), str(path))
            out.append(("unseen", f"unseen/{path.stem}", x, rate_from_name(path) or 1000.0))
    else:
        print(f"note: no unseen recordings at {unseen}")
    more = os.environ.get("UBPE_UNSEEN2")  # (bench_level3_ab.py --unseen2 DIR: .npy files as they are, 2-D kept)
    if more:
        for path in sorted(Path(more).glob("*.npy")):
            x = np.load(path)
            out.append(("unseen2", f"unseen2/{path.stem}", x, rate_from_name(path) or 1000.0))
    return out


def timed(fn, arg, repeat: int):
    """(result, best CPU seconds, best wall seconds) of ``repeat`` calls."""
    best_cpu = best_wall = float("inf")
    out = None
    for _ in range(max(1, repeat)):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn(arg)
        best_cpu = min(best_cpu, time.process_time() - c0)
        best_wall = min(best_wall, time.perf_counter() - t0)
    return out, best_cpu, best_wall


def warm_level3(l3) -> None:
    """Compile (or load) every kernel a level-3 round trip may call, outside the timings: a
    random walk (automatic chain, a prefix search), the front-end chains forced, and values on a
    sparse grid, regular and irregular (the value table's Golomb kernels; both table modes), and
    version 6's exact-value contexts on a coarse grid.
    Else the first recording to need one pays for it (0.15-0.2 s: cembalo-10's encode and
    percussion-50's decode, both with a value table, in results/level3.md)."""
    rng = np.random.default_rng(0)
    walk = np.cumsum(rng.integers(-3, 4, 9000)).astype(np.int16)
    l3.decode(l3.encode(walk))
    for front in (["lpc"], ["mult"], ["mult", "lpc"]):
        l3.decode(l3.encode(walk[:3000], front=front))
    idx = np.clip(np.cumsum(rng.integers(-1, 2, 3000)) + 50, 0, 99)
    for gaps in (3 + (rng.random(100) < 0.2), rng.integers(2, 9, 100) ** 2):
        l3.decode(l3.encode(np.cumsum(gaps)[idx].astype(np.int16)))
    # the chains' screens and kernels on 32-bit input (the unseen seismic records: else the first
    # of them loads three overloads from numba's cache in its encode, about 0.1 s: seis-tly-bhz
    # 0.13 against 0.19 M values/s; results/level3-floor-4.md)
    l3.decode(l3.encode(walk.astype(np.int32) * 1000 + rng.integers(0, 3, walk.size).astype(np.int32)))
    # version 6's kernel (the exact-value contexts, chosen on readings whose values recur)
    grid = (np.round(np.cumsum(rng.normal(0, 0.6, 3000))) * 5).astype(np.int16)
    l3.decode(l3.encode(grid, params=l3.format._vector(dict(l3.DEFAULTS, xctx=1), 1), search=False))
    # version 9's kernel (the value model's code classes, tried where an ADC's code widths are
    # unequal: else the first such recording compiles it inside its encode, eeg-plux 0.014 M/s)
    if hasattr(l3.format, "VCLS_BASE"):  # (a tree before version 9 has no such kernel)
        l3.decode(l3.encode(walk[:3000], params=l3.format._vector(dict(l3.DEFAULTS, vmod=1, vcls=6), 1), front=None))


def measure_ubpe(x: np.ndarray, repeat: int, l2: bool, l3) -> dict:
    res = {}
    if l2:
        c, ce, we = timed(lambda v: ubpe.compress(v, threads=1), x, repeat)
        back, cd, wd = timed(ubpe.decompress, c, repeat)
        if not np.array_equal(back, x):
            raise AssertionError("level 2 did not round-trip")
        res["L2"] = dict(bytes=len(c), compress_cpu_s=ce, decompress_cpu_s=cd, compress_s=we, decompress_s=wd)
    if l3 is not None:
        c, ce, we = timed(l3.encode, x, repeat)
        back, cd, wd = timed(l3.decode, c, repeat)
        if not (back.dtype == x.dtype and np.array_equal(back, x)):
            raise AssertionError("level 3 did not round-trip")
        res["L3"] = dict(bytes=len(c), compress_cpu_s=ce, decompress_cpu_s=cd, compress_s=we, decompress_s=wd)
    return res


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="*", default=None, help="recordings whose name contains one of these")
    p.add_argument("--unseen", type=Path, default=UNSEEN, help="folder of unseen .npy recordings")
    p.add_argument("--repeat", type=int, default=1, help="timed calls of level 3 each way (best kept)")
    p.add_argument("--no-peers", action="store_true", help="no paq8px, no Sac")
    p.add_argument("--peers", nargs="+", default=["paq8px", "sac"], choices=["paq8px", "sac"],
                   help="which peers to run (default both)")
    p.add_argument("--no-l2", action="store_true", help="no level-2 row")
    p.add_argument("--no-l3", action="store_true", help="no level-3 row")
    p.add_argument("--peers-only", action="store_true", help="only run the peers (fills their cache)")
    p.add_argument("--refresh-peers", action="store_true", help="measure the peers again (ignore the cache)")
    p.add_argument("--sac-best", nargs="*", default=["audio"],
                   help="groups on which Sac runs --best (else --normal; default: audio)")
    p.add_argument("--peer-cache", type=Path, default=PEER_CACHE)
    p.add_argument("--peer-cache-extra", type=Path, nargs="*", default=[], help="more caches to read")
    p.add_argument("--cached-peers", action="store_true",
                   help="peers from the caches only (a recording not there gets no peer row)")
    p.add_argument("--groups", nargs="*", default=None, help="only these groups (ecg seismic audio ...)")
    p.add_argument("--md", type=Path, default=None, help="also write the table as markdown here")
    p.add_argument("--plot", type=Path, default=None,
                   help="also draw each recording's size against the best peer's here (PNG, matplotlib)")
    p.add_argument("--from-json", type=Path, default=None,
                   help="take ubpe's rows from an earlier run's JSON, the peers from the caches")
    add_json_arg(p)
    a = p.parse_args(argv)
    if a.peers_only:
        a.no_l2 = a.no_l3 = True

    l3 = None
    if not a.no_l3:
        try:
            from ubpe import level3 as l3
        except ImportError as e:
            print(f"note: level 3 skipped: {e}")
    exes = {}
    if not a.no_peers:
        for name in a.peers:
            exes[name] = peers.binary(name)
            if exes[name] is None and not a.cached_peers:
                print(f"note: {name} skipped: no ${'UBPE_' + name.upper()} and no {name} on PATH")
    cache = peers.Cache(a.peer_cache, a.refresh_peers, tuple(a.peer_cache_extra))
    if a.cached_peers:
        exes = {name: None for name in a.peers}
    recs = recordings(a.unseen)
    if a.only:
        recs = [r for r in recs if any(w in r[1] for w in a.only)]
    if a.groups:
        recs = [r for r in recs if r[0] in a.groups]
    if l3 is not None and not a.from_json:  # compile (or load) the kernels outside the timings
        warm_level3(l3)
    if not a.no_l2 and not a.from_json:
        ubpe.decompress(ubpe.compress(np.cumsum(np.arange(3000) % 7 - 3).astype(np.int16), threads=1))

    results = []
    t0 = time.perf_counter()
    earlier = {}
    if a.from_json:
        import json

        earlier = {r["recording"]: r for r in json.loads(a.from_json.read_text())["results"]["recordings"]}
    for group, name, x, rate in recs:
        r = dict(group=group, recording=name, values=int(x.size), dtype=str(x.dtype), rate=rate, raw=int(x.nbytes))
        if a.from_json:
            if name not in earlier:
                continue
            r.update({k: v for k, v in earlier[name].items() if k in ("L2", "L3")})
        else:
            r.update(measure_ubpe(x, a.repeat, not a.no_l2, l3))
        if "paq8px" in exes and (exes["paq8px"] or a.cached_peers):
            got = peers.run_paq8px(exes["paq8px"], x, rate, cache)
            if got:
                r["paq8px"] = got
        if "sac" in exes and (exes["sac"] or a.cached_peers):
            got = peers.run_sac(exes["sac"], x, rate, cache, group in a.sac_best)
            if got is None and peers.as_pcm16(x)[0] is None:
                print(f"note: sac skipped on {name}: values wider than 16 bits")
            elif got:
                r["sac"] = got
        results.append(r)
        print(f"-- {name}: " + ", ".join(f"{k} {r['raw'] / r[k]['bytes']:.4f}" for k in ("L2", "L3", "paq8px", "sac")
                                         if k in r), flush=True)
    if a.peers_only:
        print(f"peers measured in {time.perf_counter() - t0:.0f} s")
        return 0
    rows = table(results)
    print()
    print_table(rows, title="== ratio (raw / compressed); L3 vs best: best peer's bytes / L3's - 1")
    summary = summarize(results)
    print_table(summary, title="== groups (sizes summed)")
    losses = [r["recording"] for r in results if "L3" in r and best_peer(r) and r["L3"]["bytes"] > best_peer(r)[1]]
    print(f"level 3 larger than the best peer on {len(losses)} of {len(results)} recordings"
          + (": " + ", ".join(losses) if losses else ""))
    if a.md:
        a.md.write_text(markdown(rows, summary))
        print(f"wrote {a.md}")
    if a.plot:
        plot(results, a.plot)
        print(f"wrote {a.plot}")
    write_json(result_path(a), dict(recordings=results, ratio=rows, groups=summary),
               extra=dict(args={k: str(v) for k, v in vars(a).items()}))
    return 0


def best_peer(r: dict) -> tuple[str, int] | None:
    got = [(k, r[k]["bytes"]) for k in ("paq8px", "sac") if k in r]
    return min(got, key=lambda t: t[1]) if got else None


def table(results: list[dict]) -> list[dict]:
    rows = []
    for r in results:
        row = {"recording": r["recording"], "values": r["values"]}
        for k in ("L2", "L3", "paq8px", "sac"):
            row[k] = r["raw"] / r[k]["bytes"] if k in r else None
        bp = best_peer(r)
        row["L3 vs best"] = f"{bp[1] / r['L3']['bytes'] - 1:+.2%}" if bp and "L3" in r else None
        if "L3" in r:
            row["L3 enc M/s"] = r["values"] / max(r["L3"]["compress_cpu_s"], 1e-9) / 1e6
            row["L3 dec M/s"] = r["values"] / max(r["L3"]["decompress_cpu_s"], 1e-9) / 1e6
        if "sac" in r:
            row["sac profile"] = r["sac"]["profile"].split()[0]
        rows.append(row)
    return rows


def summarize(results: list[dict]) -> list[dict]:
    out = []
    for g in dict.fromkeys(r["group"] for r in results):
        rs = [r for r in results if r["group"] == g]
        row = {"group": g, "recordings": len(rs), "values": sum(r["values"] for r in rs)}
        raw = sum(r["raw"] for r in rs)
        for k in ("L2", "L3", "paq8px", "sac"):
            row[k] = raw / sum(r[k]["bytes"] for r in rs) if all(k in r for r in rs) else None
        if all("L3" in r for r in rs):
            row["L3 enc M/s"] = row["values"] / sum(r["L3"]["compress_cpu_s"] for r in rs) / 1e6
            row["L3 dec M/s"] = row["values"] / sum(r["L3"]["decompress_cpu_s"] for r in rs) / 1e6
            peered = [r for r in rs if best_peer(r) is not None]
            wins = sum(1 for r in peered if r["L3"]["bytes"] <= best_peer(r)[1])
            row["L3 wins"] = f"{wins} of {len(peered)}"  # recordings with a peer's size
        out.append(row)
    return out


def plot(results: list[dict], path: Path) -> None:
    """Each recording with a peer: level 3's and level 2's bytes relative to the best peer's
    (below 1: smaller than both paq8px and Sac), grouped."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rs = [r for r in results if best_peer(r) and "L3" in r]
    groups = list(dict.fromkeys(r["group"] for r in rs))
    fig, ax = plt.subplots(figsize=(10, 4.2))
    for k, color in (("L2", "tab:gray"), ("L3", "tab:blue")):
        xs = [groups.index(r["group"]) + (0.15 if k == "L3" else -0.15) for r in rs if k in r]
        ys = [r[k]["bytes"] / best_peer(r)[1] for r in rs if k in r]
        ax.scatter(xs, ys, s=12, color=color, label=f"{'level 3 coder' if k == 'L3' else 'level 2'}", alpha=0.8)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(range(len(groups)), [f"{g}\n({sum(r['group'] == g for r in rs)})" for g in groups])
    ax.set_ylabel("bytes / the best peer's (paq8px -8, Sac)")
    ax.set_title("Level 3 against the smaller of paq8px and Sac, each recording (below the line: smaller)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown(rows: list[dict], summary: list[dict]) -> str:
    def fmt(v):
        return "-" if v is None else f"{v:,}" if isinstance(v, int) else f"{v:.3f}" if isinstance(v, float) else str(v)

    parts = []
    for rs in (summary, rows):
        cols = list(dict.fromkeys(k for r in rs for k in r))
        parts.append("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
                     + "".join("| " + " | ".join(fmt(r.get(c)) for c in cols) + " |\n" for r in rs))
    return "\n".join(parts)


if __name__ == "__main__":
    raise SystemExit(main())
