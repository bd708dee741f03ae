"""Training on a large corpus: ubpe's ``TextTokenizer.fit_files`` against Hugging Face
``tokenizers``, ``rustbpe`` and SentencePiece on the same 1.49 GB of real text, each on 1 and on
2 threads, each in a process of its own (wall time, CPU time, peak memory).

    python benchmarks/bench_text_corpus.py [--corpus DIR] [--vocab 32768] [--threads 1 2]
        [--tools ubpe ubpe-proc hf rustbpe spm] [--limit-gb G] [--timeout S] [--json OUT]

Corpus: Debian's ``linux-source-6.12`` package (``apt-get download``, not installed): the Linux
kernel's source and documentation, every file that is valid UTF-8 (86 624 files, 1 488 MB; 5 files,
0.25 MB, are not and are left out), concatenated in path order into shards of about 150 MB in
``--corpus`` (default ``~/.cache/ubpe/linux-corpus``), made once. Nothing is repeated.
``--limit-gb`` takes the first shards only (for a quick run).

Contenders (GPT-4's split pattern and 256 byte tokens for all but SentencePiece, vocabulary
``--vocab``, pairs seen at least twice):

- ``ubpe``: ``TextTokenizer(vocab).fit_files(shards, num_threads=T)`` (threads); ``ubpe-proc``
  the same with ``workers="processes"``. Each shard is one text (cut only where the pattern
  always cuts, docs/text.md).
- ``hf``: ``tokenizers`` BPE, pre-tokenizer Split(pattern, isolated) then ByteLevel
  (use_regex=False), ``BpeTrainer(vocab_size, min_frequency=2, initial_alphabet=the 256
  bytes)``, ``train_from_iterator`` over the same texts ubpe reads (each shard cut at the same
  safe points into blocks of about 1 MB), ``RAYON_NUM_THREADS=T``.
- ``rustbpe``: ``Tokenizer().train_from_iterator(the same blocks, vocab_size, pattern)``,
  ``RAYON_NUM_THREADS=T``.
- ``spm``: SentencePiece BPE on the shard files (it reads lines, and splits on whitespace
  itself), ``num_threads=T``, identity normalisation, no dummy prefix, byte fallback,
  ``character_coverage=0.9999``, ``input_sentence_size=0`` (every line), lines up to 16 KB.

Each run is a child process started for it (``--child``); the parent records the wall time, the
CPU time of the child and of every process it waited for (``os.wait4``), and the peak of the
summed resident memory of the child and its descendants (sampled every 0.1 s with psutil). The
child reports the training alone (``fit_s`` wall, ``fit_cpu_s`` CPU of it and its worker
processes): ubpe's compiled kernels are loaded from numba's cache by a small fit first, and
``count_s`` is its first pass. The
contenders alternate: for 1 thread in the order given, for 2 threads in reverse. A run is stopped
at ``--timeout`` seconds or when its processes hold more than ``--max-mem-gb``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import print_table, write_json  # noqa: E402

PACKAGE = "linux-source-6.12"
SHARD = 150_000_000
SAFE_CUT = re.compile(rb"[!-~]\n[!-~]")
DEFAULT_CORPUS = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ubpe" / "linux-corpus"


# ==================================================================================== corpus


def build_corpus(dest: Path) -> list[Path]:
    """The corpus shards (made once): every UTF-8 file of Debian's linux-source package."""
    shards = sorted(dest.glob("linux-*.txt"))
    if shards and (dest / "DONE").exists():
        return shards
    dest.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=dest))
    try:
        subprocess.run(["apt-get", "download", PACKAGE], cwd=work, check=True, capture_output=True)
        deb = next(work.glob(f"{PACKAGE}_*.deb"))
        subprocess.run(["dpkg-deb", "-x", str(deb), str(work / "x")], check=True)
        tarball = next((work / "x").rglob("linux-source-*.tar.xz"))
        subprocess.run(["tar", "-xJf", str(tarball), "-C", str(work)], check=True)
        tree = next(p for p in work.iterdir() if p.is_dir() and p.name.startswith("linux-source"))
        paths = sorted(str(p) for p in tree.rglob("*") if p.is_file() and not p.is_symlink())
        shard, size, out, skipped = 0, 0, None, 0
        for p in paths:
            raw = Path(p).read_bytes()
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                skipped += 1
                continue
            if out is None:
                out = open(dest / f"linux-{shard:02d}.txt", "wb")
            out.write(raw)
            size += len(raw)
            if size >= SHARD:
                out.close()
                out, size, shard = None, 0, shard + 1
        if out is not None:
            out.close()
        (dest / "DONE").write_text(f"{PACKAGE}: {len(paths) - skipped} files, {skipped} not UTF-8 left out\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return sorted(dest.glob("linux-*.txt"))


def blocks(paths: list[str], size: int = 1 << 20):
    """Each file's text in blocks of about ``size`` bytes, cut where the GPT-2/GPT-4 patterns
    always cut (after a line feed between printable ASCII characters), as str."""
    for p in paths:
        data = Path(p).read_bytes()
        start = 0
        while len(data) - start > size:
            m = None
            for m in SAFE_CUT.finditer(data, start + size // 2, start + size):
                pass
            if m is None:
                m = SAFE_CUT.search(data, start + size)
                if m is None:
                    break
            cut = m.start() + 2
            yield data[start:cut].decode("utf-8")
            start = cut
        yield data[start:].decode("utf-8")


# ==================================================================================== children


def child(tool: str, threads: int, vocab: int, paths: list[str], out: str) -> None:
    """Train one contender (runs in its own process); write its figures as JSON to ``out``."""
    import warnings

    from ubpe.text import PATTERNS

    import resource

    pattern = PATTERNS["gpt4"]
    res: dict = {}

    def cpu() -> float:  # this process and the worker processes it waited for
        own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    t0, c0 = time.perf_counter(), cpu()
    if tool in ("ubpe", "ubpe-proc"):
        from ubpe.text import TextTokenizer

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            TextTokenizer(300).fit("warm up the compiled kernels " * 20)  # loaded from numba's cache
        t0, c0 = time.perf_counter(), cpu()
        tok = TextTokenizer(vocab)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            counts = tok.count_files(paths, num_threads=threads, workers="processes" if tool == "ubpe-proc" else "threads")
            res["count_s"] = time.perf_counter() - t0
            res["words"] = len(counts)
            res["pieces"] = counts.total
            tok.fit_word_counts(counts)
        res["vocab"] = tok.vocab_size
        ranks = tok.tiktoken_ranks()
    elif tool == "hf":
        from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        trainer = trainers.BpeTrainer(vocab_size=vocab, min_frequency=2, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator(blocks(paths), trainer=trainer)
        res["vocab"] = tok.get_vocab_size()
        ranks = None
    elif tool == "rustbpe":
        import rustbpe

        tok = rustbpe.Tokenizer()
        tok.train_from_iterator(blocks(paths), vocab, pattern=pattern)
        res["vocab"] = tok.vocab_size
        ranks = {bytes(k): v for k, v in tok.get_mergeable_ranks()}
    elif tool == "spm":
        import sentencepiece as spm

        model = tempfile.SpooledTemporaryFile()
        spm.SentencePieceTrainer.train(
            input=",".join(paths), model_writer=model, model_type="bpe", vocab_size=vocab,
            character_coverage=0.9999, byte_fallback=True, normalization_rule_name="identity",
            add_dummy_prefix=False, remove_extra_whitespaces=False, allow_whitespace_only_pieces=True,
            split_digits=True, max_sentence_length=1 << 14, input_sentence_size=0, minloglevel=2,
            num_threads=threads, train_extremely_large_corpus=True, hard_vocab_limit=False)
        model.seek(0)
        res["vocab"] = spm.SentencePieceProcessor(model_proto=model.read()).get_piece_size()
        ranks = None
    else:
        raise SystemExit(f"unknown tool {tool}")
    res["fit_s"] = time.perf_counter() - t0
    res["fit_cpu_s"] = cpu() - c0
    if ranks is not None:
        res["n_ranks"] = len(ranks)
    Path(out).write_text(json.dumps(res))


def run(tool: str, threads: int, vocab: int, paths: list[str], timeout: float, max_mem: float) -> dict:
    """Run one contender in a child process: wall, CPU (child and its waited-for descendants),
    peak summed RSS of the process tree."""
    import psutil

    out = tempfile.mktemp(suffix=".json")
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    cmd = [sys.executable, __file__, "--child", tool, str(threads), str(vocab), out, *paths]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env)
    peak = [0]
    stopped = [False]
    done = threading.Event()

    def sample() -> None:
        try:
            root = psutil.Process(proc.pid)
        except psutil.Error:
            return
        while not done.is_set():
            try:
                total = root.memory_info().rss + sum(c.memory_info().rss for c in root.children(recursive=True))
                peak[0] = max(peak[0], total)
                if total > max_mem:  # a shared machine: stop before it swaps or starves others
                    stopped[0] = True
                    proc.kill()
            except psutil.Error:
                pass
            done.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    timer.cancel()
    done.set()
    wall = time.perf_counter() - t0
    row = dict(tool=tool, threads=threads, wall_s=round(wall, 1), cpu_s=round(usage.ru_utime + usage.ru_stime, 1),
               peak_MB=round(peak[0] / 1e6), maxrss_MB=round(usage.ru_maxrss / 1e3))
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and os.path.exists(out):
        res = json.loads(Path(out).read_text())
        row.update({k: (round(v, 1) if isinstance(v, float) else v) for k, v in res.items()})
        os.unlink(out)
    else:
        why = ", killed at the time limit" if wall >= timeout else ", killed at the memory limit" if stopped[0] else ""
        row["error"] = f"did not finish (status {status}{why})"
    return row


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--tools", nargs="+", default=["ubpe", "ubpe-proc", "hf", "rustbpe", "spm"])
    ap.add_argument("--limit-gb", type=float, default=None)
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument("--max-mem-gb", type=float, default=12.0, help="stop a run whose processes hold more")
    ap.add_argument("--json", default=str(Path(__file__).resolve().parent / "results" / "text-corpus.json"))
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        tool, threads, vocab, out, *paths = args.child
        child(tool, int(threads), int(vocab), paths, out)
        return
    shards = build_corpus(args.corpus)
    if args.limit_gb is not None:
        keep, size = [], 0
        for s in shards:
            if size >= args.limit_gb * 1e9:
                break
            keep.append(s)
            size += s.stat().st_size
        shards = keep
    paths = [str(s) for s in shards]
    total = sum(s.stat().st_size for s in shards)
    print(f"corpus: {len(paths)} shards, {total / 1e6:,.0f} MB ({args.corpus}); vocabulary {args.vocab}; "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}\n")
    rows = []
    for i, threads in enumerate(args.threads):
        order = args.tools if i % 2 == 0 else list(reversed(args.tools))
        for tool in order:
            if tool == "ubpe-proc" and threads == 1:
                continue  # one worker process is one thread with a process start on top
            row = run(tool, threads, args.vocab, paths, args.timeout, args.max_mem_gb * 1e9)
            row["MB/s"] = round(total / 1e6 / row["wall_s"], 1) if "error" not in row else None
            print(json.dumps(row), flush=True)
            rows.append(row)
    print_table(rows, title=f"training on {total / 1e6:,.0f} MB")
    write_json(args.json, rows, extra=dict(corpus_bytes=total, shards=len(paths), vocab=args.vocab,
                                           package=PACKAGE))


if __name__ == "__main__":
    main()
