"""Compiled kernels of replay encoding and of decoding (docs/algorithm.md, "Encoding", "Decoding").

Everything here works in *priority space*: alphabet ids are ``0 .. A-1`` and merge ``k`` (row ``k``
of ``left``/``right``) creates token ``A + k`` from two children that are both ``< A + k``. The
Python wrappers in ``ubpe/encoder.py`` validate every argument; these kernels do not bounds-check
and never raise: they return counts, or a negative status that the wrapper turns into an error.

Replay encoding ("apply the merges in priority order, each left to right without overlap") is
computed in one sweep instead of one pass per merge. The sequence is a doubly linked list; every
adjacent pair that is a merge is filed in the bucket of its rank, and buckets are drained in
increasing rank. This is exact because a merge's children are older than it: every pair that
merge ``k`` creates contains token ``A + k`` and so has rank ``> k``; draining bucket ``k`` thus
sees exactly the occurrences that the replay pass ``k`` sees. Within one rank the order matters
only for self-overlapping pairs ``(a, a)``, which are handled a whole run of ``a`` at a time,
leftmost first. Non-empty buckets are found by a forward scan of a bitmap of ranks.

Long sequences are first cut into segments of about 16k ids, only between two ids whose pair
is no merge's *junction* (last id of its left child, first of its right child): no token can
ever span such a cut, so the segments encode independently and their working sets (16 bytes
per position for the linked list, up to 24 for bucket entries) stay in cache.

A long segment starts with *group passes* (``rank_groups``, ``_encode_by_passes``): one
streaming, branch-free pass over the compacted sequence per run of merges that cannot interact,
while the passes still merge a good share of the ids (where a merge-heavy sequence spends most
of its merges); the sweep above finishes the remaining ranks. The tokens are the same.
"""

from __future__ import annotations

import numpy as np
from . import njit

# Fibonacci hashing constant (2**64 / golden ratio), used as a uint64 multiplier.
_HASH_MULT = np.uint64(11400714819323198485)
# Saturation value of expanded lengths (2**61): a model of doubling merges can name tokens
# longer than any array; the sum of two capped lengths still fits in int64.
LENGTH_CAP = np.int64(1) << np.int64(61)


# --------------------------------------------------------------------------------------------
# Pair table: open addressing (linear probing) from key = left * n_tokens + right to rank.
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def _slot(key, shift):
    return np.int64((np.uint64(key) * _HASH_MULT) >> np.uint64(shift))


@njit(cache=True, nogil=True, inline="always")
def _lookup(pairs, key, shift, mask):
    """Rank of the pair ``key`` in the interleaved table ``pairs``, or -1."""
    i = _slot(key, shift)
    while True:
        k = pairs[2 * i]
        if k == key:
            return pairs[2 * i + 1]
        if k < 0:
            return np.int64(-1)
        i = (i + 1) & mask


@njit(cache=True, nogil=True)
def build_pair_table(left, right, alphabet_size, bits):
    """Open-addressing hash table of merge pairs: key ``left * (A + M) + right`` -> rank.

    Preconditions (validated by the caller): ``left``/``right`` int32 (M,), children of row k
    in ``[0, A + k)``; ``2**bits >= 2 * M`` and ``1 <= bits <= 62``.
    Returns ``pairs`` int64 (2 * 2**bits,): slot i's key at 2 i (-1 if empty) and its rank at
    2 i + 1, interleaved so that one cache line serves a hit.
    A pair listed twice keeps its first (lowest) rank: the later copy can never fire in replay.
    """
    size = np.int64(1) << np.int64(bits)
    shift = 64 - bits
    mask = size - 1
    n_tokens = np.int64(alphabet_size) + left.shape[0]
    pairs = np.full(2 * size, -1, dtype=np.int64)
    for k in range(left.shape[0]):
        key = np.int64(left[k]) * n_tokens + np.int64(right[k])
        i = _slot(key, shift)
        while pairs[2 * i] >= 0 and pairs[2 * i] != key:
            i = (i + 1) & mask
        if pairs[2 * i] < 0:  # subtle: an existing key keeps its lower rank (first listed)
            pairs[2 * i] = key
            pairs[2 * i + 1] = k
    return pairs


@njit(cache=True, nogil=True)
def _pair_rank(pairs, a, b, n_tokens, shift, mask):
    """Rank of the merge (a, b), or -1."""
    return _lookup(pairs, np.int64(a) * n_tokens + np.int64(b), shift, mask)


# --------------------------------------------------------------------------------------------
# Replay encoding.
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _push(rank, pos, head, entries, ranks_set, state):
    """File position ``pos`` in bucket ``rank``, and mark the rank non-empty in ``ranks_set``."""
    e = state[0]
    state[0] = e + 1
    entries[2 * e] = pos
    entries[2 * e + 1] = head[rank]
    head[rank] = e
    # bitmap of non-empty buckets, 32 ranks per int64 word (bits 0..31: no sign-bit games)
    ranks_set[rank >> 5] |= np.int64(1) << (rank & 31)


@njit(cache=True, nogil=True)
def _lowest_bit(x):
    """Index of the lowest set bit of ``x`` (0 < x < 2**32)."""
    n = 0
    if (x & 0xFFFF) == 0:
        n += 16
        x >>= 16
    if (x & 0xFF) == 0:
        n += 8
        x >>= 8
    if (x & 0xF) == 0:
        n += 4
        x >>= 4
    if (x & 0x3) == 0:
        n += 2
        x >>= 2
    if (x & 0x1) == 0:
        n += 1
    return n


# The sequence being encoded is a doubly linked list stored as int32 ``node`` records of 4:
# node[4 p] = token at p (-1 once p is consumed), node[4 p + 1] = next live position (-1 at the
# end), node[4 p + 2] = previous live position (-1 at the start); the 4th slot pads the record
# to 16 bytes, so that a position and its neighbours usually share one cache line.


@njit(cache=True, nogil=True)
def _merge_at(p, new, node, n_tokens, pairs, shift, mask, head, entries, ranks_set, state):
    """Replace the pair at ``p`` (``p`` and its successor) by ``new``; file the pairs it makes."""
    q = node[4 * p + 1]
    r = node[4 * q + 1]
    node[4 * p] = new
    node[4 * q] = -1  # subtle: dead positions hold -1 so that every stale entry fails validation
    node[4 * p + 1] = r
    if r >= 0:
        node[4 * r + 2] = p
    pp = node[4 * p + 2]
    if pp >= 0:
        rank = _pair_rank(pairs, node[4 * pp], new, n_tokens, shift, mask)
        if rank >= 0:
            _push(rank, pp, head, entries, ranks_set, state)
    if r >= 0:
        rank = _pair_rank(pairs, new, node[4 * r], n_tokens, shift, mask)
        if rank >= 0:
            _push(rank, p, head, entries, ranks_set, state)


@njit(cache=True, nogil=True)
def _encode_into(ids, start, stop, left, right, alphabet_size, pairs, bits,
                 node, head, entries, ranks_set, state, out, out_start, id_limit):
    """Replay-encode ``ids[start:stop]`` into ``out[out_start:]``; return the token count.

    Workspaces: ``node`` int32 of size >= 4 n, ``entries`` int32 of size >= 6 n (records
    (position, next entry)), ``head`` int32 (M,) all -1 and ``ranks_set`` int64 (M // 32 + 1,)
    all 0 on entry (and on exit), ``state`` int64 (1,). Returns ``-(i + 1)`` (nothing valid
    written) if ``ids[start + i]`` is the first id outside [0, ``id_limit``): ``A`` for alphabet
    ids, ``A + M`` for a sequence that group passes have partly encoded already (then ``ids``
    may be ``out`` itself with ``start == out_start``: every id is read before any is written).
    """
    n = stop - start
    for i in range(n):
        v = ids[start + i]
        if v < 0 or v >= id_limit:
            return -(np.int64(i) + 1)
        node[4 * i] = v
        node[4 * i + 1] = i + 1
        node[4 * i + 2] = i - 1
    if n <= 1:
        if n == 1:
            out[out_start] = node[0]
        return np.int64(n)
    node[4 * (n - 1) + 1] = -1
    n_tokens = np.int64(alphabet_size) + left.shape[0]
    shift = 64 - bits
    mask = (np.int64(1) << np.int64(bits)) - 1
    state[0] = 0
    # subtle: initial pairs are filed right to left, so that each bucket list (LIFO) is
    # drained left to right; this only helps locality, correctness does not depend on it.
    for i in range(n - 2, -1, -1):
        rank = _pair_rank(pairs, node[4 * i], node[4 * i + 4], n_tokens, shift, mask)
        if rank >= 0:
            _push(rank, i, head, entries, ranks_set, state)
    # subtle: buckets are drained in increasing rank by a forward scan of the bitmap; draining
    # rank k only files ranks > k, so the scan never needs to look back.
    n_words = ranks_set.shape[0]
    w = 0
    while True:
        while w < n_words and ranks_set[w] == 0:
            w += 1
        if w == n_words:
            break
        bitset = ranks_set[w]
        ranks_set[w] = bitset & (bitset - 1)  # clear the lowest bit: that bucket is drained now
        k = (w << 5) + _lowest_bit(bitset)
        a = left[k]
        b = right[k]
        new = np.int32(alphabet_size + k)
        e = head[k]
        head[k] = -1
        # subtle: merges of bucket k only file pairs of rank > k, so this list cannot grow
        # while it is drained; stale entries are recognised by re-checking the pair.
        while e >= 0:
            p = entries[2 * e]
            e = entries[2 * e + 1]
            if node[4 * p] != a:
                continue
            q = node[4 * p + 1]
            if q < 0 or node[4 * q] != b:
                continue
            if a != b:
                # distinct children: occurrences cannot overlap, so their order is irrelevant
                _merge_at(p, new, node, n_tokens, pairs, shift, mask, head, entries,
                          ranks_set, state)
            else:
                # subtle: (a, a) overlaps itself; replay pairs each maximal run of a from its
                # left end, so walk back to the run start and merge the whole run now. The
                # run's other entries are then stale (their position is dead or no longer a).
                while node[4 * p + 2] >= 0 and node[4 * node[4 * p + 2]] == a:
                    p = node[4 * p + 2]
                while True:
                    q = node[4 * p + 1]
                    if q < 0 or node[4 * q] != a:
                        break
                    _merge_at(p, new, node, n_tokens, pairs, shift, mask, head, entries,
                              ranks_set, state)
                    p = node[4 * p + 1]
                    if p < 0 or node[4 * p] != a:
                        break
    # position 0 is never consumed (it is never the right element of a pair)
    count = np.int64(0)
    p = 0
    while p >= 0:
        out[out_start + count] = node[4 * p]
        count += 1
        p = node[4 * p + 1]
    return count


@njit(cache=True, nogil=True)
def rank_groups(left, right, alphabet_size):
    """Cut the ranks into runs of merges that one left-to-right pass can apply together.

    Preconditions: as ``build_pair_table``. Returns ``starts`` int32 (G + 1,): group g is ranks
    ``starts[g] .. starts[g+1]-1``, a maximal run in which no two merges share a child and no
    child is a token made inside the run. In such a run no occurrence of one pair overlaps, makes
    or breaks an occurrence of another, so replaying its merges one by one (each left to right)
    equals one pass that merges every pair of the run where it meets it, leftmost first.
    """
    m = left.shape[0]
    stamp = np.full(np.int64(alphabet_size) + m, -1, dtype=np.int32)
    starts = np.empty(m + 1, dtype=np.int32)
    g = 0
    starts[0] = 0
    for k in range(m):
        if stamp[left[k]] == g or stamp[right[k]] == g:
            g += 1
            starts[g] = k
        stamp[left[k]] = g
        stamp[right[k]] = g
        stamp[alphabet_size + k] = g
    if m > 0:
        g += 1
    starts[g] = m
    return starts[: g + 1]


@njit(cache=True, nogil=True)
def _encode_by_passes(ids, start, stop, left, right, alphabet_size, pairs, bits,
                      node, head, entries, ranks_set, state, out, groups, pair_key, merged_to,
                      pass_yield):
    """Replay-encode ``ids[start:stop]`` into ``out[start:]`` by group passes, then the sweep.

    Each pass applies one group of ``rank_groups`` (``groups``) to the sequence, compacted in
    place in ``out``: a pass streams through memory, where the linked-list sweep of
    ``_encode_into`` jumps, so it is far faster per id while most ids still merge. Once a pass
    merges fewer than one id in ``pass_yield`` (0: never), the sweep finishes the remaining
    ranks on the compacted sequence (it holds no pair of a rank already applied: a pair of rank
    k can only be made by merges of rank < k). Workspaces as ``_encode_into``, plus
    ``pair_key`` int64 and ``merged_to`` int32 (A + M,): for a left child t of group g,
    ``g << 32 | right child`` and the merged token (``pair_key`` all -1 at first; a pass marks
    its group's left children, so ``pair_key[t] >> 32 == g`` only for a left child of group g:
    a later segment reuses the marks). Returns the token count, or ``-(i + 1)`` for the first id
    ``ids[start + i]`` outside [0, A) (nothing valid written).
    """
    n = stop - start
    # subtle: a view indexed from 0 (with offsets, numba's negative-index handling on every
    # access made the passes about 1.5 times slower)
    seq = out[start:stop]
    for i in range(n):
        v = ids[start + i]
        if v < 0 or v >= alphabet_size:
            return -(np.int64(i) + 1)
        seq[i] = v
    length = n
    n_groups = groups.shape[0] - 1
    g = 0
    while g < n_groups and length > 1:
        for k in range(groups[g], groups[g + 1]):
            t = left[k]  # a group's merges have distinct left children
            pair_key[t] = (np.int64(g) << 32) | np.int64(right[k])
            merged_to[t] = alphabet_size + k
        group_key = np.int64(g) << 32
        # subtle: every position is visited in order and decided without a branch, so no load
        # waits on a merge decision: a pass is bound by throughput, not latency. The pair at i
        # merges if it is the group's and i did not just merge as a right child (only a
        # self-pair (a, a) can be both: runs then pair from their left end). Writes stay at or
        # behind the read position (w <= i), so the pass works in place.
        w = 0
        prev = 0
        t = seq[0]
        for i in range(length - 1):
            nxt = seq[i + 1]
            hit = np.int64(pair_key[t] == (group_key | nxt)) & (1 - prev)
            seq[w] = t + (merged_to[t] - t) * hit
            w += 1 - prev
            prev = hit
            t = nxt
        if prev == 0:
            seq[w] = t
            w += 1
        merged = length - w
        length = w
        g += 1
        if pass_yield > 0 and merged * pass_yield < length:
            break
    if g >= n_groups or length <= 1:
        return np.int64(length)
    return _encode_into(seq, 0, length, left, right, alphabet_size, pairs, bits,
                        node, head, entries, ranks_set, state, seq, 0,
                        np.int64(alphabet_size) + left.shape[0])


@njit(cache=True, nogil=True)
def build_junction_table(left, right, alphabet_size, bits):
    """Hash set of the *junctions* of the merges: key ``last(left) * A + first(right)``.

    ``first(t)``/``last(t)`` are the first/last alphabet ids of token t's expansion. Every
    adjacent pair of alphabet ids inside any token's expansion is the junction of some merge,
    so a sequence can be cut between two ids whose pair is not a junction: no token will ever
    span the cut, and replay encodes the two sides independently (see ``find_segments``).
    Preconditions (validated by the caller): as ``build_pair_table``. Returns keys int64
    (``2**bits``, empty slots -1).
    """
    m = left.shape[0]
    first = np.empty(alphabet_size + m, dtype=np.int32)
    last = np.empty(alphabet_size + m, dtype=np.int32)
    for t in range(alphabet_size):
        first[t] = t
        last[t] = t
    size = np.int64(1) << np.int64(bits)
    shift = 64 - bits
    mask = size - 1
    keys = np.full(size, -1, dtype=np.int64)
    for k in range(m):
        first[alphabet_size + k] = first[left[k]]
        last[alphabet_size + k] = last[right[k]]
        key = np.int64(last[left[k]]) * alphabet_size + np.int64(first[right[k]])
        i = _slot(key, shift)
        while keys[i] >= 0 and keys[i] != key:
            i = (i + 1) & mask
        keys[i] = key
    return keys


@njit(cache=True, nogil=True)
def _is_junction(jkeys, key, shift, mask):
    i = _slot(key, shift)
    while True:
        k = jkeys[i]
        if k == key:
            return True
        if k < 0:
            return False
        i = (i + 1) & mask


@njit(cache=True, nogil=True)
def find_segments(ids, doc_bounds, alphabet_size, jkeys, jbits, chunk):
    """Cut documents into independent segments of about ``chunk`` ids at junction-free pairs.

    Preconditions (validated by the caller): ``ids`` int32; ``doc_bounds`` int64 (D + 1,)
    non-decreasing from 0 to len(ids); ``jkeys`` from ``build_junction_table(..., jbits)``;
    ``chunk >= 1``. Ids are not range-checked here (a bad id never equals a valid key).
    Returns ``(seg_bounds int64 (S + 1,), doc_seg int64 (D + 1,))``: document d is segments
    ``doc_seg[d] .. doc_seg[d+1]-1`` (one empty segment for an empty document); a segment is
    shorter than ``chunk`` only at a document's end, longer only where no cut was allowed.
    """
    n_docs = doc_bounds.shape[0] - 1
    shift = 64 - jbits
    mask = (np.int64(1) << np.int64(jbits)) - 1
    seg_bounds = np.empty(ids.shape[0] // chunk + n_docs + 1, dtype=np.int64)
    doc_seg = np.empty(n_docs + 1, dtype=np.int64)
    s = 0
    seg_bounds[0] = 0
    for d in range(n_docs):
        doc_seg[d] = s
        pos = doc_bounds[d]
        stop = doc_bounds[d + 1]
        while True:
            end = pos + chunk
            if end >= stop:
                end = stop
            else:
                # subtle: the cut goes *before* end; the pair (end-1, end) must be no junction
                while end < stop and _is_junction(
                    jkeys, np.int64(ids[end - 1]) * alphabet_size + np.int64(ids[end]), shift, mask
                ):
                    end += 1
            s += 1
            seg_bounds[s] = end
            pos = end
            if pos >= stop:
                break
    doc_seg[n_docs] = s
    return seg_bounds[: s + 1], doc_seg


@njit(cache=True, nogil=True)
def encode_segments(ids, seg_bounds, first, last, left, right, alphabet_size, pairs, bits,
                    out, counts, pass_min, pass_yield):
    """Replay-encode segments ``first .. last-1`` independently, each in place in ``out``.

    Preconditions (validated by the caller): ``ids`` int32; ``seg_bounds`` int64 from
    ``find_segments``; ``left``/``right`` int32 (M,), children of row k in ``[0, A + k)``;
    ``pairs`` from ``build_pair_table(..., bits)``; ``out`` int32 (len(ids),).
    Segment s's tokens go to ``out[seg_bounds[s]:]`` and their count to ``counts[s]`` (int64).
    Returns -1, or the first segment s holding an id outside [0, A); then ``counts[s] = -(i + 1)``
    for its first bad position i and later segments are not encoded.

    A segment of at least ``pass_min`` ids (0: none) starts with group passes
    (``_encode_by_passes``, ``pass_yield`` its switch); the tokens are the same either way.
    Extra memory then: 12 bytes a token of the vocabulary, and the groups (4 bytes a merge).
    """
    n_tokens = np.int64(alphabet_size) + left.shape[0]
    groups = np.zeros(0, dtype=np.int32)
    pair_key = np.zeros(0, dtype=np.int64)
    merged_to = np.zeros(0, dtype=np.int32)
    longest = np.int64(0)
    for s in range(first, last):
        longest = max(longest, seg_bounds[s + 1] - seg_bounds[s])
    m = left.shape[0]
    node = np.empty(4 * longest, dtype=np.int32)
    # subtle: at most 3 n entries: n - 1 initial pairs, then 2 per merge (at most n - 1 merges)
    entries = np.empty(6 * longest, dtype=np.int32)
    # subtle: every drained bucket is reset (head -1, bit cleared), so both are reusable
    head = np.full(m, -1, dtype=np.int32)
    ranks_set = np.zeros(m // 32 + 1, dtype=np.int64)
    state = np.zeros(1, dtype=np.int64)
    for s in range(first, last):
        start = seg_bounds[s]
        n = seg_bounds[s + 1] - start
        if pass_min > 0 and n >= pass_min:
            if groups.shape[0] == 0:
                groups = rank_groups(left, right, alphabet_size)
                pair_key = np.full(n_tokens, -1, dtype=np.int64)
                merged_to = np.zeros(n_tokens, dtype=np.int32)
            count = _encode_by_passes(ids, start, seg_bounds[s + 1], left, right, alphabet_size,
                                      pairs, bits, node, head, entries, ranks_set, state, out,
                                      groups, pair_key, merged_to, pass_yield)
        else:
            count = _encode_into(ids, start, seg_bounds[s + 1], left, right, alphabet_size,
                                 pairs, bits, node, head, entries, ranks_set, state,
                                 out, start, alphabet_size)
        counts[s] = count
        if count < 0:
            return np.int64(s)
    return np.int64(-1)


@njit(cache=True, nogil=True)
def compact_segments(out, seg_bounds, counts, doc_seg):
    """Move every segment's tokens down to follow the previous segment's; return doc bounds.

    Preconditions: the output of ``encode_segments`` for all segments (all counts >= 0).
    Returns ``out_bounds`` int64 (D + 1,): document d's tokens are
    ``out[out_bounds[d]:out_bounds[d+1]]``. Moves never overlap badly: targets are <= sources.
    """
    n_docs = doc_seg.shape[0] - 1
    out_bounds = np.empty(n_docs + 1, dtype=np.int64)
    o = np.int64(0)
    for d in range(n_docs):
        out_bounds[d] = o
        for s in range(doc_seg[d], doc_seg[d + 1]):
            src = seg_bounds[s]
            if src != o:
                for j in range(counts[s]):
                    out[o + j] = out[src + j]  # ascending copy is safe: o < src
            o += counts[s]
    out_bounds[n_docs] = o
    return out_bounds


# --------------------------------------------------------------------------------------------
# Decoding.
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def expansion_lengths(left, right, alphabet_size):
    """Expanded length and tree depth of every token.

    Preconditions (validated by the caller): ``left``/``right`` int32 (M,), children of row k
    in ``[0, A + k)``. Returns ``(lengths int64 (A + M,), depth int64 (A + M,))``; alphabet ids
    have length 1 and depth 0. Lengths saturate at ``LENGTH_CAP`` (2**61).
    """
    m = left.shape[0]
    lengths = np.ones(alphabet_size + m, dtype=np.int64)
    depth = np.zeros(alphabet_size + m, dtype=np.int64)
    for k in range(m):
        t = alphabet_size + k
        lengths[t] = min(lengths[left[k]] + lengths[right[k]], LENGTH_CAP)
        depth[t] = 1 + max(depth[left[k]], depth[right[k]])
    return lengths, depth


@njit(cache=True, nogil=True)
def build_table(left, right, alphabet_size, lengths, max_length):
    """Flat expansion table of the tokens of length <= ``max_length``.

    Preconditions (validated by the caller): as ``expansion_lengths``, ``lengths`` its output,
    ``max_length >= 1``. Returns ``(offsets int64 (A + M + 1,), values int32)``: a token t with
    ``lengths[t] <= max_length`` expands to ``values[offsets[t]:offsets[t + 1]]``; any other
    token has an empty slice. The children of a tabled token are tabled (they are shorter).
    """
    n = lengths.shape[0]
    offsets = np.zeros(n + 1, dtype=np.int64)
    for t in range(n):
        offsets[t + 1] = offsets[t] + (lengths[t] if lengths[t] <= max_length else 0)
    values = np.empty(offsets[n], dtype=np.int32)
    for t in range(min(alphabet_size, n)):
        values[offsets[t]] = t
    for k in range(left.shape[0]):
        t = alphabet_size + k
        if lengths[t] > max_length:
            continue
        o = offsets[t]
        for c in (left[k], right[k]):
            for j in range(offsets[c], offsets[c + 1]):
                values[o] = values[j]
                o += 1
    return offsets, values


@njit(cache=True, nogil=True)
def total_length(tokens, lengths):
    """Sum of ``lengths[t]`` over ``tokens``, saturating at ``LENGTH_CAP`` (2**61).

    Preconditions (validated by the caller): ``tokens`` int32 in ``[0, len(lengths))``,
    ``lengths`` from ``expansion_lengths`` (each <= LENGTH_CAP, so no sum step overflows).
    """
    total = np.int64(0)
    for i in range(tokens.shape[0]):
        total += lengths[tokens[i]]
        if total >= LENGTH_CAP:
            return LENGTH_CAP
    return total


@njit(cache=True, nogil=True)
def decode_kernel(tokens, left, right, alphabet_size, offsets, values, lengths, max_depth, out):
    """Expand priority-space tokens into ``out``; return the number of values written.

    Preconditions (validated by the caller): ``tokens`` int32 in ``[0, A + M)``; ``offsets``/
    ``values`` from ``build_table`` and ``lengths`` from ``expansion_lengths`` of the same model;
    ``max_depth`` >= every token's depth; ``out`` of ``values``' dtype (int32 ids, or the
    symbols' values when ``values`` is the table mapped through them) with room for
    ``total_length(tokens)``.
    Tabled tokens are copied; longer ones are split over their children with an explicit stack.
    """
    stack = np.empty(max_depth + 2, dtype=np.int32)
    o = np.int64(0)
    for i in range(tokens.shape[0]):
        t = tokens[i]
        s = offsets[t]
        e = offsets[t + 1]
        if e - s == lengths[t]:
            for j in range(s, e):
                out[o] = values[j]
                o += 1
            continue
        # subtle: depth-first, left child first; the stack holds at most one pending right
        # child per level of the tree, hence max_depth + 1 entries.
        top = 0
        stack[0] = t
        while top >= 0:
            x = stack[top]
            top -= 1
            s = offsets[x]
            e = offsets[x + 1]
            if e - s == lengths[x]:
                for j in range(s, e):
                    out[o] = values[j]
                    o += 1
            else:
                k = x - alphabet_size
                stack[top + 1] = right[k]
                stack[top + 2] = left[k]
                top += 2
    return o
