"""Runs the PyPI package `ubpe` 0.3.0 (the peer) on given data; executed by the peer's own
Python 3.12 venv (benchmarks/.peer-venv), never imported by our code. Prints one JSON
object on stdout. Called by benchmarks/_peer.py; by hand:

    benchmarks/.peer-venv/bin/python -I benchmarks/_peer_runner.py run \
        --values V.npy --offsets O.npy --alphabet-size 256 --n-tokens 1024 --n-candidates 50
    benchmarks/.peer-venv/bin/python -I benchmarks/_peer_runner.py selfcheck --text FILE

`run`: the documents are ``values[offsets[i]:offsets[i+1]]``, ids in 0..alphabet_size-1.
Trains the peer's classic tokenizer (``UBPEClassic[int]``; alphabet ``{i: i}``) on all
documents with ``fit(corpus, n_candidates=..., rearrange_tokens=..., quiet=True)``, then
encodes and decodes every document, checking the round trip. fit, encode and decode are timed
separately with perf_counter_ns; the conversion of the arrays to Python lists (the peer takes
lists) is timed apart as prep_s. Memory: the extra peak resident size of fit and of encode
(VmHWM reset before each), and the process's overall peak.

`selfcheck`: trains the C++ (ubpe_cython) and the pure-Python (ubpe_native) backends on a
text prefix and says whether their merges agree, for several n_candidates.
"""

import argparse
import json
import resource
import sys
import time


def _status_kib(key):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _rss():
    """Peak RSS so far. VmHWM, not ru_maxrss: on Linux ru_maxrss is inherited across
    fork+exec, so it would report the parent benchmark's size."""
    kib = _status_kib("VmHWM")
    if kib is None:
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib * 1024


def _reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _classes(backend):
    if backend == "cython":
        import ubpe_cython

        return ubpe_cython.UBPEClassic[int], "ubpe_cython " + ubpe_cython.__version__ + " (C++ via Cython)"
    if backend == "native":
        import ubpe_native

        return ubpe_native.UBPEClassic, "ubpe_native " + ubpe_native.__version__ + " (pure Python)"
    raise SystemExit(f"unknown backend {backend}")


def _top_pair_count(docs, alphabet_size):
    """Largest count of an adjacent pair (within documents) in the input, via numpy."""
    import numpy as np

    codes = [d[:-1].astype(np.int64) * alphabet_size + d[1:] for d in docs if len(d) > 1]
    if not codes:
        return 0, {}
    codes = np.concatenate(codes)
    uniq, counts = np.unique(codes, return_counts=True)
    return int(counts.max()), dict(zip(uniq.tolist(), counts.tolist()))


def cmd_run(a):
    import numpy as np

    values = np.load(a.values)
    offsets = np.load(a.offsets)
    arrays = [values[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]
    rss_loaded = _rss()

    t0 = time.perf_counter_ns()
    docs = [x.tolist() for x in arrays]
    prep_s = (time.perf_counter_ns() - t0) / 1e9

    cls, backend = _classes(a.backend)
    A = a.alphabet_size
    tok = cls(alphabet={i: i for i in range(A)}, n_tokens=a.n_tokens)
    _reset_peak()
    rss_before_fit = _rss()
    t0 = time.perf_counter_ns()
    tok.fit(docs, n_candidates=a.n_candidates, rearrange_tokens=a.rearrange, quiet=True)
    fit_s = (time.perf_counter_ns() - t0) / 1e9
    rss_after_fit = _rss()

    model = json.loads(tok.dumps())
    mapper = {int(k): tuple(v) for k, v in model["mapper"].items()}

    _reset_peak()
    rss_before_encode = _rss()
    t0 = time.perf_counter_ns()
    encoded = [tok.encode(d)[0][0] for d in docs]
    encode_s = (time.perf_counter_ns() - t0) / 1e9
    rss_after_encode = _rss()

    t0 = time.perf_counter_ns()
    decoded = [tok.decode(e) for e in encoded]
    decode_s = (time.perf_counter_ns() - t0) / 1e9
    roundtrip = all(list(x) == d for x, d in zip(decoded, docs))

    # Sanity check of the training: with rearrange_tokens=False the mapper keeps creation
    # order, and the first merge must be a most frequent pair of the input.
    top, counts = _top_pair_count(arrays, A)
    first_ok = None
    if not a.rearrange and mapper:
        left, right = mapper[min(mapper)]
        first_ok = counts.get(left * A + right, 0) == top

    n_values = int(len(values))
    n_tokens_out = int(sum(len(e) for e in encoded))
    out = dict(
        backend=backend,
        n_values=n_values,
        n_docs=len(docs),
        alphabet_size=A,
        n_tokens_requested=a.n_tokens,
        n_merges=len(mapper),
        vocab_size=A + len(mapper),
        n_candidates=a.n_candidates,
        rearrange=a.rearrange,
        prep_s=prep_s,
        fit_s=fit_s,
        encode_s=encode_s,
        decode_s=decode_s,
        tokens=n_tokens_out,
        values_per_token=n_values / max(1, n_tokens_out),
        roundtrip=roundtrip,
        first_merge_is_most_frequent=first_ok,
        max_rss_bytes=max(rss_loaded, rss_after_fit, rss_after_encode, _rss()),
        fit_rss_delta_bytes=rss_after_fit - rss_before_fit,
        encode_rss_delta_bytes=rss_after_encode - rss_before_encode,
        loaded_rss_bytes=rss_loaded,
    )
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


def cmd_selfcheck(a):
    import ubpe_cython
    import ubpe_native

    data = list(open(a.text, "rb").read()[: a.n_bytes])
    alphabet = {i: i for i in range(256)}
    rows = []
    for nc in a.n_candidates:
        merges = {}
        lengths = {}
        for name, cls in (("cython", ubpe_cython.UBPEClassic[int]), ("native", ubpe_native.UBPEClassic)):
            tok = cls(alphabet=alphabet, n_tokens=a.n_tokens)
            tok.fit([data], n_candidates=nc, rearrange_tokens=False, quiet=True)
            merges[name] = json.loads(tok.dumps())["mapper"]
            lengths[name] = len(tok.encode(data)[0][0])
        rows.append(
            dict(
                n_candidates=nc,
                same_merges=merges["cython"] == merges["native"],
                first_merges_cython=list(merges["cython"].values())[:3],
                first_merges_native=list(merges["native"].values())[:3],
                tokens_cython=lengths["cython"],
                tokens_native=lengths["native"],
            )
        )
    json.dump(dict(n_bytes=len(data), n_tokens=a.n_tokens, rows=rows), sys.stdout)
    sys.stdout.write("\n")


def cmd_topn(a):
    """Fit the peer's tf-idf ``UBPE`` on one document, then time ``encode(doc, top_n=k)``."""
    import numpy as np

    import ubpe_cython

    doc = np.load(a.values).tolist()
    tok = ubpe_cython.UBPE[int](alphabet={i: i for i in range(a.alphabet_size)}, n_tokens=a.n_tokens)
    t0 = time.perf_counter_ns()
    # one 108 000-value document makes the peer's fit run out of memory (measured: > 8 GB):
    # it is fitted on windows of ``--window`` values, each a document, as its idf expects
    docs = [doc[i : i + a.window] for i in range(0, len(doc), a.window)]
    tok.fit(docs, n_candidates=a.n_candidates, rearrange_tokens=False, quiet=True)
    fit_s = (time.perf_counter_ns() - t0) / 1e9
    print(f"peer: fitted in {fit_s:.1f} s", file=sys.stderr, flush=True)
    rows = []
    for k in a.top_n:
        t0 = time.perf_counter_ns()
        res = tok.encode(doc, top_n=k)
        encode_s = (time.perf_counter_ns() - t0) / 1e9
        rows.append(dict(top_n=k, encode_s=encode_s, n_candidates_out=len(res),
                         best_tokens=len(res[0][0]), best_score=float(res[0][1])))
    json.dump(dict(backend="ubpe_cython " + ubpe_cython.__version__, fit_s=fit_s, n_values=len(doc),
                   vocab_size=a.n_tokens, rows=rows), sys.stdout)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--values", required=True)
    r.add_argument("--offsets", required=True)
    r.add_argument("--alphabet-size", type=int, required=True)
    r.add_argument("--n-tokens", type=int, required=True)
    r.add_argument("--n-candidates", type=int, required=True)
    r.add_argument("--rearrange", action="store_true")
    r.add_argument("--backend", default="cython", choices=["cython", "native"])
    s = sub.add_parser("selfcheck")
    s.add_argument("--text", required=True)
    s.add_argument("--n-bytes", type=int, default=20000)
    s.add_argument("--n-tokens", type=int, default=300)
    s.add_argument("--n-candidates", type=int, nargs="+", default=[1, 2, 50])
    t = sub.add_parser("topn")
    t.add_argument("--values", required=True)
    t.add_argument("--alphabet-size", type=int, required=True)
    t.add_argument("--n-tokens", type=int, required=True)
    t.add_argument("--n-candidates", type=int, default=50)
    t.add_argument("--top-n", type=int, nargs="+", default=[1, 5])
    t.add_argument("--window", type=int, default=1000)
    a = p.parse_args()
    {"run": cmd_run, "selfcheck": cmd_selfcheck, "topn": cmd_topn}[a.cmd](a)


if __name__ == "__main__":
    main()
