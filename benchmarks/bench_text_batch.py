"""Batches of texts: ``TextTokenizer.encode_batch`` / ``decode_batch`` on 1 and 2 threads, against
tiktoken's ``encode_ordinary_batch`` / ``decode_batch`` (same ranks, same ids) and Hugging Face's
``encode_batch`` / ``decode_batch`` (its tokenizer.json export, same ids) on as many threads.

    python benchmarks/bench_text_batch.py [--docs taylorswift|linux] [--repeat 5] [--json OUT]

Documents: ``taylorswift`` (default): the text 20 times over cut into 1 000-character documents
(3 716 documents, 3.7 MB); ``linux``: the first 32 MB of the Linux corpus shard 0 of
bench_text_corpus.py cut into 4 000-character documents. Tokenizer: ``TextTokenizer(4096)``
trained on taylorswift (GPT-4 pattern).

Threads: ubpe ``num_threads=T``; tiktoken ``num_threads=T``; Hugging Face through rayon, whose
pool size is fixed at its first use, so each Hugging Face figure comes from a child process run
with ``RAYON_NUM_THREADS=T``. Each round runs every contender once in a rotated order; the best
round's wall time is reported (a batch on 2 threads is about wall time), with this process's CPU
time beside it. ``speedup``: wall time on 1 thread over wall time on 2, per contender.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402
from _measure import add_json_arg, print_table, result_path, write_json  # noqa: E402

from ubpe.text import TextTokenizer  # noqa: E402


def documents(kind: str) -> list[str]:
    if kind == "linux":
        import bench_text_corpus

        path = bench_text_corpus.build_corpus(bench_text_corpus.DEFAULT_CORPUS)[0]
        with open(path, "rb") as f:
            text = f.read(32 << 20).decode("utf-8", errors="ignore")
        return [text[i:i + 4000] for i in range(0, len(text), 4000)]
    text = _data.text().decode("utf-8") * 20
    return [text[i:i + 1000] for i in range(0, len(text), 1000)]


def hf_child(path: str, docs_path: str, repeat: int) -> None:
    """In a child with RAYON_NUM_THREADS set: best encode_batch / decode_batch wall times."""
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(path)
    docs = json.loads(Path(docs_path).read_text())
    hf.encode_batch(docs[:50])
    enc, dec = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = hf.encode_batch(docs)
        enc.append(time.perf_counter() - t0)
        ids = [e.ids for e in out]
        t0 = time.perf_counter()
        hf.decode_batch(ids)
        dec.append(time.perf_counter() - t0)
    print(json.dumps({"enc": min(enc), "dec": min(dec)}))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", choices=("taylorswift", "linux"), default="taylorswift")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--hf-child", nargs=3, help=argparse.SUPPRESS)
    add_json_arg(ap, "text-batch.json")
    args = ap.parse_args(argv)
    if args.hf_child:
        hf_child(args.hf_child[0], args.hf_child[1], int(args.hf_child[2]))
        return
    import tiktoken

    tok = TextTokenizer(4096).fit(_data.text().decode("utf-8"))
    docs = documents(args.docs)
    mb = sum(len(d.encode()) for d in docs) / 1e6
    enc = tiktoken.Encoding("ubpe", pat_str=tok.pattern, mergeable_ranks=tok.tiktoken_ranks(), special_tokens={})
    ids = tok.encode_batch(docs)
    lists = [i.tolist() for i in ids]
    assert enc.encode_ordinary_batch(docs[:200]) == lists[:200]
    flat = tok.encode_batch(docs, arrays=True)
    print(f"{args.docs}: {len(docs):,} documents, {mb:.1f} MB, {flat.ids.shape[0]:,} tokens; "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}\n")
    contenders = {}
    for t in (1, 2):
        contenders[f"ubpe encode_batch T={t}"] = (lambda t=t: tok.encode_batch(docs, num_threads=t))
        contenders[f"ubpe encode_batch arrays T={t}"] = (lambda t=t: tok.encode_batch(docs, num_threads=t, arrays=True))
        contenders[f"tiktoken encode_ordinary_batch T={t}"] = (lambda t=t: enc.encode_ordinary_batch(docs, num_threads=t))
        contenders[f"ubpe decode_batch T={t}"] = (lambda t=t: tok.decode_batch(flat, num_threads=t))
        contenders[f"tiktoken decode_batch T={t}"] = (lambda t=t: enc.decode_batch(lists, num_threads=t))
    for fn in contenders.values():
        fn()
    names = list(contenders)
    runs: dict[str, list] = {k: [] for k in names}
    for r in range(args.repeat):
        for name in names[r % len(names):] + names[:r % len(names)]:
            c0, t0 = time.process_time(), time.perf_counter()
            contenders[name]()
            runs[name].append((time.perf_counter() - t0, time.process_time() - c0))
    rows = []
    for name in names:
        wall, cpu = min(runs[name])
        rows.append(dict(contender=name, wall_s=wall, cpu_s=cpu, **{"MB/s": mb / wall}))
    # Hugging Face, through its export, in children (rayon's pool size is fixed at first use)
    with tempfile.TemporaryDirectory() as d:
        tok.export_hf(Path(d) / "tokenizer.json")
        (Path(d) / "docs.json").write_text(json.dumps(docs))
        for t in (1, 2):
            r = subprocess.run([sys.executable, __file__, "--hf-child", str(Path(d) / "tokenizer.json"),
                                str(Path(d) / "docs.json"), str(args.repeat)],
                               env=dict(os.environ, RAYON_NUM_THREADS=str(t)), capture_output=True, text=True)
            if r.returncode != 0:
                print("hf:", r.stderr[-300:])
                continue
            got = json.loads(r.stdout.strip().splitlines()[-1])
            rows.append(dict(contender=f"hf encode_batch T={t}", wall_s=got["enc"], cpu_s=None, **{"MB/s": mb / got["enc"]}))
            rows.append(dict(contender=f"hf decode_batch T={t}", wall_s=got["dec"], cpu_s=None, **{"MB/s": mb / got["dec"]}))
    by = {r["contender"]: r for r in rows}
    for r in rows:
        if r["contender"].endswith("T=2"):
            one = by.get(r["contender"][:-1] + "1")
            if one:
                r["speedup"] = one["wall_s"] / r["wall_s"]
    print_table(rows, title=f"{len(docs):,} documents, {mb:.1f} MB")
    write_json(result_path(args), rows, extra=dict(docs=args.docs, n_docs=len(docs), mb=mb, repeat=args.repeat))


if __name__ == "__main__":
    main()
