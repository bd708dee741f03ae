"""Scratch timing of ubpe.trainer.train on the shared data (compile excluded).

usage: python benchmarks/bench_trainer_kernel.py [neural|text] [n_tokens] [n_candidates]
"""

from __future__ import annotations

import resource
import sys
import time
from glob import glob

import numpy as np

from ubpe import trainer

DATA = "/work/shared/data"


def neural():
    from scipy.io import wavfile

    xs = [wavfile.read(p)[1] for p in sorted(glob(f"{DATA}/neural/*.wav"))]
    lengths = np.array([len(x) for x in xs], dtype=np.int64)
    _, inv = np.unique(np.concatenate(xs), return_inverse=True)
    ids = inv.astype(np.int32).ravel()
    off = np.zeros(len(xs) + 1, dtype=np.int64)
    off[1:] = np.cumsum(lengths)
    return ids, off, int(ids.max()) + 1


def text():
    b = np.frombuffer(open(f"{DATA}/text/taylorswift.txt", "rb").read(), dtype=np.uint8)
    return b.astype(np.int32), np.array([0, len(b)], dtype=np.int64), 256


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "neural"
    n_tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
    nc = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    ids, off, A = neural() if which == "neural" else text()
    uo = trainer.unit_offsets_for(off, None)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    trainer.train(ids[:1000], np.array([0, 1000]), np.array([0, 1000]), A, A + 10, 2, 2)
    warm = time.perf_counter() - t
    t = time.perf_counter()
    r = trainer.train(ids, off, uo, A, n_tokens, nc, 2)
    dt = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        f"{which} n={len(ids)} A={A} n_tokens={n_tokens} nc={nc}: {dt:.3f} s, merges={len(r.counts)} "
        f"batches={int(r.batches[-1]) + 1 if len(r.batches) else 0} replaced={int(r.counts.sum())} "
        f"first call {warm:.2f} s, peak RSS {rss / 1024:.0f} MB (+{(rss - rss0) * 1024 / len(ids):.1f} B/value)"
    )


if __name__ == "__main__":
    main()
