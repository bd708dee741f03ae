"""``TextTokenizer.decode_batch`` on 1 and 2 threads, one checkout per process, with the calls
back to back or with other work between them (issue 28, target 3).

    python benchmarks/bench_text_decode_threads.py [CHECKOUT ...] [--between none sleep encode]
        [--rounds 9]

Each checkout (default: this one) runs in a child process (``sys.path`` led by it), checkouts
alternated per ``--between`` mode. Per round: one call on 1 thread, then one on 2, each after
the ``--between`` work: ``none`` (calls back to back, their data warm in the caches), ``sleep``
(30 ms idle), ``encode`` (an ``encode_batch`` of the same documents on 2 threads, as
bench_text_batch.py's rotation of contenders does). The best wall time of each is printed with
their ratio. Documents: bench_text_batch.py's ``taylorswift`` (3 712 texts, 3.7 MB).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child(root: str, between: str, rounds: int) -> None:
    sys.path.insert(0, root)
    sys.path.insert(1, str(HERE))
    import _data
    import bench_text_batch

    from ubpe.text import TextTokenizer

    docs = bench_text_batch.documents("taylorswift")
    tok = TextTokenizer(4096).fit(_data.text().decode("utf-8"))
    batch = tok.encode_batch(docs, num_threads=1, arrays=True)
    assert tok.decode_batch(batch, num_threads=2) == tok.decode_batch(batch, num_threads=1) == docs

    def other() -> None:
        if between == "sleep":
            time.sleep(0.03)
        elif between == "encode":
            tok.encode_batch(docs, num_threads=2)

    best = {1: float("inf"), 2: float("inf")}
    for _ in range(rounds):
        for threads in (1, 2):
            other()
            t0 = time.perf_counter()
            tok.decode_batch(batch, num_threads=threads)
            best[threads] = min(best[threads], time.perf_counter() - t0)
    print(f"{between:7s} {root}: 1 thread {best[1] * 1e3:.3f} ms, 2 threads {best[2] * 1e3:.3f} ms, "
          f"speedup {best[1] / best[2]:.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkouts", nargs="*", default=[str(HERE.parent)])
    ap.add_argument("--between", nargs="+", default=["none", "sleep", "encode"], choices=["none", "sleep", "encode"])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return
    for between in args.between:
        for root in args.checkouts:
            subprocess.run([sys.executable, __file__, "--child", str(Path(root).resolve()), between, str(args.rounds)],
                           check=True)


if __name__ == "__main__":
    main()
