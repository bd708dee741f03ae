"""Compiled kernels of segmentation (docs/algorithm.md, "Segmentation").

A segmentation cuts a sequence of alphabet ids into consecutive pieces that are each some token's
alphabet sequence. The vocabulary is a trie of those sequences, stored breadth-first:

- node 0 is the root; the children of a node are consecutive nodes ``first[v] .. first[v] +
  n_children[v] - 1``, sorted by ``symbol`` (the alphabet id on the edge into them);
- ``token[v]`` is the token whose sequence ends at node ``v`` (``-1`` where none does).

Every alphabet id is a token of length 1, so every sequence of ids in ``[0, A)`` has a
segmentation, and the root's children are exactly nodes ``1 .. A`` (node ``1 + s`` for id ``s``).
The Python wrappers in ``ubpe/segment.py`` validate every argument; these kernels do not
bounds-check beyond that.

All dynamic programmes run backwards over positions: ``best[i]`` is the optimum for the suffix
starting at ``i``. At each position the trie is walked forward as far as the input matches; the
walk is at most as long as the longest token (the wrappers bound it).
"""

from __future__ import annotations

import numpy as np
from . import njit

_INF = np.int64(1) << np.int64(62)


@njit(cache=True, nogil=True, inline="always")
def _child(node, s, first, n_children, symbol):
    """The child of ``node`` along id ``s``, or -1."""
    if node == 0:
        return s + 1
    lo = first[node]
    hi = lo + n_children[node]
    while lo < hi:
        mid = (lo + hi) >> 1
        v = symbol[mid]
        if v < s:
            lo = mid + 1
        elif v > s:
            hi = mid
        else:
            return mid
    return -1


@njit(cache=True, nogil=True)
def _cheapest(ids, lo, hi, first, n_children, symbol, tfirst, tcount, toks, cost, best, pick, out, out_pos):
    """Cheapest segmentation of ``ids[lo:hi]`` under integer token costs, written to ``out`` from
    ``out_pos``; returns the new end of ``out``. Ties go to the longest first token (see module)."""
    best[hi - lo] = 0
    for i in range(hi - 1, lo - 1, -1):
        node = 0
        j = i
        bc = _INF
        bt = -1
        bl = 0
        while j < hi:
            node = _child(node, ids[j], first, n_children, symbol)
            if node < 0:
                break
            j += 1
            q0 = tfirst[node]
            q1 = q0 + tcount[node]
            if q1 > q0:
                t = toks[q0]  # the cheapest token of this sequence, the lowest id on a tie
                for q in range(q0 + 1, q1):
                    if cost[toks[q]] < cost[t]:
                        t = toks[q]
                c = cost[t] + best[j - lo]
                if c <= bc:  # equal cost: the longer token, met later in the walk, wins
                    bc = c
                    bt = t
                    bl = j - i
        best[i - lo] = bc
        pick[i - lo] = (np.int64(bt) << np.int64(32)) | np.int64(bl)
    return _emit(pick, lo, hi, out, out_pos)


@njit(cache=True, nogil=True)
def _emit(pick, lo, hi, out, out_pos):
    """Writes the segmentation of ``[lo, hi)`` chosen in ``pick`` (per position: token << 32 |
    length) to ``out`` from ``out_pos``; returns the new end."""
    i = lo
    while i < hi:
        p = pick[i - lo]
        out[out_pos] = np.int32(p >> np.int64(32))
        out_pos += 1
        i += np.int64(p & np.int64(0xFFFFFFFF))
    return out_pos


@njit(cache=True, nogil=True)
def _batch_buffers(ids, doc_offsets):
    """Scratch of the batch kernels: ``best`` and ``pick`` for the longest document, the output
    tokens and their per-document offsets."""
    longest = 0
    for d in range(doc_offsets.shape[0] - 1):
        longest = max(longest, doc_offsets[d + 1] - doc_offsets[d])
    best = np.empty(longest + 1, dtype=np.int64)
    pick = np.empty(max(longest, 1), dtype=np.int64)
    token_offsets = np.empty(doc_offsets.shape[0], dtype=np.int64)
    token_offsets[0] = 0
    return best, pick, np.empty(ids.shape[0], dtype=np.int32), token_offsets


@njit(cache=True, nogil=True)
def cheapest_batch(ids, doc_offsets, first, n_children, symbol, tfirst, tcount, toks, cost):
    """Cheapest segmentation of each document ``ids[doc_offsets[d]:doc_offsets[d + 1]]``.

    Returns ``(tokens, token_offsets)``: document ``d``'s tokens are
    ``tokens[token_offsets[d]:token_offsets[d + 1]]`` (int32).
    """
    best, pick, out, token_offsets = _batch_buffers(ids, doc_offsets)
    pos = 0
    for d in range(doc_offsets.shape[0] - 1):
        pos = _cheapest(ids, doc_offsets[d], doc_offsets[d + 1], first, n_children, symbol, tfirst, tcount,
                        toks, cost, best, pick, out, pos)
        token_offsets[d + 1] = pos
    return out[:pos], token_offsets


@njit(cache=True, nogil=True)
def suffix_links(first, n_children, symbol, token):
    """Aho-Corasick links of a breadth-first trie: ``fail[v]`` is the node of the longest proper
    suffix of ``v``'s sequence that is in the trie (the root, 0, for none), ``out[v]`` the
    nearest node on ``v``'s fail chain (``v`` excluded) where a token ends (0 for none), and
    ``depth[v]`` the length of ``v``'s sequence. Needs every alphabet id as a root child."""
    n = first.shape[0]
    fail = np.zeros(n, dtype=np.int64)
    out = np.zeros(n, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    for v in range(n):  # breadth-first: a node's fail link is set before its children need it
        for c in range(first[v], first[v] + n_children[v]):
            depth[c] = depth[v] + 1
            if v != 0:
                f = fail[v]
                while True:  # ends at the root at the latest: it has a child for every id
                    g = _child(f, symbol[c], first, n_children, symbol)
                    if g >= 0:
                        fail[c] = g
                        break
                    f = fail[f]
            g = fail[c]
            out[c] = g if token[g] >= 0 else out[g]
    return fail, out, depth


@njit(cache=True, nogil=True)
def _cheapest_by_links(ids, lo, hi, first, n_children, symbol, tfirst, tcount, toks, fail, out, depth,
                       cost, best, pick, seg, seg_pos):
    """:func:`_cheapest` with the tokens that start at each position found by an Aho-Corasick
    automaton of the *reversed* token sequences, read from ``hi - 1`` down to ``lo``: linear in
    the input plus the matches, where walking the trie costs the longest match at each position
    (thousands of ids on a repetitive signal). Same result, ties included."""
    best[hi - lo] = 0
    state = 0
    for i in range(hi - 1, lo - 1, -1):
        s = ids[i]
        while True:  # the root has a child for every id
            g = _child(state, s, first, n_children, symbol)
            if g >= 0:
                state = g
                break
            state = fail[state]
        bc = _INF
        bt = -1
        bl = 0
        u = state if tcount[state] > 0 else out[state]
        while u != 0:  # each token that is a prefix of ids[i:hi]
            q0 = tfirst[u]
            t = toks[q0]  # the cheapest token of this sequence, the lowest id on a tie
            for q in range(q0 + 1, q0 + tcount[u]):
                if cost[toks[q]] < cost[t]:
                    t = toks[q]
            length = depth[u]
            c = cost[t] + best[i + length - lo]
            if c < bc or (c == bc and length > bl):  # equal cost: the longer token wins
                bc = c
                bt = t
                bl = length
            u = out[u]
        best[i - lo] = bc
        pick[i - lo] = (np.int64(bt) << np.int64(32)) | np.int64(bl)
    return _emit(pick, lo, hi, seg, seg_pos)


@njit(cache=True, nogil=True)
def cheapest_batch_by_links(ids, doc_offsets, first, n_children, symbol, tfirst, tcount, toks, fail, out,
                            depth, cost):
    """:func:`cheapest_batch` over the trie of the reversed token sequences and its
    :func:`suffix_links` (see :func:`_cheapest_by_links`); same result."""
    best, pick, seg, token_offsets = _batch_buffers(ids, doc_offsets)
    pos = 0
    for d in range(doc_offsets.shape[0] - 1):
        pos = _cheapest_by_links(ids, doc_offsets[d], doc_offsets[d + 1], first, n_children, symbol, tfirst,
                                 tcount, toks, fail, out, depth, cost, best, pick, seg, pos)
        token_offsets[d + 1] = pos
    return seg[:pos], token_offsets


@njit(cache=True, nogil=True)
def fixed_log2(x):
    """floor(2**16 * log2(x)) for an integer ``x >= 1``, in integer arithmetic only (so that code
    lengths, and with them the "bits" segmentation, are the same on every platform)."""
    e = 0
    while (x >> np.int64(e + 1)) > 0:
        e += 1
    # mantissa in [2**31, 2**32): x * 2**(31 - e), exact when e <= 31, truncated otherwise
    if e <= 31:
        m = np.uint64(x) << np.uint64(31 - e)
    else:
        m = np.uint64(x) >> np.uint64(e - 31)
    frac = 0
    for _ in range(16):
        m = (m * m) >> np.uint64(31)  # m < 2**32, so m * m < 2**64
        frac <<= 1
        if m >= np.uint64(1) << np.uint64(32):
            m >>= np.uint64(1)
            frac |= 1
    return (np.int64(e) << np.int64(16)) | np.int64(frac)


@njit(cache=True, nogil=True)
def code_lengths(counts):
    """Static code length of each token in 2**-16 bits: log2(total) - log2(count), where both are
    taken with add-one counts (every token stays codable)."""
    n = counts.shape[0]
    total = np.int64(0)
    for t in range(n):
        total += counts[t] + 1
    lt = fixed_log2(total)
    out = np.empty(n, dtype=np.int64)
    for t in range(n):
        out[t] = lt - fixed_log2(counts[t] + 1)
    return out


# --------------------------------------------------------------------------------------------
# top-n: a beam over positions, scored by tf-idf (docs/algorithm.md, "Top-n segmentations")
# --------------------------------------------------------------------------------------------
# A kept candidate (a segmentation of a suffix) is a persistent linked list: its first token, the
# candidate of the rest, its length and score, and a persistent 16-ary tree of its token counts
# (path copying: adding one token copies one root-to-leaf path of 16-way nodes), so that the count of a token in
# any candidate is found in depth steps and candidates share what they have in common.

_FANOUT_BITS = 4
_FANOUT = 1 << _FANOUT_BITS


@njit(cache=True, nogil=True)
def _tree_count(tree, root, t, depth):
    node = root
    for level in range(depth - 1, 0, -1):
        node = tree[node * _FANOUT + ((t >> (level * _FANOUT_BITS)) & (_FANOUT - 1))]
    return tree[node * _FANOUT + (t & (_FANOUT - 1))]


@njit(cache=True, nogil=True)
def _tree_add(tree, n_nodes, root, t, depth):
    """A new root: ``root``'s counts plus one of token ``t``; the tree must have room for
    ``depth`` more nodes. Returns (new_root, new n_nodes)."""
    new_root = n_nodes
    node = root
    dst = n_nodes
    n_nodes += 1
    for level in range(depth - 1, -1, -1):
        for c in range(_FANOUT):
            tree[dst * _FANOUT + c] = tree[node * _FANOUT + c]
        digit = (t >> (level * _FANOUT_BITS)) & (_FANOUT - 1)
        if level == 0:
            tree[dst * _FANOUT + digit] += np.int32(1)
        else:
            nxt = n_nodes
            n_nodes += 1
            node = tree[node * _FANOUT + digit]
            tree[dst * _FANOUT + digit] = np.int32(nxt)
            dst = nxt
    return new_root, n_nodes


@njit(cache=True, nogil=True)
def top_n(ids, k, first, n_children, symbol, tfirst, tcount, toks, weight, log_step, depth, max_nodes):
    """The beam search of the ``ubpe`` 0.3.0 peer, exactly and fast.

    For each position ``i`` from the end, the candidates of ``i`` are the ``k`` best of
    ``{token t matching at i} x {kept candidates of i + len(t)}``, ranked by score (higher first),
    then by fewer tokens, then by generation order (shorter ``t`` first, better tail first).
    score = sum over distinct tokens of (1 + ln count) * weight[token].

    Returns ``(tok, nxt, length, score, heads, status)``: the candidates of position 0 are
    ``heads`` (best first); candidate ``c`` is token ``tok[c]`` followed by candidate ``nxt[c]``
    (-1: end). ``status`` is -1 when more than ``max_nodes`` count-tree nodes were needed.
    ``log_step[c]`` is ln(c + 1) - ln(c) for 1 <= c < len(log_step) (a table: the hot path).
    """
    n = ids.shape[0]
    cap = 1 + n * k  # at most k kept candidates per position, plus the empty one
    tok = np.empty(cap, dtype=np.int32)
    nxt = np.empty(cap, dtype=np.int64)
    length = np.empty(cap, dtype=np.int64)
    score = np.empty(cap, dtype=np.float64)
    root = np.empty(cap, dtype=np.int64)
    # per position: its kept candidates, best first
    kept = np.empty((n + 1) * k, dtype=np.int64)
    n_kept = np.zeros(n + 1, dtype=np.int64)
    # every kept candidate with a weighted token adds ``depth`` nodes: allocate the bound once
    tree_cap = min(1 + (n + 1) * k * depth, max_nodes)
    tree = np.empty(tree_cap * _FANOUT, dtype=np.int32)
    tree[:_FANOUT] = 0
    n_nodes = 1  # node 0: the empty tree (all counts 0, every child the empty tree)
    # the empty candidate at position n
    tok[0] = -1
    nxt[0] = -1
    length[0] = 0
    score[0] = 0.0
    root[0] = 0
    n_cand = 1
    kept[n * k] = 0
    n_kept[n] = 1
    # the beam of one position: tail candidate, token, score, length
    b_tail = np.empty(k, dtype=np.int64)
    b_tok = np.empty(k, dtype=np.int32)
    b_score = np.empty(k, dtype=np.float64)
    b_len = np.empty(k, dtype=np.int64)
    for i in range(n - 1, -1, -1):
        nb = 0
        node = 0
        j = i
        while j < n:
            node = _child(node, ids[j], first, n_children, symbol)
            if node < 0:
                break
            j += 1
            for qt in range(tfirst[node], tfirst[node] + tcount[node]):  # each token of this sequence
                t = toks[qt]
                w = weight[t]
                for q in range(n_kept[j]):
                    c = kept[j * k + q]
                    if nb == k and score[c] + w < b_score[k - 1]:
                        break  # tails are best first, and no token gains more than its weight
                    if w == 0.0:
                        s = score[c]
                    else:
                        cnt = _tree_count(tree, root[c], t, depth)
                        if cnt == 0:
                            s = score[c] + w
                        elif cnt < log_step.shape[0]:
                            s = score[c] + w * log_step[cnt]
                        else:
                            s = score[c] + w * (np.log(cnt + 1.0) - np.log(float(cnt)))
                    ln = length[c] + 1
                    # insertion into the beam (sorted best first; equal entries keep generation order)
                    if nb == k and not (s > b_score[k - 1] or (s == b_score[k - 1] and ln < b_len[k - 1])):
                        if w <= 0.0 or score[c] + w < b_score[k - 1]:
                            break  # tails are best first, and no later tail can gain more than w
                        continue
                    p = nb if nb < k else k - 1
                    while p > 0 and (s > b_score[p - 1] or (s == b_score[p - 1] and ln < b_len[p - 1])):
                        if p < k:
                            b_tail[p] = b_tail[p - 1]
                            b_tok[p] = b_tok[p - 1]
                            b_score[p] = b_score[p - 1]
                            b_len[p] = b_len[p - 1]
                        p -= 1
                    b_tail[p] = c
                    b_tok[p] = t
                    b_score[p] = s
                    b_len[p] = ln
                    if nb < k:
                        nb += 1
        # keep the beam as candidates of position i
        for p in range(nb):
            c = b_tail[p]
            t = b_tok[p]
            tok[n_cand] = t
            nxt[n_cand] = c
            length[n_cand] = b_len[p]
            score[n_cand] = b_score[p]
            if weight[t] == 0.0:
                root[n_cand] = root[c]  # a weightless token's count never matters
            else:
                if n_nodes + depth > tree_cap:
                    return tok[:0], nxt[:0], length[:0], score[:0], kept[:0], -1
                r, n_nodes = _tree_add(tree, n_nodes, root[c], t, depth)
                root[n_cand] = r
            kept[i * k + p] = n_cand
            n_cand += 1
        n_kept[i] = nb
    return tok[:n_cand], nxt[:n_cand], length[:n_cand], score[:n_cand], kept[: n_kept[0]].copy(), 0
