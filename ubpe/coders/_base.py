"""What every coder shares: the :class:`Coder` record, the tokens it codes, and field checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import CorruptDataError
from .. import _validate

#: Largest vocabulary a stream may declare (the format's limit).
MAX_VOCAB = 1 << 24


@dataclass(frozen=True)
class Tokens:
    """A stream to code: ``values`` (int, 1-D, each in ``[0, vocab_size)``, at least two distinct),
    its histogram ``counts`` (int64, ``vocab_size`` entries), the used ``ids`` (increasing) and
    the text classes of its symbols (``classes``, one per symbol, or None)."""

    values: np.ndarray
    vocab_size: int
    counts: np.ndarray
    ids: np.ndarray
    classes: np.ndarray | None
    #: "mag" chooses its running-mean rate on a sample above this many tokens (None: its own
    #: :data:`ubpe.coders.mag.RATE_SAMPLE_ABOVE`)
    rate_sample_above: int | None = None
    #: Counts "mag" may take instead of counting them again (the level-1 planner's, which counted
    #: these very tokens to size them): ``{rate: (counts, raw_bits, center)}``, ``counts`` int64
    #: ``(N_CONTEXTS, N_BUCKETS)`` as :func:`ubpe._kernels.level1.mag_stats` adds them for that
    #: running-mean rate about ``center``, ``raw_bits`` its return value. Used only where
    #: ``center`` is the coder's own (the same counts, so the same bytes); None: none. A fourth
    #: element, where present and not None, is that rate's options ``(ce, tbits)`` at every
    #: precision (:func:`ubpe.coders.mag.stream_options`' rows), taken too.
    mag_stats: dict | None = None
    #: The stream is coded whole (a container's, not a planner's sample of windows of one): "cms2"
    #: measures its flags on a shorter first pass (``ubpe._kernels.cmsignal2._prefix``). The
    #: writer's choice; any stream decodes alike.
    whole: bool = False

    @property
    def n(self) -> int:
        return int(self.values.shape[0])


@dataclass(frozen=True)
class Coder:
    """One entropy coder of the registry (:data:`ubpe.coders.REGISTRY`).

    ``number``: the coder's number in a container (fixed once a format version defines it).
    ``fields``: the stream map's keys, ``"coder"`` and ``"n"`` first (a reader refuses any
    other key). ``levels``: the ``compress`` levels whose writer offers it. ``kind``:
    ``"trivial"`` (const, packed: no model), ``"static"`` (a stored model: measured by
    level 1 already), ``"adaptive"`` (learns as it codes: no stored model, level 2 and up) or
    ``"values"`` (codes a container's values, not tokens: ``compress(level=3)``'s "mixsignal").
    ``symbols``: ``"any"``, ``"signal"`` (streams without text classes) or ``"text"`` (needs
    the classes of byte symbols, :func:`ubpe.coders.text_classes`). ``encode(tokens, budget)``
    returns the stream map, or None when it cannot be smaller than ``budget`` bytes;
    ``decode(fields, n, vocab_size, classes)`` returns the ``n`` tokens (int32) of a map whose
    keys and ``n`` were checked, raising :class:`~ubpe.CorruptDataError` for anything else.
    """

    name: str
    number: int
    fields: tuple[str, ...]
    levels: tuple[int, ...]
    kind: str
    symbols: str
    encode: Callable[[Tokens, int], dict | None]
    decode: Callable[[dict, int, int, Any], np.ndarray]

    def applies(self, classes: np.ndarray | None) -> bool:
        """Whether this coder may code a stream with (or without) text ``classes``."""
        if self.symbols == "signal":
            return classes is None
        if self.symbols == "text":
            return classes is not None
        return True


def field_int(fields: dict, name: str, lo: int, hi: int | None = None) -> int:
    """``fields[name]`` if it is an int (not a bool) in ``[lo, hi]``, else CorruptDataError."""
    return _validate.field_int(fields, name, lo, hi, where="stream")


def field_bytes(fields: dict, name: str) -> bytes:
    """``fields[name]`` if it is bytes, else CorruptDataError."""
    return _validate.field_bytes(fields, name, where="stream")


def alloc_tokens(n: int) -> np.ndarray:
    """An int32 array for ``n`` decoded tokens (CorruptDataError when it cannot be allocated)."""
    try:
        return np.empty(n, dtype=np.int32)
    except (MemoryError, ValueError, OverflowError):
        raise CorruptDataError(f"field 'n' = {n}: too many tokens to allocate") from None


def packed_width(hi: int) -> int:
    """Bits per token of the "packed" coder for tokens up to ``hi``."""
    return int(hi).bit_length()
