"""The compressed container: integer values to self-describing bytes and back, bit-exact.

``compress`` maps the values to alphabet ids, tokenizes them with a BPE model (fitted on the
values themselves, or given), entropy-codes the priority-space tokens (``ubpe.entropy``) and
writes one msgpack map: magic and format version, dtype and shape of the values, the front end
(the order of the delta prediction, :mod:`ubpe.signal`, chosen automatically or given), the
alphabet and merge table (or the digest of a saved model), the token stream and a CRC-32 of the
values. ``docs/format.md`` is the normative specification.

``decompress`` is a trust boundary. It checks every field (types, lengths, ranges, the merge
table's order, the sizes the fields declare against each other and against
``max_output_size``) before any kernel runs or any array proportional to the output is
allocated, and checks the CRC of what it decoded: bytes from elsewhere either give back exactly
the values that were compressed or raise :class:`~ubpe.CorruptDataError` (a newer format raises
:class:`~ubpe.FormatVersionError`).
"""

from __future__ import annotations

import math
import numbers
import sys
import zlib
from dataclasses import asdict, dataclass
from typing import Any

import msgpack
import numpy as np

from . import encoder, entropy, trainer
from ._validate import QUANTIZE_HINT, as_sequence
from .alphabet import Alphabet
from .errors import CorruptDataError, FormatVersionError
from .signal import delta as _delta
from .signal import undelta as _undelta
from .tokenizer import Tokenizer

__all__ = ["ContainerInfo", "compress", "decompress", "inspect", "FORMAT_VERSION", "MAGIC"]

MAGIC = "ubpe"
#: Version of the container format written by :func:`compress`; readers accept 1 .. this.
FORMAT_VERSION = 1
#: ``max_output_size=None`` means this cap (bytes of the returned array): 4 GiB.
DEFAULT_MAX_OUTPUT_SIZE = 1 << 32
#: Largest vocabulary (alphabet + merges) a container can carry: the entropy coder's limit.
MAX_VOCAB = entropy.MAX_VOCAB
MAX_NDIM = 32
#: Automatic model size: at most this many merges, and at most one per AUTO_VALUES_PER_MERGE values.
AUTO_MAX_MERGES = 1 << 16
AUTO_VALUES_PER_MERGE = 8
#: Largest delta order a container may declare (``front = {"delta": k}``, ``1 <= k <= MAX_DELTA``).
MAX_DELTA = 4
#: Orders ``compress(..., delta=None)`` chooses among.
AUTO_DELTA_ORDERS = (0, 1, 2)
#: Automatic order: an order is fitted only if the order-0 entropy of its values (bits per value)
#: is at most this factor times the smallest one, plus AUTO_DELTA_ENTROPY_SLACK bits.
AUTO_DELTA_ENTROPY_FACTOR = 1.25
AUTO_DELTA_ENTROPY_SLACK = 0.05
#: Automatic order: up to this many values the remaining orders are fitted on all the values
#: (and the smallest container kept); beyond, they are compared on a sample of
#: AUTO_DELTA_SAMPLE values (AUTO_DELTA_WINDOWS evenly spaced windows) and only the chosen order
#: is fitted on all the values.
AUTO_DELTA_FULL_FIT = 1 << 19
AUTO_DELTA_SAMPLE = 1 << 18
AUTO_DELTA_WINDOWS = 16
#: ``compress(..., level=)``: 1 static model and rANS (fast decoding); 2 (default) also the
#: context-mixing coder "cm", with the delta order and the vocabulary size chosen for it.
LEVELS = (1, 2)
DEFAULT_LEVEL = 2
#: Coders offered at each level (``entropy.encode_stream``'s ``coders``).
LEVEL_CODERS = {1: entropy.DEFAULT_CODERS, 2: entropy.DEFAULT_CODERS + ("cm",)}
#: Level 2: the orders tried with "cm" are those whose order-0 entropy is at most this factor
#: times the smallest plus this slack (looser than level 1's: "cm" sees context that the
#: order-0 entropy does not, so the raw values can win where their entropy is higher).
CM_DELTA_ENTROPY_FACTOR = 1.5
CM_DELTA_ENTROPY_SLACK = 0.5
#: Level 2: numbers of merges tried with "cm", as multiples of max(A, CM_LADDER_UNIT), in
#: this order; the search stops at the first one that does not give a smaller container.
CM_LADDER = (0.0, 0.25, 0.5, 1.0, 4.0)
CM_LADDER_UNIT = 32
#: Level 2 beyond AUTO_DELTA_FULL_FIT values: when the estimates (from the sample) of the best
#: rANS container and the best "cm" container are within this factor, both are built on all
#: the values and the smaller kept; otherwise only the clear winner is built.
LEVEL2_CLOSE = 1.05

_DTYPES = frozenset(
    ["|b1", "|i1", "|u1"] + [f"{e}{k}{s}" for e in "<>" for k in "iu" for s in (2, 4, 8)]
)
_TOP_KEYS_EMBEDDED = ("magic", "v", "dtype", "shape", "front", "alphabet", "model", "stream", "crc")
_TOP_KEYS_REFERENCED = ("magic", "v", "dtype", "shape", "front", "digest", "stream", "crc")
_U64 = (1 << 64) - 1
_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1

if sys.byteorder != "little":  # pragma: no cover - every supported platform is little-endian
    raise ImportError("ubpe.container assumes a little-endian machine")


# ============================================================================ input


def _as_values(values: Any) -> np.ndarray:
    """The values as a numpy integer or bool array (any shape), or raise TypeError/ValueError."""
    if isinstance(values, np.ndarray):
        arr = values
    elif isinstance(values, np.generic):
        arr = np.asarray(values)
    elif isinstance(values, str):
        raise TypeError("compress takes integer values; encode text first, e.g. text.encode('utf-8')")
    else:
        seq = as_sequence(values, "values")  # bytes -> uint8, ints -> int64, floats -> TypeError
        if not isinstance(seq, np.ndarray) or seq.dtype.kind not in "iub":
            raise TypeError(
                "compress takes integer values (a numpy integer or bool array, a list of ints "
                "within 64 bits, or bytes)"
            )
        arr = seq
    kind = arr.dtype.kind
    if kind in "fc":
        raise TypeError(f"values have dtype {arr.dtype}; {QUANTIZE_HINT}")
    if kind not in "iub":
        raise TypeError(f"values have unsupported dtype {arr.dtype}: compress takes integer or bool arrays")
    if arr.ndim > MAX_NDIM:
        raise ValueError(f"values have {arr.ndim} dimensions, at most {MAX_NDIM} are supported")
    return arr


def _crc(dtype: np.dtype, shape: list[int] | tuple[int, ...], flat: np.ndarray) -> int:
    """CRC-32 of the description line ``"<dtype.str> <dim> <dim> ...\\n"`` (ASCII) followed by
    the values' little-endian bytes (``flat`` is native little-endian and contiguous), so that
    the checksum also covers the dtype and the shape."""
    line = " ".join([dtype.str, *map(str, shape)]) + "\n"
    crc = zlib.crc32(line.encode("ascii"))
    return zlib.crc32(memoryview(np.ascontiguousarray(flat).view(np.uint8)), crc) & 0xFFFFFFFF


# ============================================================================ alphabet field


def _alphabet_field(alphabet: Alphabet) -> dict:
    """The compact alphabet: first value, then gaps between consecutive values minus one."""
    n = len(alphabet)
    if n == 0:
        return {"n": 0, "lo": 0, "w": 0, "gaps": b""}
    if alphabet.kind == "symbols":
        raise TypeError(
            "compress needs an integer alphabet; this tokenizer's alphabet holds symbols "
            f"({alphabet!r}): use it for tokenizing, not for compressing integer arrays"
        )
    if alphabet.kind == "range":
        return {"n": n, "lo": 0, "w": 0, "gaps": b""}
    values = alphabet.values
    lo = int(values[0])
    gaps = (np.diff(values).astype(np.uint64) - np.uint64(1)) if n > 1 else np.zeros(0, np.uint64)
    hi = int(gaps.max()) if gaps.size else 0
    if hi >= 1 << 63:
        return {"n": n, "lo": lo, "w": 64, "gaps": gaps.astype("<u8").tobytes()}
    width, data = entropy.pack_uints(gaps.astype(np.int64))
    return {"n": n, "lo": lo, "w": width, "gaps": data}


@dataclass(frozen=True)
class _Values:
    """Maps alphabet ids to values: ``lo + id`` (``table`` None) or ``table[id]``."""

    size: int
    lo: int
    table: np.ndarray | None  # int64 or uint64 values

    def to_values(self, ids: np.ndarray, dtype: np.dtype) -> np.ndarray:
        """Values of ``ids`` (int32, validated) in native ``dtype``, reduced modulo 2**bits.

        Working modulo 2**bits is exact for every value the dtype holds and turns values it
        cannot hold into wrong ones, which the CRC then refuses.
        """
        if dtype.kind == "b":
            unsigned = np.dtype(np.uint8)
        else:
            unsigned = np.dtype(f"u{dtype.itemsize}")
        if self.table is None:
            out = ids.astype(unsigned)
            if self.lo % (1 << (8 * unsigned.itemsize)):
                out += unsigned.type(self.lo % (1 << (8 * unsigned.itemsize)))
        else:
            lut = self.table.astype(unsigned)  # integer casts wrap: modulo 2**bits
            out = np.take(lut, ids, mode="clip")  # ids are validated; "clip" is the fastest mode
        return out.view(dtype.newbyteorder("="))


def _parse_alphabet(field: Any) -> _Values:
    d = _map(field, "alphabet", ("n", "lo", "w", "gaps"))
    n = _int(d, "n", 0, MAX_VOCAB, where="alphabet")
    lo = _int(d, "lo", _I64_MIN, _U64, where="alphabet")
    w = _int(d, "w", 0, 64, where="alphabet")
    gaps_raw = _bytes(d, "gaps", where="alphabet")
    n_gaps = max(n - 1, 0)
    if n == 0 and (lo or w or gaps_raw):
        raise CorruptDataError("alphabet: an empty alphabet must have lo = 0, w = 0 and no gaps")
    if w == 0:
        if gaps_raw:
            raise CorruptDataError("alphabet: 'gaps' must be empty when 'w' is 0")
        last = lo + n_gaps
        _check_domain(lo, last)
        return _Values(n, lo, None)
    if w == 64:
        if len(gaps_raw) != 8 * n_gaps:
            raise CorruptDataError(f"alphabet: 'gaps' has {len(gaps_raw)} bytes, expected {8 * n_gaps}")
        gaps = np.frombuffer(gaps_raw, dtype="<u8").astype(np.uint64)
    else:
        gaps = entropy.unpack_uints(gaps_raw, n_gaps, w).astype(np.uint64)
    steps = gaps + np.uint64(1)  # wraps to 0 only for a gap of 2**64 - 1: refused below
    offsets = np.concatenate((np.zeros(1, np.uint64), np.cumsum(steps, dtype=np.uint64)))
    # each step is in [1, 2**64): an overflow of the running sum makes it decrease
    if n > 1 and not np.all(offsets[1:] > offsets[:-1]):
        raise CorruptDataError("alphabet: values overflow 64 bits")
    last = lo + int(offsets[-1])
    _check_domain(lo, last)
    if lo >= 0 and last > _I64_MAX:
        table = offsets + np.uint64(lo)
    else:  # two's complement: exact because every value fits in int64
        table = (offsets + np.uint64(lo % (1 << 64))).view(np.int64)
    return _Values(n, lo, table)


def _check_domain(lo: int, last: int) -> None:
    if lo < 0 and last > _I64_MAX:
        raise CorruptDataError("alphabet: values span beyond the int64 range")
    if last > _U64:
        raise CorruptDataError("alphabet: values exceed 2**64 - 1")


def _alphabet_values(alphabet: Alphabet) -> _Values:
    """The id -> value map of a (trusted) tokenizer's alphabet."""
    if alphabet.kind == "range":
        return _Values(len(alphabet), 0, None)
    if alphabet.kind != "integers":
        raise TypeError(f"the tokenizer's alphabet holds symbols ({alphabet!r}): it cannot decode integer arrays")
    return _Values(len(alphabet), 0, alphabet.values)


# ============================================================================ compress


def compress(
    values: Any,
    *,
    tokenizer: Tokenizer | None = None,
    n_tokens: int | None = None,
    embed: bool = True,
    delta: int | None = None,
    level: int = DEFAULT_LEVEL,
    **fit_options: Any,
) -> bytes:
    """Compress integer values into self-describing bytes (format: ``docs/format.md``).

    Parameters
    ----------
    values : array_like
        A numpy integer or bool array of any shape (flattened in C order; dtype, byte order
        and shape are restored by :func:`decompress`), a list of ints (as int64), or bytes
        (as uint8). Floating-point input raises ``TypeError``: quantize it first.
    tokenizer : Tokenizer, optional
        A fitted model to encode with. Without one, a model is fitted on ``values`` and
        embedded.
    n_tokens : int, optional
        Vocabulary size (alphabet included) of the fitted model. By default the size that
        minimises the total output is chosen: a model of up to ``A + min(65536, n // 8)``
        tokens is trained once and the best prefix of its merges (in priority order) kept
        (for the static coder; ``level=2`` also tries a few prefixes with the "cm" coder).
    embed : bool, default True
        With a ``tokenizer``: ``True`` embeds its alphabet and merge table; ``False`` stores
        only its digest, and :func:`decompress` then needs the same tokenizer.
    delta : int, optional
        The prediction front end: the values are replaced by their differences of this order
        (:func:`ubpe.signal.delta` over the flattened values, modulo ``2**bits``, as signed
        integers of the same width) before tokenization, and restored exactly by
        :func:`decompress`. An int in ``[0, MAX_DELTA]`` forces that order (``0``: the values
        as they are). ``None`` (default), when a model is fitted: the order in ``{0, 1, 2}``
        that gives the smallest container, found cheaply (the order-0 entropy of each order's
        values rules out the clearly worse ones, the others are fitted and sized; beyond
        ``AUTO_DELTA_FULL_FIT`` values they are compared on a sample and only the chosen one is
        fitted on all the values; ``level=2`` also tries the orders with the "cm" coder).
        ``None`` with a ``tokenizer`` means ``0``: the tokenizer's
        alphabet is taken to be over the values given; pass ``delta=k`` when it was fitted on
        ``ubpe.signal.delta(x, k)``. Bool values take order 0 only.
    level : {1, 2}, default 2
        How hard to compress, which also decides how fast the container decodes.

        ``1``: a static model, the token stream coded by rANS (or bit packing, or a constant);
        the delta order and the vocabulary size are chosen for that coder. Fast both ways:
        decompression at tens of millions of values per second, and with a ``tokenizer``
        compression at several millions (2.4 M int16 neural samples, on a busy 2-core
        machine: fitted, 2.7 s to compress, 0.13 s to decompress; with a fitted tokenizer,
        0.33 s and 0.08 s).

        ``2`` (default): also offers the adaptive context-mixing coder ``"cm"``
        (``ubpe._kernels.cm``: orders 0-4 over the previous tokens, a match model, no stored
        table), and chooses the delta order and the vocabulary size for the coder that is
        actually used: several (order, vocabulary size) candidates are coded and the smallest
        container is kept (on a sample beyond ``AUTO_DELTA_FULL_FIT`` values; the procedure
        is in ``docs/format.md``). Level 1's container is one of the candidates, so up to
        ``AUTO_DELTA_FULL_FIT`` values level 2 is never larger. "cm" wins on data with
        context, usually with few or no merges: 24 neural recordings together 2.87x -> 3.53x,
        each alone 2.93x -> 3.47x, an ECG 3.46x -> 3.72x, a 186 KB text 2.99x -> 4.35x. It
        costs time both ways: "cm" codes and decodes about 1 M tokens per second (0.5 M/s
        for vocabularies of ~16 000), so compressing takes 1.5-4x as long as level 1 (the 2.4
        M samples: 3.9 s; each ~100 000-value recording: ~0.5 s) and a "cm" container
        decompresses 20-100x more slowly than a rANS one (the 2.4 M samples: 2.1 s).
        Decompression speed depends only on the coder that was chosen, which
        :func:`inspect` reports (``coder``); pass ``level=1`` when decoding speed matters.

        With a ``tokenizer``, its model is kept as it is and level 2 only offers "cm" for its
        stream (so compressing runs at about 1 M values/s instead of several M/s). With
        ``n_tokens``, the vocabulary size is fixed and level 2 chooses the delta order and
        the coder.
    **fit_options
        ``n_candidates``, ``min_count``, ``weighting``, ``window``: passed to :class:`Tokenizer`
        when a model is fitted.

    Returns
    -------
    bytes

    Examples
    --------
    >>> import numpy as np, ubpe
    >>> x = np.tile(np.array([3, -1, 4, 1, 5], dtype=np.int16), 200)
    >>> data = ubpe.compress(x)
    >>> len(data) < x.nbytes
    True
    >>> y = ubpe.decompress(data)
    >>> y.dtype, bool(np.array_equal(x, y))
    (dtype('int16'), True)
    """
    arr = _as_values(values)
    if not isinstance(embed, (bool, np.bool_)):
        raise TypeError(f"embed must be a bool, got {embed!r}")
    order = _delta_argument(delta, arr.dtype)
    level = _level_argument(level)
    dtype = arr.dtype
    if dtype.kind == "b":
        arr = arr.view(np.uint8) != 0  # normalise bool bytes to 0/1 (the CRC covers them)
    shape = [int(s) for s in arr.shape]
    native = dtype.newbyteorder("=") if dtype.byteorder == ">" else dtype
    flat = np.ascontiguousarray(arr.reshape(-1), dtype=native)
    n = flat.shape[0]

    fields: dict[str, Any] = {
        "magic": MAGIC,
        "v": FORMAT_VERSION,
        "dtype": dtype.str,
        "shape": shape,
        "front": {},
    }
    if tokenizer is not None:
        if not isinstance(tokenizer, Tokenizer):
            raise TypeError(f"tokenizer must be a ubpe.Tokenizer, got {type(tokenizer).__name__}")
        if n_tokens is not None or fit_options:
            raise ValueError("n_tokens and fit options apply when compress fits a model; "
                             "they cannot be combined with tokenizer=")
        merges = tokenizer.merges  # raises NotFittedError first
        alphabet = tokenizer.alphabet
        a = len(alphabet)
        _alphabet_values(alphabet)  # refuses an alphabet of symbols
        if a + len(merges) > MAX_VOCAB:
            raise ValueError(f"the tokenizer has {a + len(merges)} tokens; a container holds at most {MAX_VOCAB}")
        order = order or 0
        if n:
            ids = alphabet.to_ids(_delta(flat, order) if order else flat)
            tokens = encoder.encode(ids, tokenizer._tables()) if len(merges) else ids
        else:
            tokens = np.zeros(0, dtype=np.int32)
        if embed:
            fields["alphabet"] = _alphabet_field(alphabet)
            fields["model"] = _model_field(merges, a)
        else:
            fields["digest"] = bytes.fromhex(tokenizer.digest)
        fields["stream"] = entropy.encode_stream(tokens, max(a + len(merges), 1), coders=LEVEL_CODERS[level])
    else:
        if not embed:
            raise ValueError("embed=False stores only a model's digest: pass the tokenizer= to reference")
        if level == 2 and n:
            order, fitted = _choose_level2(flat, order, n_tokens, fit_options)
        elif order is None:
            order, fitted = _choose_delta(flat, n_tokens, fit_options)
        else:
            fitted = None
        if fitted is None:
            fitted = _fitted_fields(_delta(flat, order) if order else flat, n_tokens, fit_options)
        fields.update(fitted)
    if order:
        fields["front"] = {"delta": order}  # order 0 stays the empty map
    fields["crc"] = _crc(dtype, shape, flat)
    return msgpack.packb(fields, use_bin_type=True)


def _delta_argument(delta: Any, dtype: np.dtype) -> int | None:
    """``compress``'s ``delta``: None (automatic) or an order in [0, MAX_DELTA]."""
    if delta is None:
        return 0 if dtype.kind == "b" else None
    if isinstance(delta, (bool, np.bool_)) or not isinstance(delta, numbers.Integral):
        raise TypeError(f"delta must be None or an int in [0, {MAX_DELTA}], got {type(delta).__name__} {delta!r}")
    if not 0 <= delta <= MAX_DELTA:
        raise ValueError(f"delta must be None or an int in [0, {MAX_DELTA}], got {delta}")
    if delta and dtype.kind == "b":
        raise ValueError("delta applies to numeric values; bool values are compressed with delta=0")
    return int(delta)


def _level_argument(level: Any) -> int:
    """``compress``'s ``level``: 1 or 2."""
    if isinstance(level, (bool, np.bool_)) or not isinstance(level, numbers.Integral) or int(level) not in LEVELS:
        raise ValueError(f"level must be 1 or 2 (valid levels: {', '.join(map(str, LEVELS))}), got {level!r}")
    return int(level)


def _fitted_fields(src: np.ndarray, n_tokens: int | None, fit_options: dict,
                   coders: tuple[str, ...] = entropy.DEFAULT_CODERS) -> dict[str, Any]:
    """The ``alphabet``, ``model`` and ``stream`` fields of a model fitted on ``src``."""
    alphabet, merges, tokens = _fit_model(src, n_tokens, fit_options)
    return _fields(_alphabet_field(alphabet), merges, len(alphabet), tokens, coders)


def _fields(alphabet_field: dict, merges: np.ndarray, a: int, tokens: np.ndarray,
            coders: tuple[str, ...]) -> dict[str, Any]:
    return {
        "alphabet": alphabet_field,
        "model": _model_field(merges, a),
        "stream": entropy.encode_stream(tokens, max(a + len(merges), 1), coders=coders),
    }


def _packed_size(fields: dict) -> int:
    return len(msgpack.packb(fields, use_bin_type=True))


def _entropy_bits(y: np.ndarray) -> float:
    """Order-0 empirical entropy of ``y`` (1-D integers), in bits per value."""
    n = y.shape[0]
    if n == 0:
        return 0.0
    if y.dtype.itemsize <= 2:
        counts = np.bincount(y.view(f"u{y.dtype.itemsize}"))
    else:
        lo, hi = y.min(), y.max()
        if int(hi) - int(lo) < 1 << 22:  # exact in the dtype: no wrap-around within the range
            counts = np.bincount(np.subtract(y, lo).view(f"u{y.dtype.itemsize}").astype(np.intp))
        else:
            counts = np.unique(y, return_counts=True)[1]
    c = counts[counts > 0].astype(np.float64)
    return float(np.log2(n) - (c * np.log2(c)).sum() / n)


def _choose_delta(flat: np.ndarray, n_tokens: int | None, fit_options: dict) -> tuple[int, dict | None]:
    """The delta order in AUTO_DELTA_ORDERS giving the smallest container (``compress``'s
    ``delta=None``), and the fitted fields of that order when they were computed on the way."""
    n = flat.shape[0]
    if flat.dtype.kind == "b" or n < 3:
        return 0, None
    ys = {k: _delta(flat, k) if k else flat for k in AUTO_DELTA_ORDERS}
    h = {k: _entropy_bits(y) for k, y in ys.items()}
    bound = AUTO_DELTA_ENTROPY_FACTOR * min(h.values()) + AUTO_DELTA_ENTROPY_SLACK
    candidates = [k for k in AUTO_DELTA_ORDERS if h[k] <= bound]
    if len(candidates) == 1:
        return candidates[0], None
    if n <= AUTO_DELTA_FULL_FIT:
        fitted = {k: _fitted_fields(ys[k], n_tokens, fit_options) for k in candidates}
        sizes = {k: len(msgpack.packb(f, use_bin_type=True)) for k, f in fitted.items()}
        best = min(candidates, key=lambda k: (sizes[k], k))
        return best, fitted[best]
    # a sample of evenly spaced windows, each candidate's fit on it sized exactly
    length = AUTO_DELTA_SAMPLE // AUTO_DELTA_WINDOWS
    starts = (np.arange(AUTO_DELTA_WINDOWS, dtype=np.int64) * (n - length)) // (AUTO_DELTA_WINDOWS - 1)
    take = (starts[:, None] + np.arange(length, dtype=np.int64)[None, :]).reshape(-1)
    sizes = {}
    for k in candidates:
        f = _fitted_fields(ys[k][take], None, fit_options)
        sizes[k] = len(msgpack.packb(f, use_bin_type=True))
    return min(candidates, key=lambda k: (sizes[k], k)), None


def _sample_take(n: int) -> np.ndarray:
    """Indices of the AUTO_DELTA_WINDOWS evenly spaced windows of AUTO_DELTA_SAMPLE values in all."""
    length = AUTO_DELTA_SAMPLE // AUTO_DELTA_WINDOWS
    starts = (np.arange(AUTO_DELTA_WINDOWS, dtype=np.int64) * (n - length)) // (AUTO_DELTA_WINDOWS - 1)
    return (starts[:, None] + np.arange(length, dtype=np.int64)[None, :]).reshape(-1)


def _delta_candidates(ys: dict[int, np.ndarray], factor: float, slack: float) -> list[int]:
    """The orders whose order-0 entropy is at most ``factor`` x the smallest + ``slack`` bits."""
    if len(ys) == 1:
        return list(ys)
    h = {k: _entropy_bits(y) for k, y in ys.items()}
    bound = factor * min(h.values()) + slack
    return [k for k in ys if h[k] <= bound]


def _cm_ladder(a: int, max_merges: int) -> list[int]:
    """Numbers of merges level 2 tries with "cm", ascending, within ``max_merges``."""
    unit = max(a, CM_LADDER_UNIT)
    return sorted({min(int(f * unit), max(max_merges, 0)) for f in CM_LADDER})


class _Sized:
    """A candidate's container fields and the size (exact, or estimated from a sample) they stand for."""

    __slots__ = ("order", "fields", "size", "merges")

    def __init__(self, order: int, fields: dict, scale: float = 1.0, merges: int = 0):
        self.order, self.fields, self.merges = order, fields, merges
        if scale == 1.0:
            self.size = float(_packed_size(fields))
        else:  # the stream grows with the values; the alphabet and merge table about do not
            stream = len(msgpack.packb(fields["stream"], use_bin_type=True))
            self.size = stream * scale + _packed_size({**fields, "stream": {}})


def _choose_level2(flat: np.ndarray, order: int | None, n_tokens: int | None,
                   fit_options: dict) -> tuple[int, dict]:
    """``compress(..., level=2)`` with a fitted model: the delta order and the fitted fields.

    Candidates: level 1's own choice (the static model of the orders level 1 considers, coded
    as level 1 codes them), and for "cm" every order passing a looser entropy filter at the
    bare alphabet (no merges), then the best of those orders with more and more merges
    (``CM_LADDER``) until the container stops shrinking. Every "cm" candidate is coded with
    all the level-2 coders, so a rANS stream wins where it is smaller. Up to
    AUTO_DELTA_FULL_FIT values all candidates are built on all the values and the smallest
    container kept (ties to level 1's); beyond, they are compared on a sample (stream size
    scaled to all the values, plus the model) and only the winner is built on all the values
    (both coders' best when they are within LEVEL2_CLOSE).
    """
    Tokenizer(None, 1 if n_tokens is None else n_tokens, **fit_options)  # validates the options
    n = flat.shape[0]
    coders = LEVEL_CODERS[2]
    if order is not None:
        orders: tuple[int, ...] = (order,)
    elif flat.dtype.kind == "b" or n < 3:
        orders = (0,)
    else:
        orders = AUTO_DELTA_ORDERS
    ys = {k: _delta(flat, k) if k else flat for k in orders}
    rans_orders = _delta_candidates(ys, AUTO_DELTA_ENTROPY_FACTOR, AUTO_DELTA_ENTROPY_SLACK)
    cm_orders = _delta_candidates(ys, CM_DELTA_ENTROPY_FACTOR, CM_DELTA_ENTROPY_SLACK)
    full = n <= AUTO_DELTA_FULL_FIT
    if full:
        src, scale = ys, 1.0
    else:
        take = _sample_take(n)
        src, scale = {k: ys[k][take] for k in cm_orders}, n / take.shape[0]

    if n_tokens is not None:  # a fixed vocabulary: the order and the coder
        import warnings

        # an order whose alphabet alone exceeds n_tokens cannot be fitted (unless it is the
        # only one: then the fit raises as at level 1)
        fitting = [k for k in cm_orders if len(Alphabet.from_data(ys[k])) <= n_tokens]
        cm_orders = fitting or cm_orders[:1]

        with warnings.catch_warnings():
            if not full:  # a sample may not hold n_tokens tokens' worth of pairs
                warnings.simplefilter("ignore", UserWarning)
            sized = [_Sized(k, _fitted_fields(src[k], n_tokens, fit_options, coders), scale) for k in cm_orders]
        best = min(sized, key=lambda c: (c.size, c.order))
        if full:
            return best.order, best.fields
        return best.order, _fitted_fields(ys[best.order], n_tokens, fit_options, coders)

    # level 1's candidates: the static model and coders, sized as level 1 sizes them
    fits: dict[int, tuple[Alphabet, np.ndarray, _Training | None]] = {}
    rans: list[_Sized] = []
    for k in rans_orders:
        alphabet = Alphabet.from_data(src[k])
        ids = _alphabet_ids(src[k], alphabet)
        fit = _train(alphabet, ids, _auto_max_merges(src[k].shape[0], len(alphabet)), fit_options)
        fits[k] = (alphabet, ids, fit)
        j = fit.rans_prefix()
        fields = _fields(_alphabet_field(alphabet), fit.merges[:j], len(alphabet), fit.tokens(j),
                         entropy.DEFAULT_CODERS)
        rans.append(_Sized(k, fields, scale, j))
    # level 1 picks by the size on the sample (or in full); its fields are exact in full
    level1 = min(rans, key=lambda c: (_packed_size(c.fields), c.order))

    # "cm": each order with no merges, then the best one up the ladder
    at_zero: list[_Sized] = []
    for k in cm_orders:
        if k not in fits:
            alphabet = Alphabet.from_data(src[k])
            fits[k] = (alphabet, _alphabet_ids(src[k], alphabet), None)
        alphabet, ids, _ = fits[k]
        at_zero.append(_Sized(k, _fields(_alphabet_field(alphabet), np.zeros((0, 2), np.int32),
                                         len(alphabet), ids, coders), scale))
    cm_best = min(at_zero, key=lambda c: (c.size, c.order))
    k = cm_best.order
    alphabet, ids, fit = fits[k]
    a = len(alphabet)
    auto_max = _auto_max_merges(src[k].shape[0], a)
    ladder = [m for m in _cm_ladder(a, auto_max) if m > 0]
    if ladder:
        if fit is None:  # this order was not trained for level 1: only up to the ladder's top
            fit = _train(alphabet, ids, ladder[-1], fit_options)
        afield = _alphabet_field(alphabet)
        for m in ladder:
            if m > len(fit.merges):
                break
            cand = _Sized(k, _fields(afield, np.ascontiguousarray(fit.merges[:m]), a, fit.tokens(m), coders),
                          scale, m)
            if cand.size >= cm_best.size:
                break
            cm_best = cand

    if full:
        best = min((level1, cm_best), key=lambda c: c.size)  # ties: level 1's
        return best.order, best.fields
    # beyond AUTO_DELTA_FULL_FIT: build the winner on all the values (both when close)
    rans_est = level1.size
    out: list[tuple[int, dict]] = []
    if cm_best.size * LEVEL2_CLOSE >= rans_est:
        out.append((level1.order, _fitted_fields(ys[level1.order], None, fit_options)))
    if rans_est * LEVEL2_CLOSE >= cm_best.size:
        out.append((cm_best.order, _cm_fields(ys[cm_best.order], cm_best.merges, fit_options)))
    return min(out, key=lambda t: _packed_size(t[1]))


def _cm_fields(y: np.ndarray, m: int, fit_options: dict) -> dict[str, Any]:
    """The fields of a model of the first ``m`` merges trained on ``y``, coded at level 2."""
    alphabet = Alphabet.from_data(y)
    ids = _alphabet_ids(y, alphabet)
    a = len(alphabet)
    m = min(m, _auto_max_merges(y.shape[0], a))
    fit = _train(alphabet, ids, m, fit_options)
    m = min(m, len(fit.merges))
    return _fields(_alphabet_field(alphabet), np.ascontiguousarray(fit.merges[:m]), a, fit.tokens(m),
                   LEVEL_CODERS[2])


def _model_field(merges: np.ndarray, a: int) -> dict:
    m = len(merges)
    return {"a": a, "m": m, "merges": entropy.pack_merges(merges, max(a, 1)) if m else b""}


def _fit_model(flat: np.ndarray, n_tokens: int | None, fit_options: dict) -> tuple[Alphabet, np.ndarray, np.ndarray]:
    """Fit a model on ``flat``; return (alphabet, merges (M, 2) int32, priority-space tokens)."""
    # validates the options (and n_tokens) with the Tokenizer's own messages
    Tokenizer(None, 1 if n_tokens is None else n_tokens, **fit_options)
    n = flat.shape[0]
    if n == 0:
        return Alphabet([]), np.zeros((0, 2), np.int32), np.zeros(0, np.int32)
    alphabet = Alphabet.from_data(flat)
    ids = _alphabet_ids(flat, alphabet)
    if n_tokens is not None:
        tok = Tokenizer(alphabet, n_tokens, **fit_options).fit(flat)
        merges = tok.merges
        tokens = encoder.encode(ids, tok._tables()) if len(merges) else ids
        return alphabet, merges, tokens
    fit = _train(alphabet, ids, _auto_max_merges(n, len(alphabet)), fit_options)
    k = fit.rans_prefix()
    return alphabet, np.ascontiguousarray(fit.merges[:k]) if k < len(fit.merges) else fit.merges, fit.tokens(k)


def _alphabet_ids(flat: np.ndarray, alphabet: Alphabet) -> np.ndarray:
    if flat.dtype == np.uint64 and alphabet.values.dtype == np.uint64:
        # every value is in the alphabet (it is their set); also sidesteps Alphabet's lookup
        # table, whose offset arithmetic overflows for values above 2**63
        return np.searchsorted(alphabet.values, flat).astype(np.int32)
    return alphabet.to_ids(flat)


def _auto_max_merges(n: int, a: int) -> int:
    """The merges the automatic model size trains at most: min(65536, n // 8), within MAX_VOCAB."""
    return min(AUTO_MAX_MERGES, n // AUTO_VALUES_PER_MERGE, MAX_VOCAB - a)


@dataclass
class _Training:
    """One training run: its merges (priority order) and the replay stream under all of them."""

    a: int
    merges: np.ndarray
    stream: np.ndarray

    def tokens(self, k: int) -> np.ndarray:
        """The replay encoding under the first ``k`` merges.

        It is the full stream with every later token expanded into earlier ones: decoded with
        the later merges over an "alphabet" of a + k ids.
        """
        if k >= len(self.merges):
            return self.stream
        return encoder.decode(self.stream, encoder.build_expansion(self.merges[k:], self.a + k))

    def rans_prefix(self) -> int:
        """The prefix :func:`best_prefix` keeps for the static coder."""
        if len(self.merges) == 0:
            return 0
        return best_prefix(np.bincount(self.stream, minlength=self.a + len(self.merges)), self.merges, self.a)


def _train(alphabet: Alphabet, ids: np.ndarray, max_merges: int, fit_options: dict) -> _Training:
    """Train up to ``max_merges`` merges on ``ids`` (one document) with the fit options."""
    a = len(alphabet)
    if max_merges <= 0:
        return _Training(a, np.zeros((0, 2), np.int32), ids)
    probe = Tokenizer(None, 1, **fit_options)
    n = ids.shape[0]
    doc_offsets = np.array([0, n], dtype=np.int64)
    result = trainer.train(
        ids, doc_offsets, trainer.unit_offsets_for(doc_offsets, probe.window), a, a + max_merges,
        probe.n_candidates, probe.min_count, return_stream=True,
    )
    return _Training(a, result.merges, result.stream)


def best_prefix(hist: np.ndarray, merges: np.ndarray, a: int) -> int:
    """Number of merges, a prefix of ``merges`` in priority order, that minimises the size.

    ``hist`` is the token histogram of the replay encoding under all merges. Dropping the last
    merge ``A + k`` turns each of its occurrences into its two children, so the histogram of
    every prefix follows by unrolling from the top; each candidate is costed as the entropy
    stage's estimate (``entropy.counts_cost_bits``) plus the packed merge table. Candidates
    form a geometric ladder (ratio 2**(1/4)), then the best bracket is searched with ratio
    2**(1/32).
    """
    m = len(merges)
    if m == 0:
        return 0
    left = merges[:, 0].tolist()
    right = merges[:, 1].tolist()
    base = [int(c) for c in hist.tolist()]

    def cost(h: list[int], k: int) -> float:
        counts = np.asarray(h[: a + k], dtype=np.int64)
        model_bits = 8 * len(entropy.pack_merges(merges[:k], a)) if k else 0
        return entropy.counts_cost_bits(counts) + model_bits

    def sweep(ladder: list[int]) -> dict[int, float]:
        # one pass from all m merges down to min(ladder), costing each ladder point
        h = list(base)
        out = {}
        top = m
        for k in sorted(set(ladder), reverse=True):
            for t in range(a + top - 1, a + k - 1, -1):
                c = h[t]
                if c:
                    j = t - a
                    h[left[j]] += c
                    h[right[j]] += c
                    h[t] = 0
            top = k
            out[k] = cost(h, k)
        return out

    def ladder(hi: int, lo: int, ratio: float) -> list[int]:
        points, x = [hi], float(hi)
        while True:
            x /= ratio
            k = int(round(x))
            if k <= lo:
                break
            if k < points[-1]:
                points.append(k)
        points.append(lo)
        return points

    coarse = sweep(ladder(m, 0, 2 ** 0.25))
    keys = sorted(coarse)
    best = min(keys, key=lambda k: (coarse[k], k))
    i = keys.index(best)
    lo, hi = keys[max(i - 1, 0)], keys[min(i + 1, len(keys) - 1)]
    if hi - lo > 2:
        fine = sweep(ladder(hi, lo, 2 ** (1 / 32)))
        coarse.update(fine)
    return min(coarse, key=lambda k: (coarse[k], k))


# ============================================================================ decompress


@dataclass
class _Parsed:
    """A container whose fields passed every structural check."""

    version: int
    dtype: np.dtype
    shape: tuple[int, ...]
    n: int
    values: _Values | None  # None when the model is referenced by digest
    a: int | None
    m: int | None
    merges_raw: bytes | None
    digest: str | None
    stream: dict
    crc: int
    fields: dict
    delta: int = 0  # order of the delta front end, 0 for none


def _parse(data: Any, max_output_size: int | None) -> _Parsed:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    if max_output_size is None:
        cap = DEFAULT_MAX_OUTPUT_SIZE
    else:
        if isinstance(max_output_size, (bool, np.bool_)) or not isinstance(max_output_size, numbers.Integral):
            raise TypeError(f"max_output_size must be an int or None, got {max_output_size!r}")
        cap = int(max_output_size)
        if cap < 0:
            raise ValueError(f"max_output_size must be >= 0, got {cap}")
    try:
        d = msgpack.unpackb(bytes(data), raw=False, strict_map_key=True, use_list=True)
    except Exception as e:  # msgpack raises several unrelated exception types
        raise CorruptDataError(f"not a ubpe container: the bytes do not parse as msgpack ({type(e).__name__})") from None
    if not isinstance(d, dict) or d.get("magic") != MAGIC:
        raise CorruptDataError("not a ubpe container (bad magic)")
    version = d.get("v")
    if type(version) is not int or version < 1:
        raise CorruptDataError(f"container: invalid format version {_short(version)}")
    if version > FORMAT_VERSION:
        raise FormatVersionError("this container", version, FORMAT_VERSION)
    embedded = "digest" not in d
    _map(d, "container", _TOP_KEYS_EMBEDDED if embedded else _TOP_KEYS_REFERENCED)

    dt = d["dtype"]
    if not isinstance(dt, str) or dt not in _DTYPES:
        raise CorruptDataError(f"container: unsupported dtype {_short(dt)}")
    dtype = np.dtype(dt)
    shape_raw = d["shape"]
    if not isinstance(shape_raw, list) or len(shape_raw) > MAX_NDIM:
        raise CorruptDataError(f"container: 'shape' must be a list of at most {MAX_NDIM} ints")
    if not all(type(s) is int and 0 <= s <= _I64_MAX for s in shape_raw):
        raise CorruptDataError("container: 'shape' must hold non-negative ints")
    n = math.prod(shape_raw)
    if n * dtype.itemsize > cap:
        raise CorruptDataError(
            f"container declares {n} values ({n * dtype.itemsize} bytes), more than "
            f"max_output_size={cap} bytes: pass a larger max_output_size if you trust it"
        )
    if math.prod(s or 1 for s in shape_raw) > _I64_MAX:
        raise CorruptDataError("container: 'shape' is too large for an array")
    order = _parse_front(d["front"], dtype, version)
    crc = d["crc"]
    if type(crc) is not int or not 0 <= crc <= 0xFFFFFFFF:
        raise CorruptDataError("container: 'crc' must be an int in [0, 2**32)")
    if not isinstance(d["stream"], dict):
        raise CorruptDataError("container: 'stream' must be a map")

    if not embedded:
        raw_digest = d["digest"]
        if not isinstance(raw_digest, bytes) or len(raw_digest) != 32:
            raise CorruptDataError("container: 'digest' must be 32 bytes (a SHA-256)")
        digest = raw_digest.hex()
        return _Parsed(version, dtype, tuple(shape_raw), n, None, None, None, None, digest, d["stream"], crc, d, order)

    values = _parse_alphabet(d["alphabet"])
    model = _map(d["model"], "model", ("a", "m", "merges"))
    a = _int(model, "a", 0, MAX_VOCAB, where="model")
    m = _int(model, "m", 0, MAX_VOCAB, where="model")
    merges_raw = _bytes(model, "merges", where="model")
    if a != values.size:
        raise CorruptDataError(f"model: 'a' = {a} differs from the alphabet's {values.size} values")
    if a + m > MAX_VOCAB:
        raise CorruptDataError(f"model: {a} + {m} tokens exceed the limit {MAX_VOCAB}")
    if a == 0 and (m or n):
        raise CorruptDataError("container: values or merges over an empty alphabet")
    if m == 0 and merges_raw:
        raise CorruptDataError("model: 'merges' must be empty when 'm' is 0")
    if m and 8 * max(len(merges_raw) - 1, 0) < _min_merge_bits(m, a):
        raise CorruptDataError(f"model: 'merges' has {len(merges_raw)} bytes, too few for {m} merges")
    return _Parsed(version, dtype, tuple(shape_raw), n, values, a, m, merges_raw, None, d["stream"], crc, d, order)


def _parse_front(front: Any, dtype: np.dtype, version: int) -> int:
    """The delta order of a ``front`` map: ``{}`` -> 0, ``{"delta": k}`` -> k in [1, MAX_DELTA]."""
    if not isinstance(front, dict):
        raise CorruptDataError("container: 'front' must be a map")
    if not front:
        return 0
    unknown = sorted(_short(k) for k in front if k != "delta")
    if unknown:
        raise CorruptDataError(
            f"container: front-end parameter(s) {unknown[:4]} are not defined in format version {version}"
        )
    order = front["delta"]
    if type(order) is not int or not 1 <= order <= MAX_DELTA:
        raise CorruptDataError(
            f"front: 'delta' must be an int in [1, {MAX_DELTA}] (order 0 is the empty map), got {_short(order)}"
        )
    if dtype.kind == "b":
        raise CorruptDataError("front: 'delta' is not defined for bool values")
    return order


def _min_merge_bits(m: int, a: int) -> int:
    """A lower bound of the bits ``pack_merges`` needs for ``m`` rows: row i takes at least
    floor(log2((a + i)**2)) >= 2 * floor(log2(a + i)) bits."""
    total, lo, hi = 0, a, a + m  # rows cover R = a .. a + m - 1
    while lo < hi:
        b = lo.bit_length() - 1  # floor(log2(lo))
        end = min(hi, 1 << (b + 1))
        total += 2 * b * (end - lo)
        lo = end
    return total


def decompress(data: bytes | bytearray | memoryview, *, tokenizer: Tokenizer | None = None,
               max_output_size: int | None = None) -> np.ndarray:
    """Values compressed by :func:`compress`, with their dtype (byte order included) and shape.

    Parameters
    ----------
    data : bytes-like
    tokenizer : Tokenizer, optional
        Needed when the container references its model by digest (``compress(...,
        embed=False)``); its digest must match. Ignored when the container embeds its model.
    max_output_size : int, optional
        Largest accepted output, in bytes of the returned array (values x itemsize); ``None``
        means 4 GiB (:data:`DEFAULT_MAX_OUTPUT_SIZE`). A container declaring more is refused
        before anything is allocated. Intermediate arrays are at most about 8 bytes per value.

    Raises
    ------
    CorruptDataError
        Malformed, truncated or inconsistent bytes, a CRC mismatch, an output beyond
        ``max_output_size``, or a referenced model that is missing or differs.
    FormatVersionError
        A container written by a newer format version.
    """
    p = _parse(data, max_output_size)
    if tokenizer is not None and not isinstance(tokenizer, Tokenizer):
        raise TypeError(f"tokenizer must be a ubpe.Tokenizer, got {type(tokenizer).__name__}")
    if p.digest is not None:
        if tokenizer is None:
            raise CorruptDataError(
                f"this container references its model by digest {p.digest[:16]}...: pass the "
                "saved model with decompress(data, tokenizer=ubpe.Tokenizer.load(path))"
            )
        if tokenizer.digest != p.digest:
            raise CorruptDataError(
                f"the container was compressed with model {p.digest[:16]}..., but the tokenizer "
                f"given is {tokenizer.digest[:16]}...: pass the model it was compressed with"
            )
        values = _alphabet_values(tokenizer.alphabet)
        a = len(tokenizer.alphabet)
        merges = tokenizer.merges
        if a + len(merges) > MAX_VOCAB:
            raise CorruptDataError("the referenced model has more tokens than a container allows")
        expansion = tokenizer._expansion() if len(merges) else None
    else:
        values, a = p.values, p.a
        merges = entropy.unpack_merges(p.merges_raw, p.m, max(a, 1)) if p.m else np.zeros((0, 2), np.int32)
        expansion = None
        if p.m:
            try:
                expansion = encoder.build_expansion(
                    merges, a, max_table_values=min(encoder.DEFAULT_MAX_TABLE_VALUES, max(4 * p.n, 1 << 16))
                )
            except ValueError as e:
                raise CorruptDataError(f"model: {e}") from None
    vocab = a + len(merges)
    tokens = entropy.decode_stream(p.stream, max(vocab, 1), max_count=p.n)
    if tokens.shape[0] and a == 0:
        raise CorruptDataError("stream: tokens over an empty alphabet")
    native = p.dtype.newbyteorder("=") if p.dtype.byteorder == ">" else p.dtype
    if expansion is None:
        total = tokens.shape[0]
    else:
        try:
            total = encoder.expanded_length(tokens, expansion)
        except ValueError as e:
            raise CorruptDataError(f"stream: {e}") from None
        if total >= int(encoder._k.LENGTH_CAP) and np.any(expansion.lengths[tokens] >= encoder._k.LENGTH_CAP):
            raise CorruptDataError("stream: a token expands to more than 2**32 values")
    if total != p.n:
        raise CorruptDataError(f"stream: the tokens expand to {total} values, the shape declares {p.n}")
    if p.n == 0:
        out = np.zeros(0, dtype=native)
    else:
        if expansion is None:
            out = values.to_values(tokens, native)
        elif p.digest is not None:  # a shared model: its value table is cached across windows
            out = encoder.decode(tokens, expansion, values=tokenizer._value_table(native))
        elif expansion.values.shape[0] <= p.n:  # mapping the table costs less than the output
            symbols = values.to_values(np.arange(a, dtype=np.int32), native)
            out = encoder.decode(tokens, expansion, values=encoder.value_table(expansion, symbols))
        else:
            out = values.to_values(encoder.decode(tokens, expansion), native)
        if p.delta:
            out = _undelta(out, p.delta, dtype=out.dtype)  # modulo 2**bits, like the writer
    if _crc(p.dtype, p.shape, out) != p.crc:
        raise CorruptDataError("checksum mismatch: the container is corrupt")
    out = out.reshape(p.shape)
    return out.astype(p.dtype) if native != p.dtype else out


# ============================================================================ inspect


@dataclass(frozen=True)
class ContainerInfo:
    """What :func:`inspect` reports. Sizes are in bytes; ``header + model + freq + payload == size``."""

    version: int
    dtype: str
    shape: tuple[int, ...]
    n_values: int
    original_size: int  #: bytes of the values (n_values x itemsize)
    size: int  #: bytes of the container
    header: int  #: everything but the three parts below (magic, dtype, shape, crc, digest, ...)
    model: int  #: the embedded alphabet and merge table (0 when referenced by digest)
    freq: int  #: the entropy coder's frequency table
    payload: int  #: the coded tokens
    ratio: float  #: original_size / size
    embedded: bool
    digest: str | None  #: the referenced model's digest, when not embedded
    alphabet_size: int | None
    n_merges: int | None
    coder: str
    n_tokens: int  #: tokens in the stream
    delta: int = 0  #: order of the delta front end (0: the values are tokenized as they are)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def inspect(data: bytes | bytearray | memoryview) -> ContainerInfo:
    """Describe a container without decoding it: sizes of its parts and the ratio.

    The fields are validated as by :func:`decompress` (except the model's merge table, the
    token stream and the checksum, which only decoding checks); malformed input raises
    ``CorruptDataError``. No output-size cap applies.
    """
    p = _parse(data, 1 << 256)
    d, s = p.fields, p.stream

    def entry(mapping: dict, key: str) -> int:
        if key not in mapping:
            return 0
        return len(msgpack.packb(key)) + len(msgpack.packb(mapping[key], use_bin_type=True))

    coder = s.get("coder")
    n_tokens = s.get("n")
    if not isinstance(coder, str) or coder not in entropy.CODERS or type(n_tokens) is not int:
        raise CorruptDataError("stream: invalid 'coder' or 'n'")
    model = entry(d, "alphabet") + entry(d, "model")
    freq = entry(s, "freq")
    payload = entry(s, "payload")
    size = len(data)
    original = p.n * p.dtype.itemsize
    return ContainerInfo(
        version=p.version, dtype=p.dtype.str, shape=p.shape, n_values=p.n, original_size=original,
        size=size, header=size - model - freq - payload, model=model, freq=freq, payload=payload,
        ratio=original / size if size else 0.0, embedded=p.digest is None, digest=p.digest,
        alphabet_size=p.a, n_merges=p.m, coder=coder, n_tokens=n_tokens, delta=p.delta,
    )


# ============================================================================ field helpers


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 40 else r[:37] + "..."


def _map(v: Any, where: str, keys: tuple[str, ...]) -> dict:
    if not isinstance(v, dict):
        raise CorruptDataError(f"{where}: expected a map, got {type(v).__name__}")
    missing = [k for k in keys if k not in v]
    if missing:
        raise CorruptDataError(f"{where}: missing field(s) {missing}")
    if len(v) != len(keys):
        extra = sorted(_short(k) for k in v if k not in keys)
        raise CorruptDataError(f"{where}: unexpected field(s) {extra[:4]}")
    return v


def _int(d: dict, key: str, lo: int, hi: int, *, where: str) -> int:
    v = d[key]
    if type(v) is not int or not lo <= v <= hi:
        raise CorruptDataError(f"{where}: '{key}' must be an int in [{lo}, {hi}], got {_short(v)}")
    return v


def _bytes(d: dict, key: str, *, where: str) -> bytes:
    v = d[key]
    if not isinstance(v, bytes):
        raise CorruptDataError(f"{where}: '{key}' must be bytes, got {type(v).__name__}")
    return v
