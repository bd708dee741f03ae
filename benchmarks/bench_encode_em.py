"""Issue 7's "bits at least 3 % smaller" target, probed further: how much can ANY re-estimation
of token prices gain over replay with the same model? For a few rows of bench_encode.py it
prints the static-coded bytes (``entropy.encode_stream``, rans) of replay, of hard EM (fewest
bits re-priced by its own counts, 5 passes, the best kept) and of soft EM (forward-backward
expected counts over all segmentations, as a Unigram LM is trained, 8 iterations, each
followed by a fewest-bits pass under the rounded expected counts, the best kept).

    python benchmarks/bench_encode_em.py

A research probe (plain Python + one compiled forward-backward); the neural row uses the first
300 000 values of the 24 files joined to keep it short. Nothing in ubpe uses soft EM.
"""

import math
import sys
import warnings
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_encode as B  # noqa: E402

import ubpe  # noqa: E402
from ubpe import encoder, segment  # noqa: E402

ROWS = (("text", 4096), ("ecg", 1024), ("neural24", 1024), ("seismic", 1024))
NEG = -1e300


@njit
def _logadd(a, b):
    m = max(a, b)
    return m + math.log(math.exp(a - m) + math.exp(b - m))


@njit
def forward_backward(n, lengths, cost, match_tok, match_ptr, counts):
    """Add to ``counts`` each token's expected count over all segmentations of the n values,
    a segmentation weighted by exp(-sum of its tokens' ``cost``); the tokens matching at
    position i are ``match_tok[match_ptr[i]:match_ptr[i + 1]]``, of ``lengths`` values each."""
    fwd = np.full(n + 1, NEG)
    fwd[0] = 0.0
    for i in range(n):
        if fwd[i] == NEG:
            continue
        for j in range(match_ptr[i], match_ptr[i + 1]):
            t = match_tok[j]
            fwd[i + lengths[t]] = _logadd(fwd[i + lengths[t]], fwd[i] - cost[t])
    bwd = np.full(n + 1, NEG)
    bwd[n] = 0.0
    for i in range(n - 1, -1, -1):
        for j in range(match_ptr[i], match_ptr[i + 1]):
            t = match_tok[j]
            bwd[i] = _logadd(bwd[i], bwd[i + lengths[t]] - cost[t])
    for i in range(n):
        for j in range(match_ptr[i], match_ptr[i + 1]):
            t = match_tok[j]
            counts[t] += math.exp(fwd[i] - cost[t] + bwd[i + lengths[t]] - fwd[n])


def token_matches(ids, expansions):
    """(token ids, pointers): the tokens whose expansion starts at each position of ``ids``."""
    trie: dict = {}
    for t, seq in enumerate(expansions):
        node = trie
        for v in seq:
            node = node.setdefault(v, {})
        node[-1] = t
    toks, ptr, values = [], [0], ids.tolist()
    for i in range(len(values)):
        node, j = trie, i
        while j < len(values) and values[j] in node:
            node = node[values[j]]
            j += 1
            if -1 in node:
                toks.append(node[-1])
        ptr.append(len(toks))
    return np.array(toks, np.int64), np.array(ptr, np.int64)


def main() -> None:
    sets = B.datasets(False)
    for name, size in ROWS:
        ids = sets[name][:300_000] if name == "neural24" else sets[name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tok = ubpe.Tokenizer(None, size).fit(ids)
        e = tok.model.expansion()
        a_ids = tok.alphabet.to_ids(ids)
        vocab = e.n_tokens
        replay = tok.model.encode(a_ids)
        expansions = [encoder.decode(np.array([t], np.int32), e).tolist() for t in range(vocab)]
        lengths = np.array([len(s) for s in expansions], np.int64)
        match_tok, match_ptr = token_matches(a_ids, expansions)
        replay_bytes = B.static_bytes(replay, vocab)
        hard = current = segment.fewest_bits(a_ids, e, np.bincount(replay, minlength=vocab).astype(np.int64))
        for _ in range(4):
            current = segment.fewest_bits(a_ids, e, np.bincount(current, minlength=vocab).astype(np.int64))
            if B.static_bytes(current, vocab) < B.static_bytes(hard, vocab):
                hard = current
        hard_bytes = B.static_bytes(hard, vocab)
        counts = np.bincount(replay, minlength=vocab).astype(np.float64) + 0.5
        soft_bytes = None
        for _ in range(8):
            expected = np.zeros(vocab)
            forward_backward(a_ids.shape[0], lengths, -np.log(counts / counts.sum()), match_tok, match_ptr, expected)
            counts = expected + 1e-3
            viterbi = segment.fewest_bits(a_ids, e, np.round(expected).astype(np.int64))
            size_ = B.static_bytes(viterbi, vocab)
            soft_bytes = size_ if soft_bytes is None else min(soft_bytes, size_)
        print(f"{name} {vocab}: replay {replay_bytes}, hard EM {hard_bytes} ({100 * (1 - hard_bytes / replay_bytes):.2f} %), "
              f"soft EM {soft_bytes} ({100 * (1 - soft_bytes / replay_bytes):.2f} %)", flush=True)


if __name__ == "__main__":
    main()
