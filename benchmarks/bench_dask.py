"""ubpe.dask on a local cluster: fit and compress with 1 and 2 worker processes against the
single-process path, the peak memory of each worker, and model bytes checked equal.

    python benchmarks/bench_dask.py [--values N] [--chunk C] [--n-tokens T] [--level L]

Data: an uncompressed zarr array in a temporary folder holding the 120 neural recordings concatenated (2 370 569 + ... int16 values) and repeated to
``--values`` (default 2**24 = 16.8 M values; say so when quoting), cut into chunks of ``--chunk``
values (default 2**20), each chunk one document. Every figure is one wall-clock run (the
cluster started beforehand, not timed). Peak memory per worker is the worker process's peak
resident size (``ru_maxrss``) after the run, start-up included.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _data  # noqa: E402


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--values", type=int, default=1 << 24)
    ap.add_argument("--chunk", type=int, default=1 << 20)
    ap.add_argument("--n-tokens", type=int, default=1024)
    ap.add_argument("--level", type=int, default=1)
    args = ap.parse_args(argv)

    import dask
    import dask.array as da
    from distributed import Client, LocalCluster

    import ubpe
    from ubpe import dask as ubpe_dask

    base = np.concatenate(_data.neural(None))
    x = np.resize(base, args.values)  # repeats the recordings to the size asked
    alphabet = ubpe.Alphabet.from_data(x)
    # the source as users hold it: an uncompressed zarr array on disk, each chunk read by its
    # own task (a dask array made from one in-memory numpy array would pin every task to the
    # worker holding it)
    import tempfile

    import zarr

    tmp = tempfile.TemporaryDirectory(prefix="ubpe-bench-dask-")
    src = zarr.create_array(f"{tmp.name}/raw.zarr", shape=x.shape, chunks=(args.chunk,), dtype=x.dtype,
                            zarr_format=2, compressors=None)
    src[:] = x
    arr = da.from_zarr(f"{tmp.name}/raw.zarr", inline_array=True)  # no shared key: tasks spread
    docs = [x[i:i + args.chunk] for i in range(0, x.size, args.chunk)]
    n_tokens = len(alphabet) + args.n_tokens
    print(f"{x.size} int16 values (120 neural recordings, {base.size} values, repeated), {len(docs)} chunks "
          f"of {args.chunk}; alphabet {len(alphabet)}, n_tokens {n_tokens}, compress level {args.level}")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        t0 = time.perf_counter()
        ref = ubpe.Tokenizer(alphabet, n_tokens).fit(docs)
        fit_mem = time.perf_counter() - t0
        t0 = time.perf_counter()
        blobs = [ubpe.compress(d, tokenizer=ref, embed=False, level=args.level) for d in docs]
        comp_mem = time.perf_counter() - t0
    size = sum(len(b) for b in blobs)
    print(f"single process: Tokenizer.fit {fit_mem:.2f} s (compiled trainer); compress {comp_mem:.2f} s "
          f"({x.size / comp_mem / 1e6:.2f} M values/s), {size} bytes, ratio {x.nbytes / size:.3f}")

    rows = []
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                          silence_logs=50) as cluster, Client(cluster) as client:
            client.run(lambda: ubpe.decompress(ubpe.compress(np.arange(5000, dtype=np.int16) % 50, level=args.level)))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                t0 = time.perf_counter()
                tok = ubpe_dask.fit(arr, alphabet=alphabet, n_tokens=n_tokens)
                fit_s = time.perf_counter() - t0
            same = tok.to_bytes() == ref.to_bytes()
            t0 = time.perf_counter()
            out = dask.compute(*ubpe_dask.compress(arr, tok, level=args.level))
            comp_s = time.perf_counter() - t0
            same_bytes = [len(b) for b in out] == [len(b) for b in blobs]
            mem = client.run(peak_rss_mib)
        rows.append((workers, fit_s, comp_s, same, same_bytes, max(mem.values())))
        print(f"{workers} worker(s): dask fit {fit_s:.2f} s (model bytes equal: {same}); compress {comp_s:.2f} s "
              f"({x.size / comp_s / 1e6:.2f} M values/s, sizes equal: {same_bytes}); peak worker RSS "
              f"{max(mem.values()):.0f} MiB")
    (_, f1, c1, *_), (_, f2, c2, *_) = rows
    print(f"2 workers vs 1: fit {f1 / f2:.2f}x, compress {c1 / c2:.2f}x (target >= 1.6x for compression: "
          f"{'PASS' if c1 / c2 >= 1.6 else 'FAIL'})")
    return 0 if all(r[3] and r[4] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
