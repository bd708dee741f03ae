"""The peer: the PyPI package `ubpe` 0.3.0 (Scurrra/ubpe), run in its own interpreter.

Its import name is also ``ubpe``, and it needs Python >= 3.12, so it lives in a separate venv
(``benchmarks/.peer-venv``, gitignored) built from a Python 3.12 found via pyenv or PATH, and is
driven through ``benchmarks/_peer_runner.py`` in a subprocess: the documents go over as
temporary .npy files, the results come back as JSON on stdout.

    ensure_peer() -> path of the peer venv's python, or None (reason printed)
    run_peer(docs, alphabet_size, n_tokens, n_candidates, timeout, ...) -> dict | None
    prefix_docs(docs, n_values) -> the documents cut to their first n_values values
    peer_selfcheck(timeout) -> dict | None (C++ vs pure-Python backend on a text prefix)

What the peer is (read from its installed sources): ``ubpe.UBPEClassic`` (classic BPE) and
``ubpe.UBPE`` (its tf-idf "novel" variant), implemented twice: ``ubpe-cython`` (C++20 via
Cython, extra ``[cython]``; the one ``import ubpe`` prefers) and ``ubpe-native`` (pure Python,
extra ``[native]``). We use ``ubpe_cython.UBPEClassic[int](alphabet={id: id}, n_tokens=N)`` and
``.fit(corpus, n_candidates=K, rearrange_tokens=..., quiet=True)``; ``n_tokens`` counts the
alphabet (as ours does) and ``n_candidates`` (default 50) is the same batched-merge parameter as
ours: the top-K pairs, accepted greedily when disjoint and not beaten by their border pairs.

Two traps, both measured (``bench_peer.py --selfcheck`` shows the first):
- with n_candidates=1 the C++ backend 0.3.0 does not pick the most frequent pair: its merges
  are the lexicographically smallest pairs ((9, 50), (9, 70), ... on the text), so it is not
  classic BPE and barely compresses; the pure-Python backend is right but far too slow for
  real sizes. Results carry ``first_merge_is_most_frequent`` and a ``warning``.
- ``rearrange_tokens=True`` (the peer's default) trims by idf weight, and with a single
  document every weight is 0, so it deletes the *earliest* (most frequent) merges first:
  1.77x instead of 3.14x values/token on the text at 1024 tokens. We therefore default to
  ``rearrange=False``: the vocabulary then overshoots ``n_tokens`` by 1 to n_candidates tokens
  (the peer loops while its last id < n_tokens); ``vocab_size`` reports the real size.

Large inputs: the peer's fit and encode grow faster than linearly. When the input has more
than ``probe_values`` values, a probe run on that prefix estimates the full run's time as
probe_time * (n / probe_n) ** 1.5; if that exceeds ``0.8 * timeout`` the peer runs on the
prefix predicted to take about half the timeout instead, and the result says so
(``prefix=True``, ``n_values`` < ``n_values_total``). Compare ratios only on that prefix:
``prefix_docs(docs, result["n_values"])`` gives exactly the documents the peer saw.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
VENV = HERE / ".peer-venv"
RUNNER = HERE / "_peer_runner.py"
PEER_REQUIREMENTS = ["ubpe[cython]==0.3.0", "ubpe-native==0.3.0", "numpy"]
BUG_NC1 = (
    "peer C++ backend (ubpe-cython 0.3.0) with n_candidates=1 merges the lexicographically "
    "smallest pairs, not the most frequent: not classic BPE"
)


def _say(msg: str) -> None:
    print(f"[peer] {msg}", file=sys.stderr, flush=True)


def _venv_python() -> Path:
    return VENV / "bin" / "python"


def _find_python312() -> str | None:
    candidates: list[str] = []
    try:
        prefix = subprocess.run(["pyenv", "prefix", "3.12"], capture_output=True, text=True, timeout=30)
        if prefix.returncode == 0:
            candidates += [str(Path(p) / "bin" / "python3.12") for p in prefix.stdout.split(":") if p.strip()]
    except (OSError, subprocess.TimeoutExpired):
        pass
    roots = [os.environ.get("PYENV_ROOT", ""), str(Path.home() / ".pyenv"), "/root/.pyenv"]
    for root in dict.fromkeys(r for r in roots if r):
        candidates += sorted(glob.glob(f"{root}/versions/3.12*/bin/python3.12"), reverse=True)
    if shutil.which("python3.12"):
        candidates.append(shutil.which("python3.12"))
    for c in dict.fromkeys(c.strip() for c in candidates):
        try:
            r = subprocess.run([c, "-c", "import sys; print(sys.version_info[:2] >= (3, 12))"],
                               capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if r.returncode == 0 and r.stdout.strip() == "True":
            return c
    return None


def _peer_works(py: Path) -> bool:
    if not py.exists():
        return False
    r = subprocess.run([str(py), "-I", "-c", "import ubpe_cython, ubpe_native, numpy"],
                       capture_output=True, timeout=120)
    return r.returncode == 0


def ensure_peer() -> Path | None:
    """The peer venv's python, creating the venv and installing the peer if needed."""
    py = _venv_python()
    if _peer_works(py):
        return py
    base = _find_python312()
    if base is None:
        _say("no Python 3.12 found (tried `pyenv prefix 3.12`, ~/.pyenv/versions/3.12*, python3.12 on PATH)")
        return None
    _say(f"creating {VENV} with {base} and installing {' '.join(PEER_REQUIREMENTS)}")
    steps = [[base, "-m", "venv", "--clear", str(VENV)],
             [str(py), "-m", "pip", "install", "--quiet", *PEER_REQUIREMENTS]]
    for cmd in steps:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            _say(f"timed out: {' '.join(cmd)}")
            return None
        if r.returncode != 0:
            _say(f"failed: {' '.join(cmd)}\n{r.stderr[-2000:]}")
            return None
    if not _peer_works(py):
        _say("peer installed but `import ubpe_cython, ubpe_native` fails")
        return None
    return py


def prefix_docs(docs: list[np.ndarray], n_values: int) -> list[np.ndarray]:
    """The first ``n_values`` values of the corpus, keeping the document boundaries."""
    out, left = [], int(n_values)
    for d in docs:
        if left <= 0:
            break
        out.append(d[:left])
        left -= len(out[-1])
    return out


def _as_ids(docs, alphabet_size):
    docs = [np.asarray(d).ravel() for d in docs]
    if alphabet_size is None:  # map the distinct values to ids 0..A-1, in value order
        allv = np.concatenate(docs)
        uniq = np.unique(allv)
        docs = [np.searchsorted(uniq, d) for d in docs]
        alphabet_size = len(uniq)
    docs = [d.astype(np.int64) for d in docs]
    lo = min(int(d.min()) for d in docs if len(d))
    hi = max(int(d.max()) for d in docs if len(d))
    if lo < 0 or hi >= alphabet_size:
        raise ValueError(f"ids must lie in 0..{alphabet_size - 1}, got {lo}..{hi}")
    return docs, alphabet_size


def _run_once(py, docs, alphabet_size, n_tokens, n_candidates, timeout, rearrange, backend):
    """One runner subprocess; returns (result dict or None, reason, wall seconds)."""
    with tempfile.TemporaryDirectory(prefix="ubpe-peer-") as tmp:
        values = np.concatenate(docs) if docs else np.zeros(0, np.int64)
        offsets = np.concatenate([[0], np.cumsum([len(d) for d in docs])]).astype(np.int64)
        vpath, opath = Path(tmp) / "values.npy", Path(tmp) / "offsets.npy"
        np.save(vpath, values)
        np.save(opath, offsets)
        cmd = [str(py), "-I", str(RUNNER), "run", "--values", str(vpath), "--offsets", str(opath),
               "--alphabet-size", str(alphabet_size), "--n-tokens", str(n_tokens),
               "--n-candidates", str(n_candidates), "--backend", backend]
        if rearrange:
            cmd.append("--rearrange")
        t0 = time.perf_counter()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, f"timed out after {timeout:.0f} s on {len(values):,} values", time.perf_counter() - t0
        wall = time.perf_counter() - t0
    if r.returncode != 0:
        return None, f"runner failed (exit {r.returncode}): {r.stderr.strip()[-1500:]}", wall
    try:
        out = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None, f"runner printed no JSON: {r.stdout[-500:]!r} {r.stderr[-500:]!r}", wall
    out["wall_s"] = wall
    return out, "", wall


def run_peer(
    docs: list[np.ndarray],
    alphabet_size: int | None,
    n_tokens: int,
    n_candidates: int,
    timeout: float,
    *,
    rearrange: bool = False,
    backend: str = "cython",
    max_values: int | None = None,
    probe_values: int = 200_000,
    exponent: float = 1.5,
) -> dict | None:
    """Train, encode and decode with the peer's classic tokenizer; None if it can't.

    ``docs`` hold ids in ``0..alphabet_size-1`` (``alphabet_size=None``: map the distinct
    values to ids first). ``timeout`` bounds each runner subprocess (seconds). The result has
    fit_s / encode_s / decode_s (and prep_s, the list conversion), tokens (encoded length,
    all documents), values_per_token, vocab_size, roundtrip, max_rss_bytes, wall_s, plus
    n_values / n_values_total / prefix / note saying what part of the input the peer saw.
    """
    py = ensure_peer()
    if py is None:
        print("peer: not available (see the message above)")
        return None
    docs, alphabet_size = _as_ids(docs, alphabet_size)
    if n_tokens <= alphabet_size:
        print(f"peer: skipped: n_tokens {n_tokens} leaves no room for merges over an alphabet of {alphabet_size}")
        return None
    total = sum(len(d) for d in docs)
    limit = min(total, max_values) if max_values else total
    args = (alphabet_size, n_tokens, n_candidates)

    def finish(res, used_probe_note=""):
        res["n_values_total"] = total
        res["prefix"] = res["n_values"] < total
        notes = []
        if res["prefix"]:
            notes.append(f"peer ran on the first {res['n_values']:,} of {total:,} values{used_probe_note}")
        if backend == "cython" and n_candidates == 1:
            res["warning"] = BUG_NC1
        if res.get("first_merge_is_most_frequent") is False:
            notes.append("first merge is not a most frequent pair")
        if not res.get("roundtrip", False):
            notes.append("DECODE DID NOT ROUND-TRIP")
        res["note"] = "; ".join(notes)
        return res

    probe = None
    if limit > probe_values:
        probe, why, wall = _run_once(py, prefix_docs(docs, probe_values), *args, timeout, rearrange, backend)
        if probe is None:
            print(f"peer: probe on {probe_values:,} values failed: {why}")
            return None
        estimate = wall * (limit / probe_values) ** exponent
        if estimate > 0.8 * timeout:
            target = int(probe_values * (0.5 * timeout / wall) ** (1 / exponent))
            if target < 1.2 * probe_values:
                return finish(probe, f" (the full run was estimated at {estimate:.0f} s > timeout {timeout:.0f} s)")
            limit = min(limit, target)
            reason = f" (the full run was estimated at {estimate:.0f} s > timeout {timeout:.0f} s)"
        else:
            reason = ""
    else:
        reason = ""

    res, why, _ = _run_once(py, prefix_docs(docs, limit), *args, timeout, rearrange, backend)
    if res is None:
        if probe is not None:
            print(f"peer: {why}; falling back to the {probe_values:,}-value probe")
            return finish(probe, f" ({why})")
        print(f"peer: {why}")
        return None
    return finish(res, reason)


def peer_selfcheck(timeout: float = 300, n_bytes: int = 20000, n_tokens: int = 300,
                   n_candidates=(1, 2, 50)) -> dict | None:
    """Compare the peer's C++ and pure-Python backends (merges, encoded length) on a text prefix."""
    py = ensure_peer()
    if py is None:
        return None
    from _data import _file

    cmd = [str(py), "-I", str(RUNNER), "selfcheck", "--text", str(_file("text", "taylorswift.txt")),
           "--n-bytes", str(n_bytes), "--n-tokens", str(n_tokens),
           "--n-candidates", *map(str, n_candidates)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"peer selfcheck: timed out after {timeout} s")
        return None
    if r.returncode != 0:
        print(f"peer selfcheck failed: {r.stderr[-1500:]}")
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])
