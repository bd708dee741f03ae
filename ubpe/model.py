"""A BPE model: an alphabet and its merges in priority space, with lazily built tables.

The :class:`Model` is what encoding and decoding need and nothing of how it was trained: the
:class:`~ubpe.Tokenizer`, the container and the codecs all encode and decode through one. Its
:attr:`Model.digest` names what decoding needs (mode, alphabet, merges), so two models that
decode the same share a digest even if they were trained with different parameters.
"""

from __future__ import annotations

import hashlib
import threading
import warnings
from collections.abc import Mapping
from typing import Any

import msgpack
import numpy as np

from . import encoder
from ._validate import check_choice, check_int
from .alphabet import Alphabet

__all__ = ["METHODS", "MODES", "MODE_METHODS", "Model", "check_decode_dtype"]

#: Encoding modes (docs/algorithm.md, "Sequence mode"): "classic" replays the merges in
#: priority order; "sequence" uses each token's alphabet sequence whole and encodes by
#: segmentation. Both decode the same way.
MODES = ("classic", "sequence")
#: Encoding methods (:meth:`Model.encode`): "replay" the merges, or segment the values into
#: vocabulary tokens with the fewest tokens ("optimal") or the fewest bits ("bits"; :mod:`ubpe.segment`).
METHODS = ("replay", "optimal", "bits")
#: The methods each mode may record as its default, the first being the default's default.
MODE_METHODS = {"classic": ("replay",), "sequence": ("bits", "optimal")}
MAX_TOKENS = 2**31 - 1
DIGEST_MAGIC = "ubpe.model"
DIGEST_VERSION = 1
#: ``max_output_size=None`` means this cap, in bytes of a decoded array (here and in
#: :func:`ubpe.decompress`): 4 GiB.
DEFAULT_MAX_OUTPUT_SIZE = 1 << 32
#: Statistics a model may carry (each an array of one value per merge).
STAT_NAMES = ("batches", "counts", "df", "weights")


def check_decode_dtype(alphabet: Alphabet, dtype: Any) -> np.dtype:
    """``np.dtype(dtype)`` if every value of ``alphabet`` round-trips through it, else raise.

    Accepted: integer dtypes (either byte order) holding every alphabet value of an integer or
    range alphabet; bool when those values are within {0, 1}; object for any alphabet; unicode
    for a symbols alphabet of strings that fit. ``TypeError`` for a dtype of the wrong kind
    (float, bytes, datetime, void, ...), ``ValueError`` for one too narrow for the values.
    """
    try:
        with warnings.catch_warnings():  # deprecated aliases ('a') are refused below as bytes
            warnings.simplefilter("ignore", DeprecationWarning)
            dt = np.dtype(dtype)
    except Exception as e:  # numpy raises TypeError, ValueError, even SyntaxError for odd strings
        raise TypeError(f"{dtype!r} is not a numpy dtype: {e}") from None
    kind = alphabet.kind
    if dt.kind == "O":
        return dt
    if kind == "symbols":
        if dt.kind != "U":
            raise TypeError(f"dtype {dt} cannot hold the symbols of this alphabet: use object or str")
        values = alphabet.values
        if not all(isinstance(v, str) for v in values):
            raise ValueError(f"dtype {dt} cannot hold non-string symbols: use object")
        width = dt.itemsize // 4
        if width and any(len(v) > width for v in values):
            raise ValueError(f"dtype {dt} is too narrow for the symbols of this alphabet")
        if not width:  # a flexible "U": fix the width, so that decoding returns one exact dtype
            dt = np.dtype(f"{dt.byteorder if dt.byteorder in '<>' else '='}U{max(1, max(map(len, values), default=1))}")
        if any(v.endswith("\0") for v in values):  # numpy strips trailing NULs
            raise ValueError(f"dtype {dt} cannot hold symbols ending in NUL: use object")
        return dt
    if dt.kind not in "iub":
        raise TypeError(f"dtype {dt} cannot hold integer values: use an integer dtype")
    if len(alphabet) == 0:
        return dt
    lo, hi = _value_bounds(alphabet)
    if dt.kind == "b":
        if lo < 0 or hi > 1:
            raise ValueError(f"dtype bool cannot hold the alphabet's values in [{lo}, {hi}]")
        return dt
    info = np.iinfo(dt)
    if lo < info.min or hi > info.max:
        raise ValueError(f"dtype {dt} cannot hold the alphabet's values in [{lo}, {hi}]")
    return dt


def _value_bounds(alphabet: Alphabet) -> tuple[int, int]:
    if alphabet.kind == "range":
        return 0, len(alphabet) - 1
    values = alphabet.values
    return int(values[0]), int(values[-1])


class Model:
    """An alphabet and its merges in priority space; encoder tables and expansion built lazily.

    Parameters
    ----------
    alphabet : Alphabet
        The ``A`` symbols; priority-space tokens ``0 .. A-1`` are its ids.
    merges : array of int, shape (M, 2)
        Row ``k`` makes token ``A + k`` from two tokens both ``< A + k``.
    mode : {"classic", "sequence"}
        How sequences are encoded by default: "classic" replays the merges in priority order;
        "sequence" segments them into the tokens' alphabet sequences (docs/algorithm.md,
        "Sequence mode"). Covered by :attr:`digest`.
    method : str, optional
        The default method of :meth:`encode`, one of ``MODE_METHODS[mode]`` ("replay" for
        classic; "bits" (default) or "optimal" for sequence). Not covered by :attr:`digest`:
        tokens decode the same whatever method made them.
    token_ids : array of int, shape (A + M,), optional
        Public id of each priority-space token (alphabet ids fixed, merged ids a permutation of
        ``A .. A+M-1``); identity when omitted. Not covered by :attr:`digest`.
    stats : mapping, optional
        Training statistics, one value per merge: any of ``batches``, ``counts``, ``df``,
        ``weights``. Carried along, never used to encode or decode.

    Invariants: the arrays are read-only; tables are built at most once and shared by threads.
    """

    def __init__(
        self,
        alphabet: Alphabet,
        merges: Any,
        *,
        mode: str = "classic",
        method: str | None = None,
        token_ids: Any = None,
        stats: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(alphabet, Alphabet):
            raise TypeError(f"alphabet must be an Alphabet, got {type(alphabet).__name__}")
        self._mode, self._method = check_mode(mode, method)
        a = len(alphabet)
        if a < 1:
            raise ValueError("alphabet must hold at least one symbol")
        merges = np.asarray(merges) if not isinstance(merges, np.ndarray) else merges
        if merges.size == 0 and merges.ndim in (1, 2):
            merges = np.zeros((0, 2), dtype=np.int32)
        if merges.dtype.kind not in "iu":
            raise TypeError(f"merges must be integers, got dtype {merges.dtype}")
        if merges.ndim != 2 or merges.shape[1] != 2:
            raise ValueError(f"merges must have shape (M, 2), got {merges.shape}")
        m = merges.shape[0]
        if a + m > MAX_TOKENS:
            raise ValueError(f"alphabet size + merges must be at most {MAX_TOKENS}, got {a + m}")
        if m:
            wide = merges.astype(np.int64)
            limit = a + np.arange(m, dtype=np.int64)[:, None]
            bad = np.flatnonzero(((wide < 0) | (wide >= limit)).any(axis=1))
            if bad.size:
                k = int(bad[0])
                raise ValueError(
                    f"merges[{k}] = {merges[k].tolist()}: each merge may only use tokens made before "
                    f"it, in [0, {a + k})"
                )
        self._alphabet = alphabet
        self._merges = _frozen(merges.astype(np.int32))
        self._token_ids = None if token_ids is None else _frozen(self._check_token_ids(token_ids, a, m))
        self._stats = {}
        if stats is not None:
            if not isinstance(stats, Mapping):
                raise TypeError(f"stats must be a mapping, got {type(stats).__name__}")
            for name, value in stats.items():
                check_choice("stats key", name, STAT_NAMES)
                arr = np.asarray(value)
                if arr.shape != (m,):
                    raise ValueError(f"stats[{name!r}] must have shape ({m},), got {arr.shape}")
                self._stats[name] = _frozen(arr.copy())
        self._lock = threading.Lock()
        self._cache: dict[Any, Any] = {}

    @staticmethod
    def _check_token_ids(token_ids: Any, a: int, m: int) -> np.ndarray:
        ids = np.asarray(token_ids)
        if ids.dtype.kind not in "iu":
            raise TypeError(f"token_ids must be integers, got dtype {ids.dtype}")
        if ids.shape != (a + m,):
            raise ValueError(f"token_ids must have shape ({a + m},), got {ids.shape}")
        if a and not np.array_equal(ids[:a], np.arange(a)):
            raise ValueError("token_ids must keep the alphabet's ids 0 .. A-1")
        if m and not np.array_equal(np.sort(ids[a:]), a + np.arange(m)):
            raise ValueError("token_ids of the merged tokens must be a permutation of A .. A+M-1")
        return ids.astype(np.int32)

    # ==================== properties

    @property
    def alphabet(self) -> Alphabet:
        return self._alphabet

    @property
    def merges(self) -> np.ndarray:
        """(M, 2) int32, read-only: children of each merge in priority space."""
        return self._merges

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def method(self) -> str:
        """The default method of :meth:`encode` ("replay", "optimal" or "bits")."""
        return self._method

    @property
    def alphabet_size(self) -> int:
        return len(self._alphabet)

    @property
    def n_merges(self) -> int:
        return self._merges.shape[0]

    @property
    def vocab_size(self) -> int:
        """``A + M``: tokens of the vocabulary, alphabet included."""
        return self.alphabet_size + self.n_merges

    def __len__(self) -> int:
        return self.vocab_size

    @property
    def token_ids(self) -> np.ndarray | None:
        """(A + M,) int32 public id of each priority-space token, or None (identity)."""
        return self._token_ids

    @property
    def stats(self) -> dict[str, np.ndarray]:
        """Training statistics carried with the model (a copy of the mapping; arrays read-only)."""
        return dict(self._stats)

    # ==================== lazily built tables

    def _cached(self, key: Any, build: Any) -> Any:
        value = self._cache.get(key)
        if value is None:
            with self._lock:
                value = self._cache.get(key)
                if value is None:
                    value = build()
                    self._cache[key] = value
        return value

    def encoder_tables(self) -> encoder.EncoderTables:
        """The pair tables of :func:`ubpe.encoder.build_encoder` (built once)."""
        return self._cached("tables", lambda: encoder.build_encoder(self._merges, self.alphabet_size))

    def expansion(self) -> encoder.Expansion:
        """The expansion of every token, :func:`ubpe.encoder.build_expansion` (built once)."""
        return self._cached("expansion", lambda: encoder.build_expansion(self._merges, self.alphabet_size))

    def value_table(self, dtype: Any) -> np.ndarray:
        """The expansion table as values of ``dtype`` (integer or bool; integer alphabets only).

        ``dtype`` must hold every alphabet value (:func:`check_decode_dtype`); a non-native byte
        order is tabled in native order (the kernel writes native values).
        """
        dt = check_decode_dtype(self._alphabet, dtype)
        if dt.kind not in "iub" or self._alphabet.kind == "symbols":
            raise TypeError(f"value_table needs an integer alphabet and an integer dtype, got {dt}")
        native = dt.newbyteorder("=") if dt.byteorder not in "=|" else dt

        def build() -> np.ndarray:
            symbols = self._alphabet.to_values(np.arange(self.alphabet_size), dtype=native)
            return _frozen(encoder.value_table(self.expansion(), symbols))

        return self._cached(("values", native.str), build)

    # ==================== encoding and decoding (priority space)

    def encode(self, ids: Any, method: str | None = None, counts: np.ndarray | None = None) -> np.ndarray:
        """Encode alphabet ids (1-D integer array in ``[0, A)``) into int32 priority-space tokens.

        ``method`` (default: :attr:`method`): "replay" replays the merges; "optimal" (fewest
        tokens) and "bits" (fewest bits) segment the ids into the tokens' alphabet sequences
        (:mod:`ubpe.segment`). "bits" prices a token by its count in ``counts`` (one per
        priority-space token; default :meth:`token_counts`, the training counts). Every method
        works in both modes, and the tokens decode to ``ids`` whatever the method.
        """
        method = self._method if method is None else check_choice("method", method, METHODS)
        ids = np.asarray(ids)
        if method == "replay":
            return encoder.encode(ids, self.encoder_tables())
        from . import segment

        if method == "optimal":
            return segment.fewest_tokens(ids, self.expansion())
        return segment.fewest_bits(ids, self.expansion(), self.token_counts() if counts is None else counts)

    def encode_batch(self, docs: Any, method: str | None = None) -> list[np.ndarray]:
        """:meth:`encode` of several independent sequences, in one kernel call per method."""
        method = self._method if method is None else check_choice("method", method, METHODS)
        if method == "replay":
            return encoder.encode_batch(docs, self.encoder_tables())
        from . import segment

        if method == "optimal":
            return segment.fewest_tokens_batch(docs, self.expansion())
        return segment.fewest_bits_batch(docs, self.expansion(), self.token_counts())

    def token_counts(self) -> np.ndarray:
        """(A + M,) int64: how often each priority-space token occurs in the training corpus's
        final stream, as far as the statistics tell, for pricing tokens in "bits" encoding.

        A merged token's count is the occurrences its merge replaced (``stats["counts"]``) minus
        those later merges consumed as their children; alphabet symbols, whose frequencies the
        model does not keep, and a model without counts, get 0 (``ubpe.segment`` adds one to
        every count, so every token stays usable)."""

        def build() -> np.ndarray:
            a, m = self.alphabet_size, self.n_merges
            out = np.zeros(a + m, dtype=np.int64)
            if "counts" not in self._stats or not m:
                return _frozen(out)
            # in float64 (a loaded model's counts may be anything up to 2**63: no overflow), the
            # result clipped to ubpe.segment's bound of 2**40
            made = self._stats["counts"].astype(np.float64)
            consumed = (np.bincount(self._merges[:, 0], weights=made, minlength=a + m)
                        + np.bincount(self._merges[:, 1], weights=made, minlength=a + m))
            left = np.clip(made - consumed[a:], 0, (1 << 40) - 1)
            out[a:] = left.astype(np.int64)
            return _frozen(out)

        return self._cached("token_counts", build)

    def decode(self, tokens: Any, dtype: Any = None, *, max_output_size: int | None = None) -> np.ndarray:
        """Values of priority-space ``tokens`` (1-D ints in ``[0, A + M)``) as ``dtype``.

        ``dtype`` defaults to object for symbols, uint64 for an alphabet of uint64 values and int64
        otherwise; it must pass :func:`check_decode_dtype`. The result has exactly that dtype,
        byte order included. ``max_output_size`` caps the result in bytes (``None``: 4 GiB, as
        :func:`ubpe.decompress`): a few merges can make one token expand to 2**40 values, so the
        expanded length is computed and checked before anything is allocated (``ValueError``).
        """
        tokens = np.asarray(tokens)
        cap = DEFAULT_MAX_OUTPUT_SIZE if max_output_size is None else check_int("max_output_size", max_output_size, 0)
        if dtype is None:
            kind = self._alphabet.kind
            dt = np.dtype(object) if kind == "symbols" else np.dtype(
                np.uint64 if kind == "integers" and self._alphabet.values.dtype == np.uint64 else np.int64)
        else:
            dt = check_decode_dtype(self._alphabet, dtype)
        total = encoder.expanded_length(tokens, self.expansion()) if tokens.size else 0
        itemsize = 8 if dt.kind == "O" else dt.itemsize
        if total * itemsize > cap:
            raise ValueError(
                f"the tokens expand to {total} values ({total * itemsize} bytes), more than "
                f"max_output_size={cap} bytes: pass a larger max_output_size to decode them"
            )
        if dt.kind in "iub":
            out = encoder.decode(tokens, self.expansion(), values=self.value_table(dt))
            return out if out.dtype == dt else out.astype(dt)
        ids = encoder.decode(tokens, self.expansion())
        return self._alphabet.to_values(ids, dtype=dt)

    # ==================== identity

    def canonical_bytes(self) -> bytes:
        """The bytes :attr:`digest` hashes (docs/format.md, "Model files"): mode, alphabet, merges."""
        return msgpack.packb(
            {
                "magic": DIGEST_MAGIC,
                "version": DIGEST_VERSION,
                "mode": self._mode,
                "alphabet": self._alphabet.to_dict(),
                "merges": self._merges.astype("<i4").tobytes(),
            },
            use_bin_type=True,
        )

    @property
    def digest(self) -> str:
        """Hex SHA-256 of :meth:`canonical_bytes`: equal for models that decode the same."""
        return self._cached("digest", lambda: hashlib.sha256(self.canonical_bytes()).hexdigest())

    def prefix(self, k: int) -> Model:
        """The model made of the first ``k`` merges (same alphabet and mode, no public ids)."""
        k = check_int("k", k, 0, self.n_merges)
        stats = {name: v[:k] for name, v in self._stats.items()}
        return Model(self._alphabet, self._merges[:k], mode=self._mode, method=self._method, stats=stats)

    def __getstate__(self) -> dict[str, Any]:
        # tables are rebuilt lazily after unpickling; the lock cannot be pickled
        return {"alphabet": self._alphabet, "merges": self._merges, "mode": self._mode, "method": self._method,
                "token_ids": self._token_ids, "stats": self._stats}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["alphabet"], state["merges"], mode=state["mode"], method=state.get("method"),
                      token_ids=state["token_ids"], stats=state["stats"])

    def __repr__(self) -> str:
        extra = f", method={self._method!r}" if self._mode != "classic" else ""
        return f"Model({self._alphabet!r}, merges={self.n_merges}, mode={self._mode!r}{extra})"


def check_mode(mode: Any, method: Any) -> tuple[str, str]:
    """``(mode, method)`` validated: ``mode`` in :data:`MODES`, ``method`` in ``MODE_METHODS[mode]``
    (``None``: that tuple's first). ``TypeError`` for a non-str, ``ValueError`` for another value."""
    for name, value in (("mode", mode), ("method", method)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    mode = check_choice("mode", mode, MODES)
    if method is None:
        return mode, MODE_METHODS[mode][0]
    check_choice("method", method, METHODS)
    if method not in MODE_METHODS[mode]:
        raise ValueError(f"method={method!r} cannot be the default of mode={mode!r}: choose one of "
                         f"{', '.join(map(repr, MODE_METHODS[mode]))} (any method can be passed to encode)")
    return mode, method


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr
