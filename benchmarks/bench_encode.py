"""Encoders beyond replay (issue 7): tokens, static-coded bytes and speed of replay, optimal and
bits on every signal and text of the shared data, and top-n against the ``ubpe`` 0.3.0 peer.

    python benchmarks/bench_encode.py [--sizes 1024 4096 16384] [--quick] [--no-peer]

For each data set and vocabulary size: a tokenizer is fitted on the data set's ids (signals:
first differences, the common predictor; text: its UTF-8 bytes; the neural recordings: the first
24 files, concatenated), then the same ids are encoded by

- replay: the merges in priority order (``Model.encode``);
- optimal: ``segment.fewest_tokens``;
- bits: ``segment.fewest_bits`` priced by replay's own token counts (one DP);
- bits x3: bits re-priced by its own counts twice more (Viterbi re-estimation), the best kept.

"static" is the size of the token stream coded by ubpe's static coder (``entropy.encode_stream``
with the rANS coder: frequency table plus payload), the part of a container the method changes.
Speeds are values per second of one call (best of ``--repeat``), the trie built beforehand.
top-n: the peer's tf-idf ``UBPE`` is fitted on a prefix of the ECG's first differences (as ids,
in windows of 1000 values, one document each) with the same vocabulary size, and its
``encode(prefix, top_n=k)`` is timed in its own interpreter (benchmarks/_peer_runner.py topn);
ours is ``segment.top_n`` with our fit of the same prefix and its idf weights, in this process.
The vocabularies are each tool's own fit. The peer's encode time grows with the square of the
length, so it runs on prefixes only (``--peer-prefixes``); the whole record is ours alone.
Writes benchmarks/results/encode.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402
from _peer import ensure_peer  # noqa: E402

import ubpe  # noqa: E402
from ubpe import encoder, entropy, segment  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def datasets(quick: bool) -> dict[str, np.ndarray]:
    def diff(x):
        x = np.asarray(x, dtype=np.int64)
        return np.diff(x, prepend=x[:1])

    out = {
        "ecg": diff(_data.ecg()),
        "seismic": diff(_data.seismic()),
        "float-q": diff(_data.float_quantized()),
        "text": np.frombuffer(_data.text(), dtype=np.uint8).astype(np.int64),
    }
    if not quick:
        out["neural24"] = np.concatenate([diff(x) for x in _data.neural(24)])
        out["audio"] = np.concatenate([diff(x if x.ndim == 1 else x[:, 0]) for x, _rate in _data.audio()])
    return out


def best_time(fn, repeat):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def static_bytes(tokens, vocab):
    fields = entropy.encode_stream(tokens.astype(np.int32), vocab, coders=("rans",))
    return sum(len(v) for v in fields.values() if isinstance(v, bytes))


def run_one(ids, n_tokens, repeat):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "fit stopped early" on small data sets: the row says the size
        tok = ubpe.Tokenizer(None, n_tokens).fit(ids)
    model = tok.model
    e = model.expansion()
    a_ids = tok.alphabet.to_ids(ids)
    vocab = e.n_tokens
    segment.build_trie(e)
    n = len(a_ids)
    t_replay, replay = best_time(lambda: model.encode(a_ids), repeat)
    t_opt, opt = best_time(lambda: segment.fewest_tokens(a_ids, e), repeat)
    counts = np.bincount(replay, minlength=vocab).astype(np.int64)
    t_bits, bits = best_time(lambda: segment.fewest_bits(a_ids, e, counts), repeat)
    best3 = current = bits
    for _ in range(2):
        current = segment.fewest_bits(a_ids, e, np.bincount(current, minlength=vocab).astype(np.int64))
        if static_bytes(current, vocab) < static_bytes(best3, vocab):
            best3 = current
    for t in (opt, bits, best3):
        assert np.array_equal(encoder.decode(t, e), a_ids), "segmentation does not decode"
    row = dict(vocab=vocab, n_values=n,
               tokens=dict(replay=len(replay), optimal=len(opt), bits=len(bits), bits3=len(best3)),
               static=dict(replay=static_bytes(replay, vocab), optimal=static_bytes(opt, vocab),
                           bits=static_bytes(bits, vocab), bits3=static_bytes(best3, vocab)),
               mvps=dict(replay=n / t_replay / 1e6, optimal=n / t_opt / 1e6, bits=n / t_bits / 1e6))
    return tok, row


def _limit_memory():
    # the peer's fit can take all memory (bad_alloc above 8 GB on the whole ECG): cap it
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))


def peer_topn(ids, alphabet_size, n_tokens, timeout):
    py = ensure_peer()
    if py is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ids.npy"
        np.save(path, ids.astype(np.int64))
        cmd = [str(py), str(Path(__file__).resolve().parent / "_peer_runner.py"), "topn", "--values", str(path),
               "--alphabet-size", str(alphabet_size), "--n-tokens", str(n_tokens), "--top-n", "1", "5"]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True,
                                 preexec_fn=_limit_memory)
        except (subprocess.SubprocessError, OSError) as exc:
            print(f"peer: top-n run failed or timed out ({exc.__class__.__name__}); skipped")
            return None
    return json.loads(res.stdout)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096, 16384])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="ECG, seismic, float-q and text only")
    p.add_argument("--no-peer", action="store_true")
    p.add_argument("--peer-tokens", type=int, default=1024)
    p.add_argument("--peer-timeout", type=float, default=600)
    p.add_argument("--peer-prefixes", type=int, nargs="*", default=[5000, 20000],
                   help="ECG prefixes the peer encodes (its time grows with the square of the length)")
    args = p.parse_args(argv)

    rows = []
    lines = ["| data | vocab | tokens replay / optimal / bits | static bytes replay / optimal / bits / bits x3 "
             "| bits x3 vs replay | M values/s replay / optimal / bits |", "|---|---|---|---|---|---|"]
    for name, ids in datasets(args.quick).items():
        seen = set()
        for size in args.sizes:
            n_symbols = len(np.unique(ids))
            if size <= n_symbols:
                print(f"{name}: {size} tokens skipped: the alphabet alone has {n_symbols} symbols")
                continue
            tok, row = run_one(ids, size, args.repeat)
            if row["vocab"] in seen:  # the fit stopped early at the same vocabulary: same row
                continue
            seen.add(row["vocab"])
            row.update(data=name, n_tokens=size)
            rows.append(row)
            t, s, v = row["tokens"], row["static"], row["mvps"]
            gain = 100 * (1 - s["bits3"] / s["replay"])
            lines.append(f"| {name} | {row['vocab']} | {t['replay']} / {t['optimal']} / {t['bits']} | {s['replay']} / "
                         f"{s['optimal']} / {s['bits']} / {s['bits3']} | {gain:.2f}% | {v['replay']:.1f} / "
                         f"{v['optimal']:.1f} / {v['bits']:.1f} |")
            print(lines[-1], flush=True)
    gains = [1 - r["static"]["bits"] / r["static"]["replay"] for r in rows]
    gains3 = [1 - r["static"]["bits3"] / r["static"]["replay"] for r in rows]
    summary = dict(mean_gain_bits=float(np.mean(gains)), mean_gain_bits3=float(np.mean(gains3)),
                   bits_never_larger=bool(all(r["static"]["bits3"] <= r["static"]["replay"] for r in rows)),
                   min_mvps_optimal=min(r["mvps"]["optimal"] for r in rows),
                   min_mvps_bits=min(r["mvps"]["bits"] for r in rows))
    lines.append("")
    lines.append(f"bits vs replay, static bytes, mean over rows: {100 * summary['mean_gain_bits']:.2f}% smaller (one DP), "
                 f"{100 * summary['mean_gain_bits3']:.2f}% (x3); bits x3 never larger: {summary['bits_never_larger']}; "
                 f"slowest optimal {summary['min_mvps_optimal']:.1f} M/s, bits {summary['min_mvps_bits']:.1f} M/s")

    # top-n on the ECG's first differences (as ids) against the peer, on prefixes: the peer's
    # encode grows quadratically (it copies every candidate's token list) and its fit of the whole
    # record as one document ran out of memory (> 8 GB), so the whole record is ours alone
    ecg = np.asarray(_data.ecg(), dtype=np.int64)
    values, ecg_ids = np.unique(np.diff(ecg, prepend=ecg[:1]), return_inverse=True)
    topn = []
    lines.append("")
    lines.append(f"top-n on the ECG's first differences as ids ({len(values)} symbols), {args.peer_tokens} tokens, "
                 "each tool fitted on the same prefix:")
    lines.append("")
    lines.append("| values | top_n | ubpe ms | peer s | ubpe faster |")
    lines.append("|---|---|---|---|---|")
    for n in args.peer_prefixes + [len(ecg_ids)]:
        ids = ecg_ids[:n]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tok = ubpe.Tokenizer(len(values), args.peer_tokens).fit(ids)
        e = tok.model.expansion()
        w = np.concatenate([np.zeros(e.alphabet_size), tok.weights])
        a_ids = tok.alphabet.to_ids(ids)
        peer = None
        if not args.no_peer and n < len(ecg_ids):
            peer = peer_topn(ids, len(values), args.peer_tokens, args.peer_timeout)
        for k in (1, 5):
            t, res = best_time(lambda: segment.top_n(a_ids, e, w, k), args.repeat)
            row = dict(n_values=n, top_n=k, ubpe_s=t, ubpe_tokens=len(res[0][0]))
            theirs = None
            if peer:
                theirs = next(r["encode_s"] for r in peer["rows"] if r["top_n"] == k)
                row.update(peer_s=theirs, peer_tokens=next(r["best_tokens"] for r in peer["rows"] if r["top_n"] == k),
                           peer_backend=peer["backend"])
            topn.append(row)
            lines.append(f"| {n} | {k} | {t * 1e3:.1f} | {'-' if theirs is None else f'{theirs:.2f}'} | "
                         f"{'-' if theirs is None else f'{theirs / t:.0f}x'} |")
            print(lines[-1], flush=True)
    RESULTS.mkdir(exist_ok=True)
    out = dict(command="python benchmarks/bench_encode.py " + " ".join(argv if argv is not None else sys.argv[1:]),
               rows=rows, summary=summary, topn=topn)
    (RESULTS / "encode.json").write_text(json.dumps(out, indent=1))
    (RESULTS / "encode.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
