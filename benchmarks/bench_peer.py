"""The peer `ubpe` 0.3.0 from PyPI (its C++ backend) on the shared real data: fit, encode and
decode times and the number of tokens it produces.

    python benchmarks/bench_peer.py                      # text, ecg, neural4; 1024/4096 tokens;
                                                         # n_candidates 1 and 50 (~8 min)
    python benchmarks/bench_peer.py --data text --tokens 1024 --candidates 50 --timeout 60
    python benchmarks/bench_peer.py --selfcheck          # C++ vs pure-Python backend check
    python benchmarks/bench_peer.py --json benchmarks/results/peer.json

The first run creates benchmarks/.peer-venv (Python 3.12 + `ubpe[cython]==0.3.0`), see
_peer.py. Data sets: text (bytes, alphabet 256), ecg (its 1 131 distinct values as the
alphabet, so 1024 tokens is skipped), neuralN (the first N recordings as N documents, their
distinct values as the alphabet; N from --neural-files, default 4 = 395 k values).
n_candidates 50 is the peer's default and the same batched-merge rule as ubpe's n_candidates;
1 would be classic BPE, but see the warning the table prints for it.

Each run is a subprocess limited to --timeout seconds; inputs the peer could not finish in
time are cut to a prefix, and the `values` column then reads "used/total" (compare ratios
against ubpe only on that prefix: _peer.prefix_docs(docs, n_values)). Columns: vocab (the
peer's real vocabulary size, alphabet included), fit_s / encode_s / decode_s (one run each),
tokens (encoded length), v/tok (values per token), peak_MB (peer process peak RSS),
bytes/val (extra peak memory of fit per input value).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _data  # noqa: E402
from _measure import add_json_arg, print_table, write_json  # noqa: E402
from _peer import BUG_NC1, ensure_peer, peer_selfcheck, run_peer  # noqa: E402


def load(name: str, neural_files: int):
    """(documents, alphabet_size or None for "distinct values") for a data set name."""
    if name == "text":
        return [_data.text_ids()], 256
    if name == "ecg":
        return [_data.ecg()], None
    if name == "neural":
        return _data.neural(neural_files), None
    raise KeyError(name)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", nargs="+", choices=["text", "ecg", "neural"], default=["text", "ecg", "neural"])
    p.add_argument("--neural-files", type=int, default=4, help="recordings in the neural subset (default 4)")
    p.add_argument("--tokens", nargs="+", type=int, default=[1024, 4096], help="vocabulary sizes")
    p.add_argument("--candidates", nargs="+", type=int, default=[1, 50], help="n_candidates values")
    p.add_argument("--timeout", type=float, default=300, help="seconds per peer subprocess (default 300)")
    p.add_argument("--rearrange", action="store_true",
                   help="let the peer trim/re-rank by idf (its default; hurts single documents)")
    p.add_argument("--selfcheck", action="store_true", help="only compare the peer's C++ and Python backends")
    add_json_arg(p)
    a = p.parse_args(argv)

    if ensure_peer() is None:
        print("peer not available: nothing to measure")
        return 1

    if a.selfcheck:
        res = peer_selfcheck()
        if res is None:
            return 1
        print_table(res["rows"], title=f"== peer selfcheck: C++ vs pure-Python backend, first "
                    f"{res['n_bytes']:,} bytes of the text, n_tokens {res['n_tokens']}, no rearrange")
        write_json(a.json, res)
        return 0

    rows = []
    for name in a.data:
        docs, alphabet = load(name, a.neural_files)
        label = f"neural{a.neural_files}" if name == "neural" else name
        for n_tokens in a.tokens:
            for nc in a.candidates:
                print(f"-- {label}: n_tokens {n_tokens}, n_candidates {nc} ...", flush=True)
                r = run_peer(docs, alphabet, n_tokens, nc, a.timeout, rearrange=a.rearrange)
                row = dict(data=label, n_tokens=n_tokens, n_cand=nc)
                if r is None:
                    row["note"] = "no result (see above)"
                else:
                    used, total = r["n_values"], r["n_values_total"]
                    row.update(
                        values=f"{used:,}" if used == total else f"{used:,}/{total:,}",
                        alphabet=r["alphabet_size"],
                        vocab=r["vocab_size"],
                        fit_s=r["fit_s"],
                        encode_s=r["encode_s"],
                        decode_s=r["decode_s"],
                        tokens=r["tokens"],
                        **{"v/tok": r["values_per_token"],
                           "peak_MB": r["max_rss_bytes"] / 2**20,
                           "bytes/val": r["fit_rss_delta_bytes"] / max(1, used)},
                        ok="yes" if r["roundtrip"] else "NO",
                        note="; ".join(x for x in (r.get("note"), "BUG: see warning" if r.get("warning") else "") if x),
                    )
                    r.update(data=label)
                row["_raw"] = r
                rows.append(row)
    cols = ["data", "n_tokens", "n_cand", "values", "alphabet", "vocab", "fit_s", "encode_s", "decode_s",
            "tokens", "v/tok", "peak_MB", "bytes/val", "ok", "note"]
    print()
    print_table(rows, cols, title=f"== peer ubpe 0.3.0, UBPEClassic, rearrange_tokens={a.rearrange}, "
                f"timeout {a.timeout:.0f} s per run")
    if any(r.get("_raw") and r["_raw"].get("warning") for r in rows):
        print(f"warning: {BUG_NC1} (run --selfcheck to see it against the pure-Python backend)")
    write_json(a.json, [r["_raw"] or dict(data=r["data"], n_tokens=r["n_tokens"], n_cand=r["n_cand"]) for r in rows])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
