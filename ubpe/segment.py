"""Segmentation: encoding by dynamic programming over positions instead of replaying merges.

A *segmentation* of a sequence of alphabet ids cuts it into consecutive pieces that are each a
token's alphabet sequence (its expansion). Every token of a model is usable, whichever order the
merges were learnt in, and every alphabet id is a token, so every valid sequence has one.

- :func:`fewest_tokens` ("optimal"): a segmentation with the fewest tokens.
- :func:`fewest_bits` ("bits"): a segmentation with the fewest bits when each token ``t`` costs
  its static code length ``log2(total / count[t])`` (add-one counts, in 2**-16-bit units
  computed in integer arithmetic, so results are the same on every platform).
- :func:`top_n`: the ``k`` best segmentations under the tf-idf score of the ``ubpe`` 0.3.0
  peer, by the peer's own beam search (docs/algorithm.md, "Segmentation").

Both optima are exact. Ties: among the optimal segmentations, the one whose first token is the
longest, then (for the rest) the same rule again, i.e. the lexicographically largest sequence of
token lengths; a length shared by several tokens with the same alphabet sequence goes to the
lowest priority-space id
among the cheapest (tokens with the same sequence can have different costs).

Cost: a trie of all token sequences is built once per expansion (cached) and each position
walks it as far as the input matches, so encoding is linear in the input length times the
longest match. Tokens longer than ``max_token_length`` (default :data:`MAX_TOKEN_LENGTH`) are
left out of the trie (they cannot be used), which bounds both the trie and the walk; with every
token in the trie, "optimal" never has more tokens than replay nor "bits" more bits.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from . import encoder
from ._kernels import segment as _k
from ._validate import check_int

__all__ = [
    "MAX_TOKEN_LENGTH",
    "Trie",
    "build_trie",
    "code_lengths",
    "fewest_bits",
    "fewest_bits_batch",
    "fewest_tokens",
    "fewest_tokens_batch",
    "top_n",
]

#: Tokens with longer alphabet sequences are left out of the trie (see the module docstring).
MAX_TOKEN_LENGTH = 1 << 16
#: Cap on the trie's size in nodes (the sum of the tabled tokens' lengths bounds it).
MAX_TRIE_NODES = 1 << 26
#: The trie is built a depth at a time while more tokens than this are that long, then at once.
TAIL_TOKENS = 64
#: Tries whose longest token is longer are searched by the reversed automaton, not walked.
WALK_LONGEST = 256
#: Cap on the count-tree nodes of :func:`top_n` (64 bytes each: 2**23 nodes is 512 MiB).
MAX_TOP_N_NODES = 1 << 23
_LOG_STEP = np.diff(np.log(np.arange(1, 1 << 16, dtype=np.float64)))
_LOG_STEP = np.concatenate(([0.0], _LOG_STEP))  # [c] = ln(c + 1) - ln(c)
#: Fixed-point unit of code lengths: a cost of ``COST_ONE`` is one bit.
COST_ONE = 1 << 16


@dataclass(frozen=True, eq=False)
class Trie:
    """The vocabulary's token sequences as a breadth-first trie (see ``ubpe/_kernels/segment.py``).

    ``first``, ``n_children`` (int64 / int32, per node), ``symbol`` (int32, per node: the id on
    the edge into it), ``token`` (int32, per node: the lowest token ending there, or -1), and
    every token ending at node ``v``: ``tokens[token_first[v]:token_first[v] + token_count[v]]``
    (ascending; several tokens can share one sequence, ``(ab)c`` and ``a(bc)``).
    ``n_tokens`` is ``A + M``; ``longest`` the longest sequence in the trie; ``left_out`` the
    number of tokens too long to be in it.
    """

    first: np.ndarray
    n_children: np.ndarray
    symbol: np.ndarray
    token: np.ndarray
    token_first: np.ndarray
    token_count: np.ndarray
    tokens: np.ndarray
    alphabet_size: int
    n_tokens: int
    longest: int
    left_out: int


_cache: dict[int, tuple[Any, int, Trie]] = {}
_cache_lock = threading.Lock()


def build_trie(expansion: encoder.Expansion, *, max_token_length: int = MAX_TOKEN_LENGTH) -> Trie:
    """The trie of every token's alphabet sequence; cached per ``expansion`` object."""
    if not isinstance(expansion, encoder.Expansion):
        raise TypeError(f"expansion must be an encoder.Expansion, got {type(expansion).__name__}")
    max_token_length = check_int("max_token_length", max_token_length, 1)
    key = id(expansion)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and hit[0]() is expansion and hit[1] == max_token_length:
            return hit[2]
    trie = _build(expansion, max_token_length)
    with _cache_lock:
        _cache[key] = (weakref.ref(expansion, lambda _ref, k=key: _cache.pop(k, None)), max_token_length, trie)
    return trie


def _build(e: encoder.Expansion, max_token_length: int) -> Trie:
    """The trie of ``e``'s tokens in breadth-first order: a round of numpy calls per depth while more than
    :data:`TAIL_TOKENS` tokens are that long, then the few longer tokens at once (sorted by their
    remaining sequences, their nodes are the distinct prefixes; see :func:`_tail`). A repetitive
    signal's model has a few tokens thousands of values long: one round per depth cost 263 740
    ``np.unique`` calls in one compress of pyedflib's generated EDF file."""
    keep, klen, flat, starts = _sequences(e, max_token_length)
    return _trie(keep, klen, flat, starts, e.alphabet_size, e.n_tokens)


def _sequences(e: encoder.Expansion, max_token_length: int) -> tuple[np.ndarray, ...]:
    """The tokens in the trie (``keep``, ascending), their lengths, their sequences
    concatenated (int64) and where each starts."""
    lengths = e.lengths
    keep = np.flatnonzero(lengths <= max_token_length).astype(np.int32)
    # the longest tokens go first when the trie would be too big
    if int(lengths[keep].sum()) > MAX_TRIE_NODES:
        order = keep[np.argsort(lengths[keep], kind="stable")]
        within = np.cumsum(lengths[order]) <= MAX_TRIE_NODES
        keep = np.sort(order[within])
    return _sequences_of(e, keep)


def _sequences_of(e: encoder.Expansion, keep: np.ndarray) -> tuple[np.ndarray, ...]:
    klen = e.lengths[keep].astype(np.int64)
    flat = encoder.decode(keep, e).astype(np.int64)  # the kept tokens' sequences, concatenated
    starts = np.zeros(keep.shape[0], dtype=np.int64)
    np.cumsum(klen[:-1], out=starts[1:])
    return keep, klen, flat, starts


def _trie(keep: np.ndarray, klen: np.ndarray, flat: np.ndarray, starts: np.ndarray, a: int, v: int) -> Trie:
    """The trie of the sequences ``flat[starts[k]:starts[k] + klen[k]]`` of tokens ``keep``."""
    by_length = np.argsort(-klen, kind="stable")  # the tokens still active at depth d are a prefix
    longest = int(klen.max())
    n_active = np.searchsorted(-klen[by_length], -np.arange(longest), side="left")  # len > d
    node_of = np.zeros(keep.shape[0], dtype=np.int64)  # each token's node at the last depth built
    parents, symbols = [np.zeros(0, np.int64)], [np.zeros(1, np.int64)]  # per node, root first
    end_nodes, end_tokens = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    n_nodes = 1
    for d in range(longest):
        act = by_length[: n_active[d]]
        if act.shape[0] <= TAIL_TOKENS:
            tail = _tail(act, d, node_of, flat, starts, klen, n_nodes)
            parents.append(tail[0])
            symbols.append(tail[1])
            end_nodes.append(tail[2])
            end_tokens.append(keep[act].astype(np.int64))
            n_nodes += tail[0].shape[0]
            break
        key = node_of[act] * a + flat[starts[act] + d]
        uniq, inverse = np.unique(key, return_inverse=True)  # by parent, then symbol
        parents.append(uniq // a)
        symbols.append(uniq % a)
        node_of[act] = n_nodes + inverse
        ends = act[klen[act] == d + 1]
        end_nodes.append(node_of[ends])
        end_tokens.append(keep[ends].astype(np.int64))
        n_nodes += uniq.shape[0]
    parent = np.concatenate(parents)  # non-decreasing: each node's children are consecutive
    n_children = np.bincount(parent, minlength=n_nodes).astype(np.int32)
    first = np.ones(n_nodes, dtype=np.int64)
    np.cumsum(n_children[:-1], out=first[1:])
    first[1:] += 1
    all_nodes, all_tokens = np.concatenate(end_nodes), np.concatenate(end_tokens)
    order = np.lexsort((all_tokens, all_nodes))  # by node, then token id
    all_nodes, all_tokens = all_nodes[order], all_tokens[order]
    token_count = np.bincount(all_nodes, minlength=n_nodes).astype(np.int32)
    token_first = np.zeros(n_nodes, dtype=np.int64)
    np.cumsum(token_count[:-1], out=token_first[1:])
    terminal = np.full(n_nodes, -1, dtype=np.int32)  # the lowest token ending at each node
    has = token_count > 0
    terminal[has] = all_tokens[token_first[has]]
    trie = Trie(
        first=first,
        n_children=n_children,
        symbol=np.concatenate(symbols).astype(np.int32),
        token=terminal,
        token_first=token_first,
        token_count=token_count,
        tokens=all_tokens.astype(np.int32),
        alphabet_size=a,
        n_tokens=v,
        longest=longest,
        left_out=v - keep.shape[0],
    )
    # the kernels find id s's node as 1 + s: every alphabet id must be a length-1 token
    if trie.n_children[0] != a or not np.array_equal(trie.token[1 : a + 1], np.arange(a, dtype=np.int32)):
        raise AssertionError("trie: the alphabet ids must be the root's children, in order")
    return trie


def _tail(act: np.ndarray, d: int, node_of: np.ndarray, flat: np.ndarray, starts: np.ndarray,
          klen: np.ndarray, n_nodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The nodes at depths ``d`` and beyond of the tokens ``act`` (indices into the kept tokens,
    every one longer than ``d``), numbered from ``n_nodes`` in breadth-first order.

    Sorted by (node at depth ``d - 1``, remaining sequence), token ``j`` adds the nodes of its
    depths ``lcp[j] .. len[j] - 1`` (relative to ``d``; ``lcp`` with the token sorted before it,
    0 under another node). Breadth-first order is (depth, sorted position), and the node of
    token ``j`` at depth ``e`` is the one of that depth with the largest position ``<= j``.
    Returns ``(parent, symbol, end_node)``: per new node, then per token of ``act``.
    """
    rest = [flat[starts[t] + d : starts[t] + klen[t]] for t in act.tolist()]
    order = sorted(range(act.shape[0]), key=lambda j: (int(node_of[act[j]]), rest[j].tolist()))
    ns = len(order)
    rel = np.array([rest[j].shape[0] for j in order], dtype=np.int64)
    lcp = np.zeros(ns, dtype=np.int64)
    for i in range(1, ns):
        p, q = act[order[i - 1]], act[order[i]]
        if node_of[p] == node_of[q]:
            x, y = rest[order[i - 1]], rest[order[i]]
            m = min(x.shape[0], y.shape[0])
            differ = np.flatnonzero(x[:m] != y[:m])
            lcp[i] = differ[0] if differ.shape[0] else m
    count = rel - lcp
    j = np.repeat(np.arange(ns, dtype=np.int64), count)
    offset = np.zeros(ns, dtype=np.int64)
    np.cumsum(count[:-1], out=offset[1:])
    depth = np.arange(j.shape[0], dtype=np.int64) - offset[j] + lcp[j]
    key = depth * ns + j
    bfs = np.argsort(key, kind="stable")
    key, j, depth = key[bfs], j[bfs], depth[bfs]
    tok = act[np.asarray(order, dtype=np.int64)]  # kept-token index per sorted position
    symbol = flat[starts[tok[j]] + d + depth]
    parent = n_nodes + np.searchsorted(key, (depth - 1) * ns + j, side="right") - 1
    top = depth == 0
    parent[top] = node_of[tok[j[top]]]
    end_sorted = n_nodes + np.searchsorted(key, (rel - 1) * ns + np.arange(ns), side="right") - 1
    end_node = np.empty(ns, dtype=np.int64)
    end_node[np.asarray(order, dtype=np.int64)] = end_sorted  # back to the order of ``act``
    return parent, symbol, end_node


def _ids(ids: Any, a: int, name: str = "ids") -> np.ndarray:
    arr = encoder._check_ids(ids, name)
    return encoder._check_range(arr, name, a)


def _docs(docs: Sequence[Any], a: int) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(docs, np.ndarray) and docs.ndim == 1:
        raise TypeError("docs must be a sequence of 1-D arrays; for one sequence use the single form")
    checked = [_ids(doc, a, f"docs[{d}]") for d, doc in enumerate(docs)]
    offsets = np.zeros(len(checked) + 1, dtype=np.int64)
    np.cumsum([c.shape[0] for c in checked], out=offsets[1:])
    ids = np.concatenate(checked) if checked else np.zeros(0, np.int32)
    return ids, offsets


def _costs_of_counts(counts: Any, n_tokens: int) -> np.ndarray:
    if not isinstance(counts, np.ndarray) or counts.dtype.kind not in "iu":
        raise TypeError("counts must be an integer numpy array")
    if counts.shape != (n_tokens,):
        raise ValueError(f"counts must have shape ({n_tokens},) (one per token), got {counts.shape}")
    if counts.size and (int(counts.min()) < 0 or int(counts.max()) >= 1 << 40):
        raise ValueError("counts must be in [0, 2**40)")
    return _k.code_lengths(counts.astype(np.int64))


def code_lengths(counts: np.ndarray) -> np.ndarray:
    """Static code length of each token, int64 in units of 2**-16 bits (:data:`COST_ONE` per bit):
    ``log2(sum(counts + 1)) - log2(counts[t] + 1)``, computed in integer arithmetic."""
    return _costs_of_counts(counts, counts.shape[0] if isinstance(counts, np.ndarray) else -1)


@dataclass(frozen=True, eq=False)
class _Automaton:
    """The trie of the reversed token sequences with its Aho-Corasick links
    (``_kernels.segment.suffix_links``): reading a sequence backwards, it finds every token that
    starts at each position in time linear in the input and the matches."""

    trie: Trie
    fail: np.ndarray
    out: np.ndarray
    depth: np.ndarray


_automata: dict[int, tuple[Any, Trie, _Automaton]] = {}


def _automaton(trie: Trie, expansion: encoder.Expansion) -> _Automaton:
    """The reversed automaton of the tokens in ``trie``; cached per ``expansion`` object."""
    key = id(expansion)
    with _cache_lock:
        hit = _automata.get(key)
        if hit is not None and hit[0]() is expansion and hit[1] is trie:
            return hit[2]
    keep, klen, flat, starts = _sequences_of(expansion, np.unique(trie.tokens))
    backwards = np.repeat(starts + klen - 1, klen) - (np.arange(flat.shape[0]) - np.repeat(starts, klen))
    rtrie = _trie(keep, klen, flat[backwards], starts, trie.alphabet_size, trie.n_tokens)
    automaton = _Automaton(rtrie, *_k.suffix_links(rtrie.first, rtrie.n_children, rtrie.symbol, rtrie.token))
    with _cache_lock:
        _automata[key] = (weakref.ref(expansion, lambda _ref, k=key: _automata.pop(k, None)), trie, automaton)
    return automaton


def _run(trie: Trie, ids: np.ndarray, offsets: np.ndarray, cost: np.ndarray,
         expansion: encoder.Expansion) -> tuple[np.ndarray, np.ndarray]:
    """The cheapest segmentation of each document: by walking the trie at each position, or,
    once the trie holds a token longer than :data:`WALK_LONGEST` (a repetitive signal, where
    each walk can be that long), by the reversed automaton; the same tokens either way."""
    if trie.longest <= WALK_LONGEST:
        return _k.cheapest_batch(ids, offsets, trie.first, trie.n_children, trie.symbol, trie.token_first,
                                 trie.token_count, trie.tokens, cost)
    m = _automaton(trie, expansion)
    r = m.trie
    return _k.cheapest_batch_by_links(ids, offsets, r.first, r.n_children, r.symbol, r.token_first,
                                      r.token_count, r.tokens, m.fail, m.out, m.depth, cost)


def fewest_tokens(ids: Any, expansion: encoder.Expansion) -> np.ndarray:
    """A segmentation of ``ids`` (1-D ints in ``[0, A)``) with the fewest tokens (int32,
    priority space); ties as in the module docstring."""
    trie = build_trie(expansion)
    ids = _ids(ids, trie.alphabet_size)
    tokens, _ = _run(trie, ids, np.array([0, ids.shape[0]], np.int64), np.ones(trie.n_tokens, np.int64), expansion)
    return tokens


def fewest_bits(ids: Any, expansion: encoder.Expansion, counts: np.ndarray) -> np.ndarray:
    """A segmentation of ``ids`` with the fewest bits when token ``t`` costs its static code
    length under ``counts`` ((A + M,) ints: :func:`code_lengths`)."""
    trie = build_trie(expansion)
    cost = _costs_of_counts(counts, trie.n_tokens)
    ids = _ids(ids, trie.alphabet_size)
    tokens, _ = _run(trie, ids, np.array([0, ids.shape[0]], np.int64), cost, expansion)
    return tokens


def _split(tokens: np.ndarray, offsets: np.ndarray) -> list[np.ndarray]:
    return [tokens[offsets[d]:offsets[d + 1]].copy() for d in range(offsets.shape[0] - 1)]


def fewest_tokens_batch(docs: Sequence[Any], expansion: encoder.Expansion) -> list[np.ndarray]:
    """:func:`fewest_tokens` of each document, in one kernel call."""
    trie = build_trie(expansion)
    ids, offsets = _docs(docs, trie.alphabet_size)
    return _split(*_run(trie, ids, offsets, np.ones(trie.n_tokens, np.int64), expansion))


def fewest_bits_batch(docs: Sequence[Any], expansion: encoder.Expansion, counts: np.ndarray) -> list[np.ndarray]:
    """:func:`fewest_bits` of each document, in one kernel call."""
    trie = build_trie(expansion)
    cost = _costs_of_counts(counts, trie.n_tokens)
    ids, offsets = _docs(docs, trie.alphabet_size)
    return _split(*_run(trie, ids, offsets, cost, expansion))


def top_n(
    ids: Any, expansion: encoder.Expansion, weights: np.ndarray, k: int, *, max_nodes: int = MAX_TOP_N_NODES
) -> list[tuple[np.ndarray, float]]:
    """Up to ``k`` segmentations of ``ids``, best first, with their tf-idf scores.

    score(s) = sum over the distinct tokens t of s of (1 + ln count_s(t)) * weights[t], where
    ``weights`` ((A + M,) float64, finite, >= 0) is 0 for alphabet ids in the peer's convention.
    The candidates are those of the peer's beam search: from the end of ``ids`` backwards, each
    position keeps the ``k`` best of (a token matching there) + (a kept candidate of the position
    after it); higher score first, then fewer tokens, then generation order (shorter first token,
    better tail). They are distinct, and each decodes to ``ids``. ``k == 1`` is the best of them.
    Memory: 64 bytes x depth (log16 of the vocabulary) per kept candidate with a weighted
    token, at most ``max_nodes`` x 64 bytes (else ``MemoryError`` naming the cap).
    """
    trie = build_trie(expansion)
    k = check_int("k", k, 1, 1 << 16)
    max_nodes = check_int("max_nodes", max_nodes, 16)
    if not isinstance(weights, np.ndarray) or weights.dtype.kind != "f":
        raise TypeError("weights must be a float numpy array")
    if weights.shape != (trie.n_tokens,):
        raise ValueError(f"weights must have shape ({trie.n_tokens},) (one per token), got {weights.shape}")
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    if not np.all(np.isfinite(weights)) or (weights.size and weights.min() < 0):
        raise ValueError("weights must be finite and >= 0")
    ids = _ids(ids, trie.alphabet_size)
    depth = max(1, -(-max(1, int(trie.n_tokens - 1).bit_length()) // _k._FANOUT_BITS))
    tok, nxt, _length, score, heads, status = _k.top_n(
        ids, k, trie.first, trie.n_children, trie.symbol, trie.token_first, trie.token_count, trie.tokens,
        weights, _LOG_STEP, depth, max_nodes
    )
    if status < 0:
        raise MemoryError(f"top_n needs more than max_nodes={max_nodes} count-tree nodes: encode shorter "
                          "pieces, or lower k")
    out = []
    for head in heads.tolist():
        seq, c = [], head
        while tok[c] >= 0:  # the empty candidate (token -1) ends every list
            seq.append(int(tok[c]))
            c = int(nxt[c])
        out.append((np.array(seq, dtype=np.int32), float(score[head])))
    return out
