"""Check that ``TextTokenizer.count_files`` counts exactly the pieces of the ``regex`` module's
``findall`` with the GPT-4 pattern, on the corpus of bench_text_corpus.py (1.49 GB; each shard
one text). Prints both tallies and whether the counts are equal; exits 1 if they are not.

    python benchmarks/check_text_counts.py [--corpus DIR]

It holds the whole ``collections.Counter`` and one shard's text in memory (about 3 GB).
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_text_corpus  # noqa: E402

import regex  # noqa: E402

from ubpe.text import PATTERNS, TextTokenizer  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=bench_text_corpus.DEFAULT_CORPUS)
    args = ap.parse_args(argv)
    paths = [str(p) for p in bench_text_corpus.build_corpus(args.corpus)]
    c0 = time.process_time()
    counts = TextTokenizer(32768).count_files(paths, num_threads=1)
    c1 = time.process_time()
    ours = counts.to_dict()
    print(f"ubpe:  {len(ours):,} distinct pieces, {counts.total:,} in all, threshold {counts.threshold} "
          f"({c1 - c0:.1f} s CPU)", flush=True)
    split = regex.compile(PATTERNS["gpt4"])
    theirs = collections.Counter()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            theirs.update(split.findall(f.read()))
    print(f"regex: {len(theirs):,} distinct pieces, {sum(theirs.values()):,} in all "
          f"({time.process_time() - c1:.1f} s CPU)", flush=True)
    equal = ours == dict(theirs)
    print("equal" if equal else "DIFFERENT")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
