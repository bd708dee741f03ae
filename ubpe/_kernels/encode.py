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
leftmost first.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# Fibonacci hashing constant (2**64 / golden ratio), used as a uint64 multiplier.
_HASH_MULT = np.uint64(11400714819323198485)
# Saturation value of expanded lengths: lengths never exceed it, so sums of up to 2**30 of
# them cannot overflow int64.
LENGTH_CAP = np.int64(1) << np.int64(32)


# --------------------------------------------------------------------------------------------
# Pair table: open addressing (linear probing) from key = left * n_tokens + right to rank.
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def _slot(key, shift):
    return np.int64((np.uint64(key) * _HASH_MULT) >> np.uint64(shift))


@njit(cache=True, nogil=True, inline="always")
def _lookup(keys, ranks, key, shift, mask):
    i = _slot(key, shift)
    while True:
        k = keys[i]
        if k == key:
            return np.int64(ranks[i])
        if k < 0:
            return np.int64(-1)
        i = (i + 1) & mask


@njit(cache=True, nogil=True)
def build_pair_table(left, right, alphabet_size, bits):
    """Open-addressing hash table of merge pairs: key ``left * (A + M) + right`` -> rank.

    Preconditions (validated by the caller): ``left``/``right`` int32 (M,), children of row k
    in ``[0, A + k)``; ``2**bits >= 2 * M`` and ``1 <= bits <= 62``.
    Returns ``(keys int64, ranks int32)`` of size ``2**bits``; empty slots have key ``-1``.
    A pair listed twice keeps its first (lowest) rank: the later copy can never fire in replay.
    """
    size = np.int64(1) << np.int64(bits)
    shift = 64 - bits
    mask = size - 1
    n_tokens = np.int64(alphabet_size) + left.shape[0]
    keys = np.full(size, -1, dtype=np.int64)
    ranks = np.full(size, -1, dtype=np.int32)
    for k in range(left.shape[0]):
        key = np.int64(left[k]) * n_tokens + np.int64(right[k])
        i = _slot(key, shift)
        while keys[i] >= 0 and keys[i] != key:
            i = (i + 1) & mask
        if keys[i] < 0:  # subtle: an existing key keeps its lower rank (first listed)
            keys[i] = key
            ranks[i] = k
    return keys, ranks


# --------------------------------------------------------------------------------------------
# Replay encoding.
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def _push(rank, pos, head, epos, enext, rheap, state):
    """File position ``pos`` in bucket ``rank``; a bucket becoming non-empty enters the heap."""
    e = state[0]
    state[0] = e + 1
    epos[e] = pos
    enext[e] = head[rank]
    if head[rank] < 0:
        # sift up in the min-heap of non-empty ranks (each rank is in it at most once)
        i = state[1]
        state[1] = i + 1
        while i > 0:
            parent = (i - 1) >> 1
            if rheap[parent] <= rank:
                break
            rheap[i] = rheap[parent]
            i = parent
        rheap[i] = rank
    head[rank] = e


@njit(cache=True, nogil=True, inline="always")
def _pop_rank(rheap, state):
    """Remove and return the smallest rank of the heap (which is non-empty)."""
    top = rheap[0]
    size = state[1] - 1
    state[1] = size
    last = rheap[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and rheap[child + 1] < rheap[child]:
            child += 1
        if rheap[child] >= last:
            break
        rheap[i] = rheap[child]
        i = child
    rheap[i] = last
    return top


@njit(cache=True, nogil=True, inline="always")
def _merge_at(p, new, tok, nxt, prv, n_tokens, keys, ranks, shift, mask, head, epos, enext,
              rheap, state):
    """Replace the pair at ``p`` (``p`` and ``nxt[p]``) by ``new`` and file the pairs it makes."""
    q = nxt[p]
    r = nxt[q]
    tok[p] = new
    tok[q] = -1  # subtle: dead positions hold -1 so that every stale entry fails validation
    nxt[p] = r
    if r >= 0:
        prv[r] = p
    pp = prv[p]
    if pp >= 0:
        rank = _lookup(keys, ranks, np.int64(tok[pp]) * n_tokens + new, shift, mask)
        if rank >= 0:
            _push(rank, pp, head, epos, enext, rheap, state)
    if r >= 0:
        rank = _lookup(keys, ranks, np.int64(new) * n_tokens + np.int64(tok[r]), shift, mask)
        if rank >= 0:
            _push(rank, p, head, epos, enext, rheap, state)


@njit(cache=True, nogil=True)
def _encode_into(ids, start, stop, left, right, alphabet_size, keys, ranks, bits,
                 tok, nxt, prv, head, epos, enext, rheap, state, out, out_start):
    """Replay-encode ``ids[start:stop]`` into ``out[out_start:]``; return the token count.

    Workspaces: ``tok/nxt/prv`` int32 of size >= n, ``epos/enext`` int32 of size >= 3 n,
    ``head`` int32 (M,) all -1 on entry (and on exit), ``rheap`` int32 (M,), ``state`` int64 (2,).
    Returns ``-(i + 1)`` (nothing written) if ``ids[start + i]`` is the first id outside [0, A).
    """
    n = stop - start
    for i in range(n):
        v = ids[start + i]
        if v < 0 or v >= alphabet_size:
            return -(np.int64(i) + 1)
        tok[i] = v
        nxt[i] = i + 1
        prv[i] = i - 1
    if n <= 1:
        if n == 1:
            out[out_start] = tok[0]
        return np.int64(n)
    nxt[n - 1] = -1
    n_tokens = np.int64(alphabet_size) + left.shape[0]
    shift = 64 - bits
    mask = (np.int64(1) << np.int64(bits)) - 1
    state[0] = 0
    state[1] = 0
    # subtle: initial pairs are filed right to left, so that each bucket list (LIFO) is
    # drained left to right; this only helps locality, correctness does not depend on it.
    for i in range(n - 2, -1, -1):
        rank = _lookup(keys, ranks, np.int64(tok[i]) * n_tokens + np.int64(tok[i + 1]), shift, mask)
        if rank >= 0:
            _push(rank, i, head, epos, enext, rheap, state)
    while state[1] > 0:
        k = _pop_rank(rheap, state)
        a = left[k]
        b = right[k]
        new = np.int32(alphabet_size + k)
        e = head[k]
        head[k] = -1
        # subtle: merges of bucket k only file pairs of rank > k, so this list cannot grow
        # while it is drained; stale entries are recognised by re-checking the pair.
        while e >= 0:
            p = epos[e]
            e = enext[e]
            if tok[p] != a:
                continue
            q = nxt[p]
            if q < 0 or tok[q] != b:
                continue
            if a != b:
                # distinct children: occurrences cannot overlap, so their order is irrelevant
                _merge_at(p, new, tok, nxt, prv, n_tokens, keys, ranks, shift, mask,
                          head, epos, enext, rheap, state)
            else:
                # subtle: (a, a) overlaps itself; replay pairs each maximal run of a from its
                # left end, so walk back to the run start and merge the whole run now. The
                # run's other entries are then stale (their position is dead or no longer a).
                while prv[p] >= 0 and tok[prv[p]] == a:
                    p = prv[p]
                while True:
                    q = nxt[p]
                    if q < 0 or tok[q] != a:
                        break
                    _merge_at(p, new, tok, nxt, prv, n_tokens, keys, ranks, shift, mask,
                              head, epos, enext, rheap, state)
                    p = nxt[p]
                    if p < 0 or tok[p] != a:
                        break
    # position 0 is never consumed (it is never the right element of a pair)
    count = np.int64(0)
    p = 0
    while p >= 0:
        out[out_start + count] = tok[p]
        count += 1
        p = nxt[p]
    return count


@njit(cache=True, nogil=True)
def encode_kernel(ids, left, right, alphabet_size, keys, ranks, bits, out):
    """Replay-encode one sequence; return the number of tokens written to ``out``.

    Preconditions (validated by the caller): ``ids`` int32 (n,); ``left``/``right`` int32 (M,)
    with children of row k in ``[0, A + k)``; ``keys``/``ranks`` from ``build_pair_table(...,
    bits)``; ``out`` int32 of size >= n. Output: priority-space tokens, count <= n.
    Returns ``-(i + 1)`` if ``ids[i]`` is the first id outside ``[0, A)`` (nothing valid written).
    """
    n = ids.shape[0]
    m = left.shape[0]
    tok = np.empty(n, dtype=np.int32)
    nxt = np.empty(n, dtype=np.int32)
    prv = np.empty(n, dtype=np.int32)
    epos = np.empty(3 * n, dtype=np.int32)
    enext = np.empty(3 * n, dtype=np.int32)
    head = np.full(m, -1, dtype=np.int32)
    rheap = np.empty(m, dtype=np.int32)
    state = np.zeros(2, dtype=np.int64)
    return _encode_into(ids, 0, n, left, right, alphabet_size, keys, ranks, bits,
                        tok, nxt, prv, head, epos, enext, rheap, state, out, 0)


@njit(cache=True, nogil=True)
def encode_batch_kernel(ids, bounds, first, last, left, right, alphabet_size, keys, ranks, bits,
                        out, out_bounds):
    """Replay-encode documents ``first .. last-1`` of a concatenation, each independently.

    Preconditions (validated by the caller): ``ids`` int32 (total,), document d is
    ``ids[bounds[d]:bounds[d+1]]`` (``bounds`` int64, non-decreasing); tables as for
    ``encode_kernel``; ``out`` int32 (total,). Document d's tokens go to ``out[bounds[d]:]`` and
    their count to ``out_bounds[d]`` (int64). Returns -1 when all ids are valid, else the
    document index d and sets ``out_bounds[d] = -(i + 1)`` for its first bad position i.
    """
    longest = np.int64(0)
    for d in range(first, last):
        longest = max(longest, bounds[d + 1] - bounds[d])
    m = left.shape[0]
    tok = np.empty(longest, dtype=np.int32)
    nxt = np.empty(longest, dtype=np.int32)
    prv = np.empty(longest, dtype=np.int32)
    epos = np.empty(3 * longest, dtype=np.int32)
    enext = np.empty(3 * longest, dtype=np.int32)
    head = np.full(m, -1, dtype=np.int32)  # subtle: every drained bucket is reset to -1
    rheap = np.empty(m, dtype=np.int32)
    state = np.zeros(2, dtype=np.int64)
    for d in range(first, last):
        count = _encode_into(ids, bounds[d], bounds[d + 1], left, right, alphabet_size, keys,
                             ranks, bits, tok, nxt, prv, head, epos, enext, rheap, state, out,
                             bounds[d])
        out_bounds[d] = count
        if count < 0:
            return np.int64(d)
    return np.int64(-1)


# --------------------------------------------------------------------------------------------
# Decoding.
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def expansion_lengths(left, right, alphabet_size):
    """Expanded length and tree depth of every token.

    Preconditions (validated by the caller): ``left``/``right`` int32 (M,), children of row k
    in ``[0, A + k)``. Returns ``(lengths int64 (A + M,), depth int64 (A + M,))``; alphabet ids
    have length 1 and depth 0. Lengths saturate at ``LENGTH_CAP`` (2**32): a model of doubling
    merges can name tokens longer than any array.
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
    """Sum of ``lengths[t]`` over ``tokens``, saturating at ``2**62``.

    Preconditions (validated by the caller): ``tokens`` int32 in ``[0, len(lengths))``.
    """
    limit = np.int64(1) << np.int64(62)
    total = np.int64(0)
    for i in range(tokens.shape[0]):
        total += lengths[tokens[i]]
        if total >= limit:
            return limit
    return total


@njit(cache=True, nogil=True)
def decode_kernel(tokens, left, right, alphabet_size, offsets, values, lengths, max_depth, out):
    """Expand priority-space tokens into ``out``; return the number of values written.

    Preconditions (validated by the caller): ``tokens`` int32 in ``[0, A + M)``; ``offsets``/
    ``values`` from ``build_table`` and ``lengths`` from ``expansion_lengths`` of the same model;
    ``max_depth`` >= every token's depth; ``out`` int32 with room for ``total_length(tokens)``.
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
