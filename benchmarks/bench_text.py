"""Text training: ubpe's TextTokenizer.fit against Hugging Face tokenizers' BpeTrainer and
SentencePiece (BPE), on the same text cut into the same pieces, in the same run.

    python benchmarks/bench_text.py [--text taylorswift|fortunes] [--sizes 1024 4096 16384] [--repeat 3] [--json OUT.json]

Data: taylorswift.txt (benchmarks/_data.py, the default), or with ``--text fortunes`` the
2.5 MB of Debian's fortune cookies (bench_text_compress.debian_texts: the package fetched with
apt-get download, not installed; results/text-fortunes.json by default). The last tenth (from the first line break after
90 % of the characters) is held back: every tool trains on the first nine tenths and is scored
on both parts.

Pre-tokenization: the GPT-4 (cl100k) split pattern of ``ubpe.text.PATTERNS`` for all three.

- ubpe: ``TextTokenizer(n, n_candidates=nc).fit(train)`` for nc = 50 (default) and 1 (classic
  BPE), byte-level (256 byte tokens, no merge across pieces, min_count 2).
- hf: ``tokenizers`` BPE model with pre-tokenizer Split(pattern, isolated) then ByteLevel
  (use_regex=False), ``BpeTrainer(vocab_size=n, min_frequency=2, initial_alphabet=the 256
  bytes)``, trained by ``train_from_iterator([train])``; the same byte-level setting as ubpe.
- spm: SentencePiece ``model_type="bpe"`` trained on the pieces of the training text (every
  occurrence one sentence, so it cannot merge across them), identity normalisation, no dummy
  prefix, whitespace kept, byte fallback, ``character_coverage=1``, ``vocab_size=n`` with
  ``hard_vocab_limit=False``. Its base symbols are characters (plus 256 byte fallbacks and 3
  control tokens), not bytes, so its vocabulary is spent differently.

Columns: ``vocab`` the vocabulary reached (training may stop early when no pair repeats:
ubpe and hf at min_count 2); ``fit_s`` best wall time of ``--repeat`` fits (ubpe's kernels
warmed first; the machine may be shared, compare rows of one run only); ``B/tok`` UTF-8 bytes
per token on the training part and on the held-back part (more is better); ``enc_MB/s`` encoding
the whole text ten times over (1.86 MB, one call, best of ``--repeat``): ubpe's
``TextTokenizer.encode``, the Hugging Face tokenizer's ``encode``, SentencePiece's ``encode`` of
the pieces (the split done in Python, included), and, on the ubpe rows' "tiktoken" twin, the
``tiktoken.Encoding`` built from ``export_tiktoken``'s ranks (same ids).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402
from _measure import add_json_arg, print_table, result_path, time_call, write_json  # noqa: E402

import ubpe  # noqa: E402
from ubpe.text import PATTERNS, TextTokenizer  # noqa: E402

PATTERN = PATTERNS["gpt4"]


def split_text(text: str) -> tuple[str, str]:
    cut = text.find("\n", int(len(text) * 0.9))
    cut = len(text) if cut < 0 else cut + 1
    return text[:cut], text[cut:]


def ubpe_row(train: str, held: str, n: int, nc: int, repeat: int) -> dict:
    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # stopping early shows in "vocab"
            return TextTokenizer(n, n_candidates=nc).fit(train)

    t = time_call(fit, warmup=0, repeat=repeat)
    tok = t.result

    def count(s):
        return len(tok.encode(s, disallowed_special=()))

    row = dict(tool=f"ubpe nc={nc}", n_tokens=n, vocab=tok.vocab_size, fit_s=t.best_s,
               **scores(train, held, count), **speed(lambda s: tok.encode(s, disallowed_special=()), repeat))
    rows = [row]
    try:
        import tiktoken
    except ImportError:
        return rows
    enc = tiktoken.Encoding("ubpe", pat_str=tok.pattern, mergeable_ranks=tok.tiktoken_ranks(), special_tokens={})
    rows.append(dict(tool=f"  tiktoken twin of nc={nc}", n_tokens=n, vocab=tok.vocab_size,
                     **scores(train, held, lambda s: len(enc.encode_ordinary(s))),
                     **speed(enc.encode_ordinary, repeat)))
    return rows


def hf_row(train: str, held: str, n: int, repeat: int) -> dict | None:
    try:
        from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    except ImportError:
        print("hf: tokenizers is not installed, skipped")
        return None

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

    t = time_call(fit, warmup=0, repeat=repeat)
    tok = t.result
    return dict(tool="hf BpeTrainer", n_tokens=n, vocab=tok.get_vocab_size(), fit_s=t.best_s,
                **scores(train, held, lambda s: len(tok.encode(s).ids)), **speed(tok.encode, repeat))


def spm_row(train: str, held: str, n: int, repeat: int) -> dict | None:
    try:
        import sentencepiece as spm
    except ImportError:
        print("spm: sentencepiece is not installed, skipped")
        return None
    splitter = TextTokenizer(256)
    pieces = splitter.pieces(train)

    def fit():
        model = tempfile.SpooledTemporaryFile()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(pieces), model_writer=model, model_type="bpe", vocab_size=n,
            hard_vocab_limit=False, character_coverage=1.0, byte_fallback=True,
            normalization_rule_name="identity", add_dummy_prefix=False, remove_extra_whitespaces=False,
            split_by_whitespace=False, allow_whitespace_only_pieces=True, max_sentencepiece_length=64,
            max_sentence_length=1 << 20, minloglevel=2, num_threads=1,
        )
        model.seek(0)
        return spm.SentencePieceProcessor(model_proto=model.read())

    t = time_call(fit, warmup=0, repeat=repeat)
    sp = t.result

    def count(s):
        return sum(len(ids) for ids in sp.encode(splitter.pieces(s)))

    return dict(tool="spm bpe", n_tokens=n, vocab=sp.get_piece_size(), fit_s=t.best_s, **scores(train, held, count),
                **speed(lambda s: sp.encode(splitter.pieces(s)), repeat))


BIG = ""  # the whole text ten times, set by main


def speed(encode, repeat: int) -> dict:
    t = time_call(encode, BIG, warmup=1, repeat=repeat)
    return {"enc_MB/s": len(BIG.encode()) / t.best_s / 1e6}


def scores(train: str, held: str, count) -> dict:
    return {"B/tok train": len(train.encode()) / count(train), "B/tok held": len(held.encode()) / count(held)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096, 16384])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--text", choices=("taylorswift", "fortunes"), default="taylorswift")
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
    global BIG
    BIG = text * 10
    print(f"{args.text}: {len(text.encode()):,} bytes; training on {len(train.encode()):,}, "
          f"holding back {len(held.encode()):,}; {len(TextTokenizer(256).pieces(train)):,} pieces, "
          f"{len(set(TextTokenizer(256).pieces(train))):,} distinct\n")
    TextTokenizer(300).fit(train[:5000])  # numba kernels compiled or loaded before any timing
    rows = []
    for n in args.sizes:
        first = len(rows)
        rows += ubpe_row(train, held, n, 50, args.repeat)
        rows += ubpe_row(train, held, n, 1, args.repeat)
        for row in (hf_row(train, held, n, args.repeat), spm_row(train, held, n, args.repeat)):
            if row is not None:
                rows.append(row)
        print_table(rows[first:], title=f"n_tokens={n}")
    print_table(rows, title="all sizes")
    write_json(result_path(args), rows, extra=dict(sizes=args.sizes, repeat=args.repeat, pattern=PATTERN,
                                                   ubpe=ubpe.__version__))


if __name__ == "__main__":
    main()
