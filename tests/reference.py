"""Plain-Python reference implementation of the ubpe training spec (docs/algorithm.md).

This is the test oracle: slow, obviously correct, never imported by the package. The compiled
path must give *identical* merges, counts, document frequencies, weights, ids and token streams.

Conventions: a corpus is a list of documents; a document is a list of alphabet ids in [0, A).
Pairs never cross a document. ``unit_of[d][i]`` is the idf unit of position ``i`` of document
``d`` (a document, or a fixed window of one). Tokens live in *priority space* during training:
the k-th merge creates token ``A + k``.
"""

from __future__ import annotations

import math
from collections import Counter


def count_pairs(docs):
    """Overlapping counts of adjacent pairs: [a, a, a] holds (a, a) twice."""
    counts = Counter()
    for doc in docs:
        for i in range(len(doc) - 1):
            counts[(doc[i][0], doc[i + 1][0])] += 1
    return counts


def merge_in_doc(doc, pair, new):
    """Replace ``pair`` left to right without overlap; return (new doc, units hit, count)."""
    out, units, count, i = [], set(), 0, 0
    while i < len(doc):
        if i + 1 < len(doc) and (doc[i][0], doc[i + 1][0]) == pair:
            out.append((new, doc[i][1]))  # a token keeps the unit of its first position
            units.add(doc[i][1])
            count += 1
            i += 2
        else:
            out.append(doc[i])
            i += 1
    return out, units, count


def select_batch(counts, n_candidates, min_count):
    """Top ``n_candidates`` pairs (count desc, then (left, right) asc), filtered greedily."""
    ranked = sorted((p for p, c in counts.items() if c >= min_count), key=lambda p: (-counts[p], p))
    accepted = []
    for l2, r2 in ranked[:n_candidates]:
        c2 = counts[(l2, r2)]
        ok = True
        for l1, r1 in accepted:
            if {l1, r1} & {l2, r2}:
                ok = False  # shares a token with an accepted pair
            elif counts.get((r2, l1), 0) >= c2 or counts.get((r1, l2), 0) >= c2:
                ok = False  # a border pair would beat it
            if not ok:
                break
        if ok:
            accepted.append((l2, r2))
    return accepted


def train(docs, alphabet_size, n_tokens, n_candidates=1, min_count=2, unit_of=None):
    """Return (merges, stopped_early); each merge is (left, right, batch, count, df).

    Training runs while ``alphabet_size + len(merges) < n_tokens``; the last batch may overshoot
    (trimming brings the vocabulary back to ``n_tokens``).
    """
    if unit_of is None:
        unit_of = [[d] * len(doc) for d, doc in enumerate(docs)]
    work = [list(zip(doc, units)) for doc, units in zip(docs, unit_of)]
    merges, batch = [], 0
    while alphabet_size + len(merges) < n_tokens:
        counts = count_pairs(work)
        accepted = select_batch(counts, n_candidates, min_count)
        if not accepted:
            return merges, True
        for pair in accepted:
            new = alphabet_size + len(merges)
            units, total = set(), 0
            for d in range(len(work)):
                work[d], hit, count = merge_in_doc(work[d], pair, new)
                units |= hit
                total += count
            merges.append((pair[0], pair[1], batch, total, len(units)))
        batch += 1
    return merges, False


def units_for(doc_lengths, window):
    """idf units: documents when ``window`` is None, else windows of ``window`` positions."""
    unit_of, next_unit = [], 0
    for n in doc_lengths:
        if window is None:
            unit_of.append([next_unit] * n)
            next_unit += 1
        else:
            unit_of.append([next_unit + i // window for i in range(n)])
            next_unit += -(-n // window)
    return unit_of, next_unit


def weights(merges, n_units, weighting="idf"):
    """idf = ln((1 + D) / (1 + df)); count = replacements; tfidf = count * idf."""
    out = []
    for _, _, _, count, df in merges:
        idf = math.log((1 + n_units) / (1 + df))
        out.append({"idf": idf, "count": float(count), "tfidf": count * idf}[weighting])
    return out


def trim(merges, ws, alphabet_size, n_tokens):
    """Drop lowest-weight leaves (ties: latest merge first) until the vocabulary is n_tokens.

    Returns the kept merges renumbered in priority order, and their weights.
    """
    kept = set(range(len(merges)))
    while alphabet_size + len(kept) > n_tokens:
        used = {c - alphabet_size for k in kept for c in merges[k][:2] if c >= alphabet_size}
        leaves = [k for k in kept if k not in used]
        victim = min(leaves, key=lambda k: (ws[k], -k))
        kept.remove(victim)
    order = sorted(kept)
    new_index = {old: new for new, old in enumerate(order)}

    def remap(c):
        return c if c < alphabet_size else alphabet_size + new_index[c - alphabet_size]

    out = [(remap(merges[k][0]), remap(merges[k][1])) + tuple(merges[k][2:]) for k in order]
    return out, [ws[k] for k in order]


def rerank(ws, alphabet_size):
    """Public id of each priority-space token: alphabet fixed, merges by weight desc, then priority."""
    order = sorted(range(len(ws)), key=lambda k: (-ws[k], k))
    ids = list(range(alphabet_size)) + [0] * len(ws)
    for rank, k in enumerate(order):
        ids[alphabet_size + k] = alphabet_size + rank
    return ids


def encode(seq, merges, alphabet_size):
    """Replay: apply merges in priority order, each left to right without overlap."""
    doc = [(s, 0) for s in seq]
    for k, (left, right) in enumerate(m[:2] for m in merges):
        doc, _, _ = merge_in_doc(doc, (left, right), alphabet_size + k)
    return [t for t, _ in doc]


def decode(tokens, merges, alphabet_size):
    """Expand priority-space tokens back to alphabet ids."""
    out = []

    def expand(t):
        if t < alphabet_size:
            out.append(t)
        else:
            left, right = merges[t - alphabet_size][:2]
            expand(left)
            expand(right)

    for t in tokens:
        expand(t)
    return out


DEFAULT_WINDOW = 1024


def fit_model(docs, alphabet_size, n_tokens, n_candidates=50, min_count=2, weighting="idf", window=None):
    """The whole of ``Tokenizer.fit``: train, weigh, trim, re-rank.

    Returns a dict with merges (left, right) in priority space, batches, counts, df, weights,
    token_ids (priority -> public id), n_units and stopped_early.
    """
    if window is None and len(docs) == 1:
        window = DEFAULT_WINDOW
    unit_of, n_units = units_for([len(d) for d in docs], window)
    merges, stopped = train(docs, alphabet_size, n_tokens, n_candidates, min_count, unit_of)
    ws = weights(merges, n_units, weighting)
    kept, kept_ws = trim(merges, ws, alphabet_size, n_tokens)
    return {
        "merges": [m[:2] for m in kept],
        "batches": [m[2] for m in kept],
        "counts": [m[3] for m in kept],
        "df": [m[4] for m in kept],
        "weights": kept_ws,
        "token_ids": rerank(kept_ws, alphabet_size),
        "n_units": n_units,
        "stopped_early": stopped,
    }
