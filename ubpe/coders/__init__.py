"""Entropy coders: a token stream in ``[0, V)`` to the fewest bytes and back, bit-exact.

One registry, :data:`REGISTRY`, in tie order: each :class:`Coder` names its stream's fields,
the levels whose writer offers it, its kind and the streams it applies to, and its ``encode``
and ``decode``. Adding a coder is one new module defining ``CODER`` and one entry here.

:func:`encode_stream` returns a small msgpack-safe map (str keys; int, str and bytes values):
the smallest of the offered coders' streams ("packed" always one of them, "const" whenever one
symbol repeats). :func:`decode_stream` inverts it, checking the map's keys and ``n`` before any
coder runs and any array proportional to ``n`` is allocated; each coder checks its own fields.

=========  ======================================================================================
coder      what it is (docs/format.md, "Coders", has every field)
=========  ======================================================================================
``const``  every token equals one symbol: ``symbol``
``packed`` fixed-width little-endian bit packing: ``width``, ``payload``
``rans``   a stored count table and rANS (:mod:`ubpe.coders.rans`)
``mag``    magnitude classes with per-loudness tables, and raw low bits (:mod:`ubpe.coders.mag`)
``cms2``   context mixing for signals over a fitted binary code (:mod:`ubpe.coders.cms2`)
``cmt2``   context mixing for text through its bytes (:mod:`ubpe.coders.cmt2`)
``mixsignal`` the values themselves by the level-3 signal coder (:mod:`ubpe.coders.mixsignal`)
``floatpack`` short float series: their decimal integers at one width (:mod:`ubpe.coders.floatpack`)
``hold``   a stream mostly of one token: holds and steps (:mod:`ubpe.coders.hold`)
=========  ======================================================================================
"""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

from .._kernels import l1plan as _l1plan
from .._kernels import tally as _tally
from .._validate import check_int
from ..alphabet import distinct
from ..errors import CorruptDataError
from . import cms2, cmt2, const, floatpack, hold, mag, mixsignal, packed, rans
from ._base import MAX_VOCAB, Coder, Tokens, packed_width
from .cmt2 import text_classes
from .rans import counts_cost_bits

__all__ = ["Coder", "REGISTRY", "CODERS", "VALUE_CODERS", "MAX_VOCAB", "coders_for", "encode_stream", "decode_stream",
           "text_classes", "counts_cost_bits"]

#: Every coder, in tie order (the earlier wins a tie of sizes).
REGISTRY: tuple[Coder, ...] = (const.CODER, packed.CODER, rans.CODER, mag.CODER, cms2.CODER, cmt2.CODER,
                               mixsignal.CODER, floatpack.CODER, hold.CODER)
_BY_NAME = {c.name: c for c in REGISTRY}
#: Every coder's name, in tie order.
CODERS = tuple(_BY_NAME)
#: Coders of the values themselves (kind "values": a container's one stream, no model, no front end).
VALUE_CODERS = frozenset(c.name for c in REGISTRY if c.kind == "values")


def coders_for(level: int, kinds: tuple[str, ...] = ("trivial", "static", "adaptive", "values")) -> tuple[str, ...]:
    """The names of the coders the writer offers at ``level``, of the given ``kinds`` (level 3:
    level 2's, and the coders of the values, "mixsignal", whose container ``compress(level=3)``
    writes when it is smaller than level 2's)."""
    below = coders_for(2, kinds) if level == 3 else ()
    return below + tuple(c.name for c in REGISTRY if level in c.levels and c.kind in kinds)


def _check_vocab(vocab_size: Any) -> int:
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    vocab_size = int(vocab_size)
    if not 1 <= vocab_size <= MAX_VOCAB:
        raise ValueError(f"vocab_size must be in [1, {MAX_VOCAB}], got {vocab_size}")
    return vocab_size


def _check_tokens(tokens: Any, vocab_size: int) -> np.ndarray:
    arr = np.asarray(tokens)
    if arr.ndim != 1:
        raise ValueError(f"tokens must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"tokens must have an integer dtype, got {arr.dtype}")
    if arr.dtype.itemsize <= 4 and arr.dtype.isnative and arr.flags.c_contiguous:
        lo, hi = (int(v) for v in _l1plan.min_max(arr))  # (one compiled pass: the same bounds)
    else:
        lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= vocab_size:
        raise ValueError(f"tokens must be in [0, {vocab_size}), got range [{lo}, {hi}]")
    return arr


def encode_stream(tokens: np.ndarray, vocab_size: int, *, coders: tuple[str, ...] = coders_for(1),
                  classes: np.ndarray | None = None, rate_sample_above: int | None = None,
                  mag_stats: dict | None = None, whole: bool = False) -> dict:
    """Encode tokens in ``[0, vocab_size)`` with the smallest of ``coders``; return the stream map.

    ``coders`` lists the candidates by name ("packed" is always one; "const" is used whenever
    one symbol repeats and it is offered); a coder runs only on the streams it applies to
    (``Coder.symbols``: "cmt2" only with ``classes``, from :func:`text_classes`, one per symbol;
    "cms2" only without). The smallest msgpack size wins, ties to the earlier of
    :data:`REGISTRY`. Same input, same bytes. ``rate_sample_above``: "mag" chooses its
    running-mean rate on a sample of a stream longer than this (None: above
    :data:`ubpe.coders.mag.RATE_SAMPLE_ABOVE`; the writer's choice, decoded alike).
    ``mag_stats``: counts of these tokens "mag" may reuse (:attr:`Tokens.mag_stats`; the same bytes).
    ``whole``: the tokens are a stream coded whole, not a sample of one (:attr:`Tokens.whole`).
    """
    vocab_size = _check_vocab(vocab_size)
    if rate_sample_above is not None:
        rate_sample_above = check_int("rate_sample_above", rate_sample_above, 1)
    unknown = [c for c in coders if c not in _BY_NAME]
    if unknown:
        raise ValueError(f"unknown coders {unknown}; choose from {CODERS}")
    arr = _check_tokens(tokens, vocab_size)
    n = int(arr.size)
    if n == 0:
        return {"coder": "packed", "n": 0, "width": 0, "payload": b""}
    if arr.dtype.kind in "iu" and arr.dtype.itemsize <= 8 and arr.dtype.isnative:
        # (np.bincount's counts, the tokens read in their width: bincount copied int32 tokens to
        # intp first, 8 bytes a token of fresh pages; _check_tokens checked their range)
        counts = np.zeros(vocab_size, np.int64)
        _tally.token_counts(arr, counts)
    else:
        counts = np.bincount(arr, minlength=vocab_size).astype(np.int64, copy=False)  # (intp: no copy on 64-bit)
    # the used ids: from the tokens themselves when the vocabulary is much larger than they are
    # (level 2's dense ids span millions of values for a few thousand tokens: a pass over the
    # histogram read 8 bytes a value of the span), else from the histogram; the same array
    if vocab_size > 8 * n:
        used = distinct(arr).astype(np.intp, copy=False)
    else:  # (np.flatnonzero's ids, one compiled pass)
        used = np.empty(vocab_size, np.intp)
        used = used[:_l1plan.nonzero_ids(counts, used)]
    t = Tokens(arr, vocab_size, counts, used, classes, rate_sample_above, mag_stats, whole)
    if t.ids.shape[0] == 1 and "const" in coders:
        return const.encode(t, 0)
    others = [c for c in REGISTRY if c.kind != "trivial" and c.name in coders and c.applies(classes)]
    if t.ids.shape[0] == 1 or not others:
        return packed.encode(t, 0)
    best: dict | None = None  # None: "packed", written only if it stays the smallest
    best_size = packed.size(n, packed_width(int(t.ids[-1])))
    for coder in others:
        cand = coder.encode(t, best_size)
        if cand is not None:
            size = len(msgpack.packb(cand))
            if size < best_size:
                best, best_size = cand, size
    return packed.encode(t, 0) if best is None else best


def decode_stream(fields: dict, vocab_size: int, *, max_count: int | None = None,
                  classes: np.ndarray | None = None) -> np.ndarray:
    """Invert :func:`encode_stream`; return the tokens as int32. ``classes``: what
    :func:`text_classes` gives for the stream's alphabet (a "cmt2" stream needs them).

    The map's keys must be exactly its coder's; ``n`` above ``max_count`` is refused first.
    Any malformed input raises :class:`~ubpe.CorruptDataError` naming the field.
    """
    vocab_size = _check_vocab(vocab_size)
    if max_count is not None:
        if isinstance(max_count, bool) or not isinstance(max_count, int) or max_count < 0:
            raise ValueError(f"max_count must be a non-negative int or None, got {max_count!r}")
    coder, n = check_stream(fields)
    if max_count is not None and n > max_count:
        raise CorruptDataError(f"field 'n' = {n} exceeds max_count {max_count}")
    return coder.decode(fields, n, vocab_size, classes)


def check_stream(fields: Any) -> tuple[Coder, int]:
    """The coder and token count of a stream map whose keys are exactly its coder's."""
    if not isinstance(fields, dict):
        raise CorruptDataError(f"stream fields must be a dict, got {type(fields).__name__}")
    name = fields.get("coder")
    if not isinstance(name, str):
        raise CorruptDataError(f"field 'coder' must be a str, got {type(name).__name__}")
    coder = _BY_NAME.get(name)
    if coder is None:
        raise CorruptDataError(f"field 'coder': unknown coder {name[:40]!r}")
    if len(fields) != len(coder.fields) or not all(map(fields.__contains__, coder.fields)):
        for key in coder.fields:
            if key not in fields:
                raise CorruptDataError(f"field {key!r} missing for coder {name!r}")
        extra = sorted(str(key)[:40] for key in fields if key not in coder.fields)
        raise CorruptDataError(f"unexpected fields for coder {name!r}: {extra}")
    n = fields["n"]
    if type(n) is not int or n < 0:
        raise CorruptDataError(f"field 'n' must be a non-negative int, got {str(n)[:40]}")
    return coder, n
