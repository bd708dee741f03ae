"""Text training and encoding: ubpe's TextTokenizer against Hugging Face tokenizers' BpeTrainer,
rustbpe and SentencePiece (BPE), and its encode against tiktoken on the same ranks, on the same
text cut into the same pieces, in the same run, every contender on the same number of threads.

    python benchmarks/bench_text.py [--text taylorswift|fortunes] [--sizes 1024 4096 16384]
        [--repeat 5] [--threads 1] [--no-peers] [--json OUT.json]

Data: taylorswift.txt (benchmarks/_data.py, the default), or with ``--text fortunes`` the
2.5 MB of Debian's fortune cookies (bench_text_compress.debian_texts: the package fetched with
apt-get download, not installed; results/text-fortunes.json by default). The last tenth (from
the first line break after 90 % of the characters) is held back: every tool trains on the first
nine tenths and is scored on both parts.

Threads: ``--threads T`` (default 1) for every contender: ubpe trains and encodes on one thread
(``fit``, ``encode``); Hugging Face and rustbpe run on rayon with ``RAYON_NUM_THREADS=T`` (set
before they are imported), SentencePiece with ``num_threads=T``, tiktoken's ``encode_ordinary``
on the calling thread.

Pre-tokenization: the GPT-4 (cl100k) split pattern of ``ubpe.text.PATTERNS`` for all.

- ubpe: ``TextTokenizer(n, n_candidates=nc).fit(train)`` for nc = 1 (classic BPE, the default)
  and 50, byte-level (256 byte tokens, no merge across pieces, min_count 2).
- hf: ``tokenizers`` BPE model with pre-tokenizer Split(pattern, isolated) then ByteLevel
  (use_regex=False), ``BpeTrainer(vocab_size=n, min_frequency=2, initial_alphabet=the 256
  bytes)``, trained by ``train_from_iterator([train])``; the same byte-level setting as ubpe.
- rustbpe: ``rustbpe.Tokenizer().train_from_iterator([train], n, pattern=...)`` (byte-level,
  GPT-4 pattern; no minimum count); its ids through a tiktoken Encoding of its ranks.
- spm: SentencePiece ``model_type="bpe"`` trained on the pieces of the training text (every
  occurrence one sentence, so it cannot merge across them), identity normalisation, no dummy
  prefix, whitespace kept, byte fallback, ``character_coverage=1``, ``vocab_size=n`` with
  ``hard_vocab_limit=False``. Its base symbols are characters (plus 256 byte fallbacks and 3
  control tokens), not bytes, so its vocabulary is spent differently.

Timing: ``--repeat`` rounds; in each round every contender fits once (then encodes once), in an
order rotated by one each round, so that no contender always runs first or last; the best
round is reported, as wall time and CPU time of this process (``fit_s`` / ``fit_cpu_s``). A CPU
time well above the wall time means several threads ran; a wall time well above it, a core
that was busy with something else. ``enc_MB/s``: the whole text ten times over (1.86 MB for
taylorswift, one call), wall and CPU; the "tiktoken" twin of a ubpe row is the
``tiktoken.Encoding`` built from its ranks (same ids, checked).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path


def _threads_from_argv(argv: list[str]) -> int:
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return int(argv[i + 1])
        if a.startswith("--threads="):
            return int(a.split("=", 1)[1])
    return 1


THREADS = _threads_from_argv(sys.argv[1:])
os.environ["RAYON_NUM_THREADS"] = str(THREADS)  # before tokenizers or rustbpe start their pools

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402
from _measure import add_json_arg, print_table, result_path, write_json  # noqa: E402

import ubpe  # noqa: E402
from ubpe.text import PATTERNS, TextTokenizer  # noqa: E402

PATTERN = PATTERNS["gpt4"]


def split_text(text: str) -> tuple[str, str]:
    cut = text.find("\n", int(len(text) * 0.9))
    cut = len(text) if cut < 0 else cut + 1
    return text[:cut], text[cut:]


def timed(fn, *args):
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0, time.process_time() - c0


# ==================================================================================== contenders
# each: name -> (fit() -> model, encode(model) -> callable(str) -> ids as list or array)


def ubpe_fit(train: str, n: int, nc: int):
    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # stopping early shows in "vocab"
            return TextTokenizer(n, n_candidates=nc).fit(train)

    return fit


def hf_fit(train: str, n: int):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    def fit():
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=n, min_frequency=2, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator([train], trainer=trainer)
        return tok

    return fit


def rustbpe_fit(train: str, n: int):
    import rustbpe

    def fit():
        tok = rustbpe.Tokenizer()
        tok.train_from_iterator([train], n, pattern=PATTERN)
        return tok

    return fit


def spm_fit(train: str, n: int, splitter: TextTokenizer):
    import sentencepiece as spm

    pieces = splitter.pieces(train)

    def fit():
        model = tempfile.SpooledTemporaryFile()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(pieces), model_writer=model, model_type="bpe", vocab_size=n,
            hard_vocab_limit=False, character_coverage=1.0, byte_fallback=True,
            normalization_rule_name="identity", add_dummy_prefix=False, remove_extra_whitespaces=False,
            split_by_whitespace=False, allow_whitespace_only_pieces=True, max_sentencepiece_length=64,
            max_sentence_length=1 << 20, minloglevel=2, num_threads=THREADS,
        )
        model.seek(0)
        return spm.SentencePieceProcessor(model_proto=model.read())

    return fit


def contenders(train: str, n: int, peers: bool = True) -> dict:
    out = {"ubpe nc=1": ubpe_fit(train, n, 1), "ubpe nc=50": ubpe_fit(train, n, 50)}
    for name, make in (("hf BpeTrainer", lambda: hf_fit(train, n)), ("rustbpe", lambda: rustbpe_fit(train, n)),
                       ("spm bpe", lambda: spm_fit(train, n, TextTokenizer(256)))):
        if not peers:
            break
        try:
            out[name] = make()
        except ImportError as e:
            print(f"{name}: not installed ({e.name}), skipped")
    return out


def encoder_of(name: str, model):
    """``(encode(str) -> ids, vocab size, tiktoken twin or None)`` of a fitted model."""
    if name.startswith("ubpe"):
        try:
            import tiktoken

            twin = tiktoken.Encoding("ubpe", pat_str=model.pattern, mergeable_ranks=model.tiktoken_ranks(),
                                     special_tokens={})
        except ImportError:
            twin = None
        return (lambda s: model.encode(s, disallowed_special=())), model.vocab_size, twin
    if name.startswith("hf"):
        return (lambda s: model.encode(s).ids), model.get_vocab_size(), None
    if name == "rustbpe":
        import tiktoken

        ranks = {bytes(k): v for k, v in model.get_mergeable_ranks()}
        enc = tiktoken.Encoding("rustbpe", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})
        return enc.encode_ordinary, model.vocab_size, None
    splitter = TextTokenizer(256)
    return (lambda s: [i for ids in model.encode(splitter.pieces(s)) for i in ids]), model.get_piece_size(), None


def best(runs: list[tuple[float, float]]) -> tuple[float, float]:
    """The round with the least wall time: (wall, cpu)."""
    return min(runs)


def measure_size(train: str, held: str, big: str, n: int, repeat: int, peers: bool = True) -> list[dict]:
    fits = contenders(train, n, peers)
    names = list(fits)
    fit_runs: dict[str, list] = {k: [] for k in names}
    models: dict = {}
    for r in range(repeat):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            models[name], wall, cpu = timed(fits[name])
            fit_runs[name].append((wall, cpu))
    encoders = {}
    for name in names:
        enc, vocab, twin = encoder_of(name, models[name])
        encoders[name] = (enc, vocab)
        if twin is not None:
            encoders[f"  tiktoken twin of {name}"] = (twin.encode_ordinary, vocab)
            assert list(twin.encode_ordinary(held)) == list(enc(held)), f"{name}: tiktoken ids differ"
    enc_names = list(encoders)
    enc_runs: dict[str, list] = {k: [] for k in enc_names}
    for name in enc_names:
        encoders[name][0](big[:10000])  # warm up
    for r in range(repeat):
        order = enc_names[r % len(enc_names):] + enc_names[:r % len(enc_names)]
        for name in order:
            _, wall, cpu = timed(encoders[name][0], big)
            enc_runs[name].append((wall, cpu))
    rows = []
    mb = len(big.encode()) / 1e6
    for name in enc_names:
        enc, vocab = encoders[name]
        row = dict(tool=name, n_tokens=n, vocab=vocab)
        if name in fit_runs:
            wall, cpu = best(fit_runs[name])
            row.update(fit_s=wall, fit_cpu_s=cpu)
        row["B/tok train"] = len(train.encode()) / len(enc(train))
        row["B/tok held"] = len(held.encode()) / len(enc(held))
        wall, cpu = best(enc_runs[name])
        row.update({"enc_MB/s": mb / wall, "enc_cpu_MB/s": mb / cpu})
        rows.append(row)
    # ubpe's encode against its tiktoken twin, CPU time, per round (same ranks, same ids)
    for name in names:
        twin = f"  tiktoken twin of {name}"
        if twin in enc_runs:
            ratios = [t[1] / u[1] for u, t in zip(enc_runs[name], enc_runs[twin])]
            next(r for r in rows if r["tool"] == name)["enc vs tiktoken (CPU)"] = f"{min(ratios):.2f}-{max(ratios):.2f}"
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096, 16384])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--text", choices=("taylorswift", "fortunes"), default="taylorswift")
    p.add_argument("--no-peers", action="store_true",
                   help="ubpe and its tiktoken twins only (no Hugging Face, rustbpe, SentencePiece)")
    add_json_arg(p)
    args = p.parse_args(argv)
    if args.text == "fortunes":
        import bench_text_compress

        texts = bench_text_compress.debian_texts()
        if not texts:
            print("the Debian fortunes could not be fetched: nothing measured")
            return
        text = texts["fortunes (all)"].decode("utf-8", errors="replace")
        if args.json is None and not getattr(args, "no_json", False):
            args.json = str(Path(__file__).resolve().parent / "results" / "text-fortunes.json")
    else:
        text = _data.text().decode("utf-8")
    train, held = split_text(text)
    big = text * 10
    print(f"{args.text}: {len(text.encode()):,} bytes; training on {len(train.encode()):,}, "
          f"holding back {len(held.encode()):,}; {len(TextTokenizer(256).pieces(train)):,} pieces, "
          f"{len(set(TextTokenizer(256).pieces(train))):,} distinct; every contender on {THREADS} thread(s); "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}\n")
    TextTokenizer(300).fit(train[:5000]).encode(train[:5000])  # numba kernels compiled or loaded before any timing
    rows = []
    for n in args.sizes:
        got = measure_size(train, held, big, n, args.repeat, not args.no_peers)
        print_table(got, title=f"n_tokens={n}")
        rows += got
    write_json(result_path(args), rows, extra=dict(sizes=args.sizes, repeat=args.repeat, pattern=PATTERN,
                                                   threads=THREADS, ubpe=ubpe.__version__))


if __name__ == "__main__":
    main()
