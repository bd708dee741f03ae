"""Replay encoding and decoding in priority space (docs/algorithm.md, "Encoding", "Decoding").

The model is ``merges``: int32 ``(M, 2)``; row ``k`` creates token ``A + k`` from two children
that are both ``< A + k``. These wrappers validate and convert their arguments, then call the
compiled kernels of :mod:`ubpe._kernels.encode`, which do not bounds-check.

Memory of the expansion table: expanding every token into one flat table costs the sum of all
token lengths, which is ``O(M**2)`` for a deep model (a chain of merges, each one longer: 2**31
values for ``M = 65536``). :func:`build_expansion` therefore tables only the tokens up to some
length, chosen as the largest length whose tokens fit in ``max_table_values`` values (default
``2**22``, 16 MiB; all tokens of ordinary models fit). Longer tokens are decoded by walking their
merge tree down to tabled tokens, straight into the output, with no extra memory.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._kernels import encode as _k
from ._validate import check_int

__all__ = [
    "EncoderTables",
    "Expansion",
    "build_encoder",
    "build_expansion",
    "decode",
    "encode",
    "encode_batch",
    "expanded_length",
]

DEFAULT_MAX_TABLE_VALUES = 1 << 22
# Encoding cuts long sequences into segments of about this many ids (where no token can span
# the cut), so that each segment's working set stays in cache.
SEGMENT_IDS = 1 << 14
# A segment of at least this many ids (0: none) is encoded by group passes first
# (``_kernels.encode._encode_by_passes``), until a pass merges fewer than one id in
# PASS_YIELD; the linked-list sweep finishes it. The tokens are the same either way.
PASS_MIN_IDS = 1 << 12
PASS_YIELD = 128
# Encoding may split its segments over two threads (the kernel releases the GIL) when they hold
# at least this many ids. Off (None) by default: on the shared 2-core machine it was measured
# with, two threads gave no measurable gain (12.0 vs 12.1 M ids/s). Set an int to enable.
_PARALLEL_MIN_IDS: int | None = None
_MAX_INT32 = np.iinfo(np.int32).max


# --------------------------------------------------------------------------------------------
# Validation helpers.
# --------------------------------------------------------------------------------------------


def _check_merges(merges: object, alphabet_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the (left, right) columns as contiguous int32, after a cheap acyclicity check."""
    if not isinstance(merges, np.ndarray):
        raise TypeError(f"merges must be a numpy array, got {type(merges).__name__}")
    if merges.dtype.kind not in "iu":
        raise TypeError(f"merges must have an integer dtype, got {merges.dtype}")
    if merges.ndim != 2 or merges.shape[1] != 2:
        raise ValueError(f"merges must have shape (M, 2), got {merges.shape}")
    m = merges.shape[0]
    if alphabet_size + m > _MAX_INT32:
        raise ValueError(
            f"alphabet_size + len(merges) must be at most {_MAX_INT32}, got {alphabet_size + m}"
        )
    if m:
        limit = alphabet_size + np.arange(m, dtype=np.int64)
        wide = merges.astype(np.int64, copy=False)
        bad = np.flatnonzero((wide < 0).any(axis=1) | (wide >= limit[:, None]).any(axis=1))
        if bad.size:
            k = int(bad[0])
            raise ValueError(
                f"merges[{k}] = {merges[k].tolist()}: children must be in [0, {alphabet_size + k})"
                f" (alphabet_size + {k}); merges must be in priority order"
            )
    left = np.ascontiguousarray(merges[:, 0], dtype=np.int32)
    right = np.ascontiguousarray(merges[:, 1], dtype=np.int32)
    return left, right


def _check_ids(values: object, name: str) -> np.ndarray:
    """A 1-D integer array (not converted yet: the range is checked on the original values)."""
    if not isinstance(values, np.ndarray):
        raise TypeError(f"{name} must be a numpy array, got {type(values).__name__}")
    if values.dtype.kind not in "iu":
        raise TypeError(f"{name} must have an integer dtype, got {values.dtype}")
    if values.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {values.shape}")
    return values


def _check_range(values: np.ndarray, name: str, upper: int) -> np.ndarray:
    """Check ``0 <= values < upper``, return them as contiguous int32."""
    if values.size:
        lo, hi = int(values.min()), int(values.max())
        if lo < 0 or hi >= upper:
            bad = int(np.flatnonzero((values < 0) | (values >= upper))[0])
            raise ValueError(
                f"{name}[{bad}] = {int(values[bad])} is out of range: valid values are "
                f"[0, {upper})"
            )
    return np.ascontiguousarray(values, dtype=np.int32)


# --------------------------------------------------------------------------------------------
# Encoding.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EncoderTables:
    """Everything the encode kernels need, built once per model by :func:`build_encoder`.

    ``left``/``right``: the merge children (int32 (M,)). ``pairs``: open-addressing hash table
    (linear probing, ``2**bits`` slots, int64, key and rank interleaved, empty key -1) from the
    pair key ``left * (A + M) + right`` to the merge's rank. ``junctions``: hash set
    (``2**junction_bits`` slots) of the alphabet pairs ``a * A + b`` that some merge joins (the
    last id of its left child, the first of its right); a sequence is cut for encoding only
    between two ids whose pair is not in it.
    """

    alphabet_size: int
    n_merges: int
    left: np.ndarray
    right: np.ndarray
    pairs: np.ndarray
    bits: int
    junctions: np.ndarray
    junction_bits: int

    @property
    def n_tokens(self) -> int:
        """Vocabulary size ``A + M``."""
        return self.alphabet_size + self.n_merges


def _table_bits(n_keys: int) -> int:
    """Bits of a hash table with ``2**bits >= 2 * n_keys`` slots (load factor <= 1/2)."""
    return max(1, int(2 * max(n_keys, 1) - 1).bit_length())


def build_encoder(merges: np.ndarray, alphabet_size: int) -> EncoderTables:
    """Build the pair tables of ``merges`` (int (M, 2), priority space) over ``alphabet_size`` ids."""
    a = check_int("alphabet_size", alphabet_size, 1, _MAX_INT32)
    left, right = _check_merges(merges, a)
    m = left.shape[0]
    bits = _table_bits(m)
    pairs = _k.build_pair_table(left, right, a, bits)
    junctions = _k.build_junction_table(left, right, a, bits)
    return EncoderTables(a, m, left, right, pairs, bits, junctions, bits)


def _check_tables(tables: object) -> EncoderTables:
    if not isinstance(tables, EncoderTables):
        raise TypeError(
            f"tables must be an EncoderTables (see build_encoder), got {type(tables).__name__}"
        )
    return tables


def _encode_concatenated(
    ids: np.ndarray, doc_bounds: np.ndarray, t: EncoderTables
) -> tuple[np.ndarray, np.ndarray, int]:
    """Encode documents ``ids[doc_bounds[d]:doc_bounds[d+1]]`` (ids int32, contiguous).

    Returns ``(out, out_bounds, bad)``: tokens of document d are ``out[out_bounds[d]:
    out_bounds[d+1]]``; ``bad`` is -1, or the global index of an id outside [0, A) (then
    ``out`` is garbage).
    """
    n = ids.shape[0]
    seg_bounds, doc_seg = _k.find_segments(ids, doc_bounds, t.alphabet_size, t.junctions,
                                           t.junction_bits, SEGMENT_IDS)
    n_segs = seg_bounds.shape[0] - 1
    out = np.empty(n, dtype=np.int32)
    counts = np.zeros(n_segs, dtype=np.int64)

    def run(first: int, last: int) -> int:
        return int(_k.encode_segments(ids, seg_bounds, first, last, t.left, t.right,
                                      t.alphabet_size, t.pairs, t.bits, out, counts,
                                      PASS_MIN_IDS, PASS_YIELD))

    if _PARALLEL_MIN_IDS is not None and n >= _PARALLEL_MIN_IDS and n_segs >= 2:
        # two threads (the kernel releases the GIL), split at the segment nearest half the ids
        mid = min(max(int(np.searchsorted(seg_bounds, n // 2)), 1), n_segs - 1)
        status = [-1]

        def second() -> None:
            status[0] = run(mid, n_segs)

        worker = threading.Thread(target=second)
        worker.start()
        bad = run(0, mid)
        worker.join()
        bad = max(bad, status[0])
    else:
        bad = run(0, n_segs)
    if bad >= 0:
        return out, doc_bounds, int(np.flatnonzero((ids < 0) | (ids >= t.alphabet_size))[0])
    out_bounds = _k.compact_segments(out, seg_bounds, counts, doc_seg)
    return out, out_bounds, -1


def encode(ids: np.ndarray, tables: EncoderTables) -> np.ndarray:
    """Replay-encode alphabet ids (int, in ``[0, A)``) into int32 priority-space tokens."""
    t = _check_tables(tables)
    ids = _check_ids(ids, "ids")
    if ids.dtype != np.int32:
        ids = _check_range(ids, "ids", t.alphabet_size)  # before int32 conversion can wrap
    ids = np.ascontiguousarray(ids)
    n = ids.shape[0]
    out, out_bounds, bad = _encode_concatenated(ids, np.array([0, n], dtype=np.int64), t)
    if bad >= 0:
        raise ValueError(
            f"ids[{bad}] = {int(ids[bad])} is out of range: valid ids are [0, {t.alphabet_size})"
        )
    count = int(out_bounds[1])
    return out[:count].copy() if count < n // 2 else out[:count]


def encode_batch(docs: Sequence[np.ndarray], tables: EncoderTables) -> list[np.ndarray]:
    """Replay-encode independent sequences; returns one int32 token array per document.

    All documents are encoded by one kernel call, which reuses its workspace between them.
    """
    t = _check_tables(tables)
    if isinstance(docs, np.ndarray) and docs.ndim == 1:
        raise TypeError("docs must be a sequence of 1-D arrays; for one sequence use encode()")
    checked = []
    for d, doc in enumerate(docs):
        doc = _check_ids(doc, f"docs[{d}]")
        if doc.dtype != np.int32:
            doc = _check_range(doc, f"docs[{d}]", t.alphabet_size)
        checked.append(doc)
    n_docs = len(checked)
    if n_docs == 0:
        return []
    doc_bounds = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum([d.shape[0] for d in checked], out=doc_bounds[1:])
    ids = np.concatenate(checked).astype(np.int32, copy=False)
    out, out_bounds, bad = _encode_concatenated(ids, doc_bounds, t)
    if bad >= 0:
        d = int(np.searchsorted(doc_bounds, bad, side="right")) - 1
        i = bad - int(doc_bounds[d])
        raise ValueError(
            f"docs[{d}][{i}] = {int(ids[bad])} is out of range: valid ids are "
            f"[0, {t.alphabet_size})"
        )
    return [out[out_bounds[d]:out_bounds[d + 1]].copy() for d in range(n_docs)]


# --------------------------------------------------------------------------------------------
# Decoding.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expansion:
    """Expansions of all tokens, built once per model by :func:`build_expansion`.

    A token t with ``lengths[t] <= max_table_length`` expands to
    ``values[offsets[t]:offsets[t + 1]]`` (int32 alphabet ids); longer tokens have an empty slice
    and are expanded through their children ``left[t - A]``, ``right[t - A]``. ``lengths`` (int64,
    ``A + M``) holds every token's expanded length, saturated at ``2**61``.
    """

    offsets: np.ndarray
    values: np.ndarray
    lengths: np.ndarray
    alphabet_size: int
    left: np.ndarray
    right: np.ndarray
    max_table_length: int
    max_depth: int

    @property
    def n_tokens(self) -> int:
        """Vocabulary size ``A + M``."""
        return self.lengths.shape[0]


def build_expansion(
    merges: np.ndarray, alphabet_size: int, *, max_table_values: int = DEFAULT_MAX_TABLE_VALUES
) -> Expansion:
    """Build the expansion table of ``merges`` (int (M, 2), priority space).

    The table holds every token up to the largest length whose tokens together take at most
    ``max_table_values`` values (the alphabet is always tabled).
    """
    a = check_int("alphabet_size", alphabet_size, 1, _MAX_INT32)
    left, right = _check_merges(merges, a)
    max_table_values = check_int("max_table_values", max_table_values, 0)
    lengths, depth = _k.expansion_lengths(left, right, a)
    # largest L such that sum(lengths[lengths <= L]) <= max_table_values
    small = np.sort(lengths[lengths <= max_table_values])
    cum = np.cumsum(small)
    last_of_length = np.append(small[1:] != small[:-1], True)
    ok = last_of_length & (cum <= max_table_values)
    max_length = max(int(small[ok].max()) if ok.any() else 1, 1)
    offsets, values = _k.build_table(left, right, a, lengths, max_length)
    return Expansion(offsets, values, lengths, a, left, right, max_length, int(depth.max()))


def _check_expansion(expansion: object) -> Expansion:
    if not isinstance(expansion, Expansion):
        raise TypeError(f"expansion must be an Expansion (see build_expansion), got "
                        f"{type(expansion).__name__}")
    return expansion


def _check_tokens(tokens: object, expansion: Expansion) -> np.ndarray:
    tokens = _check_ids(tokens, "tokens")
    return _check_range(tokens, "tokens", expansion.n_tokens)


def expanded_length(tokens: np.ndarray, expansion: Expansion) -> int:
    """Total decoded length of priority-space ``tokens``."""
    e = _check_expansion(expansion)
    tokens = _check_tokens(tokens, e)
    total = int(_k.total_length(tokens, e.lengths))
    if total >= _k.LENGTH_CAP:
        raise ValueError("tokens expand to 2**61 values or more: no array can hold them")
    return total


def value_table(expansion: Expansion, symbol_values: np.ndarray) -> np.ndarray:
    """The expansion table mapped through ``symbol_values`` (shape (A,), any numeric dtype).

    Passing it to :func:`decode` makes the kernel write final values instead of alphabet ids,
    which saves a second pass over the output.
    """
    e = _check_expansion(expansion)
    symbol_values = np.asarray(symbol_values)
    if symbol_values.ndim != 1 or symbol_values.shape[0] != e.alphabet_size:
        raise ValueError(f"symbol_values must have shape ({e.alphabet_size},), got {symbol_values.shape}")
    if symbol_values.dtype.kind not in "iub":
        raise TypeError(f"symbol_values must be integers or bools, got {symbol_values.dtype}")
    return np.ascontiguousarray(symbol_values[e.values])


def decode(
    tokens: np.ndarray,
    expansion: Expansion,
    out: np.ndarray | None = None,
    *,
    values: np.ndarray | None = None,
) -> np.ndarray:
    """Expand int32 priority-space tokens into int32 alphabet ids.

    With ``values`` (from :func:`value_table`), the result holds the symbols' values in
    ``values.dtype`` instead. ``out``, if given, must be a writable C-contiguous 1-D array of
    that dtype with at least ``expanded_length(tokens)`` elements; the result is its leading slice.
    """
    e = _check_expansion(expansion)
    tokens = _check_tokens(tokens, e)
    total = int(_k.total_length(tokens, e.lengths))
    if total >= _k.LENGTH_CAP:
        raise ValueError("tokens expand to 2**61 values or more: no array can hold them")
    if values is None:
        values = e.values
    elif values.shape != e.values.shape or not values.flags.c_contiguous:
        raise ValueError("values must come from value_table() of this expansion")
    if out is None:
        out = np.empty(total, dtype=values.dtype)
    else:
        if not isinstance(out, np.ndarray):
            raise TypeError(f"out must be a numpy array, got {type(out).__name__}")
        if out.dtype != values.dtype or out.ndim != 1 or not out.flags.c_contiguous:
            raise TypeError(f"out must be a C-contiguous 1-D {values.dtype} array, got {out.dtype} with "
                            f"shape {out.shape}")
        if not out.flags.writeable:
            raise ValueError("out must be writable")
        if out.shape[0] < total:
            raise ValueError(f"out has {out.shape[0]} elements, the tokens expand to {total}")
    written = _k.decode_kernel(tokens, e.left, e.right, e.alphabet_size, e.offsets, values,
                               e.lengths, e.max_depth, out)
    return out[:written]
