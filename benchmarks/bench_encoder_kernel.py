"""Scratch timing of the replay encoder and decoder kernels (ubpe/encoder.py).

    python benchmarks/bench_encoder_kernel.py [--files N] [--slice N]

Merge tables come from ``ubpe.trainer.train`` if it exists, else from a throwaway trainer
here: count pairs of the current stream (encoded with the merges so far), accept the top pairs
that share no token (up to ``--per-batch`` per round, 1 = classic BPE), repeat. It only needs a
plausible table.
"""

from __future__ import annotations

import argparse
import glob
import os
import time

import numpy as np
from scipy.io import wavfile

from ubpe import encoder as E

NEURAL = "/work/shared/data/neural/*.wav"
TEXT = "/work/shared/data/text/taylorswift.txt"


def throwaway_train(train_ids, alphabet_size, n_tokens, per_batch):
    merges = np.zeros((0, 2), np.int32)
    a = alphabet_size
    while a + len(merges) < n_tokens:
        tables = E.build_encoder(merges, a)
        stream = E.encode(train_ids, tables).astype(np.int64)
        if stream.size < 2:
            break
        keys = stream[:-1] * (a + len(merges)) + stream[1:]
        uniq, counts = np.unique(keys, return_counts=True)
        order = np.lexsort((uniq, -counts))
        used, new = set(), []
        for i in order[: 4 * per_batch]:
            if counts[i] < 2 or len(new) >= per_batch or a + len(merges) + len(new) >= n_tokens:
                break
            left, r = divmod(int(uniq[i]), a + len(merges))
            if left in used or r in used:
                continue
            used.update((left, r))
            new.append((left, r))
        if not new:
            break
        merges = np.concatenate([merges, np.array(new, np.int32)])
    return merges


def get_merges(name, train_ids, a, n_tokens, per_batch):
    try:
        from ubpe.trainer import train
    except ImportError:
        train = None
    path = f"/tmp/ubpe_bench_merges_{name}_{n_tokens}_{per_batch}_{train is not None}.npy"
    if os.path.exists(path):
        return np.load(path)
    t = time.perf_counter()
    if train is not None:  # the compiled trainer, per_batch = n_candidates
        n = train_ids.size
        bounds = np.array([0, n], np.int64)
        merges = train(train_ids, bounds, bounds, a, n_tokens, per_batch, 2).merges
    else:
        merges = throwaway_train(train_ids, a, n_tokens, per_batch)
    print(f"  trained {name} {n_tokens} tokens ({per_batch}/batch) in {time.perf_counter() - t:.1f}s")
    np.save(path, merges)
    return merges


def best(f, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        r = f()
        times.append(time.perf_counter() - t)
    return min(times), r


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--files", type=int, default=121)
    p.add_argument("--slice", type=int, default=1_000_000)
    p.add_argument("--sizes", default="4096,16384")
    p.add_argument("--per-batch", default="50,1")
    args = p.parse_args()

    t = time.perf_counter()
    E.encode(np.zeros(3, np.int32), E.build_encoder(np.array([[0, 0]], np.int32), 1))
    E.decode(np.zeros(3, np.int32), E.build_expansion(np.array([[0, 0]], np.int32), 1))
    E.encode_batch([np.zeros(3, np.int32)], E.build_encoder(np.array([[0, 0]], np.int32), 1))
    print(f"first calls (compile or cache load): {time.perf_counter() - t:.2f}s")

    files = sorted(glob.glob(NEURAL))[: args.files]
    raw = [wavfile.read(f)[1].astype(np.int64) for f in files]
    values, inv = np.unique(np.concatenate(raw), return_inverse=True)
    inv = inv.astype(np.int32)
    docs = np.split(inv, np.cumsum([len(r) for r in raw])[:-1])
    text = np.frombuffer(open(TEXT, "rb").read(), np.uint8).astype(np.int32)
    sets = [("neural", docs, len(values)), ("text", [text], 256)]
    for name, ds, a in sets:
        full = np.concatenate(ds)
        train_ids = full[: args.slice]
        print(f"{name}: {len(ds)} docs, {full.size} values, A={a}")
        for n_tokens in map(int, args.sizes.split(",")):
            for per_batch in map(int, args.per_batch.split(",")):
                merges = get_merges(name, train_ids, a, n_tokens, per_batch)
                m = len(merges)
                tb, t_tb = None, time.perf_counter()
                tb = E.build_encoder(merges, a)
                t_tb = time.perf_counter() - t_tb
                t_ex = time.perf_counter()
                ex = E.build_expansion(merges, a)
                t_ex = time.perf_counter() - t_ex
                t_one, toks = best(lambda: E.encode(full, tb))
                t_batch, btoks = best(lambda: E.encode_batch(ds, tb))
                assert np.array_equal(np.concatenate(btoks), toks) or len(ds) > 1
                out = np.empty(full.size, np.int32)
                t_dec, dec = best(lambda: E.decode(toks, ex, out=out), 5)
                assert np.array_equal(dec, full)
                print(
                    f"  M={m:6d} ({per_batch}/batch) tables {t_tb * 1e3:.1f} ms, expansion "
                    f"{t_ex * 1e3:.1f} ms ({ex.values.size} values, cap {ex.max_table_length}) | "
                    f"encode {full.size / t_one / 1e6:6.1f} M/s, batch {full.size / t_batch / 1e6:6.1f} M/s, "
                    f"ratio {full.size / toks.size:.2f} | decode {full.size / t_dec / 1e6:6.1f} M/s"
                )


if __name__ == "__main__":
    main()
