"""Replay encoding (``ubpe.encoder.encode``) CPU time, this checkout against another, each in its
own subprocess, alternated round by round; per input the least of every run.

    UBPE_DATA=/work/shared/data nice -n 5 python benchmarks/bench_replay.py /work/wt/base
        [--signals a.npy b.npy] [--rounds 3] [--repeat 5]

Inputs, built the same way in every child:
- text: the shared text (taylorswift.txt, UTF-8 bytes) repeated 4 times, merges trained on it
  with ``Tokenizer(256, n_tokens)`` for 1 024, 8 192 and 32 768 tokens;
- each ``--signals`` .npy (1-D, or its first channel): the first differences of the values as
  ids, ``Tokenizer(alphabet, n_tokens).fit`` for 1 024 tokens (a merge-heavy model where the
  signal is smooth, as level 1's blocked writer builds for one).
Each child prints the least of ``--repeat`` encodings (``time.process_time``) and a digest of
the tokens: the two checkouts must give the same tokens (checked, else an error).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
from _checkout import child_result

HERE = Path(__file__).resolve().parent


def _inputs(signals: list[str]):
    """(name, ids, merges in priority space, alphabet size) of every input, built with ubpe."""
    from ubpe import Tokenizer

    data = Path(os.environ.get("UBPE_DATA", "/work/shared/data"))
    text = np.frombuffer((data / "text" / "taylorswift.txt").read_bytes() * 4, np.uint8).astype(np.int32)
    for n_tokens in (1024, 8192, 32768):
        tok = Tokenizer(256, n_tokens).fit(text)
        yield f"text/{n_tokens}", text, tok
    for path in signals:
        x = np.load(path)
        x = x if x.ndim == 1 else x[:, 0]
        d = np.diff(x.astype(np.int64))
        tok = Tokenizer(None, 1024).fit(d)
        yield Path(path).stem, d, tok


def child(signals: list[str], repeat: int) -> None:
    import time

    import ubpe

    rows = []
    for name, values, tok in _inputs(signals):
        ids = tok.alphabet.to_ids(values)
        model = tok.model
        tokens = model.encode(ids)
        best = float("inf")
        for _ in range(repeat):
            t = time.process_time()
            model.encode(ids)
            best = min(best, time.process_time() - t)
        digest = hashlib.sha256(np.ascontiguousarray(tokens).tobytes()).hexdigest()[:16]
        rows.append([name, int(ids.size), len(model.merges), int(tokens.size), best, digest])
    print(json.dumps({"file": ubpe.__file__, "rows": rows}))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before", nargs="?", help="the other checkout (its ubpe is timed as BEFORE)")
    p.add_argument("--signals", nargs="*", default=[])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        child(a.signals, a.repeat)
        return
    trees = {"before": str(Path(a.before).resolve()), "after": str(HERE.parent)}
    args = ["--child", "--repeat", str(a.repeat), "--signals", *map(str, map(Path.resolve, map(Path, a.signals)))]
    best: dict = {}
    for r in range(a.rounds):
        order = ("before", "after") if r % 2 == 0 else ("after", "before")
        for label in order:
            res = child_result(sys.executable, str(HERE / "bench_replay.py"), trees[label], args)
            for name, n, m, n_out, cpu, digest in res["rows"]:
                old = best.setdefault((label, name), [n, m, n_out, cpu, digest])
                old[3] = min(old[3], cpu)
    print(f"bench_replay: {a.rounds} rounds x {a.repeat} encodings, CPU ms (least), before = {trees['before']}")
    print("| input | ids | merges | tokens | before ms | after ms | after / before |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for (label, name), (n, m, n_out, cpu, digest) in best.items():
        if label != "before":
            continue
        after = best[("after", name)]
        if after[4] != digest:
            raise AssertionError(f"{name}: the two checkouts give different tokens")
        print(f"| {name} | {n} | {m} | {n_out} | {cpu * 1e3:.2f} | {after[3] * 1e3:.2f} | {after[3] / cpu:.3f} |")


if __name__ == "__main__":
    main()
