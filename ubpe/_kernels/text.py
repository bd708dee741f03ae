"""Compiled kernels of the text tokenizer (ubpe/text.py, ubpe/text_corpus.py; docs/text.md).

Everything works on UTF-8 bytes (``buf``: uint8) cut into documents by ``doc_bounds`` (int64,
D + 1, non-decreasing from 0 to len(buf), every bound at a character boundary). The Python
wrappers build ``buf`` with ``str.encode("utf-8", "surrogatepass")`` or check it is UTF-8, so
the kernels decode characters without checking them; they never read outside ``buf``.

- Splitting: the GPT-2 and GPT-4 split patterns (``ubpe.text.PATTERNS``) as hand-written
  scanners, equal to the ``regex`` module's ``finditer`` (tests/test_text_fast.py checks them
  against it). ``cls`` (uint8, 0x110000) classifies each code point as the ``regex`` module does:
  bit ``L_BIT`` for ``\\p{L}``, ``N_BIT`` for ``\\p{N}``, ``S_BIT`` for ``\\s``.
- Byte-pair encoding of one piece: the pair of lowest rank present is merged first, the leftmost
  on a tie, which is replay order (docs/text.md, "When the ids are exactly the same"). Short
  pieces by a scan for the minimum, long ones with a heap; optionally BPE-dropout (a merge is
  skipped with probability p, Provilkov et al. 2020, as Hugging Face's ``BPE(dropout=)``).
- Byte-string tables: an open-addressing hash table from byte strings to int64 counts (word
  counting) or to token runs (the encoder's piece cache), keys kept in a byte arena.

Ranks: merge ``k`` joins ``(left[k], right[k])`` into token ``256 + k`` (the ids of a
``TextTokenizer``). Pair tables map ``left * n_tokens + right`` to ``k``.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from . import njit
from .borrow import borrowed as _borrowed
from .borrow import unowned as _unowned

L_BIT = 1
N_BIT = 2
S_BIT = 4
MODE_WHOLE = 0  # each document is one piece
MODE_GPT2 = 1
MODE_GPT4 = 2
MODE_GIVEN = 3  # piece bounds given by the caller
SHORT_PIECE = 64  # pieces up to this many bytes: minimum scan (and the cache); longer: heap
SHORT_KEY = 7  # byte strings up to this long are told apart by their hash alone (see _hash)
NO_RANK = np.int64(1) << np.int64(40)
_FNV_OFFSET = np.uint64(14695981039346656037)
_HASH_MULT = np.uint64(11400714819323198485)
# statuses of the table kernels
OK = 0
FULL = 1  # a table ran out of room: grow it (or empty it) and call again from the position returned


# --------------------------------------------------------------------------------------------
# Characters
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def _char(buf, p):
    """(code point, byte length) of the character starting at ``buf[p]`` (valid UTF-8, lone
    surrogates in their 3-byte form allowed)."""
    b0 = np.int64(buf[p])
    if b0 < 0x80:
        return b0, 1
    if b0 < 0xE0:
        return ((b0 & 0x1F) << 6) | (np.int64(buf[p + 1]) & 0x3F), 2
    if b0 < 0xF0:
        return ((b0 & 0x0F) << 12) | ((np.int64(buf[p + 1]) & 0x3F) << 6) | (np.int64(buf[p + 2]) & 0x3F), 3
    return (((b0 & 0x07) << 18) | ((np.int64(buf[p + 1]) & 0x3F) << 12) | ((np.int64(buf[p + 2]) & 0x3F) << 6)
            | (np.int64(buf[p + 3]) & 0x3F)), 4


@njit(cache=True, nogil=True, inline="always")
def _fold(cp):
    """The ASCII lowercase letter ``cp`` matches under ``(?i:...)`` for the contraction letters
    (s d m t l v e r; U+017F LONG S folds to s), else 0."""
    if 65 <= cp <= 90:
        return cp + 32
    if 97 <= cp <= 122:
        return cp
    if cp == 0x17F:
        return 115
    return 0


@njit(cache=True, nogil=True)
def utf8_error(buf, start, stop):
    """Offset of the first byte in ``buf[start:stop]`` where strict UTF-8 fails (an invalid or
    truncated sequence, an overlong form, a surrogate, a code point past U+10FFFF), or -1."""
    p = start
    while p < stop:
        b0 = buf[p]
        if b0 < 0x80:
            p += 1
            continue
        if 0xC2 <= b0 <= 0xDF:
            n = 1
            lo, hi = 0x80, 0xBF
        elif 0xE0 <= b0 <= 0xEF:
            n = 2
            lo = 0xA0 if b0 == 0xE0 else 0x80
            hi = 0x9F if b0 == 0xED else 0xBF
        elif 0xF0 <= b0 <= 0xF4:
            n = 3
            lo = 0x90 if b0 == 0xF0 else 0x80
            hi = 0x8F if b0 == 0xF4 else 0xBF
        else:
            return p
        if p + n >= stop:  # truncated
            return p
        b1 = buf[p + 1]
        if b1 < lo or b1 > hi:
            return p
        for j in range(2, n + 1):
            b = buf[p + j]
            if b < 0x80 or b > 0xBF:
                return p
        p += n + 1
    return -1


# --------------------------------------------------------------------------------------------
# Split patterns
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _ws_run(buf, p, e, cls):
    """End of the run of whitespace starting at ``p``, the start of its last character, and the
    end of its last CR or LF (-1 if none). ``buf[p]`` starts a whitespace character."""
    q = p
    last = p
    newline = -1
    while q < e:
        cp, n = _char(buf, q)
        if not (cls[cp] & S_BIT):
            break
        last = q
        q += n
        if cp == 10 or cp == 13:
            newline = q
    return q, last, newline


@njit(cache=True, nogil=True)
def _run(buf, q, e, cls, bit, limit):
    """End of the run of at most ``limit`` characters with class ``bit`` starting at ``q``."""
    k = 0
    while q < e and k < limit:
        b = buf[q]
        if b < 0x80:  # ASCII: one byte, no decoding
            if not (cls[b] & bit):
                break
            q += 1
        else:
            cp, n = _char(buf, q)
            if not (cls[cp] & bit):
                break
            q += n
        k += 1
    return q


@njit(cache=True, nogil=True)
def _other_run(buf, q, e, cls):
    """End of the run of characters that are neither letters, numbers nor whitespace."""
    while q < e:
        b = buf[q]
        if b < 0x80:
            if cls[b] & (L_BIT | N_BIT | S_BIT):
                break
            q += 1
            continue
        cp, n = _char(buf, q)
        if cls[cp] & (L_BIT | N_BIT | S_BIT):
            break
        q += n
    return q


@njit(cache=True, nogil=True)
def _gpt4_end(buf, p, e, cls):
    """End of the GPT-4 (cl100k) piece starting at ``p`` (< e), the alternatives in order:
    ``'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|
    \\s*[\\r\\n]|\\s+(?!\\S)|\\s+``."""
    cp, n = _char(buf, p)
    c = cls[cp]
    q = p + n
    if cp == 39 and q < e:  # '(?i:[sdmt]|ll|ve|re)
        c2, n2 = _char(buf, q)
        f2 = _fold(c2)
        if f2 == 115 or f2 == 100 or f2 == 109 or f2 == 116:
            return q + n2
        if q + n2 < e and (f2 == 108 or f2 == 118 or f2 == 114):
            c3, n3 = _char(buf, q + n2)
            f3 = _fold(c3)
            if (f2 == 108 and f3 == 108) or (f2 != 108 and f3 == 101):
                return q + n2 + n3
    if c & L_BIT:  # \p{L}+ (the optional prefix takes nothing: a letter is not in it)
        return _run(buf, q, e, cls, L_BIT, e)
    if not (c & N_BIT) and cp != 10 and cp != 13 and q < e:  # [^\r\n\p{L}\p{N}]\p{L}+
        c2, n2 = _char(buf, q)
        if cls[c2] & L_BIT:
            return _run(buf, q + n2, e, cls, L_BIT, e)
    if c & N_BIT:  # \p{N}{1,3}
        return _run(buf, q, e, cls, N_BIT, 2)
    start = p
    if cp == 32 and q < e:  # ' ?'
        c2, n2 = _char(buf, q)
        if not (cls[c2] & (L_BIT | N_BIT | S_BIT)):
            start = q
    if start > p or not (c & S_BIT):  # [^\s\p{L}\p{N}]++[\r\n]*
        r = _other_run(buf, start, e, cls)
        while r < e and (buf[r] == 10 or buf[r] == 13):
            r += 1
        return r
    r, last, newline = _ws_run(buf, p, e, cls)
    if newline >= 0:  # \s*[\r\n]
        return newline
    if r == e or last == p:  # \s+(?!\S) to the end, or \s+ of one character
        return r
    return last  # \s+(?!\S): the run less its last character


@njit(cache=True, nogil=True)
def _gpt2_end(buf, p, e, cls):
    """End of the GPT-2 piece starting at ``p`` (< e), the alternatives in order:
    ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``."""
    cp, n = _char(buf, p)
    c = cls[cp]
    q = p + n
    if cp == 39 and q < e:
        b = buf[q]
        if b == 115 or b == 116 or b == 109 or b == 100:
            return q + 1
        if q + 1 < e:
            b2 = buf[q + 1]
            if (b == 114 and b2 == 101) or (b == 118 and b2 == 101) or (b == 108 and b2 == 108):
                return q + 2
    start = p
    cc = c
    if cp == 32 and q < e:
        c2, n2 = _char(buf, q)
        cc2 = cls[c2]
        if not (cc2 & S_BIT):
            start = q
            cc = cc2
    if cc & L_BIT:
        return _run(buf, start, e, cls, L_BIT, e)
    if cc & N_BIT:
        return _run(buf, start, e, cls, N_BIT, e)
    if not (cc & S_BIT):
        return _other_run(buf, start, e, cls)
    r, last, newline = _ws_run(buf, p, e, cls)
    if r == e or last == p:
        return r
    return last


@njit(cache=True, nogil=True)
def split_pieces(buf, doc_bounds, mode, cls, piece_ends, doc_pieces):
    """Cut every document into pieces: ``piece_ends`` (int64, >= len(buf) + 1) receives the
    pieces' end offsets in order, ``doc_pieces`` (int64, D + 1) the index of each document's
    first piece (documents never share a piece; an empty document has none). ``mode``:
    MODE_GPT2, MODE_GPT4 or MODE_WHOLE. Returns the number of pieces."""
    k = 0
    for d in range(doc_bounds.shape[0] - 1):
        doc_pieces[d] = k
        p = doc_bounds[d]
        e = doc_bounds[d + 1]
        if mode == MODE_WHOLE:
            if e > p:
                piece_ends[k] = e
                k += 1
            continue
        while p < e:
            if mode == MODE_GPT4:
                p = _gpt4_end(buf, p, e, cls)
            else:
                p = _gpt2_end(buf, p, e, cls)
            piece_ends[k] = p
            k += 1
    doc_pieces[doc_bounds.shape[0] - 1] = k
    return k


@njit(cache=True, nogil=True)
def last_safe_cut(buf, start, stop):
    """The largest ``c`` in ``(start + 1, stop)`` with ``buf[c - 1]`` a line feed between two
    printable ASCII characters (``!`` to ``~``), or -1. The GPT-2 and GPT-4 patterns always end a
    piece there and start the next as at the start of a text, so text cut there gives the same
    pieces as the whole."""
    c = stop - 1
    while c > start + 1:
        if buf[c - 1] == 10 and 33 <= buf[c] <= 126 and 33 <= buf[c - 2] <= 126:
            return c
        c -= 1
    return -1


# --------------------------------------------------------------------------------------------
# Byte-string tables
# --------------------------------------------------------------------------------------------


if numba.config.DISABLE_JIT:  # pure-Python debugging runs

    def _load8(arr, i):
        return np.uint64(int.from_bytes(bytes(arr[i:i + 8]), "little"))

else:

    @intrinsic
    def _load8(typingctx, arr, i):
        """The 8 bytes ``arr[i:i + 8]`` of a 1-D uint8 array as a little-endian uint64 (one unaligned
        load). Precondition: ``0 <= i`` and ``i + 8 <= len(arr)`` (not checked)."""
        if not (isinstance(arr, types.Array) and arr.dtype == types.uint8 and isinstance(i, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            ary = context.make_array(sig.args[0])(context, builder, args[0])
            idx = context.cast(builder, args[1], sig.args[1], types.intp)
            ptr = builder.gep(ary.data, [idx])
            i64 = ir.IntType(64)
            return builder.load(builder.bitcast(ptr, i64.as_pointer()), align=1)

        return types.uint64(arr, i), codegen


if numba.config.DISABLE_JIT:

    def _bytes_array(data):
        return np.frombuffer(data, dtype=np.uint8)

else:

    @intrinsic
    def _bytes_array(typingctx, data):
        """A ``bytes`` argument of a kernel as a read-only 1-D uint8 array, borrowed (see
        ``borrow.borrowed``; no copy): the kernels typed for ``np.frombuffer`` arrays then run on it,
        and the caller saves the 0.3-0.6 us of making that array."""
        if not isinstance(data, types.Bytes):
            return None
        arr = types.Array(types.uint8, 1, "C", readonly=True)

        def codegen(context, builder, sig, args):
            return _unowned(context, builder, sig.args[0], sig.return_type, args[0])

        return arr(data), codegen


@njit(cache=True, nogil=True, inline="always")
def _mix(x):
    """splitmix64's finaliser: a bijection of uint64."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(cache=True, nogil=True, inline="always")
def _hash(buf, s, e):
    """A 64-bit hash of ``buf[s:e]`` (as int64). Up to SHORT_KEY bytes it is a bijection of the
    bytes and their number (the bytes packed under the length, then mixed): equal hashes of two
    such strings of equal length mean equal strings, and no byte needs comparing."""
    n = e - s
    if n <= SHORT_KEY:
        if s + 8 <= buf.shape[0]:  # one load, the bytes past the key masked off
            w = _load8(buf, s) & ((np.uint64(1) << np.uint64(8 * n)) - np.uint64(1))
        else:
            w = np.uint64(0)
            sh = np.uint64(0)
            for j in range(s, e):
                w |= np.uint64(buf[j]) << sh
                sh += np.uint64(8)
        return np.int64(_mix(w | (np.uint64(n) << np.uint64(56))))
    h = _FNV_OFFSET ^ np.uint64(n)
    i = s
    while i + 8 <= e:
        h = _mix(h ^ _load8(buf, i))
        i += 8
    if i < e:  # the last 8 bytes of the key (overlapping the words before)
        h = _mix(h ^ _load8(buf, e - 8) ^ np.uint64(0x5555555555555555))
    return np.int64(h)


@njit(cache=True, nogil=True, inline="always")
def _slot(h, mask):
    return np.int64(np.uint64(h) >> np.uint64(20)) & mask


@njit(cache=True, nogil=True, inline="always")
def _meta(n, j):
    """A slot's second word: the key's length (saturated at 255) above entry index ``j``."""
    return (min(np.int64(n), np.int64(255)) << np.int64(40)) | np.int64(j)


@njit(cache=True, nogil=True, inline="always")
def _same(buf, s, n, arena, a):
    """``buf[s:s + n] == arena[a:a + n]`` for n >= 8: eight bytes at a time."""
    j = 0
    while j + 8 <= n:
        if _load8(buf, s + j) != _load8(arena, a + j):
            return False
        j += 8
    if j < n:
        return _load8(buf, s + n - 8) == _load8(arena, a + n - 8)
    return True


@njit(cache=True, nogil=True, inline="always")
def _probe(slots, h, n, lens, starts, arena, buf, s):
    """``(entry, slot)``: the entry holding ``buf[s:s+n]`` (hash ``h``) and its slot, or ``(-1,
    the empty slot where it goes)``. ``slots`` (int64, 2 * 2**b): slot i's hash at 2 i and its
    ``_meta`` at 2 i + 1 (-1: empty), so that a probe reads one cache line."""
    mask = (slots.shape[0] >> 1) - 1
    i = _slot(h, mask)
    m = min(np.int64(n), np.int64(255))
    while True:
        meta = slots[2 * i + 1]
        if meta < 0:
            return np.int64(-1), i
        if slots[2 * i] == h and (meta >> np.int64(40)) == m:
            j = meta & ((np.int64(1) << np.int64(40)) - 1)
            if n <= SHORT_KEY or (lens[j] == n and _same(buf, s, n, arena, starts[j])):
                return j, i
        i = (i + 1) & mask


@njit(cache=True, nogil=True, inline="always")
def _find_or_add(slots, hashes, starts, lens, arena, state, buf, s, e):
    """Index of the entry for ``buf[s:e]``, added (with its bytes) if new; -1 when the table is
    full (entries, arena, or load factor 1/2; see ``_probe``). ``state[0]`` entries, ``state[1]``
    arena bytes."""
    n = e - s
    h = _hash(buf, s, e)
    j, i = _probe(slots, h, n, lens, starts, arena, buf, s)
    if j >= 0:
        return j
    j = state[0]
    a = state[1]
    if j >= hashes.shape[0] or 4 * (j + 1) > slots.shape[0] or a + n > arena.shape[0]:
        return np.int64(-1)
    slots[2 * i] = h
    slots[2 * i + 1] = _meta(n, j)
    hashes[j] = h
    starts[j] = a
    lens[j] = n
    for t in range(n):
        arena[a + t] = buf[s + t]
    state[0] = j + 1
    state[1] = a + n
    return j


@njit(cache=True, nogil=True)
def count_pieces(buf, doc_bounds, first_doc, resume, mode, cls, piece_bounds,
                 slots, hashes, starts, lens, counts, arena, state):
    """Count every piece of the documents ``first_doc ..`` into the table (one more per
    occurrence), starting at byte ``resume`` of document ``first_doc``.

    ``mode`` MODE_GIVEN reads the pieces from ``piece_bounds`` (int64, P + 1, ends at
    doc_bounds[-1], each document's bounds among them; document bounds are then ignored) and
    ``first_doc`` / ``resume`` index pieces instead. Returns ``(status, doc, position)``: OK
    when done, FULL when the table is full (grow it, then call again with that doc and
    position).
    """
    if mode == MODE_GIVEN:
        for k in range(first_doc, piece_bounds.shape[0] - 1):
            s = piece_bounds[k]
            e = piece_bounds[k + 1]
            if e == s:
                continue
            j = _find_or_add(slots, hashes, starts, lens, arena, state, buf, s, e)
            if j < 0:
                return FULL, k, s
            counts[j] += 1
        return OK, piece_bounds.shape[0] - 1, buf.shape[0]
    for d in range(first_doc, doc_bounds.shape[0] - 1):
        p = doc_bounds[d] if d != first_doc else resume
        e = doc_bounds[d + 1]
        while p < e:
            if mode == MODE_GPT4:
                q = _gpt4_end(buf, p, e, cls)
            elif mode == MODE_GPT2:
                q = _gpt2_end(buf, p, e, cls)
            else:
                q = e
            j = _find_or_add(slots, hashes, starts, lens, arena, state, buf, p, q)
            if j < 0:
                return FULL, d, p
            counts[j] += 1
            p = q
    return OK, doc_bounds.shape[0] - 1, buf.shape[0]


@njit(cache=True, nogil=True)
def add_table(src_hashes, src_starts, src_lens, src_counts, src_arena, first, n_src,
              slots, hashes, starts, lens, counts, arena, state):
    """Add entries ``first .. n_src - 1`` of one table (their bytes in ``src_arena``) with their
    counts into another. Returns the index of the first entry not added (``n_src`` when all
    were; less when the destination is full: grow it and call again from there)."""
    for j in range(first, n_src):
        s = src_starts[j]
        k = _find_or_add(slots, hashes, starts, lens, arena, state, src_arena, s, s + src_lens[j])
        if k < 0:
            return j
        counts[k] += src_counts[j]
    return n_src


@njit(cache=True, nogil=True)
def rehash(slots, hashes, lens, n):
    """Refill ``slots`` (all -1 on entry, 2 * a power of two > 2 n) with entries ``0 .. n - 1``."""
    mask = (slots.shape[0] >> 1) - 1
    for j in range(n):
        i = _slot(hashes[j], mask)
        while slots[2 * i + 1] >= 0:
            i = (i + 1) & mask
        slots[2 * i] = hashes[j]
        slots[2 * i + 1] = _meta(lens[j], j)


@njit(cache=True, nogil=True)
def compact(keep, hashes, starts, lens, counts, arena, state):
    """Keep only the entries with ``keep[j]`` (their order and bytes' order kept, moved to the
    front of each array and of ``arena``); update ``state``. Rehash the slots afterwards."""
    n = state[0]
    j2 = 0
    a2 = 0
    for j in range(n):
        if not keep[j]:
            continue
        s = starts[j]
        m = lens[j]
        for t in range(m):
            arena[a2 + t] = arena[s + t]
        hashes[j2] = hashes[j]
        starts[j2] = a2
        lens[j2] = m
        counts[j2] = counts[j]
        a2 += m
        j2 += 1
    state[0] = j2
    state[1] = a2
    return j2


# --------------------------------------------------------------------------------------------
# Byte-pair encoding
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def build_pair_table(left, right, n_tokens, bits):
    """Open-addressing table (int64, 2 * 2**bits: key, rank) of ``left * n_tokens + right`` ->
    rank k; the lowest rank kept for a pair listed twice. ``2**bits >= 2 M``."""
    size = np.int64(1) << np.int64(bits)
    mask = size - 1
    table = np.full(2 * size, -1, dtype=np.int64)
    for k in range(left.shape[0]):
        key = np.int64(left[k]) * n_tokens + np.int64(right[k])
        i = np.int64((np.uint64(key) * _HASH_MULT) >> np.uint64(64 - bits))
        while table[2 * i] >= 0 and table[2 * i] != key:
            i = (i + 1) & mask
        if table[2 * i] < 0:
            table[2 * i] = key
            table[2 * i + 1] = k
    return table


@njit(cache=True, nogil=True, inline="always")
def _rank(pairs, bits, n_tokens, a, b):
    key = np.int64(a) * n_tokens + np.int64(b)
    mask = (np.int64(1) << np.int64(bits)) - 1
    i = np.int64((np.uint64(key) * _HASH_MULT) >> np.uint64(64 - bits))
    while True:
        k = pairs[2 * i]
        if k == key:
            return pairs[2 * i + 1]
        if k < 0:
            return NO_RANK
        i = (i + 1) & mask


@njit(cache=True, nogil=True)
def _bpe_short(buf, s, e, pairs, bits, n_tokens, toks, ranks, out, o):
    """Encode ``buf[s:e]`` (1 .. SHORT_PIECE bytes) into ``out[o:]``; return the new end."""
    n = e - s
    for i in range(n):
        toks[i] = buf[s + i]
    for i in range(n - 1):
        ranks[i] = _rank(pairs, bits, n_tokens, toks[i], toks[i + 1])
    while n > 1:
        best = NO_RANK
        bi = -1
        for i in range(n - 1):
            if ranks[i] < best:
                best = ranks[i]
                bi = i
        if bi < 0:
            break
        toks[bi] = np.int32(256 + best)
        for j in range(bi + 1, n - 1):
            toks[j] = toks[j + 1]
        for j in range(bi + 1, n - 2):
            ranks[j] = ranks[j + 1]
        n -= 1
        if bi > 0:
            ranks[bi - 1] = _rank(pairs, bits, n_tokens, toks[bi - 1], toks[bi])
        if bi < n - 1:
            ranks[bi] = _rank(pairs, bits, n_tokens, toks[bi], toks[bi + 1])
    for i in range(n):
        out[o + i] = toks[i]
    return o + n


@njit(cache=True, nogil=True, inline="always")
def _heap_push(heap, hlen, v):
    i = hlen
    while i > 0:
        parent = (i - 1) >> 1
        if heap[parent] <= v:
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = v
    return hlen + 1


@njit(cache=True, nogil=True, inline="always")
def _heap_pop(heap, hlen):
    """Remove the root of the min-heap of length ``hlen`` (> 0); return the new length."""
    hlen -= 1
    v = heap[hlen]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= hlen:
            break
        if c + 1 < hlen and heap[c + 1] < heap[c]:
            c += 1
        if heap[c] >= v:
            break
        heap[i] = heap[c]
        i = c
    if hlen > 0:
        heap[i] = v
    return hlen


@njit(cache=True, nogil=True, inline="always")
def _next_random(rng):
    """splitmix64: advance ``rng[0]`` and return 53 random bits."""
    rng[0] = rng[0] + np.uint64(0x9E3779B97F4A7C15)
    z = rng[0]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return np.int64(z >> np.uint64(11))


@njit(cache=True, nogil=True)
def _bpe_heap(buf, s, e, pairs, bits, n_tokens, left, right, drop, rng, out, o):
    """Encode ``buf[s:e]`` into ``out[o:]`` with a heap of (rank, position); return the new end.

    ``drop`` (0 .. 2**53): a merge about to be applied is skipped with probability
    ``drop / 2**53`` (BPE-dropout); skipped merges come back after the next merge applied, and
    encoding ends when no merge is left (as Hugging Face's ``BPE(dropout=)``).
    """
    n = e - s
    tok = np.empty(n, dtype=np.int32)
    nxt = np.empty(n, dtype=np.int32)
    prv = np.empty(n, dtype=np.int32)
    heap = np.empty(3 * n + 1, dtype=np.int64)
    skipped = np.empty(3 * n + 1, dtype=np.int64)
    for i in range(n):
        tok[i] = buf[s + i]
        nxt[i] = i + 1
        prv[i] = i - 1
    nxt[n - 1] = -1
    hlen = 0
    for i in range(n - 1):
        r = _rank(pairs, bits, n_tokens, tok[i], tok[i + 1])
        if r != NO_RANK:
            hlen = _heap_push(heap, hlen, (r << 32) | i)
    n_skipped = 0
    while hlen > 0:
        v = heap[0]
        hlen = _heap_pop(heap, hlen)
        r = v >> 32
        p = v & 0xFFFFFFFF
        q = nxt[p]
        if tok[p] != left[r] or q < 0 or tok[q] != right[r]:
            continue  # stale: the pair is gone
        if drop > 0 and _next_random(rng) < drop:
            skipped[n_skipped] = v
            n_skipped += 1
            continue
        for j in range(n_skipped):
            hlen = _heap_push(heap, hlen, skipped[j])
        n_skipped = 0
        tok[p] = np.int32(256 + r)
        tok[q] = -1
        nq = nxt[q]
        nxt[p] = nq
        if nq >= 0:
            prv[nq] = p
            r2 = _rank(pairs, bits, n_tokens, tok[p], tok[nq])
            if r2 != NO_RANK:
                hlen = _heap_push(heap, hlen, (r2 << 32) | p)
        pp = prv[p]
        if pp >= 0:
            r2 = _rank(pairs, bits, n_tokens, tok[pp], tok[p])
            if r2 != NO_RANK:
                hlen = _heap_push(heap, hlen, (r2 << 32) | pp)
    p = 0
    while p >= 0:
        out[o] = tok[p]
        o += 1
        p = nxt[p]
    return o


@njit(cache=True, nogil=True, inline="always")
def _encode_piece(buf, s, e, pairs, bits, n_tokens, left, right, toks, ranks, rng, out, o,
                  c_slots, c_hashes, c_starts, c_lens, c_tok, c_ntok, c_arena, c_toks, c_state, use_cache):
    """Encode piece ``buf[s:e]`` (non-empty) into ``out[o:]`` through the cache; new end."""
    n = e - s
    if n == 1:
        out[o] = buf[s]
        return o + 1
    if n > SHORT_PIECE:
        return _bpe_heap(buf, s, e, pairs, bits, n_tokens, left, right, 0, rng, out, o)
    if not use_cache:
        return _bpe_short(buf, s, e, pairs, bits, n_tokens, toks, ranks, out, o)
    h = _hash(buf, s, e)
    j, i = _probe(c_slots, h, n, c_lens, c_starts, c_arena, buf, s)
    if j >= 0:
        t = c_tok[j]
        m = c_ntok[j]
        for k in range(m):
            out[o + k] = c_toks[t + k]
        return o + m
    o2 = _bpe_short(buf, s, e, pairs, bits, n_tokens, toks, ranks, out, o)
    m = o2 - o
    j = c_state[0]
    a = c_state[1]
    t = c_state[2]
    if j >= c_hashes.shape[0] or 4 * (j + 1) > c_slots.shape[0] or a + n > c_arena.shape[0] \
            or t + m > c_toks.shape[0]:
        c_slots[:] = -1  # full: start afresh (the cache is an optimisation only)
        c_state[0] = 0
        c_state[1] = 0
        c_state[2] = 0
        j = 0
        a = 0
        t = 0
        i = _slot(h, (c_slots.shape[0] >> 1) - 1)
    c_slots[2 * i] = h
    c_slots[2 * i + 1] = _meta(n, j)
    c_hashes[j] = h
    c_starts[j] = a
    c_lens[j] = n
    c_tok[j] = t
    c_ntok[j] = m
    for k in range(n):
        c_arena[a + k] = buf[s + k]
    for k in range(m):
        c_toks[t + k] = out[o + k]
    c_state[0] = j + 1
    c_state[1] = a + n
    c_state[2] = t + m
    return o2


# The encoder's tables, packed into one int64 array (``tables``) so that a call hands the
# kernel few arguments: numba unboxes each array argument on every call (about 0.1 us each; the
# 27 arguments of the unpacked call took 3.8 us, more than encoding a short text).
# tables[T_BITS]: the pair table's bits; tables[T_TOKENS]: the byte-pair tokens (256 + merges);
# part k is tables[tables[T_PARTS + k]:tables[T_PARTS + k + 1]] (:func:`table_part`).
T_BITS = 0
T_TOKENS = 1
T_PARTS = 2
P_PAIRS = 0  # the pair table (build_pair_table)
P_LEFT = 1  # merge k's left token
P_RIGHT = 2  # merge k's right token
P_TOK_LEN = 3  # every token's byte length, special tokens (ids from T_TOKENS on) included
P_EDGES = 4  # the special tokens' trie (build_trie): edges
P_TERMINAL = 5  # its terminal values
P_FIRST = 6  # 1 for the special tokens' first bytes (256)
N_PARTS = 7
TABLES_HEAD = T_PARTS + N_PARTS + 1

# The piece cache of a thread, packed into one int64 array (``cache``): CACHE_HEAD words of
# state and scratch (entries, arena bytes, cached tokens; the dropout generator; a piece's
# ranks, 64 words, and its tokens, 64 int32; one document's bounds for encode_text) then, for a table of ``size`` slots (a power of 2;
# 0: no cache), the slots (2 size), five entry arrays (size / 2 each: hash, key start, key
# length, first cached token, number of tokens), the key arena (size / 2 words, as bytes) and
# the cached tokens (size words, as int32): CACHE_HEAD + 6 size words in all.
DOC_SCRATCH = 4 + SHORT_PIECE + SHORT_PIECE // 2  # then 6 words: encode_text's arguments of encode_docs
CACHE_HEAD = DOC_SCRATCH + 6


@njit(cache=True, nogil=True, inline="always")
def table_part(tables, k):
    """Part ``k`` (P_*) of the packed tables: a view."""
    return tables[tables[T_PARTS + k]:tables[T_PARTS + k + 1]]


@njit(cache=True, nogil=True, inline="always")
def _cache_parts(cache):
    """The views of a packed piece cache (see CACHE_HEAD): ``(slots, hashes, starts, lens, tok,
    ntok, arena, toks, state)`` of the table, then the scratch ``(rng, ranks, piece_toks)``."""
    size = (cache.shape[0] - CACHE_HEAD) // 6
    half = size // 2
    a = CACHE_HEAD + 2 * size
    b = a + 5 * half
    r = 4 + SHORT_PIECE
    return (cache[CACHE_HEAD:a], cache[a:a + half], cache[a + half:a + 2 * half], cache[a + 2 * half:a + 3 * half],
            cache[a + 3 * half:a + 4 * half], cache[a + 4 * half:b], cache[b:b + half].view(np.uint8),
            cache[b + half:b + 3 * half].view(np.int32), cache[:3],
            cache[3:4].view(np.uint64), cache[4:r], cache[r:r + SHORT_PIECE // 2].view(np.int32))


@njit(cache=True, nogil=True, inline="always")
def _piece_end(buf, p, e, mode, cls):
    """End of the piece starting at ``p`` (< e) under MODE_GPT4, MODE_GPT2 or MODE_WHOLE."""
    if mode == MODE_GPT4:
        return _gpt4_end(buf, p, e, cls)
    if mode == MODE_GPT2:
        return _gpt2_end(buf, p, e, cls)
    return e


@njit(cache=True, nogil=True)
def encode_docs(buf, doc_starts, doc_ends, mode, cls, piece_bounds, tables, out, ends, doc_tokens, want_ends, drop,
                seeds, cache):
    """Encode every document ``buf[doc_starts[d]:doc_ends[d]]`` (int64 (D,), in increasing
    order, not overlapping): split it (``mode``; MODE_GIVEN: pieces from ``piece_bounds``, int64
    increasing, every document's start and end among them) and byte-pair encode each piece.

    ``tables``: the packed tables (T_*, P_*). ``out`` (int32, >= len(buf)) receives the tokens,
    ``doc_tokens`` (int64, D + 1) each document's first token index; with ``want_ends``,
    ``ends`` (int64, >= len(buf)) each token's end offset in ``buf``. ``drop`` > 0
    (BPE-dropout, see ``_bpe_heap``) draws from ``seeds[d]`` (uint64 per document) and
    bypasses the cache. ``cache``: the packed piece cache (CACHE_HEAD; see ``_find_or_add``).
    Returns the number of tokens.
    """
    buf = _borrowed(buf)  # no reference counting below (see _borrowed)
    cls = _borrowed(cls)
    tables = _borrowed(tables)
    out = _borrowed(out)
    ends = _borrowed(ends)
    bits = tables[T_BITS]
    n_tokens = tables[T_TOKENS]
    pairs = table_part(tables, P_PAIRS)
    left = table_part(tables, P_LEFT)
    right = table_part(tables, P_RIGHT)
    tok_len = table_part(tables, P_TOK_LEN)
    (c_slots, c_hashes, c_starts, c_lens, c_tok, c_ntok, c_arena, c_toks, c_state,
     rng, ranks, toks) = _cache_parts(_borrowed(cache))
    o = np.int64(0)
    use_cache = drop == 0 and c_slots.shape[0] > 0
    k = 0  # next piece (MODE_GIVEN)
    n_docs = doc_starts.shape[0]
    for d in range(n_docs):
        doc_tokens[d] = o
        p = doc_starts[d]
        e = doc_ends[d]
        if drop > 0:
            rng[0] = seeds[d]
        if mode == MODE_GIVEN:
            while k < piece_bounds.shape[0] - 1 and piece_bounds[k] < p:
                k += 1
        while p < e:
            if mode == MODE_GIVEN:
                q = piece_bounds[k + 1]
                k += 1
            else:
                q = _piece_end(buf, p, e, mode, cls)
            if q <= p:
                continue
            o0 = o
            if drop > 0:
                o = _bpe_heap(buf, p, q, pairs, bits, n_tokens, left, right, drop, rng, out, o)
            else:
                o = _encode_piece(buf, p, q, pairs, bits, n_tokens, left, right, toks, ranks, rng, out, o,
                                  c_slots, c_hashes, c_starts, c_lens, c_tok, c_ntok, c_arena, c_toks,
                                  c_state, use_cache)
            if want_ends:
                pos = p
                for t in range(o0, o):
                    pos += tok_len[out[t]]
                    ends[t] = pos
            p = q
    doc_tokens[n_docs] = o
    return o


@njit(cache=True, nogil=True)
def encode_text(data, mode, cls, tables, out, cache):
    """Encode one text, ``data`` (its UTF-8 bytes, a ``bytes`` object; MODE_GPT4, MODE_GPT2 or
    MODE_WHOLE) into ``out`` (int32, >= len(data)), through the piece cache ``cache``: one call
    from Python with few arguments, which calls ``encode_docs`` on the text as one document.
    Returns the number of tokens, or -1 (nothing encoded) when the text holds one
    of the special tokens of the tables' trie."""
    buf = _bytes_array(data)  # borrowed, as every array below (see _borrowed)
    cls = _borrowed(cls)
    tables = _borrowed(tables)
    out = _borrowed(out)
    n = buf.shape[0]
    n_tokens = tables[T_TOKENS]
    tok_len = table_part(tables, P_TOK_LEN)
    if tok_len.shape[0] > n_tokens:  # special tokens: refuse the text if it holds one
        edges = table_part(tables, P_EDGES)
        terminal = table_part(tables, P_TERMINAL)
        first = table_part(tables, P_FIRST)
        for p in range(n):
            if first[buf[p]] != 0 and _longest_at(buf, p, n, edges, terminal)[0] >= 0:
                return np.int64(-1)
    cache = _borrowed(cache)
    d = DOC_SCRATCH  # the one document's arrays, in the cache's scratch
    starts = cache[d:d + 1]
    stops = cache[d + 1:d + 2]
    starts[0] = 0
    stops[0] = n
    return encode_docs(buf, starts, stops, mode, cls, cache[d + 5:d + 6], tables, out, cache[:0], cache[d + 2:d + 4],
                       n < 0, np.int64(0), cache[d + 4:d + 5].view(np.uint64), cache)


# --------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------


if numba.config.DISABLE_JIT:  # pure-Python debugging runs

    def _store8(arr, i, value):
        arr[i:i + 8] = np.frombuffer(int(value).to_bytes(8, "little"), dtype=np.uint8)

else:

    @intrinsic
    def _store8(typingctx, arr, i, value):
        """Write the uint64 ``value`` little-endian into ``arr[i:i + 8]`` of a 1-D uint8 array (one
        unaligned store). Precondition: ``0 <= i`` and ``i + 8 <= len(arr)`` (not checked)."""
        if not (isinstance(arr, types.Array) and arr.dtype == types.uint8 and isinstance(i, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            ary = context.make_array(sig.args[0])(context, builder, args[0])
            idx = context.cast(builder, args[1], sig.args[1], types.intp)
            val = context.cast(builder, args[2], sig.args[2], types.uint64)
            ptr = builder.gep(ary.data, [idx])
            builder.store(val, builder.bitcast(ptr, ir.IntType(64).as_pointer()), align=1)
            return context.get_dummy_value()

        return types.none(arr, i, value), codegen


@njit(cache=True, nogil=True)
def decode_lengths(ids, bounds, tok_len, out_bounds):
    """``out_bounds[d + 1] - out_bounds[d]``: the byte length of sequence ``ids[bounds[d]:
    bounds[d + 1]]`` (``out_bounds[0] = 0``). Returns -1, or the index of the first id outside
    ``[0, len(tok_len))`` (then nothing else is valid)."""
    total = np.int64(0)
    out_bounds[0] = 0
    n = tok_len.shape[0]
    for d in range(bounds.shape[0] - 1):
        for i in range(bounds[d], bounds[d + 1]):
            t = ids[i]
            if t < 0 or t >= n:
                return np.int64(i)
            total += tok_len[t]
        out_bounds[d + 1] = total
    return np.int64(-1)


@njit(cache=True, nogil=True)
def decode_into(ids, first, last, tok_start, tok_len, flat, out, at):
    """Write the bytes of ``ids[first:last]`` (valid ids; their expansions ``flat[tok_start[t]:]
    [:tok_len[t]]``) into ``out`` from ``at``; return the new end. ``flat`` and ``out`` hold 8
    bytes of slack past their ends: tokens are copied eight bytes at a time, the bytes past a
    token's end overwritten by the next."""
    for i in range(first, last):
        t = ids[i]
        s = tok_start[t]
        m = tok_len[t]
        j = 0
        while j < m:
            _store8(out, at + j, _load8(flat, s + j))
            j += 8
        at += m
    return at


@njit(cache=True, nogil=True)
def decode_flat(ids, bounds, tok_start, tok_len, flat, ended):
    """:func:`decode_lengths` then :func:`decode_into` in one call (one entry, its arrays made
    here, so a thread decoding ranges beside another holding the GIL rarely waits for it):
    ``(data uint8, out_bounds int64 (len(bounds),), bad)``; ``data`` holds the bytes of
    ``ids[bounds[0]:bounds[-1]]`` then 8 bytes of slack; ``bad`` as :func:`decode_lengths`
    gives it (when it is not -1, ``data`` is empty). ``ended[0]`` (int8) is set to 1 last: a
    hint to a thread holding the GIL that this one is about to ask for it (no data passes
    through it: the results are read only once the call has returned)."""
    out_bounds = np.empty(bounds.shape[0], np.int64)
    bad = decode_lengths(ids, bounds, tok_len, out_bounds)
    if bad >= 0:
        ended[0] = 1
        return np.empty(0, np.uint8), out_bounds, bad
    data = np.empty(out_bounds[-1] + 8, np.uint8)
    decode_into(ids, bounds[0], bounds[-1], tok_start, tok_len, flat, data, 0)
    ended[0] = 1
    return data, out_bounds, bad


# --------------------------------------------------------------------------------------------
# Special tokens: a byte trie, longest match first
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def _child(edges, node, byte):
    """The child of trie ``node`` along ``byte``, or -1 (``edges``: open addressing, int64
    pairs (node * 256 + byte, child), -1 empty)."""
    key = node * 256 + np.int64(byte)
    mask = (edges.shape[0] >> 1) - 1
    i = np.int64(_mix(np.uint64(key)) >> np.uint64(20)) & mask
    while True:
        k = edges[2 * i]
        if k == key:
            return edges[2 * i + 1]
        if k < 0:
            return np.int64(-1)
        i = (i + 1) & mask


@njit(cache=True, nogil=True)
def build_trie(data, bounds, values, edges, terminal, first):
    """Insert the byte strings ``data[bounds[k]:bounds[k+1]]`` (non-empty, distinct) into an
    empty trie: ``edges`` (int64, 2 * 2**b all -1, 2**b >= 2 * (len(data) + 1)), ``terminal``
    (int64, len(data) + 1, all -1) gets ``values[k]`` at the node ending string k, ``first``
    (bool, 256) marks the strings' first bytes. Returns the number of nodes (node 0 the root)."""
    n_nodes = 1
    mask = (edges.shape[0] >> 1) - 1
    for k in range(bounds.shape[0] - 1):
        node = np.int64(0)
        first[data[bounds[k]]] = True
        for p in range(bounds[k], bounds[k + 1]):
            c = _child(edges, node, data[p])
            if c < 0:
                key = node * 256 + np.int64(data[p])
                i = np.int64(_mix(np.uint64(key)) >> np.uint64(20)) & mask
                while edges[2 * i] >= 0:
                    i = (i + 1) & mask
                edges[2 * i] = key
                edges[2 * i + 1] = n_nodes
                c = n_nodes
                n_nodes += 1
            node = c
        terminal[node] = values[k]
    return n_nodes


@njit(cache=True, nogil=True, inline="always")
def _longest_at(buf, p, stop, edges, terminal):
    """``(value, end)`` of the longest of the trie's strings at ``buf[p:stop]``, or ``(-1, p)``."""
    node = np.int64(0)
    best = np.int64(-1)
    best_end = p
    q = p
    while q < stop:
        node = _child(edges, node, buf[q])
        if node < 0:
            break
        q += 1
        if terminal[node] >= 0:
            best = terminal[node]
            best_end = q
    return best, best_end


@njit(cache=True, nogil=True)
def find_strings(buf, starts, stops, edges, terminal, first, out):
    """Non-overlapping matches of the trie's strings in each range ``buf[starts[r]:stops[r]]``,
    scanning left to right and taking the longest string at each position (a regex alternation
    of the strings, longest first, ``finditer`` on each range alone). ``out`` (int64, (>= the
    number of matches, 4)) gets ``(start, end, value, range)`` rows; returns the count, or -1 if
    ``out`` is too small (call again with more rows)."""
    count = 0
    for r in range(starts.shape[0]):
        p = starts[r]
        stop = stops[r]
        while p < stop:
            if not first[buf[p]]:
                p += 1
                continue
            best, best_end = _longest_at(buf, p, stop, edges, terminal)
            if best < 0:
                p += 1
                continue
            if count >= out.shape[0]:
                return np.int64(-1)
            out[count, 0] = p
            out[count, 1] = best_end
            out[count, 2] = best
            out[count, 3] = r
            count += 1
            p = best_end
    return np.int64(count)
