"""Headline training benchmark: ubpe's training time, encoding and decoding throughput, tokens
produced and peak memory, next to the peer (PyPI `ubpe` 0.3.0, C++ backend) on the same data
and parameters, with a PASS/FAIL verdict for each target of the issue.

    python benchmarks/bench_train.py                    # everything, best of 3 (~35 min, most of it the peer)
    python benchmarks/bench_train.py --quick            # neural24 + text, 4096 tokens, one run each (~2.5 min)
    python benchmarks/bench_train.py --no-peer          # ubpe only (~5 min)
    python benchmarks/bench_train.py --repeat 1         # one run of each, both sides (13.5 min, busy 2-core machine)

Data (benchmarks/_data.py; every recording is one document, pairs never cross documents):
    neural24      the first 24 neural recordings (2.4 M int16 values), raw values
    neural24-d1   the same, first differences (x[0], x[1] - x[0], ...; per recording)
    neural120     all 120 recordings (11.8 M values), raw values
    neural120-d1  all 120, first differences
    text          taylorswift.txt as bytes (alphabet 0..255)
each for n_tokens 1024, 4096 and 16384 (alphabet included; sizes not above the alphabet are
skipped) and n_candidates 1 (classic BPE) and 50 (the default).

What is measured, per row (numba compilation excluded: every code path is warmed up on a small
slice first; compilation is reported on its own, see below):
    fit_s       Tokenizer(alphabet, n_tokens, n_candidates=nc).fit(docs): best wall time of
                --repeat runs; fit_med the median; fit_cpu the smallest process CPU time (the
                machine is shared: wall well above CPU means the run waited for a core)
    tokens      encoded length of all documents, v/tok = values per token
    enc_Mv/s    Tokenizer.encode_batch(docs) (merge replay), input values per second, best run
    dec_Mv/s    Tokenizer.decode of each document's tokens (public ids -> values of the data's
                dtype), output values per second, best run; checked to give the input back
    deck_Mv/s   the decoding kernel alone (ubpe.encoder.decode on priority-space ids of all
                documents into a preallocated array), for reference
    mem_B/v     extra peak resident memory of fit per input value, in a fresh child process
                (VmHWM reset just before the call; the data is loaded and numba warmed first)
Peer table (skipped with --no-peer): the peer trains, encodes and decodes in its own Python
3.12 process (benchmarks/_peer.py) limited to --peer-timeout seconds per run; it reports its own
fit, encode and decode times (its process start-up and data loading excluded, like ubpe's
compilation). Both sides are timed the same way: --repeat runs of each quantity, the best of
each reported (the peer's repeats are fresh processes on exactly the values of its first run).
Inputs too large for the timeout are cut to a prefix (a probe on the first 50 000 values
predicts the time) and peer_vals then reads used/total; ubpe is then timed again on exactly
that prefix, with the full data's alphabet like the peer (the same_* columns, always ubpe on
the values the peer saw). Ratios are only between like quantities:
    fit_x = peer fit / ubpe fit, enc_x = peer encode / ubpe encode_batch,
    dec_x = peer decode / ubpe decode (Tokenizer.decode of every document).
When the peer does not finish even the probe within the timeout, there is no fit_x: the row
gives total_x = (timeout - 2 s allowance for its start-up) / ubpe's fit + encode + decode of
that probe, a lower bound on the ratio of the two whole runs (marked ">").

Targets (issue text), judged per row and summarised at the end:
    fit<3s     4096 tokens from all 120 neural files in under 3 s (best of --repeat wall), with
               n_candidates 50 and also 1 (raw values and first differences)
    x100       training at least 100 times faster than the peer's C++ backend on the same data
               and parameters (fit_x). CAVEAT: the peer's n_candidates=1 C++ path is buggy
               (it merges the lexicographically smallest pairs, not the most frequent: not
               classic BPE); those rows are marked "*" and summarised apart.
    enc>=5M    replay encoding at least 5 M values/s
    dec>=100M  decoding at least 100 M values/s (public Tokenizer.decode)
    mem<40B    fit's peak memory under 40 bytes per input value
    compile    numba compilation reported cold (fresh NUMBA_CACHE_DIR, in a subprocess) and
               cached (first calls in a new process with that now warm cache); no target.

Timings are wall clock: best-of-N (N = --repeat, default 3 or 1 with --quick, for ubpe and
the peer alike; no untimed call before them on either side, numba compiled beforehand) is
reported because it is the least disturbed by other processes, and the verdicts use it.

Result file: benchmarks/results/train.json (train-quick.json with --quick; --json PATH to
change, --no-json for none), with the run's provenance (date, machine, versions, commit).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _data  # noqa: E402
import _measure  # noqa: E402
from _measure import add_json_arg, peak_memory, print_table, result_path, time_call, write_json  # noqa: E402

import ubpe  # noqa: E402
from ubpe import encoder  # noqa: E402

TOKENS = [1024, 4096, 16384]
CANDIDATES = [1, 50]
DATASETS = ["neural24", "neural24-d1", "neural120", "neural120-d1", "text"]
QUICK_DATASETS = ["neural24", "text"]
QUICK_TOKENS = [4096]
PROBE_VALUES = 50_000
PEER_STARTUP_ALLOWANCE_S = 2.0

TARGET_FIT_S = 3.0
TARGET_PEER_X = 100.0
TARGET_ENC = 5e6
TARGET_DEC = 100e6
TARGET_MEM = 40.0


# ---------------------------------------------------------------- data


def first_differences(x: np.ndarray) -> np.ndarray:
    """x[0], x[1] - x[0], x[2] - x[1], ... (int16 when it fits, else int32)."""
    d = np.diff(x.astype(np.int32), prepend=np.int32(0))
    info = np.iinfo(np.int16)
    return d.astype(np.int16) if d.min() >= info.min and d.max() <= info.max else d


def load_dataset(name: str) -> tuple[list[np.ndarray], int | None]:
    """(documents, alphabet argument for Tokenizer and the peer: 256 or None = distinct values)."""
    if name == "text":
        return [_data.text_ids()], 256
    base, _, variant = name.partition("-")
    n_files = {"neural24": 24, "neural120": None}[base]
    docs = _data.neural(n_files)
    if variant == "d1":
        docs = [first_differences(d) for d in docs]
    elif variant:
        raise KeyError(name)
    return docs, None


def alphabet_of(docs: list[np.ndarray], alphabet: int | None):
    """The alphabet ubpe and the peer use for these documents (the full data's, also for a prefix)."""
    return alphabet if alphabet is not None else ubpe.Alphabet.from_data(*docs)


def alphabet_size(alpha) -> int:
    return alpha if isinstance(alpha, int) else len(alpha)


# ---------------------------------------------------------------- ubpe


def fit(docs, alpha, n_tokens: int, nc: int) -> ubpe.Tokenizer:
    """Train quietly (a too-small input stops early with a warning; the row shows the vocab)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return ubpe.Tokenizer(alpha, n_tokens, n_candidates=nc).fit(docs)


def decode_all(tok: ubpe.Tokenizer, encoded: list[np.ndarray]) -> list[np.ndarray]:
    return [tok.decode(e) for e in encoded]


def warm_up(docs, alpha, nc: int) -> None:
    """Compile (or load from numba's cache) every kernel the timed calls use, on a small slice."""
    small = [d[:2000] for d in docs[:3]]
    a = alphabet_size(alpha)
    tok = fit(small, alpha, a + 64, nc)
    enc = tok.encode_batch(small)
    decode_all(tok, enc)
    tok.encode(small[0])
    kernel_decode_setup(tok, enc)[0]()


def kernel_decode_setup(tok: ubpe.Tokenizer, encoded: list[np.ndarray]):
    """(zero-argument call of the bare decoding kernel over all documents, values it decodes)."""
    a = len(tok.alphabet)
    priority = np.argsort(tok.token_ids).astype(np.int32)  # public id -> priority-space id
    toks = priority[np.concatenate(encoded)] if encoded else np.zeros(0, np.int32)
    expansion = encoder.build_expansion(tok.merges, a)
    n = encoder.expanded_length(toks, expansion)
    out = np.empty(n, np.int32)
    return (lambda: encoder.decode(toks, expansion, out=out)), n


def measure_ubpe(docs, alpha, n_tokens: int, nc: int, repeat: int) -> dict:
    n = sum(len(d) for d in docs)
    t_fit = time_call(fit, docs, alpha, n_tokens, nc, warmup=0, repeat=repeat)
    tok = t_fit.result
    # no untimed call before the timed ones (the peer gets none either); numba is warm already
    t_enc = time_call(tok.encode_batch, docs, warmup=0, repeat=repeat)
    encoded = t_enc.result
    t_dec = time_call(decode_all, tok, encoded, warmup=0, repeat=repeat)
    for x, y in zip(docs, t_dec.result):
        if not np.array_equal(x, y):
            raise AssertionError("ubpe decode did not give the input back")
    call, n_out = kernel_decode_setup(tok, encoded)
    t_deck = time_call(call, warmup=1, repeat=repeat)
    tokens = int(sum(len(e) for e in encoded))
    return dict(
        n_values=n,
        vocab=tok.vocab_size,
        fit_s=t_fit.best_s,
        fit_median_s=t_fit.median_s,
        fit_cpu_s=t_fit.cpu_best_s,
        fit_runs_s=t_fit.runs_s,
        encode_s=t_enc.best_s,
        decode_s=t_dec.best_s,
        decode_kernel_s=t_deck.best_s,
        tokens=tokens,
        values_per_token=n / max(1, tokens),
        encode_vps=n / t_enc.best_s,
        decode_vps=n / t_dec.best_s,
        decode_kernel_vps=n_out / t_deck.best_s,
    )


def _load_and_warm(name: str, nc: int):
    """Memory child's loader: the data, and numba warmed, so that both are in the baseline."""
    docs, alpha = load_dataset(name)
    alpha = alphabet_of(docs, alpha)
    warm_up(docs, alpha, nc)
    return docs, alpha


def _fit_in_child(loaded, n_tokens: int, nc: int) -> None:
    docs, alpha = loaded
    fit(docs, alpha, n_tokens, nc)


def fit_memory(name: str, n_tokens: int, nc: int, n_values: int) -> dict:
    return peak_memory(_fit_in_child, functools.partial(_load_and_warm, name, nc), n_tokens, nc,
                       n_values=n_values, loader=True, timeout=600)


# ---------------------------------------------------------------- compilation


_COMPILE_SCRIPT = r"""
import json, sys, time
import numpy as np
t0 = time.perf_counter(); import ubpe; t_import = time.perf_counter() - t0
rng = np.random.default_rng(0)
docs = [np.cumsum(rng.integers(-3, 4, 20000)).astype(np.int16) for _ in range(3)]
out = {"import ubpe": t_import}
def stage(name, fn):
    t = time.perf_counter(); r = fn(); out[name] = time.perf_counter() - t; return r
tok = stage("fit (n_candidates=50)", lambda: ubpe.Tokenizer(None, 600).fit(docs))
stage("fit (n_candidates=1)", lambda: ubpe.Tokenizer(None, 600, n_candidates=1).fit(docs))
enc = stage("encode_batch", lambda: tok.encode_batch(docs))
stage("encode", lambda: tok.encode(docs[0]))
stage("decode", lambda: tok.decode(enc[0]))
c = stage("compress", lambda: ubpe.compress(docs[0]))
stage("decompress", lambda: ubpe.decompress(c))
json.dump(out, sys.stdout)
"""


def compile_times() -> list[dict]:
    """First-call times of fit, encode, decode, compress and decompress in a new process (cold, cached)."""
    try:
        return _measure.compile_times(_COMPILE_SCRIPT, HERE.parent)
    except RuntimeError as e:
        print(e)
        return []


# ---------------------------------------------------------------- the peer


def measure_peer(docs, alpha_arg, alpha, n_tokens: int, nc: int, timeout: float, repeat: int) -> dict:
    """The peer on these documents (or a prefix) ``repeat`` times, and ubpe on what the peer saw.

    Both sides are timed the same way: ``repeat`` runs of each quantity (fit, encode, decode),
    the best (smallest) of each reported. The peer's first run picks the prefix (a probe may
    cut the input, see _peer.run_peer); its further runs use exactly that prefix, no probe.
    """
    from _peer import prefix_docs, run_peer

    def quiet_peer(*args, **kw):
        captured = io.StringIO()
        with contextlib.redirect_stdout(captured):
            res = run_peer(*args, **kw)
        said = captured.getvalue().strip()
        if said:
            print("   " + said.replace("\n", "\n   "), flush=True)
        return res, said

    res, said = quiet_peer(docs, alpha_arg, n_tokens, nc, timeout, probe_values=PROBE_VALUES)
    total = sum(len(d) for d in docs)
    out: dict = dict(peer=res, peer_said=said, peer_runs=[])
    if res is None:
        if "timed out" not in said:
            return out
        # the peer did not finish even the probe: a lower bound on its whole run (fit + encode +
        # decode), against ubpe's fit + encode + decode of the same probe, both sums of best runs
        used = min(total, PROBE_VALUES)
        u = measure_ubpe(prefix_docs(docs, used), alpha, n_tokens, nc, repeat)
        spent = u["fit_s"] + u["encode_s"] + u["decode_s"]
        out.update(peer_values=used, lower_bound=True, ubpe_prefix=u,
                   total_x=(timeout - PEER_STARTUP_ALLOWANCE_S) / spent)
        return out
    used = res["n_values"]
    runs = [res]
    for _ in range(repeat - 1):
        more, _said = quiet_peer(docs, alpha_arg, n_tokens, nc, timeout, max_values=used, probe_values=used)
        if more is None or more["n_values"] != used:
            print(f"   peer: a repeat run did not finish on {used:,} values: {len(runs)} run(s) kept")
            break
        runs.append(more)
    best = dict(res)
    for key in ("fit_s", "encode_s", "decode_s"):
        best[key] = min(r[key] for r in runs)
    best["roundtrip"] = all(r.get("roundtrip", False) for r in runs)
    out.update(peer=best, peer_runs=[{k: r.get(k) for k in ("fit_s", "encode_s", "decode_s", "wall_s")} for r in runs])
    if res["prefix"]:  # compare on exactly what the peer saw
        out["ubpe_prefix"] = measure_ubpe(prefix_docs(docs, used), alpha, n_tokens, nc, repeat)
    out.update(peer_values=used, lower_bound=False)
    return out


# ---------------------------------------------------------------- verdicts


def verdict(ok: bool | None, caveat: bool = False) -> str | None:
    if ok is None:
        return None
    return ("PASS" if ok else "FAIL") + ("*" if caveat else "")


def build_row(name, n_tokens, nc, u, mem, peer, n_values, a) -> dict:
    row = dict(data=name, values=n_values, A=a, n_tok=n_tokens, nc=nc, vocab=u["vocab"],
               fit_s=u["fit_s"], fit_med=u["fit_median_s"], fit_cpu=u["fit_cpu_s"],
               tokens=u["tokens"], **{"v/tok": u["values_per_token"],
                                      "enc_Mv/s": u["encode_vps"] / 1e6,
                                      "dec_Mv/s": u["decode_vps"] / 1e6,
                                      "deck_Mv/s": u["decode_kernel_vps"] / 1e6,
                                      "mem_B/v": mem.get("bytes_per_value") if mem else None})
    notes = []
    if u["vocab"] < n_tokens:
        notes.append(f"ubpe stopped early at {u['vocab']} tokens (min_count=2)")
    fit_x = None
    if peer is not None:
        res = peer["peer"]
        ref = peer.get("ubpe_prefix") or u
        if res is not None:
            used, total = res["n_values"], res["n_values_total"]
            row["peer_vals"] = f"{used:,}" if used == total else f"{used:,}/{total:,}"
            row["peer_runs"] = len(peer["peer_runs"])
            row["peer_vocab"] = res["vocab_size"]
            row["peer_tokens"] = res["tokens"]
            row["peer_fit_s"] = res["fit_s"]
            row["peer_enc_s"] = res["encode_s"]
            row["peer_dec_s"] = res["decode_s"]
            row["same_fit_s"] = ref["fit_s"]
            row["same_enc_s"] = ref["encode_s"]
            row["same_dec_s"] = ref["decode_s"]
            if used < total:
                notes.append("peer on a prefix; same_* = ubpe timed on that prefix")
            fit_x = res["fit_s"] / ref["fit_s"]
            row["fit_x"] = fit_x
            row["enc_x"] = res["encode_s"] / ref["encode_s"]
            row["dec_x"] = res["decode_s"] / ref["decode_s"]
            if not res.get("roundtrip", False):
                notes.append("PEER DID NOT ROUND-TRIP")
        elif peer.get("lower_bound"):
            ref = peer["ubpe_prefix"]
            row["peer_vals"] = f"{peer['peer_values']:,}/{n_values:,}"
            row["peer_runs"] = 0
            row["same_fit_s"] = ref["fit_s"]
            row["same_enc_s"] = ref["encode_s"]
            row["same_dec_s"] = ref["decode_s"]
            row["total_x"] = f">{peer['total_x']:,.0f}"
            notes.append("peer timed out on the probe: total_x = (timeout - 2 s) / ubpe fit+enc+dec "
                         "of the probe is a lower bound; no fit_x")
        else:
            notes.append("no peer result")
        if nc == 1:
            notes.append("peer nc=1 is not classic BPE (its bug)")
    fit_target = None
    if name.startswith("neural120") and n_tokens == 4096:
        fit_target = u["fit_s"] < TARGET_FIT_S
    row["fit<3s"] = verdict(fit_target)
    row["x100"] = verdict(None if fit_x is None else fit_x >= TARGET_PEER_X, caveat=(nc == 1))
    row["_total_x"] = peer.get("total_x") if peer else None
    row["enc>=5M"] = verdict(u["encode_vps"] >= TARGET_ENC)
    row["dec>=100M"] = verdict(u["decode_vps"] >= TARGET_DEC)
    row["mem<40B"] = verdict(None if not mem else mem["bytes_per_value"] < TARGET_MEM)
    row["note"] = "; ".join(notes)
    row["_fit_x"] = fit_x
    return row


def summarise(rows: list[dict], quick: bool, peer_on: bool) -> list[dict]:
    def worst(key, rows_, fn=min):
        vals = [(r[key], r) for r in rows_ if r.get(key) is not None]
        return fn(vals, key=lambda v: v[0]) if vals else (None, None)

    out = []
    fit_rows = [r for r in rows if r["fit<3s"] is not None]
    if fit_rows:
        for r in fit_rows:
            out.append(dict(target="fit 4096 tokens, all 120 neural files < 3 s",
                            scope=f"{r['data']} nc={r['nc']}",
                            measured=f"{r['fit_s']:.2f} s best (median {r['fit_med']:.2f}, cpu {r['fit_cpu']:.2f})",
                            result=r["fit<3s"]))
    else:
        out.append(dict(target="fit 4096 tokens, all 120 neural files < 3 s", scope="-",
                        measured="not run" + (" (--quick)" if quick else ""), result="n/a"))
    for nc, scope in ((50, "nc=50"), (1, "nc=1 (* peer not classic BPE)")):
        sel = [r for r in rows if r["nc"] == nc and r.get("_fit_x") is not None]
        if not peer_on or not sel:
            out.append(dict(target=">= 100x faster fit than peer C++", scope=scope,
                            measured="peer not run" if not peer_on else "no peer result", result="n/a"))
            continue
        v, r = worst("_fit_x", sel)
        out.append(dict(target=">= 100x faster fit than peer C++", scope=scope + f", {len(sel)} rows",
                        measured=f"min fit_x {v:,.0f} ({r['data']} {r['n_tok']} tok)",
                        result=verdict(all(x["_fit_x"] >= TARGET_PEER_X for x in sel), caveat=(nc == 1))))
    bounds = [r for r in rows if r.get("_total_x") is not None]
    if bounds:
        v, r = worst("_total_x", bounds)
        out.append(dict(target=">= 100x faster fit than peer C++", scope=f"{len(bounds)} rows where the peer timed out",
                        measured=f"total_x (fit+enc+dec) > {v:,.0f} ({r['data']} {r['n_tok']} tok nc={r['nc']}); "
                        "no fit ratio", result="n/a"))
    v, r = worst("enc_Mv/s", rows)
    out.append(dict(target="replay encoding >= 5 M values/s", scope=f"all {len(rows)} rows",
                    measured=f"min {v:.1f} M/s ({r['data']} {r['n_tok']} nc={r['nc']})", result=verdict(v >= 5)))
    v, r = worst("dec_Mv/s", rows)
    vk, rk = worst("deck_Mv/s", rows)
    out.append(dict(target="decoding >= 100 M values/s", scope=f"all {len(rows)} rows, Tokenizer.decode",
                    measured=f"min {v:.1f} M/s ({r['data']} {r['n_tok']} nc={r['nc']})", result=verdict(v >= 100)))
    out.append(dict(target="decoding >= 100 M values/s", scope="(reference: bare kernel)",
                    measured=f"min {vk:.1f} M/s ({rk['data']} {rk['n_tok']} nc={rk['nc']})", result=verdict(vk >= 100)))
    v, r = worst("mem_B/v", rows, max)
    if v is None:
        out.append(dict(target="fit peak memory < 40 B/value", scope="-", measured="not measured", result="n/a"))
    else:
        out.append(dict(target="fit peak memory < 40 B/value", scope=f"all {len(rows)} rows",
                        measured=f"max {v:.1f} B/value ({r['data']} {r['n_tok']} nc={r['nc']})",
                        result=verdict(v < TARGET_MEM)))
    return out


# ---------------------------------------------------------------- main


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="neural24 and text, 4096 tokens only")
    p.add_argument("--no-peer", action="store_true", help="skip the peer")
    p.add_argument("--peer-timeout", type=float, default=30, metavar="S",
                   help="seconds per peer subprocess (default 30)")
    p.add_argument("--repeat", type=int, default=None,
                   help="timed runs of every quantity, ubpe and the peer alike; the best is reported "
                        "(default 3, or 1 with --quick)")
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory children")
    p.add_argument("--no-compile", action="store_true", help="skip the compile-time subprocesses")
    add_json_arg(p, "train-quick.json" if "--quick" in (sys.argv if argv is None else argv) else "train.json")
    a = p.parse_args(argv)
    a.repeat = a.repeat if a.repeat is not None else (1 if a.quick else 3)
    if a.repeat < 1:
        p.error("--repeat must be at least 1")

    datasets = QUICK_DATASETS if a.quick else DATASETS
    tokens = QUICK_TOKENS if a.quick else TOKENS
    peer_on = not a.no_peer
    if peer_on:
        from _peer import ensure_peer

        if ensure_peer() is None:
            print("peer not available: continuing without it")
            peer_on = False

    compile_rows = [] if a.no_compile else compile_times()
    if compile_rows:
        print_table(compile_rows, title="== numba compilation: first calls in a new process, "
                    "cold = empty NUMBA_CACHE_DIR, cached = the same cache now warm (seconds)")

    rows = []
    for name in datasets:
        docs, alpha_arg = load_dataset(name)
        alpha = alphabet_of(docs, alpha_arg)
        a_size = alphabet_size(alpha)
        n_values = sum(len(d) for d in docs)
        print(f"== {name}: {len(docs)} documents, {n_values:,} values, alphabet {a_size}", flush=True)
        for nc in CANDIDATES:
            warm_up(docs, alpha, nc)
        for n_tokens in tokens:
            if n_tokens <= a_size:
                print(f"-- {name} n_tokens {n_tokens}: skipped (alphabet has {a_size} symbols)")
                continue
            for nc in CANDIDATES:
                print(f"-- {name} n_tokens {n_tokens} n_candidates {nc}", flush=True)
                u = measure_ubpe(docs, alpha, n_tokens, nc, a.repeat)
                mem = None
                if not a.no_memory:
                    try:
                        mem = fit_memory(name, n_tokens, nc, n_values)
                    except RuntimeError as exc:
                        print(f"   memory: {exc}")
                peer = measure_peer(docs, alpha_arg, alpha, n_tokens, nc, a.peer_timeout, a.repeat) if peer_on else None
                row = build_row(name, n_tokens, nc, u, mem, peer, n_values, a_size)
                print(f"   fit {u['fit_s']:.3f} s, encode {u['encode_vps'] / 1e6:.1f} M/s, "
                      f"decode {u['decode_vps'] / 1e6:.1f} M/s, fit_x {row.get('fit_x')}", flush=True)
                row["_raw"] = dict(ubpe=u, memory=mem, peer=peer)
                rows.append(row)

    print()
    cols = ["data", "values", "A", "n_tok", "nc", "vocab", "fit_s", "fit_med", "fit_cpu", "tokens", "v/tok",
            "enc_Mv/s", "dec_Mv/s", "deck_Mv/s", "mem_B/v"]
    cols += ["fit<3s", "x100", "enc>=5M", "dec>=100M", "mem<40B", "note"]
    print_table(rows, cols, title=f"== ubpe training: every time best of {a.repeat} wall-clock runs (s); "
                "fit_med the median, fit_cpu the best process CPU s; numba compilation excluded")
    if peer_on:
        from _peer import BUG_NC1

        pcols = ["data", "n_tok", "nc", "peer_vals", "peer_runs", "peer_vocab", "vocab", "peer_fit_s", "same_fit_s",
                 "fit_x", "peer_enc_s", "same_enc_s", "enc_x", "peer_dec_s", "same_dec_s", "dec_x", "total_x",
                 "x100", "note"]
        print_table(rows, pcols, title=f"== peer (ubpe 0.3.0 C++ backend, own process, timeout {a.peer_timeout:.0f} s "
                    f"per run) against ubpe on the same values: both best of {a.repeat} runs per quantity; "
                    "same_* = ubpe on exactly the values the peer saw (its prefix when peer_vals reads used/total); "
                    "X_x = peer X / ubpe X (fit: Tokenizer.fit; enc: encode all documents; dec: decode them)")
        print(f"* {BUG_NC1}; its nc=1 rows are compared only with that caveat.\n")
    if compile_rows:
        print_table(compile_rows, title="== numba compilation (repeated from the start), seconds")
    summary = summarise(rows, a.quick, peer_on)
    print_table(summary, title="== targets")
    write_json(result_path(a), dict(args=vars(a), repeat=a.repeat, statistic="min", compile=compile_rows,
                                    summary=summary,
                                    rows=[{k: v for k, v in r.items() if k != "_raw"} | {"raw": r["_raw"]}
                                          for r in rows]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
