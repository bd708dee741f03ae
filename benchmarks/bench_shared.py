"""Shared models (issue 12): windows compressed with one model fitted on *other* windows.

    python benchmarks/bench_shared.py [--windows 1000 10000 100000] [--n-tokens 256 1024]

For the ECG and the first 24 neural recordings (concatenated), each cut into windows of W
values: the first half of the windows trains a model (``fit --predictor auto``: the chain whose model
compresses held-out training windows smallest, recorded in the model); each window of the second half is then compressed with it, referenced by
digest (``compress(w, tokenizer=model, embed=False)``: no model in the container, values outside
its alphabet escaped), against the same window fitted alone (``compress(w)``, the default
level) and FLAC -8 on the window alone. Sizes are summed over the test windows; every round
trip is checked. Writes benchmarks/results/shared.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402
from _stdcodecs import flac_available, run_codecs  # noqa: E402

import ubpe  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def windows(x: np.ndarray, w: int, limit: int) -> list[np.ndarray]:
    n = min(len(x) // w, limit)
    return [x[i * w:(i + 1) * w] for i in range(n)]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--windows", type=int, nargs="+", default=[1000, 10000, 100000])
    p.add_argument("--n-tokens", type=int, nargs="+", default=[256, 1024])
    p.add_argument("--max-windows", type=int, default=40, help="windows per data set and size (half train, half test)")
    args = p.parse_args(argv)
    data = {"ecg": np.asarray(_data.ecg(), dtype=np.int16),
            "neural24": np.concatenate(_data.neural(24)).astype(np.int16)}
    use_flac = flac_available()
    if not use_flac:
        print("flac: not installed, its column is left empty")
    rows, lines = [], ["| data | window | windows tested | model tokens, chain | shared (referenced) | each fitted alone "
                       "| FLAC -8 each | shared vs alone | escapes |", "|---|---|---|---|---|---|---|---|---|"]
    for name, x in data.items():
        for w in args.windows:
            wins = windows(x, w, args.max_windows)
            if len(wins) < 2:
                print(f"{name}: windows of {w}: fewer than 2, skipped")
                continue
            half = len(wins) // 2
            train, test = wins[:half], wins[half:]
            alone = sum(len(ubpe.compress(t)) for t in test)
            flac = sum(next(r["bytes"] for r in run_codecs(t, ["flac-8"])) for t in test) if use_flac else None
            for n_tokens in args.n_tokens:
                steps = [np.diff(t.astype(np.int64), prepend=0) for t in train]  # as the delta stage: d[0] = x[0]
                size = max(n_tokens, len(np.unique(np.concatenate(steps))) + 1)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # fit stopped early on small training sets
                    tok = ubpe.Tokenizer(None, size).fit(train, predictor="auto")  # chosen held out, recorded
                shared = escapes = 0
                for t in test:
                    packed = ubpe.compress(t, tokenizer=tok, embed=False)  # applies the model's chain
                    assert np.array_equal(ubpe.decompress(packed, tokenizer=tok), t), "round trip"
                    shared += len(packed)
                    escapes += ubpe.describe(packed).escapes
                row = dict(data=name, window=w, n_test=len(test), n_tokens=tok.vocab_size, chain=tok.predictor, shared=shared,
                           alone=alone, flac=flac, escapes=escapes)
                rows.append(row)
                lines.append(f"| {name} | {w} | {len(test)} | {tok.vocab_size} {tok.predictor} | {shared} | {alone} | "
                             f"{'-' if flac is None else flac} | {100 * (shared / alone - 1):+.1f}% | {escapes} |")
                print(lines[-1], flush=True)
    RESULTS.mkdir(exist_ok=True)
    out = dict(command="python benchmarks/bench_shared.py " + " ".join(argv if argv is not None else sys.argv[1:]),
               rows=rows)
    (RESULTS / "shared.json").write_text(json.dumps(out, indent=1))
    (RESULTS / "shared.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
