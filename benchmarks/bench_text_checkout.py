"""TextTokenizer ``encode`` (short, medium and long strings), ``encode_batch`` (1 and 2 threads),
``decode`` and ``decode_batch``: this checkout against another (e.g. main), each run in its own
subprocess, the two alternated round by round (the order swapped every round).

    UBPE_DATA=/work/shared/data nice -n 5 python benchmarks/bench_text_checkout.py /work/wt/base
        [--rounds 3] [--repeat 5] [--json OUT.json]

Tokenizer: ``TextTokenizer(4096)`` trained on taylorswift (GPT-4 pattern) once, in this
process, saved to a temporary file that both checkouts load. Inputs: the first 26 and 1 000
characters of taylorswift (one ``encode`` call timed over a loop of 20 000 / 2 000 calls), the
text 10 times over (1.86 MB, one call), and the text 20 times over cut into 1 000-character
documents (3 716) for the batches; ``decode`` of the long text's ids. Each child takes the least
of ``--repeat`` timings per operation, CPU time (``time.process_time``) and wall time; the table
gives, per operation, the least over the rounds of each checkout and the ratio this / other of
every round (CPU time; wall time for 2 threads). The ids of both checkouts must be equal (a
digest of every output is compared).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

from _checkout import child_result

HERE = Path(__file__).resolve().parent
OPS = ("encode 26 chars", "encode 1000 chars", "encode 1.86 MB", "encode_batch 1 thread", "encode_batch 2 threads",
       "decode 1.86 MB", "decode_batch 1 thread")


def _timed(fn, calls: int, repeat: int) -> tuple[float, float]:
    """Least (CPU, wall) seconds per call of ``fn()`` over ``repeat`` loops of ``calls`` calls."""
    cpu = wall = float("inf")
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(calls):
            fn()
        cpu = min(cpu, (time.process_time() - c0) / calls)
        wall = min(wall, (time.perf_counter() - w0) / calls)
    return cpu, wall


def child(model: str, repeat: int) -> None:
    import ubpe
    from ubpe.text import TextTokenizer

    sys.path.insert(0, str(HERE))
    import _data

    tok = TextTokenizer.load(model)
    text = _data.text().decode("utf-8")
    big = text * 10
    many = text * 20
    docs = [many[i:i + 1000] for i in range(0, len(many), 1000)]
    digest = hashlib.sha256()
    out = {}
    for name, s, calls in (("encode 26 chars", text[:26], 20_000), ("encode 1000 chars", text[:1000], 2_000),
                           ("encode 1.86 MB", big, 1)):
        digest.update(tok.encode(s).tobytes())
        tok.encode(s)  # warm: kernels, piece cache
        out[name] = _timed(lambda s=s: tok.encode(s), calls, repeat)
    for threads in (1, 2):
        batch = tok.encode_batch(docs, num_threads=threads, arrays=True)
        digest.update(batch.ids.tobytes())
        out[f"encode_batch {threads} thread{'s' if threads > 1 else ''}"] = _timed(
            lambda t=threads: tok.encode_batch(docs, num_threads=t), 1, repeat)
    ids = tok.encode(big)
    assert tok.decode(ids) == big
    out["decode 1.86 MB"] = _timed(lambda: tok.decode(ids), 1, repeat)
    assert tok.decode_batch(batch, num_threads=1) == docs
    out["decode_batch 1 thread"] = _timed(lambda: tok.decode_batch(batch, num_threads=1), 1, repeat)
    print(json.dumps({"file": ubpe.__file__, "digest": digest.hexdigest(), "times": out}))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("other", help="the other checkout (its root: the folder holding ubpe/)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--child", metavar="MODEL", help=argparse.SUPPRESS)
    sys.path.insert(0, str(HERE))
    from _measure import add_json_arg, print_table, result_path, write_json

    add_json_arg(ap, None)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.repeat)
        return
    import _data

    from ubpe.text import TextTokenizer

    this = str(HERE.parent)
    other = str(Path(args.other).resolve())
    trees = {"this": this, "other": other}
    with tempfile.TemporaryDirectory() as tmp:
        model = str(Path(tmp) / "taylorswift-4096.ubpe")
        TextTokenizer(4096).fit(_data.text().decode("utf-8")).save(model)
        runs: dict[str, list[dict]] = {"this": [], "other": []}
        for r in range(args.rounds):
            for name in (("this", "other") if r % 2 == 0 else ("other", "this")):
                res = child_result(sys.executable, str(HERE / "bench_text_checkout.py"), trees[name],
                                   [trees[name], "--child", model, "--repeat", str(args.repeat)], cwd=trees[name])
                runs[name].append(res)
                print(f"round {r + 1} {name}: " + ", ".join(f"{k} {v[0] * 1e6:.1f} us" for k, v in res["times"].items()),
                      flush=True)
    digests = {res["digest"] for name in runs for res in runs[name]}
    if len(digests) != 1:
        raise SystemExit(f"the checkouts' ids differ: {digests}")
    rows = []
    for op in OPS:
        col = 1 if "2 threads" in op else 0  # wall time for two threads, else CPU time
        best = {name: min(res["times"][op][col] for res in runs[name]) for name in runs}
        ratios = [a["times"][op][col] / b["times"][op][col] for a, b in zip(runs["this"], runs["other"])]
        rows.append({"operation": op, "time": "wall" if col else "cpu", "this_us": round(best["this"] * 1e6, 2),
                     "other_us": round(best["other"] * 1e6, 2),
                     "this/other per round": " ".join(f"{x:.3f}" for x in ratios)})
    print_table(rows, title=f"this checkout ({this}) against {other}: least time per call, microseconds")
    write_json(result_path(args), rows, extra={"other": other, "rounds": args.rounds, "repeat": args.repeat})


if __name__ == "__main__":
    main()
