"""Numba kernels of the BPE trainer (see docs/algorithm.md and ubpe/trainer.py).

State layout shared by every kernel (validated and allocated by ``ubpe.trainer``):

- ``rec``: (n, 4) int32, one record per input position: ``rec[i, TOK]`` token (-1 once the
  position was absorbed into its left neighbour), ``PREV``/``NEXT`` linked list inside the
  document (-1 at the ends), ``PID`` id of the pair starting at ``i`` (-1 if none, -2 if the
  pair is untracked because its count is below min_count: it can never be selected or block).
- pairs ("pids"): ``keys[pid] = left * V + right`` (int64), ``cnt[pid]`` overlapping count
  (int64), ``occ_s[pid]:occ_e[pid]`` a segment of ``pool`` (int32 positions) holding a superset of
  the pair's occurrences, sorted by position; stale entries fail validation. Segments lie in
  the pool in pid order. Every pair's occurrences are created at once (by the initial scan, or
  by the merge creating its newest token), which is why one sorted segment per pair suffices.
- ``table``: open-addressing (linear probing) hash table of pids over ``keys``, -1 = empty,
  size a power of two, load factor kept <= 1/2 by the caller. ``mtab``: a small table of the
  same kind for the pairs created by the merge in progress.
- heap: lazy max-heap of ``(hsnap, hkey, hpid)``, ordered by snapshot count descending then key
  ascending; at most one entry per pid; a snapshot is >= the pair's current count.
- ``state`` (int64): see the ``S_*`` indices below.
- ``pu``: (n,) int32, the idf unit holding each position (the largest ``u`` with
  ``unit_offsets[u] <= i``: empty units hold no position).
- weights (optional, word-frequency training): ``uw`` (int64, (U,)) multiplicity of each idf unit,
  which is that of the document holding it (units lie inside documents), so position ``i``
  counts ``uw[pu[i]]``; an empty ``uw`` means 1 for all. Every count (pair counts, merge counts,
  df) adds the multiplicity instead of 1, so a weighted document counts as that many copies.

Kernels never raise: they return status codes and the driver grows arrays between calls.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from . import njit
from .intrinsics import imin, select

TOK = 0
PREV = 1
NEXT = 2
PID = 3

# state indices
S_NPIDS = 0  # pids allocated
S_POOL = 1  # used length of pool
S_HEAP = 2  # heap length
S_MERGES = 3  # merges recorded
S_BATCH = 4  # next batch index
S_NEED_PIDS = 5  # on NEED_CAPACITY: pid capacity required
S_NEED_POOL = 6  # on NEED_CAPACITY: pool capacity required
S_NEED_PEND = 7  # on NEED_CAPACITY: pending buffer capacity required
S_NEED_MTAB = 8  # on NEED_CAPACITY: per-merge table size required
S_PHASE = 9  # -1: next step is a selection; else index of the next candidate to process
S_NCAND = 10  # candidates of the current batch
S_NDIRTY = 11  # pids listed in ``dirty`` (steppable trainer only, see apply_merges)
S_SIZE = 12

# statuses returned by train_batches
DONE = 0  # the vocabulary reached n_tokens
STOPPED = 1  # no pair reaches min_count
YIELD = 2  # work budget used up: call again (lets the driver report progress)
NEED_CAPACITY = 3  # grow the arrays named by state[S_NEED_*], then call again

_MIX = -7046029254386353131  # 0x9E3779B97F4A7C15 as int64
# A merge walk prefetches the record of the occurrence _AHEAD entries ahead of the one it
# replaces, then (that record has arrived) those of its neighbours _AHEAD_NEIGHBOURS ahead, then
# that of the right neighbour's right neighbour _AHEAD_NEXT2 ahead.
_AHEAD = 16
_AHEAD_NEIGHBOURS = 8
_AHEAD_NEXT2 = 4


@intrinsic
def _prefetch(typingctx, arr, i):
    """Hint the CPU to load the cache line of ``arr[i]`` (``arr[i, 0]`` for a 2-D array).

    A hint only (LLVM ``llvm.prefetch``, read, keep in all levels): no effect on results, never
    faults, ``i`` is not bounds-checked. Lets a walk over scattered positions overlap its misses.
    """
    if not isinstance(arr, types.Array) or not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        aryty, ity = sig.args
        ary = context.make_array(aryty)(context, builder, args[0])
        inds = [context.cast(builder, args[1], ity, types.intp)]
        inds += [context.get_constant(types.intp, 0)] * (aryty.ndim - 1)
        ptr = cgutils.get_item_pointer2(context, builder, data=ary.data,
                                        shape=cgutils.unpack_tuple(builder, ary.shape),
                                        strides=cgutils.unpack_tuple(builder, ary.strides),
                                        layout=aryty.layout, inds=inds, wraparound=False,
                                        boundscheck=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        # the intrinsic is mangled by pointer type: "p0" with opaque pointers (LLVM >= 15)
        name = "llvm.prefetch.p0" if str(i8p) == "ptr" else "llvm.prefetch.p0i8"
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), name)
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.none(arr, i), codegen


if numba.config.DISABLE_JIT:  # pure-Python debugging runs: the hint is a no-op

    def _prefetch(arr, i):  # noqa: F811
        return None


def _slot(key, mask):
    """Home slot of ``key`` (int64 >= 0) in a table of ``mask + 1`` (power of two) slots.

    Pure, deterministic function of ``key`` and ``mask``; result in ``[0, mask]``. Mixes the
    high bits in so that keys ``left * V + right`` spread over the low bits.
    """
    # subtle: int64 multiplication wraps in numba (no overflow check), which is what we want.
    x = key ^ (key >> 31)
    x = x * _MIX
    x = x ^ (x >> 29)
    return x & mask


@njit(cache=True, nogil=True, inline="always")
def _lookup(table, keys, key):
    """Pid of ``key`` in ``table`` (int32, power-of-two size, load <= 1/2), or -1 if absent.

    ``keys`` (int64) holds the key of every pid stored in ``table``.
    """
    mask = table.shape[0] - 1
    h = _slot(key, mask)
    while True:
        s = table[h]
        if s == -1:
            return -1
        if keys[s] == key:
            return s
        h = (h + 1) & mask


@njit(cache=True, nogil=True, inline="always")
def _get_or_add(table, mask, keys, key, n_pids):
    """Pid of ``key`` in ``table[:mask + 1]``; if absent, store it as pid ``n_pids``.

    Caller guarantees room: ``n_pids < keys.shape[0]`` and the load stays <= 1/2. The caller
    detects an insertion by ``result == n_pids`` and initialises that pid's other arrays.
    """
    h = _slot(key, mask)
    while True:
        s = table[h]
        if s == -1:
            table[h] = n_pids
            keys[n_pids] = key
            return n_pids
        if keys[s] == key:
            return s
        h = (h + 1) & mask


def _before(s1, k1, s2, k2):
    """True if heap entry (s1, k1) ranks before (s2, k2): count descending, then key ascending.

    Inputs are int64 counts and keys ``left * V + right``; key order is (left, right) order.
    Keys are unique per pid, so this is a strict total order over live entries (the spec's rank).
    """
    return s1 > s2 or (s1 == s2 and k1 < k2)


# Compiled, _slot and _before are intrinsics: the same int64 operations emitted into the calling
# kernel, where an inlined copy was typed and lowered at each of their 14 call sites (their
# definitions above run under NUMBA_DISABLE_JIT).
def _int64_args(context, builder, sig, args):
    return [context.cast(builder, a, t, types.int64) for a, t in zip(args, sig.args)]


@intrinsic
def _slot_intrinsic(typingctx, key, mask):
    if not isinstance(key, types.Integer) or not isinstance(mask, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        k, m = _int64_args(context, builder, sig, args)
        i64 = ir.IntType(64)
        x = builder.xor(k, builder.ashr(k, i64(31)))
        x = builder.mul(x, i64(_MIX))
        x = builder.xor(x, builder.ashr(x, i64(29)))
        return builder.and_(x, m)

    return types.int64(types.unliteral(key), types.unliteral(mask)), codegen


@intrinsic
def _before_intrinsic(typingctx, s1, k1, s2, k2):
    if not all(isinstance(a, types.Integer) for a in (s1, k1, s2, k2)):
        return None

    def codegen(context, builder, sig, args):
        a1, b1, a2, b2 = _int64_args(context, builder, sig, args)
        tie = builder.and_(builder.icmp_signed("==", a1, a2), builder.icmp_signed("<", b1, b2))
        return builder.or_(builder.icmp_signed(">", a1, a2), tie)

    return types.boolean(*[types.unliteral(a) for a in (s1, k1, s2, k2)]), codegen


if not numba.config.DISABLE_JIT:
    _slot, _before = _slot_intrinsic, _before_intrinsic  # noqa: F811


@njit(cache=True, nogil=True, inline="always")
def _heap_push(hsnap, hkey, hpid, hlen, snap, key, pid):
    """Insert (snap, key, pid) into the heap of length ``hlen``; return the new length.

    Caller guarantees ``hlen < hsnap.shape[0]``. Heap order: ``_before`` at the root.
    """
    i = hlen
    while i > 0:
        parent = (i - 1) >> 1
        if _before(snap, key, hsnap[parent], hkey[parent]):
            hsnap[i] = hsnap[parent]
            hkey[i] = hkey[parent]
            hpid[i] = hpid[parent]
            i = parent
        else:
            break
    hsnap[i] = snap
    hkey[i] = key
    hpid[i] = pid
    return hlen + 1


@njit(cache=True, nogil=True, inline="always")
def _sift_down(hsnap, hkey, hpid, hlen, i):
    """Restore heap order below slot ``i`` (0 <= i < hlen) of a heap of length ``hlen``.

    Only the entry at ``i`` may be out of place; afterwards ``_before``-order holds everywhere.
    """
    snap = hsnap[i]
    key = hkey[i]
    pid = hpid[i]
    while True:
        child = 2 * i + 1
        if child >= hlen:
            break
        if child + 1 < hlen and _before(hsnap[child + 1], hkey[child + 1], hsnap[child], hkey[child]):
            child += 1
        if _before(hsnap[child], hkey[child], snap, key):
            hsnap[i] = hsnap[child]
            hkey[i] = hkey[child]
            hpid[i] = hpid[child]
            i = child
        else:
            break
    hsnap[i] = snap
    hkey[i] = key
    hpid[i] = pid


@njit(cache=True, nogil=True)
def first_copies(ids, doc_offsets, table, hashes, owner):
    """The first copy of every document: ``owner[d]`` (int64, (D,)) is the smallest ``e <= d``
    whose document equals document ``d`` value for value (``d`` itself for a first copy).

    ``ids`` int32 (n,), ``doc_offsets`` int64 (D+1,), validated by the caller; ``table`` int64,
    all -1, a power of two >= 2 * D slots; ``hashes`` int64 (D,) scratch. Documents are hashed
    into the open-addressing table and compared exactly on equal hashes, so the result never
    depends on hash collisions. Returns the number of distinct documents.
    """
    n_docs = doc_offsets.shape[0] - 1
    mask = table.shape[0] - 1
    n_distinct = 0
    for d in range(n_docs):
        a = doc_offsets[d]
        b = doc_offsets[d + 1]
        h = b - a
        for i in range(a, b):
            h = (h ^ ids[i]) * _MIX  # wraps (int64 arithmetic in numba)
            h ^= h >> 32
        hashes[d] = h
        slot = _slot(h & 0x7FFFFFFFFFFFFFFF, mask)
        while True:
            e = table[slot]
            if e == -1:
                table[slot] = d
                owner[d] = d
                n_distinct += 1
                break
            if hashes[e] == h and doc_offsets[e + 1] - doc_offsets[e] == b - a:
                o = doc_offsets[e] - a
                same = True
                for i in range(a, b):
                    if ids[i] != ids[i + o]:
                        same = False
                        break
                if same:
                    owner[d] = e
                    break
            slot = (slot + 1) & mask
    return n_distinct


@njit(cache=True, nogil=True)
def link_documents(ids, doc_offsets, unit_offsets, rec, pu):
    """Fill ``rec`` (n, 4) int32 and ``pu`` (n,) int32 from ``ids`` (int32, (n,)), ``doc_offsets``
    (int64, (D+1,)) and ``unit_offsets`` (int64, (U+1,), U < 2**31).

    Preconditions (validated by the caller): offsets start at 0, end at n, non-decreasing.
    Afterwards TOK = ids, PREV/NEXT link positions inside each document (-1 at its ends),
    PID = -1 everywhere; ``pu[i]`` is the unit holding position ``i``. Returns 0.
    """
    for d in range(doc_offsets.shape[0] - 1):
        a = doc_offsets[d]
        b = doc_offsets[d + 1]
        for i in range(a, b):
            rec[i, TOK] = ids[i]
            rec[i, PREV] = select(i > a, i - 1, -1)
            rec[i, NEXT] = select(i + 1 < b, i + 1, -1)
            rec[i, PID] = -1
    for u in range(unit_offsets.shape[0] - 1):
        for i in range(unit_offsets[u], unit_offsets[u + 1]):
            pu[i] = u
    return 0


@njit(cache=True, nogil=True)
def count_initial_pairs(rec, V, table, keys, cnt, start, state, pu, uw, dense, A):
    """Assign pids to the adjacent pairs of ``rec`` from position ``start`` on and count them.

    Preconditions: ``rec``/``pu`` filled by ``link_documents``; tokens < V; ``table`` empty
    slots = -1; ``uw`` empty (every position counts 1) or the int64 multiplicity of every unit.
    Pids are numbered in order of first appearance. ``dense`` empty: pairs are found in the hash
    ``table``; else an all -1 int32 array of ``A * A`` slots indexed ``left * A + right`` (every
    token < A) replaces it (``table`` unused, ``keys`` must then hold every distinct pair).
    Stops before a new pid would exceed ``keys.shape[0]`` or a load of 1/2: returns the position
    to resume from after growing (n when done). ``state[S_NPIDS]`` is kept up to date.
    """
    n = rec.shape[0]
    n_pids = state[S_NPIDS]
    is_dense = dense.shape[0] > 0
    cap = select(is_dense, keys.shape[0], imin(keys.shape[0], table.shape[0] // 2))
    for i in range(start, n):
        j = rec[i, NEXT]
        if j == -1:
            continue
        if n_pids >= cap:
            state[S_NPIDS] = n_pids
            return i
        left = rec[i, TOK]
        right = rec[j, TOK]
        if is_dense:
            # subtle: a direct index costs one cache-resident load instead of a hash probe
            slot = np.int64(left) * A + right
            p = dense[slot]
            if p == -1:
                p = n_pids
                dense[slot] = p
                keys[p] = np.int64(left) * V + right
        else:
            p = _get_or_add(table, table.shape[0] - 1, keys, np.int64(left) * V + right, n_pids)
        if p == n_pids:
            cnt[p] = 0
            n_pids += 1
        cnt[p] += 1 if uw.shape[0] == 0 else uw[pu[i]]
        rec[i, PID] = p
    state[S_NPIDS] = n_pids
    return n


@njit(cache=True, nogil=True)
def drop_rare_pairs(rec, keys, cnt, n_pids, min_count, remap):
    """Untrack the pairs with ``cnt < min_count``: renumber the others densely (pid order kept).

    ``remap`` int64 holds >= n_pids entries (scratch). Afterwards ``rec[:, PID]`` is the new pid,
    -2 for an untracked pair, -1 for none; ``keys``/``cnt`` are compacted. The hash table must
    be rebuilt by the caller. Returns (new number of pids, positions holding a tracked pair).
    """
    w = 0
    for p in range(n_pids):
        if cnt[p] >= min_count:
            remap[p] = w
            keys[w] = keys[p]
            cnt[w] = cnt[p]
            w += 1
        else:
            remap[p] = -2
    tracked = 0
    for i in range(rec.shape[0]):
        p = rec[i, PID]
        if p >= 0:
            p = remap[p]
            rec[i, PID] = p
            if p >= 0:
                tracked += 1
    return w, tracked


@njit(cache=True, nogil=True)
def rehash(keys, n_pids, table):
    """Insert pids ``0 .. n_pids-1`` (distinct int64 ``keys``) into the all -1 ``table``.

    ``table`` size is a power of two >= 2 * n_pids. Returns 0.
    """
    mask = table.shape[0] - 1
    for p in range(n_pids):
        h = _slot(keys[p], mask)
        while table[h] != -1:
            h = (h + 1) & mask
        table[h] = p
    return 0


@njit(cache=True, nogil=True)
def build_occurrences(rec, n_pids, occ_s, occ_e, pool):
    """Counting sort of the positions holding a pair, by pid, into ``pool`` (int32).

    Preconditions: ``rec[:, PID]`` in [-1, n_pids); ``pool`` holds at least that many entries.
    Afterwards ``pool[occ_s[p]:occ_e[p]]`` lists pair ``p``'s positions in increasing order,
    segments laid out in pid order. Returns the used pool length.
    """
    n = rec.shape[0]
    for p in range(n_pids):
        occ_e[p] = 0
    for i in range(n):
        p = rec[i, PID]
        if p >= 0:
            occ_e[p] += 1
    total = 0
    for p in range(n_pids):
        c = occ_e[p]
        occ_s[p] = total
        occ_e[p] = total
        total += c
    for i in range(n):
        p = rec[i, PID]
        if p >= 0:
            pool[occ_e[p]] = i
            occ_e[p] += 1
    return total


@njit(cache=True, nogil=True)
def heapify(cnt, keys, n_pids, min_count, hsnap, hkey, hpid):
    """Build the heap of every pid with ``cnt >= min_count`` (min_count >= 1).

    Heap arrays hold >= n_pids entries. Returns the heap length.
    """
    hlen = 0
    for p in range(n_pids):
        if cnt[p] >= min_count:
            hsnap[hlen] = cnt[p]
            hkey[hlen] = keys[p]
            hpid[hlen] = p
            hlen += 1
    for i in range(hlen // 2 - 1, -1, -1):
        _sift_down(hsnap, hkey, hpid, hlen, i)
    return hlen


@njit(cache=True, nogil=True)
def _compact_pool(rec, keys, cnt, occ_s, occ_e, pool, n_pids, V, min_count):
    """Squeeze ``pool`` in place, keeping only the segments of pairs with ``cnt >= min_count``.

    Precondition: segments are laid out in increasing pid order (true by construction).
    Segments holding more than twice their count are also cleared of stale entries, so the
    result holds at most 2 * sum(cnt) entries. Returns the new used length; order is preserved.
    """
    w = 0
    for p in range(n_pids):
        s = occ_s[p]
        e = occ_e[p]
        occ_s[p] = w
        c = cnt[p]
        # subtle: counts of existing pairs never grow, so a pair below min_count is never
        # selected again and its occurrence list can go.
        if c >= min_count:
            if e - s > 2 * c:
                # subtle: validating costs a random access per entry; only done when at least
                # half the entries go, so the total cost stays linear in the entries created.
                left = keys[p] // V
                right = keys[p] - left * V
                for k in range(s, e):
                    i = pool[k]
                    if rec[i, TOK] != left:
                        continue
                    j = rec[i, NEXT]
                    if j == -1 or rec[j, TOK] != right:
                        continue
                    pool[w] = i
                    w += 1
            else:
                for k in range(s, e):
                    pool[w] = pool[k]
                    w += 1
        occ_e[p] = w
    return w


@njit(cache=True, nogil=True)
def _merge_pair(rec, pu, pool, pend, keys, cnt, occ_s, occ_e, table, mtab, mmask, state, P, X, V,
                min_count, uw, marked, dirty):
    """Replace the occurrences of pair ``P`` by token ``X``, left to right without overlap.

    Preconditions (checked by the caller): room for the new pids in ``keys``/``table`` (load
    <= 1/2), ``mtab[:mmask + 1]`` all -1 and twice the new pids, ``pend`` ((rows, 2) int32:
    position, pair) and the pool's free tail >= twice the pair's occurrences. ``pu``: unit of
    each position; ``uw``: unit multiplicities (empty: all 1). Updates the counts of all touched
    pairs, creates the new pairs (keeping those with count >= min_count) and appends their
    occurrence segments (sorted) at the pool's end. Returns (count, df).

    ``marked``/``dirty`` (int32, empty in :func:`train_batches`): when given (one entry per pid
    capacity), every existing pid whose count changes is listed once in
    ``dirty[:state[S_NDIRTY]]`` (``marked[pid] = 1``); the new pids are the caller's to list.
    """
    left = keys[P] // V
    right = keys[P] - left * V
    n_pids = state[S_NPIDS]
    base = n_pids
    pool_len = state[S_POOL]
    npend = 0
    count = 0
    df = 0
    last_unit = -1  # unit of the last replaced position
    weighted = uw.shape[0] > 0
    track = marked.shape[0] > 0
    nd = state[S_NDIRTY]
    if track and marked[P] == 0:
        marked[P] = 1
        dirty[nd] = P
        nd += 1
    seg_end = occ_e[P]
    # subtle: the segment is sorted by position, so walking it and skipping entries that are no
    # longer an occurrence (e.g. the second (a, a) of "a a a", consumed by the first) is exactly
    # the left-to-right non-overlapping replacement of the spec.
    # the positions are scattered over rec: ask for those of later occurrences early, so that
    # the cache misses overlap instead of each stalling the walk
    for k in range(occ_s[P], imin(occ_s[P] + _AHEAD, seg_end)):
        _prefetch(rec, pool[k])
        _prefetch(pu, pool[k])
    for k in range(occ_s[P], seg_end):
        if k + _AHEAD < seg_end:
            f = pool[k + _AHEAD]
            _prefetch(rec, f)
            _prefetch(pu, f)
        if k + _AHEAD_NEIGHBOURS < seg_end:
            f = pool[k + _AHEAD_NEIGHBOURS]
            g = rec[f, NEXT]
            if g != -1:
                _prefetch(rec, g)
            g = rec[f, PREV]
            if g != -1:
                _prefetch(rec, g)
        if k + _AHEAD_NEXT2 < seg_end:
            g = rec[pool[k + _AHEAD_NEXT2], NEXT]
            if g != -1:
                g = rec[g, NEXT]
                if g != -1:
                    _prefetch(rec, g)
        p = pool[k]
        if rec[p, TOK] != left:
            continue
        q = rec[p, NEXT]
        if q == -1 or rec[q, TOK] != right:
            continue
        a = rec[p, PREV]
        c = rec[q, NEXT]
        u = pu[p]
        w = uw[u] if weighted else 1  # a unit lies inside one document: its multiplicity
        # subtle: PID -2 marks a pair below min_count that is not tracked (it can never be
        # selected nor block a candidate, since counts of existing pairs only drop).
        if a != -1:
            b = rec[a, PID]
            if b >= 0:
                cnt[b] -= w
                # a pid >= base is new (renumbered below): listed by the caller
                if track and b < base and marked[b] == 0:
                    marked[b] = 1
                    dirty[nd] = b
                    nd += 1
        cnt[P] -= w
        if c != -1:
            b = rec[q, PID]
            if b >= 0:
                cnt[b] -= w
                if track and b < base and marked[b] == 0:
                    marked[b] = 1
                    dirty[nd] = b
                    nd += 1
            rec[c, PREV] = p
        rec[p, TOK] = X
        rec[p, NEXT] = c
        rec[q, TOK] = -1
        rec[q, PID] = -1
        # subtle: every pair created here holds X, and no later merge creates a pair holding X,
        # so the new pairs are found in the small per-merge table mtab (cache resident); the
        # big table only learns them after the walk.
        if a != -1:
            ta = rec[a, TOK]
            np_ = _get_or_add(mtab, mmask, keys, np.int64(ta) * V + X, n_pids)
            if np_ == n_pids:
                cnt[np_] = 0
                n_pids += 1
            cnt[np_] += w
            rec[a, PID] = np_
            # subtle: if a holds X it was the site just before this one, pended last as "p":
            # its pair changed from (X, left) to (X, X), so its pended pair changes too.
            if ta != X:
                pend[npend, 0] = a
                pend[npend, 1] = np_
                npend += 1
            else:
                pend[npend - 1, 1] = np_
        if c != -1:
            np_ = _get_or_add(mtab, mmask, keys, np.int64(X) * V + rec[c, TOK], n_pids)
            if np_ == n_pids:
                cnt[np_] = 0
                n_pids += 1
            cnt[np_] += w
            rec[p, PID] = np_
            pend[npend, 0] = p
            pend[npend, 1] = np_
            npend += 1
        else:
            rec[p, PID] = -1
        count += w
        # df: positions come in increasing order, so units are non-decreasing and each unit
        # holding a replaced occurrence is met in one run.
        if u != last_unit:
            last_unit = u
            df += w
    occ_e[P] = occ_s[P]  # every occurrence is gone
    for k in range(mmask + 1):
        mtab[k] = -1
    # Keep only the new pairs reaching min_count, renumbered densely in creation order (occ_s
    # of the new range serves as the old -> new map); the others become untracked (-2).
    w = base
    for p in range(base, n_pids):
        if cnt[p] >= min_count:
            occ_s[p] = w
            keys[w] = keys[p]
            cnt[w] = cnt[p]
            w += 1
        else:
            occ_s[p] = -2
    n_pids = w
    mask = table.shape[0] - 1
    for p in range(base, n_pids):
        h = _slot(keys[p], mask)
        while table[h] != -1:
            h = (h + 1) & mask
        table[h] = p
    # Flush: the pairs created here are all new, so their occurrences are the pended positions,
    # each under its pended pair (always one of them, and equal to rec[i, PID]: see the walk). A
    # stable counting sort by pid keeps each segment sorted by position; its counting pass also
    # renames, and reads the pairs from pend, not from the scattered records.
    # subtle: a pended position whose pair changed again later in this merge (e.g. (X, a) then
    # (X, X) in "a a a a") is listed once and filed under its final pair only; and since every
    # position holding a new pair is pended exactly once, each is renamed once.
    for p in range(base, n_pids):
        occ_e[p] = 0
    for k in range(npend):
        p = occ_s[pend[k, 1]]  # new number (>= base) or -2
        pend[k, 1] = p
        rec[pend[k, 0], PID] = p
        if p >= 0:
            occ_e[p] += 1
    for p in range(base, n_pids):
        c = occ_e[p]
        occ_s[p] = pool_len
        occ_e[p] = pool_len
        pool_len += c
    for k in range(npend):
        p = pend[k, 1]
        if p >= 0:
            pool[occ_e[p]] = pend[k, 0]
            occ_e[p] += 1
    state[S_NPIDS] = n_pids
    state[S_POOL] = pool_len
    state[S_NDIRTY] = nd
    return count, df


@njit(cache=True, nogil=True, inline="always")
def select_batch(keys, cnt, table, hsnap, hkey, hpid, hlen, cand_pid, cand_cnt, cand_ok, n_candidates,
                 min_count, V):
    """Steps 1-3 of a batch (docs/algorithm.md): pop the top ``n_candidates`` pairs in exact rank
    order from the lazy heap and accept them greedily; returns (candidates, new heap length).

    Pairs: ``keys``/``cnt`` indexed by pid, found through ``table``; a pair absent from it
    counts less than ``min_count``. Heap: every pid with ``cnt >= min_count`` has one entry
    whose snapshot is >= its count (counts of existing pairs only drop). Afterwards
    ``cand_pid``/``cand_cnt`` hold the candidates in rank order (count descending, key
    ascending), ``cand_ok[i]`` whether candidate ``i`` is accepted; the candidates are out of the
    heap (the caller pushes back the rejected ones that still count ``>= min_count``).
    """
    # 1-2. the top candidates in exact rank order (lazy heap: fix stale entries on pop)
    nc = 0
    while nc < n_candidates and hlen > 0:
        snap = hsnap[0]
        key = hkey[0]
        p = hpid[0]
        hlen -= 1
        if hlen > 0:
            hsnap[0] = hsnap[hlen]
            hkey[0] = hkey[hlen]
            hpid[0] = hpid[hlen]
            _sift_down(hsnap, hkey, hpid, hlen, 0)
        c = cnt[p]
        if c == snap:
            cand_pid[nc] = p
            cand_cnt[nc] = c
            nc += 1
        elif c >= min_count:
            # subtle: snapshots only overestimate (counts of existing pairs only drop),
            # so an entry whose snapshot is exact ranks correctly among all pairs.
            hlen = _heap_push(hsnap, hkey, hpid, hlen, c, key, p)
    # 3. greedy selection against the already accepted candidates
    for i in range(nc):
        k2 = keys[cand_pid[i]]
        l2 = k2 // V
        r2 = k2 - l2 * V
        c2 = cand_cnt[i]
        ok = True
        for j in range(i):
            if not cand_ok[j]:
                continue
            k1 = keys[cand_pid[j]]
            l1 = k1 // V
            r1 = k1 - l1 * V
            if l1 == l2 or l1 == r2 or r1 == l2 or r1 == r2:
                ok = False
                break
            b = _lookup(table, keys, r2 * V + l1)
            if b != -1 and cnt[b] >= c2:
                ok = False
                break
            b = _lookup(table, keys, r1 * V + l2)
            if b != -1 and cnt[b] >= c2:
                ok = False
                break
        cand_ok[i] = ok
    return nc, hlen


@njit(cache=True, nogil=True, inline="always")
def _room_for_merge(rec, pool, pend, keys, cnt, occ_s, occ_e, table, mtab, state, p, X, V, min_count):
    """Check the capacity a merge of pair ``p`` into token ``X`` needs (see :func:`_merge_pair`),
    compacting the pool when its tail is short. Returns the size of the per-merge table to use,
    or 0 when an array must grow first (``state[S_NEED_*]`` say which, to what size)."""
    # capacity for this merge: distinct new pairs are (t, X) and (X, t) for live tokens t.
    # subtle: with multiplicities the count overstates the occurrences; the pair's pool
    # segment (a superset of them) bounds them too, and without them c is the smaller.
    c = min(cnt[p], occ_e[p] - occ_s[p])
    n_pids = state[S_NPIDS]
    bound = min(2 * c, 2 * (X + 1))
    msize = 16
    while msize < 2 * bound:
        msize *= 2
    state[S_NEED_PIDS] = 0
    state[S_NEED_POOL] = 0
    state[S_NEED_PEND] = 0
    state[S_NEED_MTAB] = 0
    short = False
    if n_pids + bound > keys.shape[0] or 2 * (n_pids + bound) > table.shape[0]:
        state[S_NEED_PIDS] = n_pids + bound
        short = True
    if msize > mtab.shape[0]:
        state[S_NEED_MTAB] = msize
        short = True
    if 2 * c > pend.shape[0]:
        state[S_NEED_PEND] = 2 * c
        short = True
    if state[S_POOL] + 2 * c > pool.shape[0]:
        state[S_POOL] = _compact_pool(rec, keys, cnt, occ_s, occ_e, pool, n_pids, V, min_count)
        live = state[S_POOL] + 2 * c
        # subtle: also grow when the pool stays more than 3/4 full, otherwise compaction
        # would run again after few merges (quadratic time).
        if 4 * live > 3 * pool.shape[0]:
            state[S_NEED_POOL] = 2 * live
            short = True
    return 0 if short else msize


@njit(cache=True, nogil=True)
def train_batches(rec, pu, pool, pend, keys, cnt, occ_s, occ_e, table, mtab, hsnap, hkey, hpid,
                  cand_pid, cand_cnt, cand_ok, m_left, m_right, m_batch, m_count, m_df, state,
                  alphabet_size, n_tokens, V, n_candidates, min_count, max_batches, max_work, uw,
                  tok_len, max_len):
    """Run training batches until done, stopped, out of budget or short of capacity.

    ``tok_len`` (int64, V): the length of each token (alphabet ids 1, set here for each new
    token); a pair whose two tokens are longer than ``max_len`` together is never selected.

    Preconditions: arrays built by the kernels above and sized by the driver; mtab all -1;
    cand_* hold n_candidates entries; m_* hold every merge training can make; min_count >= 1;
    ``pu`` unit of each position, ``uw`` unit multiplicities (empty: all 1).
    Returns DONE, STOPPED, YIELD (only between batches) or NEED_CAPACITY (between two merges of
    a batch: grow what state[S_NEED_*] name, then call again to resume).
    """
    hlen = state[S_HEAP]
    n_merges = state[S_MERGES]
    batch = state[S_BATCH]
    phase = state[S_PHASE]
    nc = state[S_NCAND]
    batches = 0
    work = 0
    status = DONE
    while True:
        if phase == -1:
            if alphabet_size + n_merges >= n_tokens:
                status = DONE
                break
            if batches >= max_batches or work >= max_work:
                status = YIELD
                break
            nc, hlen = select_batch(keys, cnt, table, hsnap, hkey, hpid, hlen, cand_pid, cand_cnt, cand_ok,
                                    n_candidates, min_count, V)
            if nc == 0:
                status = STOPPED
                break
            phase = 0
        # 4. merge the accepted pairs in acceptance order; put the others back in the heap
        # subtle: accepted pairs share no token, so merging one never changes the count or the
        # occurrences of another: the batch can pause between merges to grow arrays.
        short = False
        while phase < nc:
            p = cand_pid[phase]
            c = cnt[p]
            if not cand_ok[phase]:
                if c >= min_count:
                    hlen = _heap_push(hsnap, hkey, hpid, hlen, c, keys[p], p)
                phase += 1
                continue
            X = alphabet_size + n_merges
            msize = _room_for_merge(rec, pool, pend, keys, cnt, occ_s, occ_e, table, mtab, state, p, X, V,
                                    min_count)
            if msize == 0:
                short = True
                break
            base = state[S_NPIDS]
            count, df = _merge_pair(rec, pu, pool, pend, keys, cnt, occ_s, occ_e, table, mtab,
                                    msize - 1, state, p, X, V, min_count, uw, hpid[:0], hpid[:0])
            k1 = keys[p]
            m_left[n_merges] = k1 // V
            m_right[n_merges] = k1 - (k1 // V) * V
            m_batch[n_merges] = batch
            m_count[n_merges] = count
            m_df[n_merges] = df
            n_merges += 1
            work += count
            tok_len[X] = tok_len[k1 // V] + tok_len[k1 - (k1 // V) * V]
            # subtle: pairs created by this merge never gain counts later, so a single push now
            # (if they qualify) keeps the one-entry-per-pid invariant; one too long never enters.
            for q in range(base, state[S_NPIDS]):
                c = cnt[q]
                if c >= min_count:
                    kq = keys[q]
                    if tok_len[kq // V] + tok_len[kq - (kq // V) * V] <= max_len:
                        hlen = _heap_push(hsnap, hkey, hpid, hlen, c, kq, q)
            phase += 1
        if short:
            status = NEED_CAPACITY
            break
        phase = -1
        batch += 1
        batches += 1
    state[S_HEAP] = hlen
    state[S_MERGES] = n_merges
    state[S_BATCH] = batch
    state[S_PHASE] = phase
    state[S_NCAND] = nc
    return status


# ---------------------------------------------------------------------------------------------
# The trainer in steps (ubpe.stepwise): partitions of a corpus each keep the state above between
# calls and report count changes; a selector holds the summed counts and picks every batch with
# select_batch, as train_batches does.


@njit(cache=True, nogil=True)
def apply_merges(rec, pu, pool, pend, keys, cnt, occ_s, occ_e, table, mtab, state, merge_keys, new_ids,
                 m_count, m_df, V, uw, marked, dirty, reported):
    """Merge pair ``merge_keys[k]`` (``left * V + right``) into token ``new_ids[k]`` for ``k`` from
    ``state[S_PHASE]`` on, in order; ``m_count[k]``/``m_df[k]`` get the occurrences replaced and
    the idf units holding them (0 for a pair absent here).

    State as :func:`train_batches`'s, built with ``min_count`` 1 (every pair with a count is
    tracked: it may be frequent over all partitions) and without a heap; ``marked``/``dirty``
    (int32) and ``reported`` (int64) hold one entry per pid capacity. Every pid whose count
    changes is listed once in ``dirty[:state[S_NDIRTY]]``; a new pid starts at ``reported`` 0.
    The merges share no token (a batch). Returns DONE, or NEED_CAPACITY (grow what
    ``state[S_NEED_*]`` name, and ``marked``/``dirty``/``reported`` with the pids, then call
    again: it resumes at the merge it stopped before).
    """
    k = state[S_PHASE]
    while k < merge_keys.shape[0]:
        p = _lookup(table, keys, merge_keys[k])
        if p == -1:
            m_count[k] = 0
            m_df[k] = 0
            k += 1
            continue
        X = new_ids[k]
        msize = _room_for_merge(rec, pool, pend, keys, cnt, occ_s, occ_e, table, mtab, state, p, X, V, 1)
        if msize == 0:
            state[S_PHASE] = k
            return NEED_CAPACITY
        base = state[S_NPIDS]
        count, df = _merge_pair(rec, pu, pool, pend, keys, cnt, occ_s, occ_e, table, mtab, msize - 1, state,
                                p, X, V, 1, uw, marked, dirty)
        nd = state[S_NDIRTY]
        for q in range(base, state[S_NPIDS]):
            marked[q] = 1
            dirty[nd] = q
            nd += 1
            reported[q] = 0
        state[S_NDIRTY] = nd
        m_count[k] = count
        m_df[k] = df
        k += 1
    state[S_PHASE] = k
    return DONE


@njit(cache=True, nogil=True)
def take_changes(keys, cnt, reported, marked, dirty, state, out_keys, out_delta):
    """The count changes since the last call: for each pid listed in ``dirty`` whose count differs
    from ``reported``, its key and ``cnt - reported`` into ``out_keys``/``out_delta`` (int64, at
    least ``state[S_NDIRTY]`` entries); ``reported`` becomes ``cnt`` and the list empties.
    Returns the number of entries written."""
    n = 0
    for i in range(state[S_NDIRTY]):
        p = dirty[i]
        marked[p] = 0
        d = cnt[p] - reported[p]
        if d != 0:
            reported[p] = cnt[p]
            out_keys[n] = keys[p]
            out_delta[n] = d
            n += 1
    state[S_NDIRTY] = 0
    return n


@njit(cache=True, nogil=True)
def add_counts(table, keys, cnt, n_pids, in_keys, in_delta):
    """Add ``in_delta[i]`` to the count of pair ``in_keys[i]`` (int64), a pair not in ``table``
    becoming pid ``n_pids``, ``n_pids + 1``, ... with count 0 first. Caller guarantees room for
    ``in_keys.shape[0]`` new pids (in ``keys``/``cnt``, and a table load <= 1/2). Returns the new
    number of pids."""
    mask = table.shape[0] - 1
    for i in range(in_keys.shape[0]):
        p = _get_or_add(table, mask, keys, in_keys[i], n_pids)
        if p == n_pids:
            cnt[p] = 0
            n_pids += 1
        cnt[p] += in_delta[i]
    return n_pids


@njit(cache=True, nogil=True)
def select_next(keys, cnt, table, hsnap, hkey, hpid, state, first_new, cand_pid, cand_cnt, cand_ok,
                n_candidates, min_count, V):
    """The selector's step: push the pids from ``first_new`` to ``state[S_NPIDS]`` (pairs
    created since the last call: their counts never grow again) that count ``>= min_count``,
    select a batch with :func:`select_batch`, and push the rejected candidates back. Heap arrays
    hold one entry per pid capacity; ``state[S_HEAP]`` is the heap length. Returns the number
    of candidates (accepted: ``cand_ok``)."""
    hlen = state[S_HEAP]
    for q in range(first_new, state[S_NPIDS]):
        c = cnt[q]
        if c >= min_count:
            hlen = _heap_push(hsnap, hkey, hpid, hlen, c, keys[q], q)
    nc, hlen = select_batch(keys, cnt, table, hsnap, hkey, hpid, hlen, cand_pid, cand_cnt, cand_ok,
                            n_candidates, min_count, V)
    for i in range(nc):
        p = cand_pid[i]
        if not cand_ok[i] and cnt[p] >= min_count:
            hlen = _heap_push(hsnap, hkey, hpid, hlen, cnt[p], keys[p], p)
    state[S_HEAP] = hlen
    return nc
