"""ubpe.dask.fit against Tokenizer.fit in the same run: no cluster, one and two local worker
processes; CPU and wall time, model bytes checked equal; compression of the chunks with 1 and 2
workers.

    python benchmarks/bench_dask.py [--sizes all 100000000] [--chunk C] [--n-tokens T]
                                    [--repeats R] [--compress] [--compress-level L]

Data: the 120 neural recordings joined (``all``: 11 848 970 int16 values), or joined and
repeated to N values, written as an uncompressed zarr array in a temporary folder with chunks of
``--chunk`` values (default 2**20), each chunk one document. Contenders, in a rotating order
within each of ``--repeats`` rounds (default 3):

- ``Tokenizer.fit``: in process, on the same chunks held in memory;
- ``dask.fit, no cluster``: ``ubpe.dask.fit(client=False)`` on the zarr array;
- ``dask.fit, 1 worker`` / ``2 workers``: on a ``LocalCluster`` of that many worker processes
  with one thread each, started beforehand (not timed; the kernels are loaded in every worker and
  one small ``ubpe.dask.fit`` runs on each cluster first, untimed: a fresh worker's first fit
  also imports and opens what reading the array needs, a cost paid once per cluster).

With ``--compress``, ``ubpe.dask.compress`` of the first size's chunks with the fitted model
(``--compress-level``, default 1) on 1 and 2 workers, alternated, containers checked equal to
``ubpe.compress``'s.

Wall time: ``time.perf_counter`` around the call. CPU time: this process's (the client and the
local scheduler) plus every worker process's (``resource.getrusage`` read before and after
through ``Client.run``). Medians over the rounds, with the ratios to ``Tokenizer.fit`` and of 1
to 2 workers. Peak worker memory: each worker's ``VmHWM`` after that size's fits (workers are
started per size). ``--json`` writes every run (default benchmarks/results/dask.json) and a
Markdown table beside it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _data  # noqa: E402
from _measure import add_json_arg, format_table, result_path, write_json  # noqa: E402


def process_cpu_s() -> float:
    """User + system CPU seconds of the calling process (runs in workers through Client.run)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def peak_rss_mib() -> float:
    """Peak resident size of the calling process (VmHWM on Linux), MiB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def warm_up() -> int:
    """Load (or compile) the trainer's kernels in this process: a tiny fit through ubpe.dask."""
    import ubpe
    from ubpe import stepwise, trainer

    x = (np.arange(3000) % 7).astype(np.int32)
    share = stepwise.ShareTrainer(x, np.array([0, 3000]), np.array([0, 3000]), 7, 60)
    stepwise.train([share], alphabet_size=7, n_tokens=20, n_candidates=5, min_count=2, V=60, n_units=1)
    trainer.train(x, np.array([0, 3000]), np.array([0, 3000]), 7, 20, 5, 2)
    ubpe.decompress(ubpe.compress(x.astype(np.int16), level=1))
    return 0


def timed(fn, clients=()):
    """(result, wall s, CPU s) of ``fn()``: this process's CPU plus that of ``clients``' workers."""
    before = [sum(c.run(process_cpu_s).values()) for c in clients]
    c0 = process_cpu_s()
    t0 = time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t0
    cpu = process_cpu_s() - c0
    cpu += sum(sum(c.run(process_cpu_s).values()) - b for c, b in zip(clients, before))
    return out, wall, cpu


VERDICTS: list[str] = []  # the ratio lines printed per size, written into the Markdown file too


def run_size(label: str, x: np.ndarray, args, folder: str) -> tuple[list[dict], list[dict]]:
    import dask.array as da
    import zarr
    from distributed import Client, LocalCluster

    import ubpe
    from ubpe import dask as ubpe_dask

    src = zarr.create_array(f"{folder}/raw-{label}.zarr", shape=x.shape, chunks=(args.chunk,), dtype=x.dtype,
                            zarr_format=2, compressors=None)
    src[:] = x
    arr = da.from_zarr(f"{folder}/raw-{label}.zarr", inline_array=True)  # no shared key: tasks spread
    docs = [x[i:i + args.chunk] for i in range(0, x.size, args.chunk)]
    alphabet = ubpe.Alphabet.from_data(x)
    n_tokens = len(alphabet) + args.n_tokens
    print(f"\n{label}: {x.size} int16 values, {len(docs)} chunks of {args.chunk} (each a document); alphabet "
          f"{len(alphabet)}, n_tokens {n_tokens}, n_candidates 50")

    clusters = {n: LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                                silence_logs=50) for n in (1, 2)}
    clients = {n: Client(c, set_as_default=False) for n, c in clusters.items()}
    try:
        for c in clients.values():
            c.run(warm_up)
        warm_up()
        with warnings.catch_warnings():  # one untimed fit each: the workers' first imports and reads
            warnings.simplefilter("ignore", UserWarning)
            for c in clients.values():
                ubpe_dask.fit(arr[: args.chunk], alphabet=alphabet, n_tokens=n_tokens, client=c)

        def in_process():
            return ubpe.Tokenizer(alphabet, n_tokens).fit(docs)

        contenders = {
            "Tokenizer.fit": (in_process, ()),
            "dask.fit, no cluster": (lambda: ubpe_dask.fit(arr, alphabet=alphabet, n_tokens=n_tokens, client=False),
                                     ()),
            "dask.fit, 1 worker": (lambda: ubpe_dask.fit(arr, alphabet=alphabet, n_tokens=n_tokens,
                                                         client=clients[1]), (clients[1],)),
            "dask.fit, 2 workers": (lambda: ubpe_dask.fit(arr, alphabet=alphabet, n_tokens=n_tokens,
                                                          client=clients[2]), (clients[2],)),
        }
        names = list(contenders)
        runs: list[dict] = []
        reference = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for r in range(args.repeats):
                for k in range(len(names)):
                    name = names[(r + k) % len(names)]  # rotate the order each round
                    fn, cl = contenders[name]
                    tok, wall, cpu = timed(fn, cl)
                    if reference is None and name == "Tokenizer.fit":
                        reference = tok.to_bytes()
                    runs.append(dict(size=label, contender=name, round=r, wall_s=wall, cpu_s=cpu,
                                     model=tok.to_bytes()))
        if reference is None:  # pragma: no cover - Tokenizer.fit runs every round
            raise RuntimeError("no reference fit")
        for run in runs:
            run["same_model"] = run.pop("model") == reference

        compress_rows = []
        if args.compress and label == args.sizes[0]:
            tok = ubpe.Tokenizer.from_bytes(reference)
            blobs = [ubpe.compress(d, tokenizer=tok, embed=False, level=args.compress_level) for d in docs]
            for r in range(args.repeats):
                for n in ((1, 2) if r % 2 == 0 else (2, 1)):
                    out, wall, cpu = timed(lambda n=n: clients[n].compute(
                        ubpe_dask.compress(arr, tok, level=args.compress_level), sync=True), (clients[n],))
                    compress_rows.append(dict(size=label, workers=n, round=r, wall_s=wall, cpu_s=cpu,
                                              same_bytes=list(out) == blobs))
        memory = {n: max(c.run(peak_rss_mib).values()) for n, c in clients.items()}
    finally:
        for c in clients.values():
            c.close()
        for c in clusters.values():
            c.close()

    rows = []
    base = None
    for name in names:
        mine = [r for r in runs if r["contender"] == name]
        wall = statistics.median(r["wall_s"] for r in mine)
        cpu = statistics.median(r["cpu_s"] for r in mine)
        if base is None:
            base = (wall, cpu)
        workers = {"dask.fit, 1 worker": 1, "dask.fit, 2 workers": 2}.get(name)
        rows.append({"size": label, "contender": name, "wall s": round(wall, 3), "CPU s": round(cpu, 3),
                     "wall / fit": round(wall / base[0], 2), "CPU / fit": round(cpu / base[1], 2),
                     "model equal": all(r["same_model"] for r in mine),
                     "peak worker MiB": round(memory[workers]) if workers else "-"})
    one = next(r for r in rows if r["contender"] == "dask.fit, 1 worker")
    two = next(r for r in rows if r["contender"] == "dask.fit, 2 workers")
    print(format_table(rows))
    verdicts = [f"{label}: 1 worker / Tokenizer.fit: wall {one['wall / fit']:.2f}x, CPU {one['CPU / fit']:.2f}x "
                f"(target <= 2); 2 workers vs 1: wall {one['wall s'] / two['wall s']:.2f}x faster"]
    if compress_rows:
        c1 = statistics.median(r["wall_s"] for r in compress_rows if r["workers"] == 1)
        c2 = statistics.median(r["wall_s"] for r in compress_rows if r["workers"] == 2)
        verdicts.append(f"{label}: dask.compress level {args.compress_level}: 1 worker {c1:.2f} s "
                        f"({x.size / c1 / 1e6:.2f} M values/s), 2 workers {c2:.2f} s: {c1 / c2:.2f}x; container "
                        f"bytes equal to ubpe.compress: {all(r['same_bytes'] for r in compress_rows)}")
    print("\n".join(verdicts))
    VERDICTS.extend(verdicts)
    return rows, runs + compress_rows


def readme_sizes(folder: str) -> list[dict]:
    """Bytes on disk of the README's example (a zarr array through ubpe.dask.fit and to_zarr, no
    cluster) on the MIT-BIH 208 ECG (108 000 int16 values) in chunks of 20 000 (zarr pads the last
    with 12 000 fill values), against zarr's default compressor and ubpe without a shared model."""
    import dask.array as da
    import zarr

    import ubpe
    from ubpe import dask as ubpe_dask

    ecg = _data.ecg()

    def stored(path: str) -> int:
        return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())

    zarr.create_array(f"{folder}/ecg.zarr", data=ecg, chunks=(20_000,), zarr_format=2)
    default = zarr.open_array(f"{folder}/ecg.zarr").compressors
    x = da.from_zarr(f"{folder}/ecg.zarr", inline_array=True)
    rows = [dict(store=f"zarr default {default[0]!r}", level="-", bytes=stored(f"{folder}/ecg.zarr"))]
    for level in (1, 2):
        ubpe_dask.to_zarr(x, f"{folder}/own-{level}.zarr", level=level)
        rows.append(dict(store="ubpe, a model per chunk (no tokenizer)", level=level,
                         bytes=stored(f"{folder}/own-{level}.zarr")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for n_tokens, predictor in ((2048, None), (2048, "delta1"), (256, "auto")):
            tok = ubpe_dask.fit(x, n_tokens=n_tokens, predictor=predictor, client=False)
            for level in (1, 2):
                path = f"{folder}/shared-{n_tokens}-{predictor}-{level}.zarr"
                ubpe_dask.to_zarr(x, path, tok, level=level)
                assert np.array_equal(zarr.open_array(path)[:], ecg)
                last = ubpe.describe(Path(f"{path}/5").read_bytes())
                rows.append(dict(store=f"ubpe.dask.fit(n_tokens={n_tokens}, predictor={predictor!r}) -> "
                                       f"{tok.predictor or 'none'}, model {len(tok.to_bytes())} B",
                                 level=level, bytes=stored(path), **{"last chunk escapes": last.escapes}))
    print("\nThe README's example on the ECG (108 000 values, chunks of 20 000; sizes on disk, metadata included):")
    print(format_table(rows))
    return rows


def main(argv: list[str] | None = None) -> int:
    import logging

    logging.getLogger("distributed").setLevel(logging.ERROR)  # cluster start and stop notices
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", default=["all", "100000000"],
                    help="'all' (the 120 recordings joined) or a number of values (joined, repeated)")
    ap.add_argument("--chunk", type=int, default=1 << 20)
    ap.add_argument("--n-tokens", type=int, default=1024, help="merges: n_tokens is the alphabet plus this")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--compress-level", type=int, default=1)
    ap.add_argument("--compress", action="store_true",
                    help="also time ubpe.dask.compress on the first size, 1 and 2 workers alternated")
    add_json_arg(ap, "dask.json")
    args = ap.parse_args(argv)

    import os

    load_before = os.getloadavg()
    base = np.concatenate(_data.neural(None))
    all_rows, all_runs = [], []
    with tempfile.TemporaryDirectory(prefix="ubpe-bench-dask-") as folder:
        sizes = readme_sizes(folder)
        for label in args.sizes:
            x = base if label == "all" else np.resize(base, int(label))
            rows, runs = run_size(label, x, args, folder)
            all_rows += rows
            all_runs += runs
    print()
    table = format_table(all_rows)
    print(table)
    path = result_path(args)
    if path:
        write_json(path, {"rows": all_rows, "runs": all_runs, "readme_sizes": sizes},
                   {"chunk": args.chunk, "merges": args.n_tokens, "repeats": args.repeats})
        md = Path(path).with_suffix(".md")
        load = f"load average {load_before[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
        md.write_text("`python benchmarks/bench_dask.py " + " ".join(argv if argv is not None else sys.argv[1:])
                      + f"` (medians of {args.repeats} rounds; CPU = client + scheduler + workers; a shared "
                      f"2-core machine, {load})\n\n"
                      + _markdown(all_rows) + "\n\n" + "\n".join(f"- {v}" for v in VERDICTS)
                      + "\n\nThe README's example on the ECG (108 000 values, chunks of "
                      "20 000: zarr pads the last with 12 000 fill values), bytes on disk, metadata "
                      "included:\n\n" + _markdown([{k: r.get(k, "-") for k in sizes[-1]} for r in sizes]) + "\n")
        print(f"wrote {md}")
    ok = all(r["model equal"] for r in all_rows) and all(r.get("same_bytes", True) for r in all_runs)
    return 0 if ok else 1


def _markdown(rows: list[dict]) -> str:
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r.get(c, "-")) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
