"""The compressed container: the format, and nothing else.

``compress`` maps the values to the ``(channels, frames)`` layout (:func:`ubpe.frontend.to_channels`),
lets the planner (:mod:`ubpe.planner`) choose a front-end chain, a model and a coder by the
exact size this module gives each candidate, and writes ``b"ubpe"``, the format version and one
msgpack map (keys by number: the compact form of version 7): dtype and shape of the values, the
front-end chain, optional source metadata, the alphabet and merge table (or the digest of a
saved model), the token stream and a CRC-32 of the values. ``docs/format.md`` is the normative
specification.

Float values go through a float stage first (:mod:`ubpe.quantize`: ``"floatgrid"``,
lossless, or ``"quantize"``, lossy with ``step=``/``bits=``); the chain is then chosen on the
integers, and the float stage heads the recorded chain.

``decompress`` is a trust boundary. It checks every field (types, lengths, ranges, the merge
table's order, the sizes the fields declare against each other and against
``max_output_size``) before any kernel runs or any array proportional to the output is
allocated, and checks the CRC of what it decoded: bytes from elsewhere either give back exactly
the values that were compressed or raise :class:`~ubpe.CorruptDataError` (a newer format raises
:class:`~ubpe.FormatVersionError`). Containers of versions 1 to 6 are still decoded.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import sys
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, BinaryIO, Callable, Iterator

import msgpack
import numpy as np

from . import encoder, entropy, frontend, planner, predict
from . import quantize as _quantize  # registers the float stages "floatgrid" and "quantize"
from ._validate import (
    as_sequence, check_bool, check_choice, check_int, expect_map, field_bytes, field_int, short,
)
from .alphabet import Alphabet
from .errors import CorruptDataError, FormatVersionError
from .model import DEFAULT_MAX_OUTPUT_SIZE, Model
from .tokenizer import Tokenizer

__all__ = ["ContainerInfo", "compress", "compress_to", "decompress", "decompress_to", "describe", "inspect", "FORMAT_VERSION", "MAGIC"]

MAGIC = "ubpe"
#: Newest version of the container format: readers accept 1 .. this. :func:`compress` writes
#: version 7, the compact form (WRITE_COMPACT). With WRITE_COMPACT off it writes, as before
#: version 7, version 2 for one stream (inputs of at most one block) unless its coder needs a
#: later one (the text coders: "cmt" version 3, "cmt2" version 4; the signal coders "cms" version
#: 4, "cms2" version 5), or its front end stage params of a later version (``Stage.version``: the
#: "mult" stage, and "lpc"/"adaptive" with ``unsigned`` 2, version 6), and BLOCKED_VERSION for
#: blocks unless a block may use a coder or stage params of a later version.
FORMAT_VERSION = 7
#: The compact form (version 7): the bytes ``b"ubpe"`` and the version, then the fields of version
#: 6 in one msgpack map, every key of :data:`KEYS_V7` written as its index there, the values of
#: DTYPES_V7, CODERS_V7 and STAGES_V7 as theirs, and the fields that carry nothing left out
#: (docs/format.md, "Version 7: the compact form"); their meaning and their checks are those of
#: version 6: the translation happens at the pack/unpack boundary (:func:`_v7_fields`,
#: :func:`_named_head`, :func:`_named_block`).
COMPACT_VERSION = 7
#: The writer's form: True (the default) writes version 7; False the smallest of versions 2 to 6
#: the fields need, as before version 7 (tests/fixtures/make_fixtures.py writes the frozen
#: fixtures of those versions so).
WRITE_COMPACT = True
#: Version 7's key table: the map key ``KEYS_V7[i]`` is written as the int ``i`` (one byte), in
#: every map of the container and of its blocks (stream, alphabet, model, front-end entries and
#: their params, source). Fixed for version 7: a later version may append names, never reorder.
#: Keys not in the table (a source key of the user's) stay strings.
KEYS_V7 = (
    # the container and its blocks
    "dtype", "shape", "layout", "front", "stream", "crc", "alphabet", "model", "source", "esc",
    "method", "digest", "block", "blocks",
    # alphabet, model
    "n", "lo", "w", "gaps", "r", "a", "m", "merges",
    # streams (entropy coders)
    "coder", "k", "q", "pb", "freq", "payload", "symbol", "width", "center", "rate", "table", "raw",
    # front-end entries and stage params
    "stage", "order", "channels", "modes", "refs", "low", "base", "offset", "exp", "negzero", "step",
    "bits", "unsigned", "orders", "shifts", "precisions", "coefs", "stages", "count", "values",
    # source metadata the readers of ubpe.io write (npy, wav, csv)
    "format", "header", "column", "columns", "delimiter", "valid_bits", "float", "extensible",
    "data_at", "data_pad", "chunks",
)
_KEY_IDS_V7 = {name: i for i, name in enumerate(KEYS_V7)}
#: Version 7's value tables: the value of "dtype", of a stream's "coder" and of a front-end
#: entry's "stage" is written as its index in these (fixed for version 7; appended to, never
#: reordered, by later versions).
DTYPES_V7 = ("|b1", "|i1", "|u1", "<i2", "<i4", "<i8", "<u2", "<u4", "<u8", ">i2", ">i4", ">i8", ">u2", ">u4",
             ">u8", "<f2", "<f4", "<f8", ">f2", ">f4", ">f8")
CODERS_V7 = ("rans", "packed", "const", "cm", "mag", "cmt", "cmt2", "cms", "cms2")
STAGES_V7 = ("delta", "lpc", "adaptive", "rank", "grid", "decorrelate", "mult", "floatgrid", "quantize")
_VALUE_IDS_V7 = {t: {name: i for i, name in enumerate(t)} for t in (DTYPES_V7, CODERS_V7, STAGES_V7)}
#: Version of a container holding one stream (the form of version 2, which versions 3 to 6 keep).
STREAM_VERSION = 2
#: Version of the blocked form (version 3 brought it; versions 4 to 6 keep it).
BLOCKED_VERSION = 3
#: Stream coders each version defines (a newer coder needs the version that brought it).
_CODER_VERSION = {"cmt": 3, "cmt2": 4, "cms": 4, "cms2": 5}
#: Front-end params each version defines are given by the stages (``Stage.version``,
#: :func:`ubpe.frontend.chain_version`): version 6 brought the "mult" stage and ``unsigned`` 2 of
#: "lpc" and "adaptive" (an unsigned input offset to signed, order-preserving, before prediction).


def _check_chain_version(chain: list[dict], version: int) -> None:
    """Refuse a (parsed) chain whose stage params the container's version does not define."""
    if frontend.chain_version(chain) <= version:  # the usual case: one pass over the chain
        return
    for e in chain:
        need = frontend.chain_version([e])
        if need > version:
            raise CorruptDataError(f"front: the {e['stage']!r} stage's params need format version {need}: "
                                   f"not defined in format version {version}")
#: ``compress(block_size=None)``: values per block. Inputs of more values are cut into blocks of
#: ``max(1, block_size // channels)`` frames, coded independently with one shared model.
DEFAULT_BLOCK_SIZE = 1 << 20
#: The default for inputs of one byte per value (text, bytes): their adaptive coders learn over
#: the whole stream, and blocks of 2**20 bytes cost 5 % on 2.5 MB of English text (level 2) and
#: 15 % at level 1 (benchmarks/bench_text_compress.py), against 0.4 % on signals.
DEFAULT_BYTE_BLOCK_SIZE = 1 << 26
#: Blocked inputs: the model (chain, alphabet, merges, coders) is fitted on at most this many
#: values, BLOCK_SAMPLE_WINDOWS evenly spaced windows of frames joined in time.
BLOCK_SAMPLE = 1 << 18
BLOCK_SAMPLE_WINDOWS = 16
#: Largest vocabulary (alphabet + merges) a container can carry: the entropy coder's limit.
MAX_VOCAB = entropy.MAX_VOCAB
MAX_NDIM = 32
#: Largest delta order ``compress(delta=k)`` accepts and a container may declare.
MAX_DELTA = frontend.DeltaStage.MAX_ORDER
#: ``compress(..., level=)``: 1 static model and rANS (fast decoding); 2 (default) also the
#: context-mixing coder "cm". What each level tries: :mod:`ubpe.planner`.
LEVELS = (1, 2)
DEFAULT_LEVEL = 2
#: The one layout of format 2: axis 0 is time (frames), the other axes flattened in C order
#: are channels, each channel goes through the front end on its own, and the channels are
#: tokenized one after the other (channel-major). Version 1 had no layout: one channel of all
#: the values in C order.
LAYOUT = "tc"
#: ``source``: at most this many entries, keys of at most SOURCE_MAX_KEY characters, str and
#: bytes values of at most SOURCE_MAX_VALUE characters / bytes.
SOURCE_MAX_ENTRIES = 32
SOURCE_MAX_KEY = 64
SOURCE_MAX_VALUE = 1024

_INT_DTYPES = ["|b1", "|i1", "|u1"] + [f"{e}{k}{s}" for e in "<>" for k in "iu" for s in (2, 4, 8)]
#: dtypes a container may declare: version 1 integers and bool; version 2 also floats, valid
#: only behind a front end whose first stage takes floats ("floatgrid", "quantize").
_DTYPES = {1: frozenset(_INT_DTYPES), 2: frozenset(_INT_DTYPES + [f"{e}f{s}" for e in "<>" for s in (2, 4, 8)])}
_DTYPES[3] = _DTYPES[4] = _DTYPES[5] = _DTYPES[6] = _DTYPES[7] = _DTYPES[2]
#: The dtype object of each declarable dtype string (np.dtype(str) on every decode cost more).
_DTYPE_OBJECTS = {s: np.dtype(s) for s in _DTYPES[2]}
_TOP_KEYS = {
    1: ("magic", "v", "dtype", "shape", "front", "stream", "crc"),
    2: ("magic", "v", "dtype", "shape", "layout", "front", "stream", "crc"),
    3: ("magic", "v", "dtype", "shape", "layout", "front", "stream", "crc"),
    4: ("magic", "v", "dtype", "shape", "layout", "front", "stream", "crc"),
    5: ("magic", "v", "dtype", "shape", "layout", "front", "stream", "crc"),
    6: ("magic", "v", "dtype", "shape", "layout", "front", "stream", "crc"),
    7: ("magic", "v", "dtype", "shape", "layout", "front", "stream", "crc"),
}
_OPTIONAL_KEYS = {1: (), 2: ("source", "esc", "method"), 3: ("source", "esc", "method"),
                  4: ("source", "esc", "method"), 5: ("source", "esc", "method"), 6: ("source", "esc", "method"),
                  7: ("source", "esc", "method")}
#: The blocked form (version 3): no top-level front, stream, crc or esc; each block has its own.
_BLOCKED_KEYS = ("magic", "v", "dtype", "shape", "layout", "block", "blocks")
_BLOCKED_OPTIONAL_KEYS = ("source", "method")
_BLOCK_KEYS = ("front", "stream", "crc")
_BLOCK_OPTIONAL_KEYS = ("esc",)
#: Values of the optional, informational ``method`` field: how the writer encoded the tokens
#: (absent: by replaying the merges, or no merges). Decoding never reads it.
_METHOD_VALUES = ("optimal", "bits")
_U64 = (1 << 64) - 1
_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1

if sys.byteorder != "little":  # pragma: no cover - every supported platform is little-endian
    raise ImportError("ubpe.container assumes a little-endian machine")


# ============================================================================ input


def _as_values(values: Any) -> np.ndarray:
    """The values as a numpy integer, bool or float16/32/64 array (any shape), or raise
    TypeError/ValueError."""
    if isinstance(values, np.ndarray):
        arr = values
    elif isinstance(values, np.generic):
        arr = np.asarray(values)
    elif isinstance(values, str):
        raise TypeError("compress takes integer values; encode text first, e.g. text.encode('utf-8')")
    else:
        try:
            seq = as_sequence(values, "values")  # bytes -> uint8, ints -> int64, floats -> TypeError
        except TypeError:
            seq = np.asarray(values) if isinstance(values, (list, tuple)) else None
            if seq is None or seq.dtype != np.float64 or seq.ndim != 1:
                raise
        if not isinstance(seq, np.ndarray) or seq.dtype.kind not in "iubf":
            raise TypeError(
                "compress takes integer values (a numpy integer or bool array, a list of ints "
                "within 64 bits, or bytes) or floating-point arrays"
            )
        arr = seq
    kind = arr.dtype.kind
    if kind == "c" or (kind == "f" and arr.dtype.itemsize not in (2, 4, 8)):
        raise TypeError(f"values have dtype {arr.dtype}; compress takes float16, float32 and float64 arrays")
    if kind not in "iubf":
        raise TypeError(f"values have unsupported dtype {arr.dtype}: compress takes integer, bool or float arrays")
    if arr.ndim > MAX_NDIM:
        raise ValueError(f"values have {arr.ndim} dimensions, at most {MAX_NDIM} are supported")
    _check_time_axis(arr)
    return arr


def _check_time_axis(arr: np.ndarray) -> None:
    """Refuse a 2-D array with more channels than frames: almost always a transposed signal."""
    if arr.ndim == 2 and arr.shape[1] > arr.shape[0] > 0:  # no frames yet is no transposition
        raise ValueError(
            f"values have shape {arr.shape}: axis 0 is time (frames) and axis 1 channels, so this "
            f"is {arr.shape[1]} channels of {arr.shape[0]} frames; pass x.T for "
            f"{arr.shape[1]} frames of {arr.shape[0]} channels (or x.reshape(-1) for one channel)"
        )


def _crc(dtype: np.dtype, shape: list[int] | tuple[int, ...], flat: np.ndarray) -> int:
    """CRC-32 of the description line ``"<dtype.str> <dim> <dim> ...\\n"`` (ASCII) followed by
    the values' little-endian bytes (``flat`` is native little-endian and contiguous), so that
    the checksum also covers the dtype and the shape."""
    return zlib.crc32(np.ascontiguousarray(flat).reshape(-1), _line_crc(dtype.str, tuple(shape))) & 0xFFFFFFFF


@functools.lru_cache(maxsize=256)
def _line_crc(dtype_str: str, shape: tuple[int, ...]) -> int:
    """CRC-32 of the description line of :func:`_crc` (decoding many containers of one dtype
    and shape builds and hashes it once)."""
    return zlib.crc32((" ".join([dtype_str, *map(str, shape)]) + "\n").encode("ascii"))


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
    rice = entropy.pack_rice(gaps.astype(np.int64)) if width > 1 else None
    if rice is not None and len(rice[1]) < len(data):
        # mostly consecutive values with a few far ones (prediction residuals' long tails): a
        # fixed width would pay for the largest gap on every gap
        return {"n": n, "lo": lo, "w": 0, "r": rice[0], "gaps": rice[1]}
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
    d = expect_map(field, "alphabet", ("n", "lo", "w", "gaps"), optional=("r",))
    n = field_int(d, "n", 0, MAX_VOCAB, where="alphabet")
    lo = field_int(d, "lo", _I64_MIN, _U64, where="alphabet")
    w = field_int(d, "w", 0, 64, where="alphabet")
    gaps_raw = field_bytes(d, "gaps", where="alphabet")
    n_gaps = max(n - 1, 0)
    if n == 0 and (lo or w or gaps_raw or "r" in d):
        raise CorruptDataError("alphabet: an empty alphabet must have lo = 0, w = 0, no r and no gaps")
    if "r" in d:
        r = field_int(d, "r", 0, entropy.MAX_RICE_PARAM, where="alphabet")
        if w != 0:
            raise CorruptDataError("alphabet: 'w' must be 0 when the gaps are Rice-coded ('r')")
        gaps = entropy.unpack_rice(gaps_raw, n_gaps, r)
    elif w == 0:
        if gaps_raw:
            raise CorruptDataError("alphabet: 'gaps' must be empty when 'w' is 0")
        last = lo + n_gaps
        _check_domain(lo, last)
        return _Values(n, lo, None)
    elif w == 64:
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
    tokenizer: Tokenizer | Model | None = None,
    n_tokens: int | None = None,
    embed: bool = True,
    delta: int | None = None,
    predictor: str = "auto",
    level: int = DEFAULT_LEVEL,
    source: dict[str, Any] | None = None,
    step: float | None = None,
    bits: int | None = None,
    escape: bool = True,
    block_size: int | None = None,
    threads: int | None = None,
    _sink: Callable[[bytes], None] | None = None,
    **fit_options: Any,
) -> bytes:
    """Compress integer or float values into self-describing bytes (format: ``docs/format.md``).

    Parameters
    ----------
    values : array_like
        A numpy integer, bool or float16/32/64 array of any shape (dtype, byte order and shape
        are restored by :func:`decompress`), a list of ints (as int64) or of floats (float64),
        or bytes (as uint8). For ``ndim >= 2`` axis 0 is time and the other axes are channels,
        each predicted on its own; a 2-D array with more channels than frames (``shape[1] >
        shape[0] > 0``) raises ``ValueError`` (pass ``x.T``). Floats: without ``step`` and
        ``bits`` they must lie on an exact grid (:func:`ubpe.quantize.exact_grid`: every value
        ``k * 2**e``, ``|k| <= 2**53``, as integers stored as floats are) and come back bit
        for bit (``-0.0`` included); otherwise
        ``TypeError`` asks for ``step=`` or ``bits=``. NaN and infinities raise ``ValueError``
        naming the first.
    tokenizer : Tokenizer or Model, optional
        A fitted model to encode with (a :class:`Tokenizer`, or its :class:`~ubpe.Model`).
        Without one, a model is fitted on the values and embedded.
    n_tokens : int, optional
        Vocabulary size (alphabet included) of the fitted model. By default the size that
        minimises the container is chosen (:mod:`ubpe.planner`).
    embed : bool, default True
        With a ``tokenizer``: ``True`` embeds its alphabet and merge table; ``False`` stores
        only its digest (``Model.digest``: mode, alphabet and merges), and :func:`decompress`
        then needs a model with that digest.
    delta : int, optional
        Forces the front end: ``k`` in ``[1, MAX_DELTA]`` the delta chain of order ``k``
        (:func:`ubpe.signal.delta` along each channel, modulo ``2**bits``), ``0`` no front end.
        ``None`` (default), when a model is fitted: the chain that gives the smallest
        container (see ``predictor``), every one measured (on samples for long inputs:
        :mod:`ubpe.planner`). ``None`` with a ``tokenizer``: the smallest container of the
        orders 0, 1 and 2 with that model (a model fitted on ``ubpe.signal.delta(x, k)`` is
        best used with order ``k``, found so without being told). Bool values take no front end.
    predictor : str, default "auto"
        Forces the front-end chain by name (``planner.PREDICTORS``): ``"none"``, ``"delta1"``,
        ``"delta2"``, ``"lpc"`` (exact block LPC per channel), ``"lpc+adaptive"`` (then a
        sign-sign LMS cascade), ``"delta1+adaptive"``, ``"rank+delta1"`` (ranks among the
        distinct values, then delta 1). ``"auto"`` leaves the choice to ``delta``, else
        measures the chains of ``planner.auto_chains`` (all of the above, ``rank+delta1`` only
        when the distinct values are few relative to their span). Cannot be combined with
        ``delta``. With a ``tokenizer`` any chain applies: the one the model was fitted on
        (``ubpe fit --predictor``), its per-window parameters (LPC coefficients) in the container;
        a tokenizer fitted with ``predictor=`` brings its own (``Tokenizer.predictor``).
    escape : bool, default True
        With a ``tokenizer``: values (after the front end) outside its alphabet are *escaped*:
        coded as the nearest alphabet value, and the true value stored beside the stream with its
        position (``describe(data).escapes`` counts them), so a shared model never refuses new
        data. ``False`` refuses them with ``ValueError`` naming the first.
    level : {1, 2}, default 2
        ``1``: a static model, the tokens coded by rANS (or bit packing, or a constant); fast
        to decode. ``2``: also offers the adaptive context-mixing coders (``"cms2"`` for
        signals, in place of ``"cm"``; ``"cmt2"`` for text) and the vocabulary sizes chosen for
        them; smaller on data with context, and 20-100x slower to decode when one is chosen (:func:`describe` reports ``coder``). Level 2's candidates
        include level 1's, so up to ``planner.FULL_FIT`` values it is never larger.
    source : dict, optional
        Metadata about where the values came from (e.g. ``{"format": "wav", "rate": 48000}``),
        stored as it is and returned by :func:`describe`: at most 32 str keys (up to 64
        characters) with int (64-bit), float, bool, str or bytes values (up to 1024
        characters or bytes).
    step, bits : optional
        Floats only, at most one: quantize them first (:func:`ubpe.signal.quantize`, lossy);
        :func:`decompress` returns the dequantized floats (within about ``step / 2`` of the
        values: the bound is on :meth:`ubpe.quantize.Quantizer.dequantize`), the container's
        CRC covers those, and :func:`describe` reports ``lossy=True`` and the ``quantizer``.
        The rest of the chain is chosen on the quantized integers as for integer input.
    block_size : int, optional
        Values per block (default :data:`DEFAULT_BLOCK_SIZE`, ``2**20``, and
        :data:`DEFAULT_BYTE_BLOCK_SIZE`, ``2**26``, for one-byte values such as text; ``0``:
        never cut).
        Larger inputs, when a model is fitted, are cut into blocks of ``max(1, block_size //
        channels)`` frames that share one model (chain, merges and coders chosen on a sample of
        :data:`BLOCK_SAMPLE` values, the alphabet extended to every block's values), each block
        with its own front-end parameters (predictors restart per block), stream and CRC
        (format version 3, ``docs/format.md``, "Blocks"): compressed and decompressed in
        parallel, and decompressed in part (``decompress(start=, stop=)``). With a
        ``tokenizer``, its model codes every block as it is (chain and use of its merges
        measured on the sample; values outside its alphabet escaped). Inputs of at most
        ``block_size`` values give one stream (format version 2, the same bytes as before
        blocks existed). :func:`compress_to` writes a blocked container of a memory-mapped
        integer input (no ``tokenizer``) block by block.
    threads : int, optional
        Threads that compress the blocks and measure the front-end chains side by side
        (default: every core). The bytes do not depend on it.
    **fit_options
        ``n_candidates``, ``min_count``, ``window`` (and with ``n_tokens``, ``weighting``):
        passed to :class:`Tokenizer` when a model is fitted. ``weighting`` decides which
        tokens a fixed-size model keeps, so it needs ``n_tokens``; the automatic size keeps a
        prefix of the merges in priority order, which no weighting changes, and refuses it.

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

    Floats: integers stored as floats come back bit for bit; other floats take a step (lossy).

    >>> counts = np.tile(np.array([3, 5, 4, -2], dtype=np.float32), 250)
    >>> ubpe.decompress(ubpe.compress(counts)).tobytes() == counts.tobytes()
    True
    >>> wave = np.sin(np.arange(2000) / 50.0)
    >>> data = ubpe.compress(wave, step=0.001)
    >>> bool(np.abs(ubpe.decompress(data) - wave).max() <= 0.0005), ubpe.describe(data).lossy
    (True, True)
    """
    arr = _as_values(values)
    float_stage = _float_argument(arr, step, bits)
    embed = check_bool("embed", embed)
    order = _delta_argument(delta, arr.dtype)
    forced = _predictor_argument(predictor, delta, arr.dtype)
    if forced is not None and all(name == "delta" for name, _ in forced) and len(forced) <= 1:
        order, forced = (forced[0][1]["order"] if forced else 0), None
    level = _level_argument(level)
    threads = _threads_argument(threads)
    if block_size is not None:
        check_int("block_size", block_size, 0)
    src = _check_source(source, _argument_error) if source is not None else None
    dtype = arr.dtype
    if dtype.kind == "b":
        arr = arr.view(np.uint8) != 0  # normalise bool bytes to 0/1 (the CRC covers them)
    shape = [int(s) for s in arr.shape]
    native = dtype.newbyteorder("=") if dtype.byteorder == ">" else dtype
    channels, frames = _channels_frames(shape, math.prod(shape))
    if block_size is None and dtype.itemsize == 1:
        block_size = DEFAULT_BYTE_BLOCK_SIZE
    block = 0 if channels * frames == 0 else _block_frames(block_size, channels, frames)
    if block and float_stage is None and tokenizer is None:  # integers: read block by block, never all at once
        if not embed:
            raise ValueError("embed=False stores only a model's digest: pass the tokenizer= to reference")
        _fit_options_argument(n_tokens, fit_options)
        base = {"magic": MAGIC, "v": BLOCKED_VERSION, "dtype": dtype.str, "shape": shape, "layout": LAYOUT}
        if src is not None:
            base["source"] = src
        base["crc"] = 0  # (the planner sizes one-stream candidates of the sample)
        frames_source = _Frames(
            channels, frames, lambda f0, f1: frontend.to_channels(arr[f0:f1]),
            lambda f0, f1: np.ascontiguousarray(arr[f0:f1], dtype=native).reshape(f1 - f0, -1), [])
        parts = _blocked_parts(base, frames_source, block, _forced_chains(forced, order), level, n_tokens,
                               fit_options, threads, keep=_sink is None)
        if _sink is None:
            return b"".join(parts)
        for part in parts:
            _sink(part)
        return b""
    x = frontend.to_channels(arr)  # (channels, frames), native
    n = x.size
    checked = np.ascontiguousarray(arr.reshape(-1), dtype=native)
    prefix: list[dict[str, Any]] = []  # the float stage, ahead of the chain chosen on its integers
    if float_stage is not None:
        x, prefix = frontend.forward(x, [float_stage])
        if prefix[0]["stage"] == "quantize":  # lossy: the checksum covers what decompress returns
            checked = frontend.from_channels(frontend.inverse(x, prefix, native), tuple(shape)).reshape(-1)

    base: dict[str, Any] = {"magic": MAGIC, "v": STREAM_VERSION, "dtype": dtype.str, "shape": shape,
                            "layout": LAYOUT}
    if src is not None:
        base["source"] = src
    base["crc"] = _crc(dtype, shape, checked)  # written last: _candidate_fields moves it after the other fields
    base["front"] = prefix  # the chosen chain is appended to it
    if tokenizer is not None:
        recorded = getattr(tokenizer, "predictor", None) if isinstance(tokenizer, Tokenizer) else None
        if recorded is not None and forced is None and order is None:
            forced = planner.PREDICTORS[recorded]  # the chain the model was fitted behind
        if n_tokens is not None or fit_options:
            raise ValueError("n_tokens and fit options apply when compress fits a model; "
                             "they cannot be combined with tokenizer=")
        escape = check_bool("escape", escape)
        if forced is not None:
            chains = [planner.build_chain(forced)]
        elif order is not None:
            chains = [_chain(order)]
        else:
            chains = [_chain(k) for k in ([0, 1, 2] if dtype.kind != "b" else [0])]
        given_rows = None
        if block:  # the chain and the bare choice measured on a sample, then every block coded alike
            rows = checked.reshape(x.shape[1], -1)
            given_rows = _Frames(x.shape[0], x.shape[1], lambda f0, f1: x[:, f0:f1], lambda f0, f1: rows[f0:f1],
                                 prefix)
            x = _sample_frames(given_rows.get, x.shape[0], x.shape[1], BLOCK_SAMPLE, BLOCK_SAMPLE_WINDOWS)
        best = choice = None
        for i, chain in enumerate(chains):
            # the model's merges, or none of them: tokens below A decode as themselves, so the
            # reader needs nothing to tell them apart (an adaptive coder often does better on the
            # bare values of a window than on a vocabulary fitted to other windows)
            for bare in (False, True):
                try:
                    packed = _pack(_given_model_fields(base, x, tokenizer, chain, embed, level, escape, bare))
                    if best is None or len(packed) < len(best):
                        choice = (chain, bare)
                except ValueError:
                    if i == len(chains) - 1 and best is None and bare:
                        raise
                    continue
                if best is None or len(packed) < len(best):
                    best = packed
        if given_rows is not None:
            given = _Given(_model_argument(tokenizer), embed, escape, choice[1])
            return b"".join(_blocked_parts(base, given_rows, block, [choice[0]], level, None, {}, threads,
                                           given=given))
        return best
    if not embed:
        raise ValueError("embed=False stores only a model's digest: pass the tokenizer= to reference")
    _fit_options_argument(n_tokens, fit_options)
    if n == 0:
        chain = frontend.forward(x, planner.build_chain(forced) if forced is not None else _chain(order or 0))[1]
        empty = planner.Candidate(chain, Alphabet([]), np.zeros((0, 2), np.int32), np.zeros(0, np.int32),
                                  planner.LEVEL_CODERS[level])
        return _pack(_candidate_fields(base, empty))
    if block:  # floats: the float stage's parameters are chosen on all the values
        rows = checked.reshape(x.shape[1], -1)  # (frames, channels): the values the CRCs cover
        src = _Frames(x.shape[0], x.shape[1], lambda f0, f1: x[:, f0:f1], lambda f0, f1: rows[f0:f1], prefix)
        return b"".join(_blocked_parts(base, src, block, _forced_chains(forced, order), level, n_tokens,
                                       fit_options, threads))
    if forced is not None:
        chains = [planner.build_chain(forced)]
    elif order is not None:
        chains = [_chain(order)]
    else:
        chains = [planner.build_chain(spec) for spec in planner.auto_chains(x, level)]
    memo: dict = {}  # candidates costed in this call, by content
    best = planner.plan(x, chains, level, lambda c: _cost(base, c, memo),
                        planner.ReplayEncoder(n_tokens, fit_options), threads=threads)
    best = planner.choose_method(best, lambda c: _cost(base, c, memo))
    return _pack(_candidate_fields(base, best))


def _forced_chains(forced: tuple | None, order: int | None) -> list[list[frontend.Stage]] | None:
    """The one chain ``predictor=`` or ``delta=`` forces, or None (the automatic choice)."""
    if forced is not None:
        return [planner.build_chain(forced)]
    return [_chain(order)] if order is not None else None


def compress_to(out: BinaryIO, values: Any, **options: Any) -> int:
    """Write ``compress(values, **options)`` to the binary file ``out``; return the bytes written.

    The same bytes, but a blocked container of integers (more than ``block_size`` values, no
    ``tokenizer``) is written block by block, and ``values`` read block by block (twice: once
    to extend the alphabet to every block's values, once to code them): with a memory-mapped
    array (``np.load(path, mmap_mode="r")``, ``np.memmap``) memory stays within a few blocks
    per thread, however large the values. Other containers are built in memory, then written.
    """
    written = 0

    def sink(part: bytes) -> None:
        nonlocal written
        out.write(part)
        written += len(part)

    data = compress(values, _sink=sink, **options)
    if data:
        sink(data)
    return written


def _model_argument(tokenizer: Any) -> Model:
    """The :class:`Model` of ``compress``'s / ``decompress``'s ``tokenizer`` argument."""
    if isinstance(tokenizer, Model):
        return tokenizer
    if isinstance(tokenizer, Tokenizer):
        return tokenizer.model  # raises NotFittedError first
    raise TypeError(f"tokenizer must be a ubpe.Tokenizer or a ubpe.Model, got {type(tokenizer).__name__}")


def _escaped_ids(alphabet: Alphabet, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ids, positions): the alphabet ids of ``flat``, a value outside the alphabet replaced by the
    nearest alphabet value at or above it (else the largest), and the positions so replaced."""
    a = len(alphabet)
    if alphabet.kind == "range":
        if flat.dtype.kind == "u":
            outside = flat >= a
            ids = np.minimum(flat, a - 1).astype(np.int32)
        else:
            outside = (flat < 0) | (flat >= a)
            ids = np.clip(flat, 0, a - 1).astype(np.int32)
    else:
        table = alphabet.values  # sorted int64
        if flat.dtype == np.uint64:  # compare in the values' own domain
            big = flat > np.uint64(np.iinfo(np.int64).max)
            wide = np.where(big, np.uint64(np.iinfo(np.int64).max), flat).astype(np.int64)
        else:
            big = np.zeros(flat.shape, dtype=bool)
            wide = flat.astype(np.int64)
        idx = np.minimum(np.searchsorted(table, wide), a - 1)
        outside = big | (table[idx] != wide)
        ids = idx.astype(np.int32)
    return ids, np.flatnonzero(outside)


def _varints(u: np.ndarray) -> bytes:
    """uint64 values as LEB128 varints (7 bits a byte, low first, high bit = more follows)."""
    u = np.asarray(u, dtype=np.uint64)
    nbytes = np.ones(u.shape[0], dtype=np.int64)
    for j in range(1, 10):
        nbytes += u >= (np.uint64(1) << np.uint64(7 * j))
    ends = np.cumsum(nbytes)
    out = np.zeros(int(ends[-1]) if u.size else 0, dtype=np.uint8)
    starts = ends - nbytes
    for j in range(10):
        have = nbytes > j
        byte = ((u[have] >> np.uint64(7 * j)) & np.uint64(0x7F)).astype(np.uint8)
        byte[nbytes[have] > j + 1] |= 0x80
        out[starts[have] + j] = byte
    return out.tobytes()


def _parse_varints(raw: bytes, where: str) -> np.ndarray:
    """The uint64 values of a LEB128 varint stream; CorruptDataError for a cut or too long one."""
    b = np.frombuffer(raw, dtype=np.uint8)
    ends = np.flatnonzero(b < 0x80)
    if b.size == 0 or ends.size == 0 or ends[-1] != b.size - 1:
        raise CorruptDataError(f"{where}: the varints are cut short")
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    if lengths.max() > 10 or np.any((lengths == 10) & (b[ends] > 1)):
        raise CorruptDataError(f"{where}: a varint exceeds 64 bits")
    u = np.zeros(ends.size, dtype=np.uint64)
    for j in range(10):
        have = lengths > j
        u[have] |= (b[starts[have] + j] & np.uint8(0x7F)).astype(np.uint64) << np.uint64(7 * j)
    return u


def _escape_field(values: np.ndarray, positions: np.ndarray) -> bytes:
    """The ``esc`` field: LEB128 varints of the count, the position gaps and the zigzagged values."""
    v = np.ascontiguousarray(values[positions])
    w = v.view(np.int64) if v.dtype == np.uint64 else v.astype(np.int64)
    zig = (w.astype(np.uint64) << np.uint64(1)) ^ (w >> np.int64(63)).astype(np.uint64)
    gaps = np.diff(positions, prepend=-1) - 1  # positions strictly increase: gaps >= 0
    head = np.array([positions.shape[0]], dtype=np.uint64)
    return _varints(np.concatenate((head, gaps.astype(np.uint64), zig)))  # all uint64: no float promotion


def _parse_escapes(raw: Any, n: int, coded: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """(positions, values) of a container's ``esc`` field, checked against its ``n`` values."""
    if not isinstance(raw, bytes):
        raise CorruptDataError(f"esc: expected bytes, got {type(raw).__name__}")
    if len(raw) > 2 + 20 * max(n, 1):
        raise CorruptDataError(f"esc: {len(raw)} bytes, more than {n} escapes can need")
    u = _parse_varints(raw, "esc")
    k = int(u[0])
    if not 1 <= k <= n or u.size != 1 + 2 * k:
        raise CorruptDataError(f"esc: {u.size} varints for a count of {k} (at most {n}), expected 1 + 2 x count")
    gaps = u[1:1 + k]
    if np.any(gaps >= np.uint64(n)):
        raise CorruptDataError(f"esc: a position gap beyond the {n} values")
    positions = np.cumsum(gaps.astype(np.int64) + 1) - 1
    if positions[-1] >= n:
        raise CorruptDataError(f"esc: positions beyond the {n} values")
    zig = u[1 + k:]
    w = (zig >> np.uint64(1)).astype(np.int64) ^ -(zig & np.uint64(1)).astype(np.int64)
    if coded == np.uint64:
        return positions, w.view(np.uint64)
    info = np.iinfo(coded) if coded.kind in "iu" else None
    if info is None or w.min() < info.min or w.max() > info.max:
        raise CorruptDataError(f"esc: a value outside the range of {coded}")
    return positions, w.astype(coded)


def _given_model_fields(base: dict, x: np.ndarray, tokenizer: Any, chain: list, embed: bool,
                        level: int, escape: bool = False, bare: bool = False) -> dict[str, Any]:
    """The fields of ``x`` (``(channels, frames)``) encoded with a given model, no choice made
    but the coder."""
    model = _model_argument(tokenizer)
    merges = model.merges
    alphabet = model.alphabet
    a = len(alphabet)
    _alphabet_values(alphabet)  # refuses an alphabet of symbols
    if a + len(merges) > MAX_VOCAB:
        raise ValueError(f"the model has {a + len(merges)} tokens; a container holds at most {MAX_VOCAB}")
    y, record = frontend.forward(x, chain)
    escaped = None
    if y.size:
        flat = y.reshape(-1)
        if escape and a:
            ids, positions = _escaped_ids(alphabet, flat)
            if positions.size:
                escaped = _escape_field(flat, positions)
        else:
            ids = alphabet.to_ids(flat)
        tokens = model.encode(ids) if len(merges) and not bare else ids  # by the model's method
    else:
        tokens = np.zeros(0, dtype=np.int32)
    fields = {**base, "front": base.get("front", []) + record}
    if escaped is not None:
        fields["esc"] = escaped
    if embed:
        fields["alphabet"] = _alphabet_field(alphabet)
        fields["model"] = _model_field(merges, a)
    else:
        fields["digest"] = bytes.fromhex(model.digest)
    if len(merges) and model.method != "replay" and not bare:
        fields["method"] = model.method  # bare tokens: nothing written (describe infers it, 12 bytes saved)
    fields["stream"] = entropy.encode_stream(tokens, max(a + len(merges), 1), coders=planner.LEVEL_CODERS[level])
    fields["v"] = _written_version(max(fields["v"], _CODER_VERSION.get(fields["stream"]["coder"], 0),  # "cms2": 5
                                       frontend.chain_version(fields["front"])))  # "mult", unsigned input: 6
    fields["crc"] = fields.pop("crc")
    return fields


def _pack(fields: dict) -> bytes:
    """The container (or, without ``"v"``, a block) of ``fields`` as msgpack: the compact form when
    ``fields["v"]`` is version 7 or later (:func:`_v7_fields`), else the fields as they are
    (versions 1 to 6)."""
    if fields.get("v", 0) >= COMPACT_VERSION:
        return _v7_prefix(fields["v"]) + msgpack.packb(_v7_fields(fields, _count(fields.get("shape"))),
                                                       use_bin_type=True)
    return msgpack.packb(fields, use_bin_type=True)


def _v7_prefix(version: int) -> bytes:
    """The 5 bytes a version 7 (or later) container starts with: ``b"ubpe"`` and the version."""
    return MAGIC.encode("ascii") + bytes([version])


def _pack_block(fields: dict, version: int, count: int) -> bytes:
    """A block's map (front, stream, crc, esc) as msgpack, in the form of the container's
    version (``count``: the block's values, frames x channels)."""
    return msgpack.packb(_v7_fields(fields, count) if version >= COMPACT_VERSION else fields, use_bin_type=True)


def _count(shape: Any) -> int | None:
    """The number of values of a (written or not yet checked) shape; None if it is no list of ints."""
    if not isinstance(shape, list):
        return None
    if len(shape) == 1:  # the usual case, without a generator
        return shape[0] if type(shape[0]) is int and shape[0] >= 0 else None
    if not all(type(s) is int and s >= 0 for s in shape):
        return None
    return math.prod(shape)


# Version 7, written: the named fields of a container (with "magic", "v") or of a block, as the
# compact form's maps. What a field's absence means is written once, in _V7_DEFAULTS; the reader
# (_named_head, _named_block) puts every default back and refuses a default written out.


def _v7_fields(fields: dict, count: int | None) -> dict:
    """The compact form's map of a container's (or a block's) named fields (the container's
    "magic" and "v" go to its prefix): keys by number, values of the tables by number, defaults
    left out."""
    out: dict[Any, Any] = {}
    for k, v in fields.items():
        if k in ("magic", "v"):
            continue
        # (fields as the writer builds them; anything else, a test's edit, is written as it is)
        if k == "dtype":
            v = _VALUE_IDS_V7[DTYPES_V7].get(v, v) if isinstance(v, str) else v
        elif k == "front" and isinstance(v, list):
            v = [{**e, "stage": _VALUE_IDS_V7[STAGES_V7].get(e["stage"], e["stage"])}
                 if isinstance(e, dict) and isinstance(e.get("stage"), str) else e for e in v]
        elif k == "alphabet" and isinstance(v, dict):
            v = {a: b for a, b in v.items() if not _is_default(b, _V7_ALPHABET_DEFAULTS.get(a, _NONE))}
        elif k == "model" and isinstance(v, dict) and "a" in v:
            if _is_default(v.get("m"), 0) and _is_default(v.get("merges"), b"") and len(v) == 3:
                continue  # no merges: the map is left out
            v = {a: b for a, b in v.items() if a != "a"}  # "a": the alphabet's "n"
        elif k == "stream" and isinstance(v, dict):
            v = {a: (_VALUE_IDS_V7[CODERS_V7].get(b, b) if a == "coder" and isinstance(b, str) else b)
                 for a, b in v.items() if not (a == "n" and type(b) is int and b == count)}
        if _is_default(v, _V7_DEFAULTS.get(k, _NONE)):
            continue
        out[_KEY_IDS_V7.get(k, k)] = _compact(v)
    return out


_NONE = object()
#: Fields version 7 leaves out when they hold these values (``layout``: the one layout; ``front``:
#: no front end, one-stream form only), and the alphabet's (a range alphabet: no gap width, no gaps).
_V7_DEFAULTS = {"layout": LAYOUT, "front": []}
_V7_BLOCKED_DEFAULTS = {k: v for k, v in _V7_DEFAULTS.items() if k != "front"}
_V7_ALPHABET_DEFAULTS = {"w": 0, "gaps": b""}


def _is_default(value: Any, default: Any) -> bool:
    return default is not _NONE and type(value) is type(default) and value == default


def _compact(obj: Any) -> Any:
    """``obj`` with every map key of :data:`KEYS_V7` replaced by its index, in maps at any depth."""
    if isinstance(obj, dict):
        return {_KEY_IDS_V7.get(k, k): _compact(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_compact(v) for v in obj]
    return obj


def _written_version(version: int) -> int:
    """The version :func:`compress` writes for fields that need ``version``: COMPACT_VERSION
    (unless WRITE_COMPACT is off: then ``version`` itself)."""
    return max(version, COMPACT_VERSION) if WRITE_COMPACT else version


def _chain(order: int) -> list[frontend.Stage]:
    return [frontend.DeltaStage(order)] if order else []


def _candidate_fields(base: dict, c: planner.Candidate, memo: dict | None = None) -> dict[str, Any]:
    """The container fields of a planner candidate (built once, cached on it). With ``memo`` (a
    dict kept for one ``compress`` call), a candidate equal to one built before (the same
    fields besides the stream, coders offered and token stream: the planner's screen and its
    proposals often build the same one) takes that one's fields without coding its stream again
    (``memo`` holds candidates of one ``base``)."""
    if c.packed is None:
        a = len(c.alphabet)
        fields = {**base, "front": base.get("front", []) + c.chain, "alphabet": _alphabet_field(c.alphabet),
                  "model": _model_field(c.merges, a)}
        if c.method != "replay":
            fields["method"] = c.method
        key = None
        if memo is not None:  # (``base`` is the same for every candidate of one call: not in the key)
            tokens = np.ascontiguousarray(c.tokens)
            described = msgpack.packb([fields["front"], fields["alphabet"], fields["model"], fields.get("method")],
                                      use_bin_type=True)
            key = (described, tuple(c.coders), tokens.dtype.str,
                   hashlib.blake2b(tokens.view(np.uint8), digest_size=32).digest())
            if key in memo:
                c.packed = memo[key]
                return c.packed[0]
        text = set(entropy.TEXT_CODERS) & set(c.coders)
        classes = entropy.text_classes(c.alphabet.values) if text and not len(c.merges) else None
        stream = entropy.encode_stream(c.tokens, max(a + len(c.merges), 1), coders=c.coders, classes=classes)
        fields["stream"] = stream
        fields["v"] = _written_version(max(fields["v"], _CODER_VERSION.get(stream["coder"], 0),
                                           frontend.chain_version(fields["front"])))
        fields["crc"] = fields.pop("crc")  # the checksum last, as in every container
        # the stream grows with the values, and so do the payloads of stages that code data
        # in their params ("mult"'s digits): the planner scales both when it sizes a sample
        grows = len(_pack(stream)) + frontend.growing_bytes(c.chain)
        c.packed = (fields, planner.Cost(len(_pack(fields)), grows))
        if key is not None:
            memo[key] = c.packed
    return c.packed[0]


def _cost(base: dict, c: planner.Candidate, memo: dict | None = None) -> planner.Cost:
    """The format's costing function for the planner: exact packed sizes (``memo``: see
    :func:`_candidate_fields`)."""
    _candidate_fields(base, c, memo)
    return c.packed[1]


def _model_field(merges: np.ndarray, a: int) -> dict:
    m = len(merges)
    return {"a": a, "m": m, "merges": entropy.pack_merges(merges, max(a, 1)) if m else b""}


def _float_argument(arr: np.ndarray, step: Any, bits: Any) -> frontend.Stage | None:
    """The float stage ``compress`` puts first for float values (None for integers)."""
    if arr.dtype.kind != "f":
        if step is not None or bits is not None:
            raise ValueError(f"step= and bits= quantize floating-point values; these values are {arr.dtype}")
        return None
    if step is not None and bits is not None:
        raise ValueError("pass either step= or bits=, not both")
    _quantize.check_finite(arr)  # first: the position named is in the values' own shape
    if step is not None or bits is not None:
        stage = _quantize.QuantizeStage(step, bits)
        _quantize.quantize(np.zeros(0, arr.dtype), step=step, bits=bits)  # the arguments' errors first
        return stage
    if _quantize.exact_grid(arr) is None:
        raise TypeError(
            f"values of dtype {arr.dtype} are not on an exact grid; pass step= or bits= (lossy) to "
            "quantize them (on an exact grid every value is k * 2**e with |k| <= 2**53, as integers "
            "stored as floats are)"
        )
    return _quantize.FloatGridStage()


def _delta_argument(delta: Any, dtype: np.dtype) -> int | None:
    """``compress``'s ``delta``: None (automatic) or an order in [0, MAX_DELTA]."""
    if delta is None:
        return 0 if dtype.kind == "b" else None
    order = check_int("delta", delta, 0, MAX_DELTA)
    if order and dtype.kind == "b":
        raise ValueError("delta applies to numeric values; bool values are compressed with delta=0")
    return order


def _predictor_argument(predictor: Any, delta: Any, dtype: np.dtype) -> tuple | None:
    """``compress``'s ``predictor``: None for "auto", else the forced chain's spec."""
    if not isinstance(predictor, str):
        raise TypeError(f"predictor must be a str, got {type(predictor).__name__}")
    check_choice("predictor", predictor, ("auto", *planner.PREDICTORS))
    if predictor == "auto":
        return None
    if delta is not None:
        raise ValueError("pass either delta= or predictor=, not both")
    spec = planner.PREDICTORS[predictor]
    if spec and dtype.kind == "b":
        raise ValueError(f"predictor={predictor!r} applies to numeric values; bool values take 'none'")
    return spec


def _level_argument(level: Any) -> int:
    """``compress``'s ``level``: 1 or 2."""
    level = check_int("level", level, min(LEVELS), max(LEVELS))
    return level


def _fit_options_argument(n_tokens: Any, fit_options: dict) -> None:
    """Validate the fit options with the Tokenizer's own messages; refuse ``weighting`` without
    ``n_tokens``."""
    Tokenizer(None, 1 if n_tokens is None else n_tokens, **fit_options)
    if n_tokens is None and "weighting" in fit_options:
        raise ValueError(
            "weighting decides which tokens a model of n_tokens keeps; without n_tokens compress "
            "keeps a prefix of the merges in priority order, which weighting does not change: "
            "pass n_tokens= with weighting="
        )


def _argument_error(message: str, type_error: bool = False) -> Exception:
    return TypeError(message) if type_error else ValueError(message)


def _data_error(message: str, type_error: bool = False) -> Exception:
    return CorruptDataError(f"source: {message}")


def _check_source(source: Any, error: Any) -> dict[str, Any]:
    """``source`` if it is a valid source map; else raise ``error(message, is_type_error)``."""
    if not isinstance(source, dict):
        raise error(f"source must be a dict, got {type(source).__name__}", True)
    if len(source) > SOURCE_MAX_ENTRIES:
        raise error(f"source has {len(source)} entries, at most {SOURCE_MAX_ENTRIES} are allowed")
    for key, value in source.items():
        if not isinstance(key, str):
            raise error(f"source keys must be str, got {type(key).__name__} {short(key)}", True)
        if not 1 <= len(key) <= SOURCE_MAX_KEY:
            raise error(f"source key {short(key)} must have 1 to {SOURCE_MAX_KEY} characters")
        if isinstance(value, bool) or isinstance(value, float):
            continue
        if isinstance(value, int):
            if not _I64_MIN <= value <= _U64:
                raise error(f"source[{key!r}] = {short(value)} does not fit in 64 bits")
        elif isinstance(value, (str, bytes)):
            if len(value) > SOURCE_MAX_VALUE:
                raise error(f"source[{key!r}] has {len(value)} characters/bytes, at most {SOURCE_MAX_VALUE}")
        else:
            raise error(f"source[{key!r}] must be an int, float, bool, str or bytes, got {type(value).__name__}", True)
    return dict(source)


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
    chain: list[dict] = field(default_factory=list)  # the checked front-end chain
    layout: str = "flat"  # "flat" (version 1: one channel, C order) or LAYOUT
    source: dict | None = None
    method: str = "replay"  # the informational "method" field, "replay" when absent
    block: int = 0  # blocked form (version 3): frames per block, else 0
    blocks: list[bytes] | None = None  # blocked form: each block's packed map, unparsed


#: How every container of versions 1 to 6 starts: a msgpack map whose first entry is "magic": "ubpe".
_HEAD = msgpack.packb("magic") + msgpack.packb(MAGIC)
#: How every container of version 7 and later starts: these 4 bytes, then the version (one byte),
#: then a msgpack map (an older container starts with a msgpack map's first byte: 0x80 to 0x8f, 0xde).
_HEAD_V7 = MAGIC.encode("ascii")


def _is_compact(data: bytes) -> bool:
    """Whether ``data`` starts as a version 7 (or later) container: ``b"ubpe"``."""
    return data[:len(_HEAD_V7)] == _HEAD_V7


#: Version 7's key table as a map (int -> name), for :func:`_v7_map`'s usual case.
_KEY_NAMES_V7 = dict(enumerate(KEYS_V7))


def _v7_map(pairs: list[tuple[Any, Any]]) -> dict:
    """A map of the compact form with its keys' names: an int key is the index of its name in
    :data:`KEYS_V7`, a str key a name not in it; anything else, or a name twice, is corrupt."""
    try:  # the usual case, every key an int of the table, each once: one comprehension
        d = {_KEY_NAMES_V7[key]: value for key, value in pairs if type(key) is int}
        if len(d) == len(pairs):  # (a key of another type, left out, or a key twice: below)
            return d
    except KeyError:  # an int out of the table: reported below
        pass
    d = {}
    for key, value in pairs:
        if type(key) is int:
            if not 0 <= key < len(KEYS_V7):
                raise CorruptDataError(f"container: unknown key number {short(key)} (version 7 defines 0 to "
                                       f"{len(KEYS_V7) - 1})")
            key = KEYS_V7[key]
        elif type(key) is not str:
            raise CorruptDataError(f"container: a map key must be an int or a str, got {type(key).__name__}")
        elif key in _KEY_IDS_V7:
            raise CorruptDataError(f"container: key {key!r} written by name (version 7 writes it as {_KEY_IDS_V7[key]})")
        if key in d:
            raise CorruptDataError(f"container: key {key!r} appears twice in a map")
        d[key] = value
    return d


def _unpack_compact(data: bytes) -> Any:
    """The msgpack value of a version 7 map (a container or a block), its keys named
    (:func:`_v7_map`); msgpack's own errors pass through."""
    return msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True, object_pairs_hook=_v7_map)


def _fields(data: bytes) -> Any:
    """The msgpack value of a container of any version, a version 7 one as the named fields of
    version 6 (:func:`_named_head`; blocks stay bytes, :func:`_block_fields` names them). Not
    validated: for tests and tools that look into containers (CorruptDataError or msgpack's
    errors for what does not parse)."""
    if _is_compact(data):
        return _named_head(_unpack_compact(data[len(_HEAD_V7) + 1:]), data[len(_HEAD_V7)])
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


def _block_fields(raw: bytes, version: int, count: int) -> Any:
    """The named fields of a block's bytes (``count`` values), as :func:`_fields`."""
    if version >= COMPACT_VERSION:
        return _named_block(_unpack_compact(raw), count)
    return msgpack.unpackb(raw, raw=False, strict_map_key=False)


def _named_head(d: Any, version: int) -> dict:
    """A version 7 container's map (keys named by :func:`_v7_map`) and its prefix's version as the
    fields of version 6: ``"magic": "ubpe", "v": version`` first, the values of the tables named,
    and every field left out at its default put back (:func:`_v7_fields` is the inverse)."""
    if not isinstance(d, dict):
        raise CorruptDataError(f"container: after its prefix, expected a map, got {type(d).__name__}")
    if "magic" in d or "v" in d:
        raise CorruptDataError("container: 'magic' or 'v' as a key of the compact form (version 7)")
    out = {"magic": MAGIC, "v": version, **d}
    # (the blocked form has no top-level front end)
    _put_defaults(out, _V7_BLOCKED_DEFAULTS if "blocks" in d else _V7_DEFAULTS, "container")
    if "dtype" in out:
        out["dtype"] = _named_value(out["dtype"], DTYPES_V7, "container: 'dtype'")
    if isinstance(out.get("alphabet"), dict):
        _put_defaults(out["alphabet"], _V7_ALPHABET_DEFAULTS, "alphabet")
        size = out["alphabet"].get("n")
        model = out.get("model")
        if model is None:
            out["model"] = {"a": size, "m": 0, "merges": b""}
        elif isinstance(model, dict):
            if "a" in model:
                raise CorruptDataError("model: 'a' is written in the compact form (version 7): it is the alphabet's 'n'")
            if model.get("m") == 0 and model.get("merges") == b"" and type(model.get("m")) is int:
                raise CorruptDataError("model: a model of no merges is left out in the compact form (version 7)")
            out["model"] = {"a": size, **model}
    return _named_stream_front(out, _count(out.get("shape")) if "blocks" not in d else None)


def _named_block(d: Any, count: int) -> Any:
    """A version 7 block's map (keys named) as the fields of version 6 (``count``: the block's
    values): the inverse of :func:`_v7_fields` for a block."""
    if isinstance(d, dict):
        _put_defaults(d, {"front": []}, "block")
        _named_stream_front(d, count)
    return d


def _named_stream_front(d: dict, count: int | None) -> dict:
    """``d`` (a container's or a block's fields) with its stream's coder and its front-end stages
    named, and the stream's ``n`` put back (``count`` values, when known)."""
    stream = d.get("stream")
    if isinstance(stream, dict):
        if "coder" in stream:
            stream["coder"] = _named_value(stream["coder"], CODERS_V7, "stream: 'coder'")
        if "n" in stream:
            if count is not None and type(stream["n"]) is int and stream["n"] == count:
                raise CorruptDataError("stream: 'n' equal to the values' count is left out in the compact form")
        elif count is not None:
            stream["n"] = count
    front = d.get("front")
    if isinstance(front, list):
        for e in front:
            if isinstance(e, dict) and "stage" in e:
                e["stage"] = _named_value(e["stage"], STAGES_V7, "front: 'stage'")
    return d


def _put_defaults(d: dict, defaults: dict, where: str) -> None:
    """Put the fields the compact form leaves out back in ``d``; refuse one written at its default."""
    for key, default in defaults.items():
        if key not in d:
            d[key] = default.copy() if isinstance(default, list) else default
        elif _is_default(d[key], default):
            raise CorruptDataError(f"{where}: {key!r} at its default is left out in the compact form (version 7)")


def _named_value(value: Any, table: tuple[str, ...], where: str) -> Any:
    """A value of a version 7 table by its name: an int is its index; a str in the table (written
    by name) and an int out of range are corrupt; anything else is left for the field's check."""
    if type(value) is int:
        if not 0 <= value < len(table):
            raise CorruptDataError(f"{where}: unknown number {short(value)} (version 7 defines 0 to {len(table) - 1})")
        return table[value]
    if isinstance(value, str) and value in table:
        raise CorruptDataError(f"{where}: {value!r} written by name (version 7 writes {table.index(value)})")
    return value


def _unparsable(data: bytes, error: Exception) -> str:
    """Why ``data`` does not parse, in the user's terms: not ours, truncated, or trailing bytes."""
    if len(data) == 0:
        return "empty: not a ubpe file"
    if _is_compact(data):
        at = len(_HEAD_V7) + 1  # the map after the prefix
    else:
        at = 0
        if data[1:1 + len(_HEAD)] != _HEAD[: max(0, min(len(_HEAD), len(data) - 1))] or len(data) <= 1:
            return f"not a ubpe file (it starts with {data[:8]!r})"
    if len(data) <= at:
        return f"truncated: the container ends after {len(data)} bytes, in its first {at} bytes"
    if isinstance(error, msgpack.ExtraData):
        extra = len(error.extra)
        return (f"{extra} bytes of other data after the container's {len(data) - extra} bytes "
                "(two files joined, or a damaged file)")
    # walk the top-level map entry by entry: where does the data end?
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=max(len(data), 1))
    unpacker.feed(data[at:])
    last = None
    try:
        n = unpacker.read_map_header()
        for _ in range(n):
            key = unpacker.unpack()
            unpacker.skip()
            last = KEYS_V7[key] if type(key) is int and 0 <= key < len(KEYS_V7) else key
    except msgpack.OutOfData:
        where = f", after its field {last!r}" if isinstance(last, str) else ""
        return f"truncated: the container ends after {len(data)} bytes{where}"
    except Exception:
        pass
    return f"damaged: the bytes do not parse as a ubpe container ({type(error).__name__})"


def _parse(data: Any, max_output_size: int | None) -> _Parsed:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    cap = DEFAULT_MAX_OUTPUT_SIZE if max_output_size is None else check_int("max_output_size", max_output_size, 0)
    data = bytes(data)
    compact = _is_compact(data)
    try:
        if compact:  # version 7 and later: keys by number, translated back to their names here
            if len(data) <= len(_HEAD_V7) + 1:
                raise CorruptDataError(f"truncated: the container ends after {len(data)} bytes, in its prefix")
            version = data[len(_HEAD_V7)]
            if version < COMPACT_VERSION:
                raise CorruptDataError(f"container: the prefix b'ubpe' declares format version {version} "
                                       f"(it is version {COMPACT_VERSION} or later)")
            if version > FORMAT_VERSION:
                raise FormatVersionError("this container", version, FORMAT_VERSION)
            d = _named_head(_unpack_compact(data[len(_HEAD_V7) + 1:]), version)
        else:
            d = msgpack.unpackb(data, raw=False, strict_map_key=True, use_list=True)
    except (CorruptDataError, FormatVersionError):
        raise
    except Exception as e:  # msgpack raises several unrelated exception types
        raise CorruptDataError(_unparsable(data, e)) from None
    if not isinstance(d, dict) or d.get("magic") != MAGIC:
        raise CorruptDataError("not a ubpe container (bad magic)")
    version = d.get("v")
    if type(version) is not int or version < 1:
        raise CorruptDataError(f"container: invalid format version {short(version)}")
    if version > FORMAT_VERSION:
        raise FormatVersionError("this container", version, FORMAT_VERSION)
    if version >= COMPACT_VERSION and not compact:
        raise CorruptDataError(f"container: format version {version} is written in the compact form "
                               "(keys by number), these keys are names")
    embedded = "digest" not in d
    model_keys = ("alphabet", "model") if embedded else ("digest",)
    blocked = version >= 3 and "blocks" in d
    if blocked:
        expect_map(d, "container", _BLOCKED_KEYS + model_keys, _BLOCKED_OPTIONAL_KEYS)
    else:
        expect_map(d, "container", _TOP_KEYS[version] + model_keys, _OPTIONAL_KEYS[version])

    dt = d["dtype"]
    if not isinstance(dt, str) or dt not in _DTYPES[version]:
        raise CorruptDataError(f"container: unsupported dtype {short(dt)}")
    dtype = _DTYPE_OBJECTS[dt]
    shape_raw = d["shape"]
    if not isinstance(shape_raw, list) or len(shape_raw) > MAX_NDIM:
        raise CorruptDataError(f"container: 'shape' must be a list of at most {MAX_NDIM} ints")
    if len(shape_raw) == 1:  # the usual case, checked as below without generators
        n = shape_raw[0]
        if type(n) is not int or not 0 <= n <= _I64_MAX:
            raise CorruptDataError("container: 'shape' must hold non-negative ints")
    else:
        if not all(type(s) is int and 0 <= s <= _I64_MAX for s in shape_raw):
            raise CorruptDataError("container: 'shape' must hold non-negative ints")
        n = math.prod(shape_raw)
    if n * dtype.itemsize > cap:
        raise CorruptDataError(
            f"container declares {n} values ({n * dtype.itemsize} bytes), more than "
            f"max_output_size={cap} bytes: pass a larger max_output_size if you trust it"
        )
    if n == 0 and math.prod(s or 1 for s in shape_raw) > _I64_MAX:  # (n > 0: this product is n)
        raise CorruptDataError("container: 'shape' is too large for an array")
    native = dtype.newbyteorder("=") if dtype.byteorder == ">" else dtype
    if version == 1:
        chain, layout, source = _parse_front_v1(d["front"], dtype), "flat", None
    else:
        if d["layout"] != LAYOUT:
            raise CorruptDataError(f"container: 'layout' must be {LAYOUT!r}, got {short(d['layout'])}")
        layout = LAYOUT
        chain = [] if blocked else frontend.parse_chain(d["front"], native, _channels_frames(shape_raw, n))
        _check_chain_version(chain, version)
        source = _check_source(d["source"], _data_error) if "source" in d else None
    method = _parse_method(d)
    if blocked:
        block, blocks = _parse_index(d, shape_raw, n)
        common = dict(stream={}, crc=0, fields=d, chain=chain, layout=layout, source=source, method=method,
                      block=block, blocks=blocks)
    else:
        crc = d["crc"]
        if type(crc) is not int or not 0 <= crc <= 0xFFFFFFFF:
            raise CorruptDataError("container: 'crc' must be an int in [0, 2**32)")
        if not isinstance(d["stream"], dict):
            raise CorruptDataError("container: 'stream' must be a map")
        coder = d["stream"].get("coder")
        if isinstance(coder, str) and _CODER_VERSION.get(coder, 0) > version:
            raise CorruptDataError(f"stream: coder {coder!r} is not defined in format version {version}")
        common = dict(stream=d["stream"], crc=crc, fields=d, chain=chain, layout=layout, source=source,
                      method=method)

    if not embedded:
        digest = field_bytes(d, "digest", where="container", size=32).hex()
        return _Parsed(version, dtype, tuple(shape_raw), n, None, None, None, None, digest, **common)

    values = _parse_alphabet(d["alphabet"])
    model = expect_map(d["model"], "model", ("a", "m", "merges"))
    a = field_int(model, "a", 0, MAX_VOCAB, where="model")
    m = field_int(model, "m", 0, MAX_VOCAB, where="model")
    merges_raw = field_bytes(model, "merges", where="model")
    if a != values.size:
        raise CorruptDataError(f"model: 'a' = {a} differs from the alphabet's {values.size} values")
    if a + m > MAX_VOCAB:
        raise CorruptDataError(f"model: {a} + {m} tokens exceed the limit {MAX_VOCAB}")
    if a == 0 and (m or n):
        raise CorruptDataError("container: values or merges over an empty alphabet")
    if m == 0 and merges_raw:
        raise CorruptDataError("model: 'merges' must be empty when 'm' is 0")
    if m == 0 and "method" in d:
        raise CorruptDataError("container: 'method' is written only for a model with merges")
    if m and 8 * max(len(merges_raw) - 1, 0) < _min_merge_bits(m, a):
        raise CorruptDataError(f"model: 'merges' has {len(merges_raw)} bytes, too few for {m} merges")
    return _Parsed(version, dtype, tuple(shape_raw), n, values, a, m, merges_raw, None, **common)


def _parse_method(d: dict) -> str:
    """The optional ``method`` field (informational: decoding never depends on it)."""
    if "method" not in d:
        return "replay"
    method = d["method"]
    if not isinstance(method, str) or method not in _METHOD_VALUES:
        raise CorruptDataError(f"container: 'method' must be one of {', '.join(map(repr, _METHOD_VALUES))}, "
                               f"got {short(method)}")
    return method


def _channels_frames(shape: list[int], n: int) -> tuple[int, int]:
    """``(channels, frames)`` of the layout "tc" for values of ``shape`` (``n`` of them)."""
    if len(shape) <= 1:
        return 1, n
    channels = math.prod(shape[1:])
    return channels, shape[0]


def _parse_front_v1(front: Any, dtype: np.dtype) -> list[dict]:
    """Version 1's ``front`` map as a chain: ``{}`` -> [], ``{"delta": k}`` -> one delta stage."""
    if not isinstance(front, dict):
        raise CorruptDataError("container: 'front' must be a map")
    if not front:
        return []
    unknown = sorted(short(k) for k in front if k != "delta")
    if unknown:
        raise CorruptDataError(f"container: front-end parameter(s) {unknown[:4]} are not defined in format version 1")
    order = front["delta"]
    if type(order) is not int or not 1 <= order <= MAX_DELTA:
        raise CorruptDataError(
            f"front: 'delta' must be an int in [1, {MAX_DELTA}] (order 0 is the empty map), got {short(order)}"
        )
    if dtype.kind == "b":
        raise CorruptDataError("front: 'delta' is not defined for bool values")
    return [{"stage": "delta", "order": order}]


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


def decompress(data: bytes | bytearray | memoryview, *, tokenizer: Tokenizer | Model | None = None,
               max_output_size: int | None = None, start: int | None = None, stop: int | None = None,
               threads: int | None = None) -> np.ndarray:
    """Values compressed by :func:`compress`, with their dtype (byte order included) and shape.

    Parameters
    ----------
    data : bytes-like
    tokenizer : Tokenizer or Model, optional
        Needed when the container references its model by digest (``compress(...,
        embed=False)``); its digest must match: ``Model.digest`` for version 2, and for version 1
        ``Tokenizer.legacy_digest`` (the SHA-256 of the version 1 model file, so a version 1
        container needs the :class:`Tokenizer`). Ignored when the container embeds its model.
    max_output_size : int, optional
        Largest accepted output, in bytes of the returned array (values x itemsize); ``None``
        means 4 GiB (:data:`DEFAULT_MAX_OUTPUT_SIZE`). A container declaring more is refused
        before anything is allocated. Intermediate arrays are at most about 8 bytes per value.
        With ``start``/``stop``, a blocked container is refused only when the frames asked
        for exceed it (the blocks holding them are decoded a few at a time).
    start, stop : int, optional
        The frames (indices along axis 0, with slice semantics: negative counts from the end,
        out-of-range clips) to return: ``decompress(data, start=a, stop=b)`` equals
        ``decompress(data)[a:b]``. A blocked container decodes only the blocks holding them
        (and checks only their CRCs); a one-stream container is decoded whole, then sliced.
    threads : int, optional
        Threads that decode the blocks of a blocked container (default: every core).

    Raises
    ------
    CorruptDataError
        Malformed, truncated or inconsistent bytes, a CRC mismatch, an output beyond
        ``max_output_size``, a referenced model that is missing or differs, or an output the
        machine cannot allocate (a ``MemoryError`` is reported as this error).
    FormatVersionError
        A container written by a newer format version.
    """
    threads = _threads_argument(threads)
    part = start is not None or stop is not None
    cap = DEFAULT_MAX_OUTPUT_SIZE if max_output_size is None else check_int("max_output_size", max_output_size, 0)
    p = _parse(data, 1 << 256 if part else cap)  # a frame range: the cap applies to what is returned
    if tokenizer is not None and not isinstance(tokenizer, (Tokenizer, Model)):
        raise TypeError(f"tokenizer must be a ubpe.Tokenizer or a ubpe.Model, got {type(tokenizer).__name__}")
    if part and not p.shape:
        raise ValueError("start= and stop= select frames (axis 0); this container holds a 0-d array")
    if part:
        lo, hi = _frame_range(start, stop, p.shape[0])
        size = (hi - lo) * (p.n // max(p.shape[0], 1)) if p.blocks is not None else p.n
        if size * p.dtype.itemsize > cap:
            raise CorruptDataError(
                f"frames {lo} to {hi} {'are' if p.blocks is not None else 'need the whole container, '} "
                f"{size * p.dtype.itemsize} bytes, more than max_output_size={cap} bytes: pass a larger "
                "max_output_size if you trust it")
    try:
        if p.blocks is not None:
            lo, hi = _frame_range(start, stop, p.shape[0])
            return _decode_blocks(p, tokenizer, lo, hi, threads)
        out = _decode(p, tokenizer)
        if part:
            lo, hi = _frame_range(start, stop, p.shape[0])
            out = out[lo:hi]
        return out
    except MemoryError:
        raise CorruptDataError(
            f"the container declares {p.n} values ({p.n * p.dtype.itemsize} bytes) and this machine "
            "could not allocate them: pass a smaller max_output_size to refuse such containers early"
        ) from None


def _referenced_model(p: _Parsed, tokenizer: Tokenizer | Model | None) -> Model:
    """The model a referenced container names, from ``tokenizer``, its digest checked."""
    if tokenizer is None:
        raise CorruptDataError(
            f"this container references its model by digest {p.digest[:16]}...: pass the "
            "saved model with decompress(data, tokenizer=ubpe.Tokenizer.load(path))"
        )
    if p.version == 1:
        if not isinstance(tokenizer, Tokenizer):
            raise ValueError(
                "a version 1 container references its model by the SHA-256 of the model file, which "
                "a bare Model does not have: pass the Tokenizer (ubpe.Tokenizer.load(path))"
            )
        given = tokenizer.legacy_digest
    else:
        given = _model_argument(tokenizer).digest
    if given != p.digest:
        raise CorruptDataError(
            f"the container was compressed with model {p.digest[:16]}..., but the model given is "
            f"{given[:16]}...: pass the model it was compressed with"
        )
    return _model_argument(tokenizer)


def _shared_value_table(model: Model, values: _Values, dtype: np.dtype) -> np.ndarray:
    """The model's cached value table in ``dtype``; a model whose values ``dtype`` cannot hold
    maps them modulo 2**bits (as every container does), and the CRC decides."""
    try:
        return model.value_table(dtype)
    except (TypeError, ValueError):
        symbols = values.to_values(np.arange(model.alphabet_size, dtype=np.int32), dtype)
        return encoder.value_table(model.expansion(), symbols)


@dataclass
class _Shared:
    """What every stream of a container decodes with: the id -> value map and the model."""

    values: _Values
    a: int
    vocab: int  #: alphabet + merges
    expansion: encoder.Expansion | None  #: None without merges
    model: Model | None  #: a referenced model (its value tables are cached on it)
    n: int  #: values of the whole container
    tables: dict = field(default_factory=dict)  #: embedded models' value tables by dtype
    lock: threading.Lock = field(default_factory=threading.Lock)
    classes: list = field(default_factory=list)  #: [text_classes()] once computed

    def text_classes(self) -> np.ndarray | None:
        """The text coders' ("cmt", "cmt2") class of every symbol (None when the symbols are not bytes), once
        per container: every block of a blocked one shares it."""
        with self.lock:
            if not self.classes:
                byte_sized = self.vocab == self.a and 1 <= self.a <= 256
                ids = np.arange(self.a, dtype=np.int32)
                self.classes.append(entropy.text_classes(self.values.to_values(ids, np.dtype(np.int64)))
                                    if byte_sized else None)
            return self.classes[0]

    def value_table(self, coded: np.dtype) -> np.ndarray | None:
        """The value of every token in ``coded`` (None when mapping ids after expanding is cheaper)."""
        if self.model is not None:  # a shared model: its value table is cached across windows
            return _shared_value_table(self.model, self.values, coded)
        if self.expansion.values.shape[0] > self.n:  # the table would cost more than the output
            return None
        with self.lock:
            table = self.tables.get(coded.str)
            if table is None:
                symbols = self.values.to_values(np.arange(self.a, dtype=np.int32), coded)
                table = self.tables[coded.str] = encoder.value_table(self.expansion, symbols)
        return table


_NO_MERGES = np.zeros((0, 2), np.int32)  # (only its length is read)
_NO_MERGES.flags.writeable = False


def _shared(p: _Parsed, tokenizer: Tokenizer | Model | None) -> _Shared:
    """The alphabet and model of a parsed container (a referenced one from ``tokenizer``)."""
    model = None
    if p.digest is not None:
        model = _referenced_model(p, tokenizer)
        values = _alphabet_values(model.alphabet)
        a = model.alphabet_size
        merges = model.merges
        if a + len(merges) > MAX_VOCAB:
            raise CorruptDataError("the referenced model has more tokens than a container allows")
        expansion = model.expansion() if len(merges) else None
    else:
        values, a = p.values, p.a
        merges = entropy.unpack_merges(p.merges_raw, p.m, max(a, 1)) if p.m else _NO_MERGES
        expansion = None
        if p.m:
            try:
                expansion = encoder.build_expansion(
                    merges, a, max_table_values=min(encoder.DEFAULT_MAX_TABLE_VALUES, max(4 * p.n, 1 << 16))
                )
            except ValueError as e:
                raise CorruptDataError(f"model: {e}") from None
    return _Shared(values, a, a + len(merges), expansion, model, p.n)


def _stream_values(s: _Shared, stream: Any, esc: Any, chain: list[dict], n: int, channels: int,
                   native: np.dtype) -> np.ndarray | None:
    """The ``(channels, n // channels)`` values (``native``, the chain inverted) of one checked
    stream, its tokens expanding to exactly ``n`` values; None for ``n = 0`` (once checked)."""
    fused = _mag_lpc_values(s, stream, esc, chain, n, channels, native)
    if fused is not None:
        return fused.reshape(channels, -1)
    classes = (s.text_classes() if isinstance(stream, dict) and stream.get("coder") in entropy.TEXT_CODERS
               else None)
    tokens = entropy.decode_stream(stream, max(s.vocab, 1), max_count=n, classes=classes)
    if tokens.shape[0] and s.a == 0:
        raise CorruptDataError("stream: tokens over an empty alphabet")
    coded = frontend.chain_dtypes(chain, native)[-1]  # the dtype the tokens decode to
    if s.expansion is None:
        total = tokens.shape[0]
    else:
        try:
            total = encoder.expanded_length(tokens, s.expansion)
        except ValueError as e:
            raise CorruptDataError(f"stream: {e}") from None  # 2**61 values or more
    if total != n:
        raise CorruptDataError(f"stream: the tokens expand to {total} values, the shape declares {n}")
    if n == 0:
        return None
    if s.expansion is None:
        out = s.values.to_values(tokens, coded)
    else:
        table = s.value_table(coded)
        if table is not None:
            out = encoder.decode(tokens, s.expansion, values=table)
        else:
            out = s.values.to_values(encoder.decode(tokens, s.expansion), coded)
    if esc is not None:
        positions, escaped = _parse_escapes(esc, n, coded)
        if not out.flags.writeable:
            out = out.copy()
        out[positions] = escaped
    out = out.reshape(channels, -1)
    if chain:
        with np.errstate(over="ignore", invalid="ignore"):  # a corrupt quantizer: the CRC decides
            out = frontend.inverse(out, chain, native)
    return out


_SIGNED = {w: np.dtype(f"i{w}") for w in (1, 2, 4, 8)}


#: Float stages whose inverse reads only the values of its integers (any integer dtype holding
#: them gives the same floats): behind one, the fused path's int64 output goes to it directly.
_FUSED_FLOAT_STAGES = frozenset(("quantize", "floatgrid"))
#: Delta orders as the LPC the fused kernel runs (shift 0; coefficients of lags 1, 2, ...):
#: order 1 predicts x[i-1], order 2 2 x[i-1] - x[i-2], and the kernel's first samples (0 as
#: is, 1 predicted by sample 0) are those of the running sums. (Order 3 differs at sample 2.)
_DELTA_AS_LPC = {1: np.array([1], np.int64), 2: np.array([2, -1], np.int64)}
_ZERO_SHIFT = np.zeros(1, np.int64)


def _mag_lpc_values(s: _Shared, stream: Any, esc: Any, chain: list[dict], n: int, channels: int,
                    native: np.dtype) -> np.ndarray | None:
    """Level 1's usual signal stream, a "mag" stream of bare alphabet ids behind one LPC stage
    (alone, or after one float stage, "quantize" or "floatgrid") or one delta stage of order 1
    or 2, decoded and reconstructed in one pass (:func:`ubpe.entropy.decode_mag_lpc`): the
    ``n`` values (``channels`` rows of ``n // channels`` frames, flattened) in ``native``
    (after the float stage's inverse, when there is one); None for any other stream (then
    decoded stage by stage, as the same values)."""
    if (esc is not None or s.expansion is not None or s.a == 0 or not chain
            or not isinstance(stream, dict) or stream.get("coder") != "mag" or stream.get("n") != n or n == 0):
        return None
    lpc = chain[-1]
    if lpc["stage"] == "delta" and len(chain) == 1 and lpc["order"] in _DELTA_AS_LPC:
        # delta order 1 or 2 is an LPC of fixed coefficients, one block per channel: sample 0
        # as is, sample 1 + the one before (both orders), then the running sums' recurrence
        frames = n // channels
        coefs = _DELTA_AS_LPC[lpc["order"]]
        parsed = [(max(frames, 1), np.full(1, coefs.shape[0], np.int64), _ZERO_SHIFT, coefs)] * channels
        coded = _SIGNED[native.itemsize]
        values = entropy.decode_mag_lpc(stream, s.a, s.values.table, s.values.lo, 8 * coded.itemsize, parsed)
        out = values.astype(coded)
        return out if out.dtype == native else out.view(native)
    if lpc["stage"] != "lpc":
        return None
    parsed = getattr(lpc["channels"], "parsed", None)  # checked by parse_chain
    if parsed is None:
        return None
    modes = {p["unsigned"] for p in lpc["channels"]}
    if len(modes) > 1:  # channels carried differently (never written): stage by stage
        return None
    if len(chain) == 1:
        coded = _SIGNED[native.itemsize]  # the lpc stage's output: the signed dtype of the width
        values = entropy.decode_mag_lpc(stream, s.a, s.values.table, s.values.lo, 8 * coded.itemsize, parsed)
        out = values.astype(coded)  # exact: every sample is wrapped to the width already
        if modes == {predict.UNSIGNED_OFFSET}:
            out = predict._signed_bits(out, predict.UNSIGNED_OFFSET)  # undo the offset of unsigned input
        return out if out.dtype == native else out.view(native)
    if len(chain) != 2 or chain[0]["stage"] not in _FUSED_FLOAT_STAGES or modes != {predict.SIGNED}:
        return None
    # the float stage's output (the lpc stage's input) is the signed integer of its checked
    # "width": the int64 reconstruction holds exactly those values
    values = entropy.decode_mag_lpc(stream, s.a, s.values.table, s.values.lo, chain[0]["width"], parsed)
    with np.errstate(over="ignore", invalid="ignore"):  # a corrupt quantizer: the CRC decides
        return frontend.inverse(values, chain[:1], native)


def _decode(p: _Parsed, tokenizer: Tokenizer | Model | None) -> np.ndarray:
    s = _shared(p, tokenizer)
    native = p.dtype.newbyteorder("=") if p.dtype.byteorder == ">" else p.dtype
    channels = 1 if p.layout == "flat" else _channels_frames(list(p.shape), p.n)[0]
    out = _stream_values(s, p.stream, p.fields.get("esc"), p.chain, p.n, channels, native)
    if out is None:
        out = np.zeros(0, dtype=native)
    else:
        if p.layout != "flat":
            out = frontend.from_channels(out, p.shape)
        out = np.ascontiguousarray(out).reshape(-1)
    if out.dtype != native:
        out = out.view(native)
    if _crc(p.dtype, p.shape, out) != p.crc:
        raise CorruptDataError("checksum mismatch: the container is corrupt")
    out = out.reshape(p.shape)
    return out.astype(p.dtype) if native != p.dtype else out


# ============================================================================ blocks


def _block_crc(dtype: np.dtype, shape: list[int] | tuple[int, ...], first: int, rows: np.ndarray) -> int:
    """CRC-32 of a block: the description line, the block's first frame as 8 bytes little-endian,
    then its values (``rows``: its frames, native little-endian, C order)."""
    line = " ".join([dtype.str, *map(str, shape)]) + "\n"
    crc = zlib.crc32(first.to_bytes(8, "little"), zlib.crc32(line.encode("ascii")))
    return zlib.crc32(memoryview(np.ascontiguousarray(rows).reshape(-1).view(np.uint8)), crc) & 0xFFFFFFFF


def _threads_argument(threads: Any) -> int:
    """``threads``: None (every core) or an int >= 1."""
    if threads is None:
        return _cores()
    return check_int("threads", threads, 1)


@functools.lru_cache(maxsize=1)
def _cores() -> int:
    """The machine's cores, asked once (``os.cpu_count()`` took ~10 us, a tenth of decoding a
    short level-1 container)."""
    return max(os.cpu_count() or 1, 1)


def _block_frames(block_size: Any, channels: int, frames: int) -> int:
    """Frames per block for ``compress(block_size=)`` (0: one stream, no blocks)."""
    size = DEFAULT_BLOCK_SIZE if block_size is None else check_int("block_size", block_size, 0)
    if size == 0 or channels * frames <= size:
        return 0
    block = max(size // channels, 1)
    return block if frames > block else 0


def _run(fn: Any, items: list, threads: int) -> list:
    """``[fn(i) for i in items]``, on ``threads`` threads (in order; the first error raised)."""
    if threads <= 1 or len(items) <= 1:
        return [fn(i) for i in items]
    with ThreadPoolExecutor(max_workers=min(threads, len(items))) as pool:
        return list(pool.map(fn, items))


def _sample_frames(get: Callable[[int, int], np.ndarray], channels: int, frames: int, total: int,
                   windows: int) -> np.ndarray:
    """The ``(C, F)`` values ``get(0, frames)`` or, when more than ``total``, ``windows`` evenly
    spaced windows of their frames joined in time (``get(f0, f1)``: frames ``[f0, f1)``)."""
    length = max(total // (windows * channels), 1)
    if frames <= windows * length:
        return np.ascontiguousarray(get(0, frames))
    starts = (np.arange(windows, dtype=np.int64) * (frames - length)) // (windows - 1)
    return np.ascontiguousarray(np.concatenate([get(s, s + length) for s in starts.tolist()], axis=1))


def _stages_of(record: list[dict]) -> list[frontend.Stage]:
    """The stages (default options, as the planner builds them) that wrote ``record``."""
    return planner.build_chain(tuple((e["stage"], {"order": e["order"]} if e["stage"] == "delta" else {})
                                     for e in record))


@dataclass(frozen=True)
class _Frames:
    """Where a blocked writer reads its values: ``get(f0, f1)`` the frames ``[f0, f1)`` as
    ``(C, f1 - f0)`` integers (after the float stage recorded in ``prefix``), ``rows(f0, f1)``
    the same frames as the CRC covers them (``(f1 - f0, C)``, native little-endian)."""

    channels: int
    frames: int
    get: Callable[[int, int], np.ndarray]
    rows: Callable[[int, int], np.ndarray]
    prefix: list[dict]


@dataclass(frozen=True)
class _Given:
    """A blocked writer's given model: embedded or referenced by digest, values outside its
    alphabet escaped (or refused), its merges used or left unused (``bare``)."""

    model: Model
    embed: bool
    escape: bool
    bare: bool


def _blocked_parts(base: dict, src: _Frames, block: int, chains: list[list[frontend.Stage]] | None,
                   level: int, n_tokens: int | None, fit_options: dict, threads: int,
                   keep: bool = True, given: _Given | None = None) -> Iterator[bytes]:
    """The blocked container (format version 3, or 4 when its blocks may be coded by "cmt2") as
    consecutive byte strings: the head, then each block (their concatenation is the container).

    One model is planned on a sample of :data:`BLOCK_SAMPLE` values; every block (``block``
    frames) goes through the chosen chain on its own; the alphabet is extended to every
    block's values (a first pass over the blocks); then the blocks are encoded and coded,
    ``threads`` at a time. ``keep`` holds the first pass's front-end outputs for the second
    (about one byte of memory per input byte); without it each block is read and put through
    the chain again, and memory is bounded by a few blocks per thread. With a ``given`` model
    (and its one chain), nothing is planned and its alphabet is kept (values outside it escaped,
    or refused without ``given.escape``)."""
    frames = src.frames
    if given is None:
        sample = _sample_frames(src.get, src.channels, frames, BLOCK_SAMPLE, BLOCK_SAMPLE_WINDOWS)
        if chains is None:
            chains = [planner.build_chain(spec) for spec in planner.auto_chains(sample, level)]
        # the plan is made once for all the blocks: the exhaustive search, whose cost is a small
        # share of coding them (the lean search's 2**13-value context-mixing samples ranked
        # "rank+delta1" above no front end on the 120 neural recordings: 1.8 % larger)
        best = planner.plan(sample, chains, level, lambda c: _cost(base, c),
                            planner.ReplayEncoder(n_tokens, fit_options), threads=threads, lean=False)
        stages = _stages_of(best.chain)
        alphabet, merges, coders = best.alphabet, best.merges, best.coders
    else:
        stages = chains[0]
        alphabet, merges, coders = given.model.alphabet, given.model.merges, planner.LEVEL_CODERS[level]
    dtype, shape = np.dtype(base["dtype"]), base["shape"]
    count = -(-frames // block)
    step = count if keep else 2 * max(threads, 1)  # blocks in flight

    def front(b: int) -> tuple[np.ndarray, list[dict], np.ndarray]:
        y, record = frontend.forward(np.ascontiguousarray(src.get(b * block, min((b + 1) * block, frames))), stages)
        flat = np.ascontiguousarray(y).reshape(-1)
        return flat, record, np.unique(flat) if extend else None

    # a vocabulary of n_tokens stays that size, a given model as it is: other values escape
    extend = given is None and n_tokens is None
    kept: list[Any] = []
    distinct = []
    if extend or keep:
        for first in range(0, count, step):
            done = _run(front, list(range(first, min(first + step, count))), threads)
            if extend:
                distinct += [u for _, _, u in done]
            if keep:
                kept = done
    if extend:
        alphabet, merges = _covering(alphabet, merges, distinct)
    del distinct
    a, m = len(alphabet), len(merges)
    model = Model(alphabet, merges) if given is None else given.model
    use_merges = m > 0 and (given is None or not given.bare)
    if use_merges and given is None:
        model.encoder_tables()  # built once, before the threads share the model
    vocab = max(a + m, 1)
    # the text coder needs each symbol's class, from the alphabet's byte values
    text = set(entropy.TEXT_CODERS) & set(coders)
    classes = entropy.text_classes(alphabet.values) if text and not use_merges else None

    def encode(b: int) -> bytes:
        if keep:
            flat, record, _ = kept[b]
            kept[b] = None  # the block's values are no longer needed once coded
        else:
            flat, record, _ = front(b)
        f0, f1 = b * block, min((b + 1) * block, frames)
        if given is not None and not given.escape:
            ids, positions = alphabet.to_ids(flat), np.zeros(0, np.int64)  # ValueError names a value outside
        else:
            ids, positions = _escaped_ids(alphabet, flat)
        fields: dict[str, Any] = {"front": src.prefix + record}
        if frontend.chain_version(fields["front"]) > version:  # pragma: no cover - a writer bug
            raise AssertionError("a block's front end needs a later format version than its head")
        if positions.size:
            fields["esc"] = _escape_field(flat, positions)
        tokens = model.encode(ids) if use_merges else ids  # by the model's method
        fields["stream"] = entropy.encode_stream(tokens, vocab, coders=coders, classes=classes)
        fields["crc"] = _block_crc(dtype, shape, f0, src.rows(f0, f1))
        return _pack_block(fields, version, (f1 - f0) * src.channels)

    # the head is written before any block is coded: the version of every coder a block may use
    version = max([BLOCKED_VERSION] + [_CODER_VERSION.get(k, 0) for k in coders if classes is not None or
                                       k not in entropy.TEXT_CODERS])
    # and of the front end's params: which depend on the stages and the dtypes entering them
    # only (an unsigned input to a predictor: version 6), the same in every block, so the chain
    # on the first frame tells (each block is checked against it when written)
    version = max(version, frontend.chain_version(
        src.prefix + frontend.forward(np.ascontiguousarray(src.get(0, min(1, frames))), stages)[1]))
    version = _written_version(version)
    head: dict[str, Any] = {"magic": MAGIC, "v": version}
    head.update((k, base[k]) for k in ("dtype", "shape", "layout", "source") if k in base)
    if given is None or given.embed:
        head["alphabet"] = _alphabet_field(alphabet)
        head["model"] = _model_field(merges, a)
    else:
        head["digest"] = bytes.fromhex(given.model.digest)
    if use_merges and model.method != "replay":
        head["method"] = model.method
    head["block"] = block
    packer = msgpack.Packer(use_bin_type=True)
    blocks_key: Any = "blocks"
    prefix = b""
    if version >= COMPACT_VERSION:  # "magic", "v" in the prefix, the keys by their index
        prefix, head = _v7_prefix(version), _v7_fields(head, None)
        blocks_key = _KEY_IDS_V7["blocks"]
    yield (prefix + packer.pack_map_header(len(head) + 1)
           + b"".join(packer.pack(k) + packer.pack(v) for k, v in head.items())
           + packer.pack(blocks_key) + packer.pack_array_header(count))
    for first in range(0, count, step):
        for raw in _run(encode, list(range(first, min(first + step, count))), threads):
            yield packer.pack(raw)


def _covering(alphabet: Alphabet, merges: np.ndarray, distinct: list[np.ndarray]) -> tuple[Alphabet, np.ndarray]:
    """The alphabet extended with every value of ``distinct`` (the blocks' values after the
    front end) and the same merges over it (children renumbered: an alphabet id to its value's
    new id, merged tokens shifted by the ids added), so that no value needs an escape; the
    model unchanged when the extended vocabulary would exceed MAX_VOCAB (values then escape)."""
    wide = Alphabet.from_data(np.asarray(alphabet.values), *distinct)
    a, added = len(alphabet), len(wide) - len(alphabet)
    if added == 0 or len(wide) + len(merges) > MAX_VOCAB:
        return alphabet, merges
    new_ids = wide.to_ids(np.asarray(alphabet.values)).astype(np.int32)
    renumbered = np.where(merges < a, new_ids[np.minimum(merges, max(a - 1, 0))], merges + added)
    return wide, np.ascontiguousarray(renumbered, dtype=np.int32)


def _parse_index(d: dict, shape: list[int], n: int) -> tuple[int, list[bytes]]:
    """The checked block index of a blocked container: frames per block, and each block's bytes."""
    if n == 0 or not shape:
        raise CorruptDataError("container: a blocked container holds at least one frame (and is not 0-d)")
    frames = _channels_frames(shape, n)[1]
    block = field_int(d, "block", 1, frames, where="container")
    blocks = d["blocks"]
    count = -(-frames // block)
    if not isinstance(blocks, list) or len(blocks) != count:
        got = len(blocks) if isinstance(blocks, list) else type(blocks).__name__
        raise CorruptDataError(f"container: 'blocks' must be a list of {count} blocks of {block} frames "
                               f"({frames} frames), got {got}")
    for b, raw in enumerate(blocks):
        if not isinstance(raw, bytes):
            raise CorruptDataError(f"block {b}: expected bytes, got {type(raw).__name__}")
    return block, blocks


@dataclass
class _Block:
    """One checked block: its number, frames ``[f0, f1)``, chain, stream, escapes and CRC."""

    number: int
    f0: int
    f1: int
    chain: list[dict]
    stream: dict
    esc: Any
    crc: int


def _parse_block(p: _Parsed, b: int, native: np.dtype, channels: int) -> _Block:
    """Block ``b``'s fields, every one checked (CorruptDataError naming the block)."""
    frames = _channels_frames(list(p.shape), p.n)[1]
    f0, f1 = b * p.block, min((b + 1) * p.block, frames)
    where = f"block {b} (frames {f0} to {f1})"
    raw = p.blocks[b]
    try:
        if p.version >= COMPACT_VERSION:
            d = _named_block(_unpack_compact(raw), (f1 - f0) * channels)
        else:
            d = msgpack.unpackb(raw, raw=False, strict_map_key=True, use_list=True)
    except CorruptDataError as e:
        raise CorruptDataError(f"{where}: {e}") from None
    except Exception as e:  # msgpack raises several unrelated exception types
        raise CorruptDataError(f"{where}: damaged: its bytes do not parse ({type(e).__name__})") from None
    try:
        expect_map(d, "block", _BLOCK_KEYS, _BLOCK_OPTIONAL_KEYS)
        chain = frontend.parse_chain(d["front"], native, (channels, f1 - f0))
        _check_chain_version(chain, p.version)
        crc = d["crc"]
        if type(crc) is not int or not 0 <= crc <= 0xFFFFFFFF:
            raise CorruptDataError("block: 'crc' must be an int in [0, 2**32)")
        if not isinstance(d["stream"], dict):
            raise CorruptDataError("block: 'stream' must be a map")
        coder = d["stream"].get("coder")
        if isinstance(coder, str) and _CODER_VERSION.get(coder, 0) > p.version:
            raise CorruptDataError(f"stream: coder {coder!r} is not defined in format version {p.version}")
    except CorruptDataError as e:
        raise CorruptDataError(f"{where}: {e}") from None
    return _Block(b, f0, f1, chain, d["stream"], d.get("esc"), crc)


def _frame_range(start: Any, stop: Any, frames: int) -> tuple[int, int]:
    """``decompress``'s ``start``, ``stop`` as a frame range, with slice semantics."""
    for name, v in (("start", start), ("stop", stop)):
        if v is not None:
            check_int(name, v, -(1 << 63), 1 << 63)
    lo, hi, _ = slice(start, stop).indices(frames)
    return lo, max(hi, lo)


def _decode_blocks(p: _Parsed, tokenizer: Tokenizer | Model | None, start: int, stop: int,
                   threads: int) -> np.ndarray:
    """Frames ``[start, stop)`` of a blocked container, decoding only the blocks they touch."""
    native = p.dtype.newbyteorder("=") if p.dtype.byteorder == ">" else p.dtype
    channels, frames = _channels_frames(list(p.shape), p.n)
    first, last = start // p.block, -(-stop // p.block)
    blocks = [_parse_block(p, b, native, channels) for b in range(first, last)]
    s = _shared(p, tokenizer)
    out = np.empty((stop - start, channels), dtype=native)

    def decode(blk: _Block) -> None:
        rows = _decode_block(p, s, blk, native, channels)
        lo, hi = max(blk.f0, start), min(blk.f1, stop)
        out[lo - start:hi - start] = rows[lo - blk.f0:hi - blk.f0]

    _run(decode, blocks, threads)
    out = out.reshape((stop - start,) + tuple(p.shape[1:]))
    return out.astype(p.dtype) if native != p.dtype else out


def _decode_block(p: _Parsed, s: _Shared, blk: _Block, native: np.dtype, channels: int) -> np.ndarray:
    """A checked block's frames, ``(F_b, C)`` in ``native``, its CRC verified."""
    try:
        y = _stream_values(s, blk.stream, blk.esc, blk.chain, (blk.f1 - blk.f0) * channels, channels, native)
        rows = y.T if y.dtype == native else y.T.view(native)
        if _block_crc(p.dtype, p.shape, blk.f0, rows) != blk.crc:
            raise CorruptDataError("checksum mismatch")
    except CorruptDataError as e:
        raise CorruptDataError(f"block {blk.number} (frames {blk.f0} to {blk.f1}): {e}") from None
    return rows


def decompress_to(out: BinaryIO, src: BinaryIO, *, tokenizer: Tokenizer | Model | None = None,
                  max_output_size: int | None = None, threads: int | None = None,
                  header: Callable[[np.dtype, tuple[int, ...], dict | None], bytes] | None = None
                  ) -> tuple[np.dtype, tuple[int, ...]]:
    """Write the values of the container in the binary file ``src`` to ``out``: ``header(dtype,
    shape, source)`` when given (e.g. an .npy header; it may raise to stop before anything is
    written), then the values' bytes in C order and the container's dtype; return ``(dtype,
    shape)``.

    A blocked container whose ``blocks`` come last (as :func:`compress` writes them) is read and
    decoded block by block, ``threads`` blocks at a time: memory stays within a few blocks per
    thread, however large the container and its values. Other containers are read whole and
    decoded with :func:`decompress`. Errors as :func:`decompress`; a block found corrupt after
    others were written leaves ``out`` with those blocks' bytes (write to a temporary file).
    """
    threads = _threads_argument(threads)
    start = src.tell()
    prefix = src.read(len(_HEAD_V7) + 1)
    compact = _is_compact(prefix) and len(prefix) == len(_HEAD_V7) + 1
    if not compact:
        src.seek(start)
    unpacker = msgpack.Unpacker(src, raw=False, strict_map_key=not compact, use_list=True,
                                max_buffer_size=1 << 30, object_pairs_hook=_v7_map if compact else None)
    head: dict[str, Any] = {}
    count = None
    try:
        entries = unpacker.read_map_header()
        for i in range(entries):
            key = unpacker.unpack()
            if compact:  # keys by number (anything else: decompress says why)
                if type(key) is not int or not 0 <= key < len(KEYS_V7):
                    break
                key = KEYS_V7[key]
            if key == "blocks" and i == entries - 1:
                count = unpacker.read_array_header()
                break
            if not isinstance(key, str) or key in head:
                break
            head[key] = unpacker.unpack()
        if compact and count is not None:
            if not COMPACT_VERSION <= prefix[-1] <= FORMAT_VERSION:
                raise CorruptDataError("version")  # decompress says which
            head = _named_head(head, prefix[-1])  # the fields of version 6 (as decompress reads them)
    except Exception:  # not a map, or damaged: decompress says why
        count = None
    if count is None or head.get("magic") != MAGIC:
        src.seek(start)
        data = src.read()
        values = decompress(data, tokenizer=tokenizer, max_output_size=max_output_size, threads=threads)
        if header is not None:
            out.write(header(values.dtype, values.shape, describe(data).source))
        out.write(memoryview(np.ascontiguousarray(values).reshape(-1).view(np.uint8)))
        return values.dtype, values.shape
    if count > (1 << 32):
        raise CorruptDataError(f"container: 'blocks' declares {count} blocks")
    p = _parse(_pack({**head, "blocks": [b""] * count}), max_output_size)  # every field but the blocks checked
    if tokenizer is not None and not isinstance(tokenizer, (Tokenizer, Model)):
        raise TypeError(f"tokenizer must be a ubpe.Tokenizer or a ubpe.Model, got {type(tokenizer).__name__}")
    native = p.dtype.newbyteorder("=") if p.dtype.byteorder == ">" else p.dtype
    channels = _channels_frames(list(p.shape), p.n)[0]
    s = _shared(p, tokenizer)
    if header is not None:
        out.write(header(p.dtype, p.shape, p.source))
    step = 2 * threads

    def decode(b: int) -> np.ndarray:
        rows = _decode_block(p, s, _parse_block(p, b, native, channels), native, channels)
        p.blocks[b] = None
        return rows.astype(p.dtype) if native != p.dtype else np.ascontiguousarray(rows)

    for first in range(0, count, step):
        batch = list(range(first, min(first + step, count)))
        for b in batch:
            try:
                raw = unpacker.unpack()
            except Exception:
                raise CorruptDataError(f"block {b}: truncated or damaged: the container ends before it") from None
            if not isinstance(raw, bytes):
                raise CorruptDataError(f"block {b}: expected bytes, got {type(raw).__name__}")
            p.blocks[b] = raw
        for rows in _run(decode, batch, threads):
            out.write(memoryview(rows.reshape(-1).view(np.uint8)))
    try:
        unpacker.unpack()
    except msgpack.OutOfData:
        return p.dtype, p.shape
    raise CorruptDataError("other data after the container's blocks (two files joined, or a damaged file)")


# ============================================================================ describe


@dataclass(frozen=True)
class ContainerInfo:
    """What :func:`describe` reports. Sizes are in bytes; ``header + model + freq + payload == size``."""

    version: int
    dtype: str
    shape: tuple[int, ...]
    n_values: int
    original_size: int  #: bytes of the values (n_values x itemsize)
    size: int  #: bytes of the container
    header: int  #: everything but the three parts below (magic, dtype, shape, front, crc, ...)
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
    delta: int = 0  #: order of the front end when it is one delta stage, else 0 (compatibility)
    front: tuple[dict[str, Any], ...] = ()  #: the front-end chain, stages in the order applied
    layout: str = LAYOUT  #: LAYOUT, or "flat" for version 1 (one channel, C order)
    channels: int = 1  #: channels the front end ran on
    source: dict[str, Any] | None = None  #: the source metadata given to compress
    #: whether decompress returns approximations (the chain starts with "quantize"): floats
    #: within the quantizer's bound of the values given to compress, not those values
    lossy: bool = False
    #: the lossy chain's ``Quantizer.to_dict()`` (step, offset, dtype), else None
    quantizer: dict[str, Any] | None = None
    #: values outside a shared model's alphabet, stored beside the stream (``compress(escape=)``)
    escapes: int = 0
    #: bytes of the escaped values and their positions (part of ``header``)
    escape_bytes: int = 0
    #: how the writer encoded the tokens: "replay" (also for no merges), "optimal" or "bits"
    #: (the informational ``method`` field; decoding does not depend on it)
    method: str = "replay"
    #: streams: 1, or the blocks of a blocked container (format version 3)
    blocks: int = 1
    #: frames per block of a blocked container (the last may hold fewer), else 0
    block_frames: int = 0
    #: each stream's coder, in block order (``coder`` is the most frequent of them); for a
    #: blocked container ``front`` is block 0's chain (every block has its own parameters)
    coders: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def describe(data: bytes | bytearray | memoryview) -> ContainerInfo:
    """Describe a container without decoding it: sizes of its parts, ratio, front end, source.

    The fields are validated as by :func:`decompress` (except the model's merge table, the
    token stream and the checksum, which only decoding checks); malformed input raises
    ``CorruptDataError``. No output-size cap applies.
    """
    p = _parse(data, 1 << 256)
    d = p.fields
    native = p.dtype.newbyteorder("=") if p.dtype.byteorder == ">" else p.dtype
    channels = 1 if p.layout == "flat" else _channels_frames(list(p.shape), p.n)[0]

    compact = p.version >= COMPACT_VERSION

    def entry(mapping: dict, key: str) -> int:
        """Bytes of the field ``key`` of ``mapping`` as written (key and value; 0 when absent or
        left out): the one-entry map's size less its one-byte header."""
        if key not in mapping:
            return 0
        one = {key: mapping[key]}
        return len(msgpack.packb(_v7_fields(one, None) if compact else one, use_bin_type=True)) - 1

    if p.blocks is None:
        streams = [(p.stream, p.fields, p.chain, p.n)]
    else:
        blocks = [_parse_block(p, b, native, channels) for b in range(len(p.blocks))]
        streams = [(blk.stream, {} if blk.esc is None else {"esc": blk.esc}, blk.chain,
                    (blk.f1 - blk.f0) * channels) for blk in blocks]
    coders: list[str] = []
    n_tokens = freq = payload = escapes = escape_bytes = 0
    for b, (s, fields, chain, n) in enumerate(streams):
        coder = s.get("coder")
        if not isinstance(coder, str) or coder not in entropy.CODERS or type(s.get("n")) is not int:
            raise CorruptDataError(f"{'' if p.blocks is None else f'block {b}: '}stream: invalid 'coder' or 'n'")
        coders.append(coder)
        n_tokens += s["n"]
        freq += entry(s, "freq") + entry(s, "table")  # "mag" keeps its tables in "table"
        payload += entry(s, "payload") + entry(s, "raw")  # and its raw low bits in "raw"
        if "esc" in fields:
            positions, _ = _parse_escapes(fields["esc"], n, frontend.chain_dtypes(chain, native)[-1])
            escapes += int(positions.shape[0])
            escape_bytes += entry(fields, "esc")
    coder = max(coders, key=coders.count)  # the most blocks' (ties: the earliest)
    model = entry(d, "alphabet") + entry(d, "model")
    size = len(data)
    original = p.n * p.dtype.itemsize
    chain = streams[0][2]
    delta = chain[0]["order"] if len(chain) == 1 and chain[0]["stage"] == "delta" else 0
    lossy = bool(chain) and chain[0]["stage"] == "quantize"
    quantizer = None
    if lossy:
        quantizer = _quantize.Quantizer(chain[0]["step"], chain[0]["offset"], p.dtype.str).to_dict()
    return ContainerInfo(
        version=p.version, dtype=p.dtype.str, shape=p.shape, n_values=p.n, original_size=original,
        size=size, header=size - model - freq - payload, model=model, freq=freq, payload=payload,
        ratio=original / size if size else 0.0, embedded=p.digest is None, digest=p.digest,
        alphabet_size=p.a, n_merges=p.m, coder=coder, n_tokens=n_tokens, delta=delta,
        front=tuple(dict(e) for e in chain), layout=p.layout, channels=channels, source=p.source,
        lossy=lossy, quantizer=quantizer, escapes=escapes, escape_bytes=escape_bytes,
        # a model with merges, one token per value and no method recorded: the merges left unused
        method="bare" if p.method == "replay" and (p.m is None or p.m > 0) and n_tokens == p.n and p.n > 0
        else p.method,
        blocks=len(streams), block_frames=p.block, coders=tuple(coders),
    )


#: The former name of :func:`describe`, kept as an alias (``ubpe.inspect`` shadows the standard
#: library's ``inspect`` module in code that does ``from ubpe import *``).
inspect = describe
