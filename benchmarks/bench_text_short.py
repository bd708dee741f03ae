"""The cost of one ``TextTokenizer.encode`` call on a short string, against tiktoken's
``encode_ordinary`` on the same ranks (the same ids, checked), one thread.

    python benchmarks/bench_text_short.py [--repeat 5] [--lengths 0 1 4 ... 1000] [--json OUT]

Strings: the first ``n`` characters of taylorswift.txt for each of ``--lengths`` (default 0, 1,
4, 8, 12, 16, 20, 26, 50, 100, 1 000). Tokenizer: ``TextTokenizer(4096)`` trained on
taylorswift (GPT-4 pattern). Each round times a loop of calls of each contender (alternated, the
order swapped every round), CPU time (``time.process_time``) and wall time per call; the best
round is reported, with the ratio ubpe / tiktoken of every round. ``crossover``: the shortest
length from which ubpe's best CPU time is at most tiktoken's at every longer length measured.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402
from _measure import add_json_arg, print_table, result_path, write_json  # noqa: E402

import ubpe  # noqa: E402
from ubpe.text import TextTokenizer  # noqa: E402


def per_call(fn, text: str, calls: int) -> tuple[float, float]:
    """Wall and CPU seconds per call of ``fn(text)`` over ``calls`` calls."""
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(calls):
        fn(text)
    return (time.perf_counter() - w0) / calls, (time.process_time() - c0) / calls


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--lengths", type=int, nargs="+", default=[0, 1, 4, 8, 12, 16, 20, 26, 50, 100, 1000])
    add_json_arg(ap, "text-short.json")
    args = ap.parse_args(argv)
    import tiktoken

    corpus = _data.text().decode("utf-8")
    tok = TextTokenizer(4096).fit(corpus)
    enc = tiktoken.Encoding("ubpe", pat_str=tok.pattern, mergeable_ranks=tok.tiktoken_ranks(), special_tokens={})
    rows = []
    print("ubpe from", ubpe.__file__)
    for n_chars in args.lengths:
        calls = max(200, 20_000 * 26 // max(26, n_chars))
        text = corpus[:n_chars]
        assert tok.encode(text).tolist() == enc.encode_ordinary(text)
        contenders = {"ubpe encode": tok.encode, "tiktoken encode_ordinary": enc.encode_ordinary}
        for fn in contenders.values():
            per_call(fn, text, calls // 10)  # warm up (compiled kernels, caches)
        best = {name: (float("inf"), float("inf")) for name in contenders}
        ratios = []
        for r in range(args.repeat):
            order = list(contenders) if r % 2 == 0 else list(reversed(contenders))
            got = {name: per_call(contenders[name], text, calls) for name in order}
            ratios.append(got["ubpe encode"][1] / got["tiktoken encode_ordinary"][1])
            for name, (wall, cpu) in got.items():
                best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
        for name, (wall, cpu) in best.items():
            rows.append({"chars": n_chars, "contender": name, "wall_us": round(wall * 1e6, 2),
                         "cpu_us": round(cpu * 1e6, 2),
                         "cpu ubpe/tiktoken per round": f"{min(ratios):.2f}-{max(ratios):.2f}"
                         if name == "ubpe encode" else "-"})
    print_table(rows, title="one encode call, one thread (microseconds per call)")
    cpu = {(r["chars"], r["contender"]): r["cpu_us"] for r in rows}
    faster = [cpu[n, "ubpe encode"] <= cpu[n, "tiktoken encode_ordinary"] for n in args.lengths]
    first = next((i for i in range(len(faster)) if all(faster[i:])), None)
    crossover = None if first is None else args.lengths[first]
    print(f"crossover: ubpe at most tiktoken's CPU time from {crossover} characters on" if crossover is not None
          else "crossover: none among the lengths measured")
    write_json(result_path(args), rows, extra={"crossover_chars": crossover, "ubpe_file": ubpe.__file__})


if __name__ == "__main__":
    main()
