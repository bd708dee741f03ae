"""What a tokenizer file can cost (issue 27, item 6): a split pattern of its own, and many special
tokens. The figures behind the choices of docs/text.md, "Loading a file you did not make".

    python benchmarks/bench_text_untrusted.py [--repeat 5] [--json OUT]

1. Matching with a time limit, the alternative to refusing unknown patterns: the GPT-4 split of
   taylorswift.txt five times over with the ``regex`` module's ``findall``, without and with
   ``timeout=10`` (alternated, best of ``--repeat``, CPU time); then how long the pattern
   ``(a|aa)+$`` on ``"a" * 60 + "!"`` runs with ``timeout=1`` before the module stops it.
2. Special tokens: 16 384 random ones (20 characters of letters, digits and ``<|>``): the first
   ``encode`` (which builds the matcher) and encoding 11 KB of text with every special token
   disallowed, against a ``regex`` alternation of the same tokens (longest first, what ubpe used
   before) searching the same text.
"""

from __future__ import annotations

import argparse
import random
import string
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402
from _measure import add_json_arg, print_table, result_path, write_json  # noqa: E402

import regex  # noqa: E402

from ubpe.text import PATTERNS, TextTokenizer  # noqa: E402


def cpu(fn, *args, **kwargs) -> float:
    c0 = time.process_time()
    fn(*args, **kwargs)
    return time.process_time() - c0


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    add_json_arg(ap, "text-untrusted.json")
    args = ap.parse_args(argv)
    text = _data.text().decode("utf-8")
    rows = []
    # 1. a time limit on the split
    split = regex.compile(PATTERNS["gpt4"])
    big = text * 5
    plain, limited = [], []
    for _ in range(args.repeat):
        plain.append(cpu(split.findall, big))
        limited.append(cpu(split.findall, big, timeout=10.0))
    rows.append(dict(case="GPT-4 split of 0.93 MB, no time limit", seconds=min(plain)))
    rows.append(dict(case="the same with timeout=10", seconds=min(limited), ratio=min(limited) / min(plain)))
    evil = regex.compile(r"(a|aa)+$")
    t0 = time.perf_counter()
    try:
        evil.search("a" * 60 + "!", timeout=1.0)
        stopped = "finished"
    except TimeoutError:
        stopped = "TimeoutError"
    rows.append(dict(case=f"(a|aa)+$ on 'a'*60+'!', timeout=1: {stopped} after", seconds=time.perf_counter() - t0))
    # 2. many special tokens
    rng = random.Random(0)
    specials = sorted({"".join(rng.choices(string.ascii_letters + string.digits + "<|>", k=20)) for _ in range(16384)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        tok = TextTokenizer(300, special_tokens=specials).fit("hello world " * 100)
    sample = "hello world" * 1000
    rows.append(dict(case=f"{len(specials)} special tokens: first encode (builds the matcher)",
                     seconds=cpu(tok.encode, "hello world")))
    rows.append(dict(case="encode 11 KB, every special token refused (trie)",
                     seconds=min(cpu(tok.encode, sample) for _ in range(args.repeat))))
    alternation = regex.compile("|".join(regex.escape(s) for s in sorted(specials, key=lambda s: (-len(s), s))))
    rows.append(dict(case="the same search with a regex alternation of the tokens",
                     seconds=min(cpu(alternation.search, sample) for _ in range(min(args.repeat, 2)))))
    print_table(rows, title="tokenizer files as code")
    write_json(result_path(args), rows, extra=dict(repeat=args.repeat, n_special=len(specials)))


if __name__ == "__main__":
    main()
