"""Obviously-correct segmentation references: enumerate every segmentation of a short sequence.

A vocabulary here is a merge table in priority space (alphabet ids ``0 .. A-1``, merge ``k``
makes token ``A + k`` from two older tokens); a token's sequence is its full expansion.
"""

from __future__ import annotations

import math
from collections import Counter


def sequences(merges, a: int) -> list[tuple[int, ...]]:
    """The alphabet sequence of every token, by plain recursion."""
    seqs = [(i,) for i in range(a)]
    for left, right in merges:
        seqs.append(seqs[left] + seqs[right])
    return seqs


def all_segmentations(ids, seqs) -> list[list[int]]:
    """Every segmentation of ``ids`` into tokens (lists of token ids); tokens that share a
    sequence give distinct segmentations."""
    by_seq: dict[tuple[int, ...], list[int]] = {}
    for t, s in enumerate(seqs):
        by_seq.setdefault(s, []).append(t)
    ids = tuple(ids)
    out: list[list[int]] = []

    def walk(i, acc):
        if i == len(ids):
            out.append(list(acc))
            return
        for j in range(i + 1, len(ids) + 1):
            for t in by_seq.get(ids[i:j], ()):
                walk(j, acc + [t])

    walk(0, [])
    return out


def lengths_key(seg, seqs):
    """Tie-break of the optima: the lexicographically largest sequence of token lengths wins."""
    return [len(seqs[t]) for t in seg]


def fixed_log2(x: int) -> int:
    """floor(2**16 * log2(x)) by repeated squaring of a 32-bit mantissa, in Python integers."""
    e = x.bit_length() - 1
    m = x << (31 - e) if e <= 31 else x >> (e - 31)
    frac = 0
    for _ in range(16):
        m = (m * m) >> 31
        frac <<= 1
        if m >= 1 << 32:
            m >>= 1
            frac |= 1
    return (e << 16) | frac


def code_lengths(counts) -> list[int]:
    total = sum(c + 1 for c in counts)
    return [fixed_log2(total) - fixed_log2(c + 1) for c in counts]


def best(ids, seqs, cost) -> list[int]:
    """The cheapest segmentation (sum of cost[t]); ties to the largest sequence of lengths."""
    segs = all_segmentations(ids, seqs)
    low = min(sum(cost[t] for t in s) for s in segs)
    cands = [s for s in segs if sum(cost[t] for t in s) == low]
    longest = max(lengths_key(s, seqs) for s in cands)
    return min(s for s in cands if lengths_key(s, seqs) == longest)  # then the lowest ids


def tfidf(seg, weights) -> float:
    """The peer's score: sum over distinct tokens of (1 + ln count) * weight."""
    return sum((1 + math.log(c)) * weights[t] for t, c in Counter(seg).items())


def beam(ids, seqs, weights, k, log_step):
    """The peer's beam search, spelt out: positions from the end, each keeps the k best of
    token-then-kept-candidate, by score (higher first), fewer tokens, generation order.

    Scores are accumulated as the kernel does (the tail's score plus the token's gain, with
    ``log_step[c] = ln(c + 1) - ln(c)``), so that exact ties are ties in both."""
    by_seq: dict[tuple[int, ...], list[int]] = {}
    for t, s in enumerate(seqs):
        by_seq.setdefault(s, []).append(t)
    ids = tuple(ids)
    n = len(ids)
    kept = {n: [([], 0.0)]}
    for i in range(n - 1, -1, -1):
        gen = []
        for j in range(i + 1, n + 1):
            for t in by_seq.get(ids[i:j], ()):  # tokens of one sequence in id order
                for tail, score in kept[j]:
                    c = tail.count(t)
                    gain = 0.0 if weights[t] == 0 else weights[t] if c == 0 else weights[t] * log_step[c]
                    gen.append((score + gain if weights[t] != 0 else score, len(tail) + 1, len(gen), [t] + tail))
        gen.sort(key=lambda g: (-g[0], g[1], g[2]))
        kept[i] = [(g[3], g[0]) for g in gen[:k]]
    return kept[0]


def best_by_suffixes(ids, seqs, cost) -> list[int]:
    """:func:`best` by dynamic programming over suffixes, for inputs too long to enumerate: the
    best segmentation of ``ids[i:]`` minimises (total cost, the lengths negated, the token ids),
    compared as tuples; a first token followed by the best of the rest is the best of all
    segmentations with that first token, so the minimum over first tokens is the optimum."""
    by_seq: dict[tuple[int, ...], list[int]] = {}
    for t, s in enumerate(seqs):
        by_seq.setdefault(s, []).append(t)
    lengths = sorted({len(s) for s in seqs})
    ids = tuple(ids)
    n = len(ids)
    best_of: list = [None] * (n + 1)
    best_of[n] = (0, (), ())
    for i in range(n - 1, -1, -1):
        options = []
        for length in lengths:
            if i + length > n:
                break
            for t in by_seq.get(ids[i:i + length], ()):
                c, negated, tokens = best_of[i + length]
                options.append((cost[t] + c, (-length,) + negated, (t,) + tokens))
        best_of[i] = min(options)
    return list(best_of[0][2])
