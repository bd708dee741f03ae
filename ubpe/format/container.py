"""The container format, version 1: pack named fields into bytes, and parse untrusted bytes back
into a checked record (docs/format.md is the normative specification).

A container is the 4 bytes ``b"ubpe"``, one byte of format version, then one msgpack map. The
writer builds *named* fields (``{"dtype": "<i2", "shape": [...], "front": [...], ...}``); on
the wire every key of :data:`KEYS` is written as its index there (one byte), the values of a
container's ``dtype``, a stream's ``coder`` and a front-end entry's ``stage`` as their index in
:data:`DTYPES`, :data:`CODERS` and :data:`STAGES`, and fields that hold their default are left
out (:func:`compact`; the reader puts them back, and refuses one written at its default, so that
every container has one form). Keys not in the table (a source key of the user's) stay strings.

Two forms: one stream (``front``, ``stream``, ``crc``, optional ``esc``), or blocks (``block``
frames per block and ``blocks``, a list of packed block maps, each with its own ``front``,
``stream``, ``crc`` and ``esc``). :func:`parse` checks every field of the head (types, lengths,
ranges, the merge table's size, the sizes the fields declare against each other and against a
cap) before anything proportional to the output is allocated; :func:`parse_block` checks a
block. :func:`read_blocked_head` reads the head of a blocked container from a file and checks it
with the same code, the blocks left to be read one by one.

Reading never needs the planner or the api: this module imports the front end (each stage
checks its own params) and the coders' names.
"""

from __future__ import annotations

import functools
import math
import sys
import zlib
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import msgpack
import numpy as np

from .. import coders, frontend
from .._validate import expect_map, field_bytes, field_int, short
from ..errors import CorruptDataError, FormatVersionError
from .fields import Values, check_source, data_error, min_merge_bits, parse_alphabet

__all__ = ["MAGIC", "FORMAT_VERSION", "KEYS", "DTYPES", "CODERS", "STAGES", "Parsed", "Block", "pack", "pack_block",
           "blocked_head", "parse", "parse_block", "read_blocked_head", "values_crc", "block_crc", "channels_frames"]

#: The first 4 bytes of every container.
MAGIC = b"ubpe"
#: The format version this ubpe writes, and the newest it reads.
FORMAT_VERSION = 1
#: Every key a container's maps may hold, at its index (the container and its blocks; alphabet,
#: model; streams; front-end entries and stage params; the source metadata ubpe.io writes).
#: Fixed for version 1: a later version may append names, never reorder them.
KEYS = (
    # the container and its blocks
    "dtype", "shape", "front", "stream", "crc", "alphabet", "model", "source", "esc", "method", "digest",
    "block", "blocks",
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
    # appended: the decimal float stage's adjustments ("floatdec")
    "adj", "adjv", "fine",
)
#: The value tables: a container's ``dtype``, a stream's ``coder`` and a front-end entry's ``stage``
#: (each coder's and stage's own ``number``: adding one is its module and its registry entry).
DTYPES = ("|b1", "|i1", "|u1", "<i2", "<i4", "<i8", "<u2", "<u4", "<u8", ">i2", ">i4", ">i8", ">u2", ">u4",
          ">u8", "<f2", "<f4", "<f8", ">f2", ">f4", ">f8")
CODERS = tuple(c.name for c in sorted(coders.REGISTRY, key=lambda c: c.number))
STAGES = tuple(s.name for s in sorted(frontend.STAGES.values(), key=lambda s: s.number))
#: Most dimensions a container's values may have.
MAX_NDIM = 32
#: Values of the optional, informational ``method`` field: how the writer encoded the tokens
#: (absent: by replaying the merges, or no merges). Decoding never reads it.
METHODS = ("optimal", "bits")

_KEY_IDS = {name: i for i, name in enumerate(KEYS)}
_KEY_NAMES = dict(enumerate(KEYS))
_VALUE_IDS = {t: {name: i for i, name in enumerate(t)} for t in (DTYPES, CODERS, STAGES)}
_VALUE_CODERS = coders.VALUE_CODERS
_INT_DTYPES = frozenset(d for d in DTYPES if d[1] in "biu")
_DTYPE_OBJECTS = {s: np.dtype(s) for s in DTYPES}
_U64 = (1 << 64) - 1
_I64_MAX = (1 << 63) - 1
#: The head fields of each form (``esc`` and the model's fields aside).
_STREAM_KEYS = ("dtype", "shape", "front", "stream", "crc")
_STREAM_OPTIONAL = ("source", "esc", "method")
_BLOCKED_KEYS = ("dtype", "shape", "block", "blocks")
_BLOCKED_OPTIONAL = ("source", "method")
_BLOCK_KEYS = ("front", "stream", "crc")
_BLOCK_OPTIONAL = ("esc",)
#: Fields left out when they hold these values: no front end (one-stream form and blocks), and
#: the alphabet's gap width and gaps (a range alphabet).
_DEFAULTS = {"front": []}
_ALPHABET_DEFAULTS = {"w": 0, "gaps": b""}

if sys.byteorder != "little":  # pragma: no cover - every supported platform is little-endian
    raise ImportError("ubpe.format assumes a little-endian machine")
if [c.number for c in coders.REGISTRY if c.number >= len(CODERS) or CODERS[c.number] != c.name]:
    raise ImportError("the coders' numbers must be 0, 1, 2, ... without gaps")  # pragma: no cover
if len(STAGES) != len(frontend.STAGES) or any(STAGES[s.number] != s.name for s in frontend.STAGES.values()):
    raise ImportError("the stages' numbers must be 0, 1, 2, ... without gaps")  # pragma: no cover


# ============================================================================ checksums


def values_crc(dtype: np.dtype, shape: list[int] | tuple[int, ...], flat: np.ndarray) -> int:
    """CRC-32 of the description line ``"<dtype.str> <dim> <dim> ...\\n"`` (ASCII) followed by
    the values' little-endian bytes (``flat`` is native little-endian and contiguous), so that
    the checksum also covers the dtype and the shape."""
    return zlib.crc32(np.ascontiguousarray(flat).reshape(-1), _line_crc(dtype.str, tuple(shape))) & 0xFFFFFFFF


@functools.lru_cache(maxsize=256)
def _line_crc(dtype_str: str, shape: tuple[int, ...]) -> int:
    """CRC-32 of the description line of :func:`values_crc` (decoding many containers of one
    dtype and shape builds and hashes it once)."""
    return zlib.crc32((" ".join([dtype_str, *map(str, shape)]) + "\n").encode("ascii"))


def block_crc(dtype: np.dtype, shape: list[int] | tuple[int, ...], first: int, rows: np.ndarray) -> int:
    """CRC-32 of a block: the description line, the block's first frame as 8 bytes little-endian,
    then its values (``rows``: its frames, native little-endian, C order)."""
    crc = zlib.crc32(first.to_bytes(8, "little"), _line_crc(dtype.str, tuple(shape)))
    return zlib.crc32(memoryview(np.ascontiguousarray(rows).reshape(-1).view(np.uint8)), crc) & 0xFFFFFFFF


def channels_frames(shape: list[int] | tuple[int, ...], n: int) -> tuple[int, int]:
    """``(channels, frames)`` of values of ``shape`` (``n`` of them): axis 0 is time, the other
    axes flattened in C order are channels."""
    if len(shape) <= 1:
        return 1, n
    return math.prod(shape[1:]), shape[0]


# ============================================================================ writing


def pack(fields: dict) -> bytes:
    """The container of the named ``fields`` (one-stream or blocked form) as bytes."""
    return MAGIC + bytes([FORMAT_VERSION]) + msgpack.packb(compact(fields, _count(fields.get("shape"))),
                                                           use_bin_type=True)


def pack_block(fields: dict, count: int) -> bytes:
    """A block's named fields (front, stream, crc, esc) as msgpack (``count``: the block's values)."""
    return msgpack.packb(compact(fields, count), use_bin_type=True)


def blocked_head(head: dict, count: int) -> bytes:
    """The bytes of a blocked container up to its blocks: the prefix, the map of the named
    ``head`` fields and ``blocks``, whose ``count`` packed blocks (``msgpack`` bin values)
    follow; the head's fields before ``blocks``, so that a reader can check them first."""
    packer = msgpack.Packer(use_bin_type=True)
    entries = compact(head, None)
    return (MAGIC + bytes([FORMAT_VERSION]) + packer.pack_map_header(len(entries) + 1)
            + b"".join(packer.pack(k) + packer.pack(v) for k, v in entries.items())
            + packer.pack(_KEY_IDS["blocks"]) + packer.pack_array_header(count))


def compact(fields: dict, count: int | None) -> dict:
    """The wire map of named ``fields`` (a container's or a block's; ``count``: its values, when
    known): keys by number, the tables' values by number, defaults left out."""
    out: dict[Any, Any] = {}
    for k, v in fields.items():
        # (fields as the writer builds them; anything else, a test's edit, is written as it is)
        if k == "dtype":
            v = _VALUE_IDS[DTYPES].get(v, v) if isinstance(v, str) else v
        elif k == "front" and isinstance(v, list):
            v = [_numbered_entry(e) if isinstance(e, dict) and isinstance(e.get("stage"), str) else e for e in v]
        elif k == "alphabet" and isinstance(v, dict):
            v = {a: b for a, b in v.items() if not _is_default(b, _ALPHABET_DEFAULTS.get(a, _NONE))}
        elif k == "model" and isinstance(v, dict) and "a" in v:
            if _is_default(v.get("m"), 0) and _is_default(v.get("merges"), b"") and len(v) == 3:
                continue  # no merges: the map is left out
            v = {a: b for a, b in v.items() if a != "a"}  # "a": the alphabet's "n"
        elif k == "stream" and isinstance(v, dict):
            v = {a: (_VALUE_IDS[CODERS].get(b, b) if a == "coder" and isinstance(b, str) else b)
                 for a, b in v.items() if not (a == "n" and type(b) is int and b == count)}
        if _is_default(v, _DEFAULTS.get(k, _NONE)):
            continue
        out[_KEY_IDS.get(k, k)] = _numbered(v)
    return out


_NONE = object()


def _numbered_entry(entry: dict) -> dict:
    """A front-end entry with its stage, and the coder of a stream in its params (a map with a
    str ``coder``: the "mult" stage's ``low``), by number."""
    out = {}
    for k, v in entry.items():
        if k == "stage":
            v = _VALUE_IDS[STAGES].get(v, v)
        elif isinstance(v, dict) and isinstance(v.get("coder"), str):
            v = {**v, "coder": _VALUE_IDS[CODERS].get(v["coder"], v["coder"])}
        out[k] = v
    return out


def _is_default(value: Any, default: Any) -> bool:
    return default is not _NONE and type(value) is type(default) and value == default


def _numbered(obj: Any) -> Any:
    """``obj`` with every map key of :data:`KEYS` replaced by its index, in maps at any depth."""
    if type(obj) in _LEAVES:  # (the usual values, returned as they are: no isinstance tests)
        return obj
    # (the leaves, most of a record's entries, taken as they are without a call each: a
    # container's compact took 8-30 us, several a compress)
    if isinstance(obj, dict):
        return {_KEY_IDS.get(k, k): v if type(v) in _LEAVES else _numbered(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [v if type(v) in _LEAVES else _numbered(v) for v in obj]
    return obj


#: Types :func:`_numbered` returns as they are: they hold no map (exact types: a subclass takes the
#: tests)
_LEAVES = frozenset((int, bytes, str, float, bool, type(None)))


def _count(shape: Any) -> int | None:
    """The number of values of a (written or not yet checked) shape; None if it is no list of ints."""
    if not isinstance(shape, list):
        return None
    if len(shape) == 1:  # the usual case, without a generator
        return shape[0] if type(shape[0]) is int and shape[0] >= 0 else None
    if not all(type(s) is int and s >= 0 for s in shape):
        return None
    return math.prod(shape)


# ============================================================================ reading: the wire map


def _named_map(pairs: list[tuple[Any, Any]]) -> dict:
    """A wire map with its keys' names: an int key is the index of its name in :data:`KEYS`, a
    str key a name not in it; anything else, or a name twice, is corrupt."""
    try:  # the usual case, every key an int of the table, each once: one comprehension
        d = {_KEY_NAMES[key]: value for key, value in pairs if type(key) is int}
        if len(d) == len(pairs):  # (a key of another type, left out, or a key twice: below)
            return d
    except KeyError:  # an int out of the table: reported below
        pass
    d = {}
    for key, value in pairs:
        if type(key) is int:
            if not 0 <= key < len(KEYS):
                raise CorruptDataError(f"container: unknown key number {short(key)} (version 1 defines 0 to "
                                       f"{len(KEYS) - 1})")
            key = KEYS[key]
        elif type(key) is not str:
            raise CorruptDataError(f"container: a map key must be an int or a str, got {type(key).__name__}")
        elif key in _KEY_IDS:
            raise CorruptDataError(f"container: key {key!r} written by name (it is written as {_KEY_IDS[key]})")
        if key in d:
            raise CorruptDataError(f"container: key {short(key)} appears twice in a map")
        d[key] = value
    return d


def _unpack_map(data: bytes) -> Any:
    """The msgpack value of a wire map (a container's after its prefix, or a block's), keys named,
    nested at most :data:`MAX_NESTING` deep."""
    return _check_nesting(msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True,
                                          object_pairs_hook=_named_map))


#: The deepest nesting of maps and lists a container's (or a block's) map may hold, itself at
#: depth 1 (the writer's deepest is 7: an "adaptive" stage's list of stage lists). Deeper is
#: refused before any field is read, so that nothing walking the fields can exhaust the stack.
MAX_NESTING = 32


def _check_nesting(tree: Any) -> Any:
    """``tree``, after checking (without recursion) that no value lies deeper than MAX_NESTING."""
    level, depth = [tree], 1
    while level:
        if depth > MAX_NESTING:
            raise CorruptDataError(f"container: maps and lists nested more than {MAX_NESTING} deep")
        nested = []
        for v in level:
            if isinstance(v, dict):
                nested += [x for x in v.values() if isinstance(x, (dict, list))]
            elif isinstance(v, list):
                nested += [x for x in v if isinstance(x, (dict, list))]
        level, depth = nested, depth + 1
    return tree


def _named_head(d: Any) -> dict:
    """A container's map (keys named by :func:`_named_map`) as the writer's named fields: the
    values of the tables named, and every field left out at its default put back."""
    if not isinstance(d, dict):
        raise CorruptDataError(f"container: after its prefix, expected a map, got {type(d).__name__}")
    if "blocks" not in d:
        _put_defaults(d, _DEFAULTS, "container")
    if "dtype" in d:
        d["dtype"] = _named_value(d["dtype"], DTYPES, "container: 'dtype'")
    if isinstance(d.get("alphabet"), dict):
        _put_defaults(d["alphabet"], _ALPHABET_DEFAULTS, "alphabet")
        size = d["alphabet"].get("n")
        model = d.get("model")
        if model is None:
            d["model"] = {"a": size, "m": 0, "merges": b""}
        elif isinstance(model, dict):
            if "a" in model:
                raise CorruptDataError("model: 'a' is not written: it is the alphabet's 'n'")
            if model.get("m") == 0 and model.get("merges") == b"" and type(model.get("m")) is int:
                raise CorruptDataError("model: a model of no merges is left out")
            d["model"] = {"a": size, **model}
    return _named_stream_front(d, _count(d.get("shape")) if "blocks" not in d else None)


def _named_block(d: Any, count: int) -> Any:
    """A block's map (keys named) as its named fields (``count``: the block's values)."""
    if isinstance(d, dict):
        _put_defaults(d, _DEFAULTS, "block")
        _named_stream_front(d, count)
    return d


def _named_stream_front(d: dict, count: int | None) -> dict:
    """``d`` (a container's or a block's fields) with its stream's coder and its front-end stages
    named, and the stream's ``n`` put back (``count`` values, when known)."""
    stream = d.get("stream")
    if isinstance(stream, dict):
        if "coder" in stream:
            stream["coder"] = _named_value(stream["coder"], CODERS, "stream: 'coder'")
        if "n" in stream:
            if count is not None and type(stream["n"]) is int and stream["n"] == count:
                raise CorruptDataError("stream: 'n' equal to the values' count is left out")
        elif count is not None:
            stream["n"] = count
    front = d.get("front")
    if isinstance(front, list):
        for e in front:
            if isinstance(e, dict) and "stage" in e:
                e["stage"] = _named_value(e["stage"], STAGES, "front: 'stage'")
                for v in e.values():
                    if isinstance(v, dict) and "coder" in v:
                        v["coder"] = _named_value(v["coder"], CODERS, "front: a stream's 'coder'")
    return d


def _put_defaults(d: dict, defaults: dict, where: str) -> None:
    """Put the fields left out back in ``d``; refuse one written at its default."""
    for key, default in defaults.items():
        if key not in d:
            d[key] = default.copy() if isinstance(default, list) else default
        elif _is_default(d[key], default):
            raise CorruptDataError(f"{where}: {key!r} at its default is left out, not written")


def _named_value(value: Any, table: tuple[str, ...], where: str) -> Any:
    """A value of a table by its name: an int is its index; a str of the table (written by name)
    and an int out of range are corrupt; anything else is left for the field's check."""
    if type(value) is int:
        if not 0 <= value < len(table):
            raise CorruptDataError(f"{where}: unknown number {short(value)} (version 1 defines 0 to {len(table) - 1})")
        return table[value]
    if isinstance(value, str) and value in table:
        raise CorruptDataError(f"{where}: {value!r} written by name (it is written as {table.index(value)})")
    return value


def fields_of(data: bytes) -> dict:
    """The named fields of a container's bytes (blocks stay bytes), not checked: for tests and
    tools that look into containers. CorruptDataError for bytes that do not parse."""
    _check_prefix(data)
    try:
        return _named_head(_unpack_map(data[len(MAGIC) + 1:]))
    except CorruptDataError:
        raise
    except Exception as e:  # msgpack raises several unrelated exception types
        raise CorruptDataError(_unparsable(data, e)) from None


def block_fields(raw: bytes, count: int) -> Any:
    """The named fields of a block's bytes (``count`` values), not checked (as :func:`fields_of`)."""
    return _named_block(_unpack_map(raw), count)


_PREFIX = MAGIC + bytes([FORMAT_VERSION])


def _check_prefix(data: bytes) -> None:
    """Refuse bytes that do not start as a container of a version this ubpe reads."""
    if data[:len(_PREFIX)] == _PREFIX and len(data) > len(_PREFIX):  # the usual case (version 1 is the only one)
        return
    if len(data) == 0:
        raise CorruptDataError("empty: not a ubpe file")
    if data[:len(MAGIC)] != MAGIC[:min(len(data), len(MAGIC))] or len(data) < len(MAGIC):
        if len(data) < len(MAGIC) and data == MAGIC[:len(data)]:
            raise CorruptDataError(f"truncated: the container ends after {len(data)} bytes, in its prefix")
        raise CorruptDataError(f"not a ubpe file (it starts with {data[:8]!r})")
    if len(data) == len(MAGIC):
        raise CorruptDataError(f"truncated: the container ends after {len(data)} bytes, in its prefix")
    version = data[len(MAGIC)]
    if version > FORMAT_VERSION:
        raise FormatVersionError("this container", version, FORMAT_VERSION)
    if version < 1:
        raise CorruptDataError(f"container: invalid format version {version}")
    if len(data) == len(MAGIC) + 1:
        raise CorruptDataError(f"truncated: the container ends after {len(data)} bytes, in its prefix")


def _unparsable(data: bytes, error: Exception) -> str:
    """Why the map after the prefix does not parse, in the user's terms: truncated, trailing
    bytes, or damaged."""
    at = len(MAGIC) + 1
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
            last = KEYS[key] if type(key) is int and 0 <= key < len(KEYS) else key
    except msgpack.OutOfData:
        where = f", after its field {last!r}" if isinstance(last, str) else ""
        return f"truncated: the container ends after {len(data)} bytes{where}"
    except Exception:
        pass
    return f"damaged: the bytes do not parse as a ubpe container ({type(error).__name__})"


# ============================================================================ reading: the record


@dataclass
class Parsed:
    """A container whose head passed every check (blocks: only their number and type)."""

    dtype: np.dtype
    shape: tuple[int, ...]
    n: int  #: values
    values: Values | None  #: the alphabet's id -> value map; None when the model is referenced by digest
    a: int | None  #: alphabet size (None: referenced)
    m: int | None  #: merges (None: referenced)
    merges_raw: bytes | None
    digest: str | None  #: the referenced model's digest (hex), else None
    fields: dict  #: the named fields as read
    stream: dict = field(default_factory=dict)  #: one-stream form: its stream map (checked by the coder)
    crc: int = 0  #: one-stream form: CRC of the values
    chain: list[dict] = field(default_factory=list)  #: one-stream form: the checked front-end chain
    esc: Any = None  #: one-stream form: the ``esc`` field, unparsed
    source: dict | None = None
    method: str = "replay"  #: the informational ``method`` field, "replay" when absent
    block: int = 0  #: blocked form: frames per block, else 0 (the one-stream form)
    n_blocks: int = 0  #: blocked form: how many blocks
    blocks: list | None = None  #: blocked form read whole: each block's bytes (None when streamed)

    @property
    def native(self) -> np.dtype:
        """The dtype in native byte order."""
        return self.dtype.newbyteorder("=") if self.dtype.byteorder == ">" else self.dtype

    @property
    def channels(self) -> int:
        return channels_frames(self.shape, self.n)[0]

    @property
    def frames(self) -> int:
        return channels_frames(self.shape, self.n)[1]


def parse(data: Any, cap: int) -> Parsed:
    """The checked head of a container's bytes: every field but the blocks' contents, the merge
    table's children and the token stream (which decoding checks), with at most ``cap`` bytes
    of output declared. CorruptDataError (or FormatVersionError) for anything else."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    data = bytes(data)
    quick = _floatpack_head(data, cap)
    if quick is not None:
        return quick
    _check_prefix(data)
    try:
        d = _named_head(_unpack_map(data[len(MAGIC) + 1:]))
    except (CorruptDataError, FormatVersionError):
        raise
    except Exception as e:  # msgpack raises several unrelated exception types
        raise CorruptDataError(_unparsable(data, e)) from None
    blocks = d.get("blocks")
    if "blocks" in d:
        if not isinstance(blocks, list):
            raise CorruptDataError(f"container: 'blocks' must be a list of blocks, got {type(blocks).__name__}")
        for b, raw in enumerate(blocks):
            if not isinstance(raw, bytes):
                raise CorruptDataError(f"block {b}: expected bytes, got {type(raw).__name__}")
    return check_head(d, cap, None if blocks is None else len(blocks), blocks)


def check_head(d: dict, cap: int, count: int | None, blocks: list | None = None) -> Parsed:
    """The checked record of a container's named fields ``d`` (``count``: the blocks the
    blocked form declares, None for the one-stream form; ``blocks`` their bytes when read)."""
    embedded = "digest" not in d
    model_keys = ("alphabet", "model") if embedded else ("digest",)
    values_coded = count is None and isinstance(d.get("stream"), dict) and _values_coder(d["stream"])
    if values_coded:  # a coder of the values themselves ("mixsignal", level 3; "floatpack"): no model
        model_keys = ()
    if count is not None:
        expect_map(d, "container", _BLOCKED_KEYS + model_keys, _BLOCKED_OPTIONAL)
    else:
        expect_map(d, "container", _STREAM_KEYS + model_keys, _STREAM_OPTIONAL)
    dt = d["dtype"]
    if not isinstance(dt, str) or dt not in _DTYPE_OBJECTS:
        raise CorruptDataError(f"container: unsupported dtype {short(dt)}")
    dtype = _DTYPE_OBJECTS[dt]
    shape_raw = d["shape"]
    if not isinstance(shape_raw, list) or len(shape_raw) > MAX_NDIM:
        raise CorruptDataError(f"container: 'shape' must be a list of at most {MAX_NDIM} ints")
    if len(shape_raw) == 1 and type(shape_raw[0]) is int and 0 <= shape_raw[0] <= _I64_MAX:  # 1-D: no generator
        n = shape_raw[0]
        extent = n or 1
    elif not all(type(s) is int and 0 <= s <= _I64_MAX for s in shape_raw):
        raise CorruptDataError("container: 'shape' must hold non-negative ints")
    else:
        n = math.prod(shape_raw)
        extent = math.prod(s or 1 for s in shape_raw)
    # numpy's own limit: every dimension's extent (at least 1) times the item size
    if extent * dtype.itemsize > _I64_MAX:
        raise CorruptDataError(f"container: 'shape' {short(shape_raw)} is too large for an array")
    if n * dtype.itemsize > cap:
        raise CorruptDataError(
            f"container declares {n} values ({n * dtype.itemsize} bytes), more than "
            f"max_output_size={cap} bytes: pass a larger max_output_size if you trust it")
    source = check_source(d["source"], data_error) if "source" in d else None
    method = _parse_method(d)
    channels, frames = channels_frames(shape_raw, n)
    common: dict[str, Any] = dict(fields=d, source=source, method=method)
    if count is not None:
        if n == 0 or not shape_raw:
            raise CorruptDataError("container: a blocked container holds at least one frame (and is not 0-d)")
        block = field_int(d, "block", 1, frames, where="container")
        expect = -(-frames // block)
        if count != expect:
            raise CorruptDataError(f"container: 'blocks' must be a list of {expect} blocks of {block} frames "
                                   f"({frames} frames), got {count}")
        common.update(block=block, n_blocks=count, blocks=blocks)
    else:
        native = dtype.newbyteorder("=") if dtype.byteorder == ">" else dtype
        crc = d["crc"]
        if type(crc) is not int or not 0 <= crc <= 0xFFFFFFFF:
            raise CorruptDataError("container: 'crc' must be an int in [0, 2**32)")
        if not isinstance(d["stream"], dict):
            raise CorruptDataError("container: 'stream' must be a map")
        front = d["front"]  # (a values coder has none: "floatpack"'s floats need no float stage)
        chain = [] if values_coded and front == [] else frontend.parse_chain(front, native, (channels, frames))
        common.update(stream=d["stream"], crc=crc, esc=d.get("esc"), chain=chain)
    shape = tuple(shape_raw)
    if values_coded:
        _check_values_stream(d, dtype, shape, n, common["chain"])
        return Parsed(dtype, shape, n, None, None, None, None, None, **common)
    if not embedded:
        digest = field_bytes(d, "digest", where="container", size=32).hex()
        return Parsed(dtype, shape, n, None, None, None, None, digest, **common)
    values = parse_alphabet(d["alphabet"])
    model = expect_map(d["model"], "model", ("a", "m", "merges"))
    a = field_int(model, "a", 0, coders.MAX_VOCAB, where="model")
    m = field_int(model, "m", 0, coders.MAX_VOCAB, where="model")
    merges_raw = field_bytes(model, "merges", where="model")
    if a != values.size:
        raise CorruptDataError(f"model: 'a' = {a} differs from the alphabet's {values.size} values")
    if a + m > coders.MAX_VOCAB:
        raise CorruptDataError(f"model: {a} + {m} tokens exceed the limit {coders.MAX_VOCAB}")
    if a == 0 and (m or n):
        raise CorruptDataError("container: values or merges over an empty alphabet")
    if m == 0 and merges_raw:
        raise CorruptDataError("model: 'merges' must be empty when 'm' is 0")
    if m == 0 and "method" in d:
        raise CorruptDataError("container: 'method' is written only for a model with merges")
    if m and 8 * max(len(merges_raw) - 1, 0) < min_merge_bits(m, a):
        raise CorruptDataError(f"model: 'merges' has {len(merges_raw)} bytes, too few for {m} merges")
    return Parsed(dtype, shape, n, values, a, m, merges_raw, None, **common)


_FLOATPACK = CODERS.index("floatpack")
_FLOAT_DTYPES = {i: _DTYPE_OBJECTS[d] for i, d in enumerate(DTYPES) if d[1] == "f"}
_FLOATPACK_START = _PREFIX + b"\x84"  # (then a map of 4 entries)
_DTYPE_KEY, _SHAPE_KEY, _STREAM_KEY, _CRC_KEY, _CODER_KEY, _PAYLOAD_KEY = (
    _KEY_IDS[k] for k in ("dtype", "shape", "stream", "crc", "coder", "payload"))


def _floatpack_head(data: bytes, cap: int) -> Parsed | None:
    """:func:`parse`'s record of a 1-D "floatpack" container as the writer makes it (``dtype``,
    ``shape``, ``stream`` of ``coder`` and ``payload``, ``crc``: nothing else), or None for any
    other bytes, which the general path then parses (and refuses, or reads: an equal record).

    A short float series is decoded in about as long as its fields take to check (issue 30:
    100 values at 10 M values/s is 10 us a call), so its map is read without the hook that
    names the keys of every map, and its bytes must be exactly those the map packs back to:
    a key written twice, a longer form of a number or anything else the writer never writes
    fails that, and so goes the general path. What is accepted here passes every check of
    :func:`check_head` and :func:`_check_values_stream` (the payload is checked as it is
    decoded, :func:`ubpe.coders.floatpack.decode_values`)."""
    if data[:len(_FLOATPACK_START)] != _FLOATPACK_START:
        return None
    body = data[len(_PREFIX):]
    try:
        d = msgpack.unpackb(body, raw=False, strict_map_key=False)
    except Exception:  # (msgpack raises several unrelated types: the general path says why)
        return None
    if type(d) is not dict or len(d) != 4:
        return None
    dt, shape, stream, crc = d.get(_DTYPE_KEY), d.get(_SHAPE_KEY), d.get(_STREAM_KEY), d.get(_CRC_KEY)
    if (type(stream) is not dict or len(stream) != 2 or type(stream.get(_CODER_KEY)) is not int
            or stream[_CODER_KEY] != _FLOATPACK or type(stream.get(_PAYLOAD_KEY)) is not bytes
            or type(dt) is not int or dt not in _FLOAT_DTYPES or type(shape) is not list or len(shape) != 1
            or type(shape[0]) is not int or type(crc) is not int or not 0 <= crc <= 0xFFFFFFFF):
        return None
    dtype, n = _FLOAT_DTYPES[dt], shape[0]
    if not 1 <= n <= cap // dtype.itemsize or msgpack.packb(d, use_bin_type=True) != body:
        return None
    named = {"coder": "floatpack", "payload": stream[_PAYLOAD_KEY], "n": n}
    fields = {"dtype": DTYPES[dt], "shape": shape, "stream": named, "crc": crc, "front": []}
    return Parsed(dtype, (n,), n, None, None, None, None, None, fields=fields, stream=named, crc=crc)


def _values_coder(stream: dict) -> bool:
    """Whether a stream map names a coder of the values themselves (``coders.VALUE_CODERS``)."""
    coder = stream.get("coder")
    return isinstance(coder, str) and coder in _VALUE_CODERS


def _check_values_stream(d: dict, dtype: np.dtype, shape: tuple[int, ...], n: int, chain: list) -> None:
    """Refuse a container whose stream codes the values themselves ("mixsignal") that the writer
    cannot have written: its stream's keys and ``n`` (the values), integer values of at least one
    axis and one value, no front end, no escapes, no ``method`` (the payload is checked as it
    is decoded: :func:`ubpe.coders.mixsignal.decode_values`)."""
    coder = d["stream"]["coder"]
    if coder == "floatpack":  # (ubpe.coders.floatpack: float values, any shape)
        if dtype.kind != "f" or n == 0 or chain:
            raise CorruptDataError("container: a 'floatpack' stream needs float values, at least one value and "
                                   "no front end")
    elif dtype.kind not in "iu" or not shape or n == 0 or chain:
        raise CorruptDataError("container: a 'mixsignal' stream needs integer values, a shape of one axis or more, "
                               "at least one value and no front end")
    if "esc" in d or "method" in d:
        raise CorruptDataError(f"container: 'esc' or 'method' beside a {coder!r} stream")
    s = expect_map(d["stream"], "stream", ("coder", "n", "payload"))
    if type(s["n"]) is not int or s["n"] != n:
        raise CorruptDataError(f"stream: 'n' must be the container's {n} values")
    field_bytes(s, "payload", where="stream")


def _parse_method(d: dict) -> str:
    """The optional ``method`` field (informational: decoding never depends on it)."""
    if "method" not in d:
        return "replay"
    method = d["method"]
    if not isinstance(method, str) or method not in METHODS:
        raise CorruptDataError(f"container: 'method' must be one of {', '.join(map(repr, METHODS))}, "
                               f"got {short(method)}")
    return method


@dataclass
class Block:
    """One checked block: its number, frames ``[f0, f1)``, chain, stream, escapes and CRC."""

    number: int
    f0: int
    f1: int
    chain: list[dict]
    stream: dict
    esc: Any
    crc: int


def parse_block(p: Parsed, b: int, raw: bytes | None = None) -> Block:
    """Block ``b`` of a blocked container (its bytes ``raw``, else ``p.blocks[b]``), every field
    checked (CorruptDataError naming the block)."""
    channels, frames = channels_frames(p.shape, p.n)
    f0, f1 = b * p.block, min((b + 1) * p.block, frames)
    where = f"block {b} (frames {f0} to {f1})"
    if raw is None:
        raw = p.blocks[b]
    try:
        d = _named_block(_unpack_map(raw), (f1 - f0) * channels)
    except CorruptDataError as e:
        raise CorruptDataError(f"{where}: {e}") from None
    except Exception as e:  # msgpack raises several unrelated exception types
        raise CorruptDataError(f"{where}: damaged: its bytes do not parse ({type(e).__name__})") from None
    try:
        expect_map(d, "block", _BLOCK_KEYS, _BLOCK_OPTIONAL)
        chain = frontend.parse_chain(d["front"], p.native, (channels, f1 - f0))
        crc = d["crc"]
        if type(crc) is not int or not 0 <= crc <= 0xFFFFFFFF:
            raise CorruptDataError("block: 'crc' must be an int in [0, 2**32)")
        if not isinstance(d["stream"], dict):
            raise CorruptDataError("block: 'stream' must be a map")
        if _values_coder(d["stream"]):
            raise CorruptDataError(f"block: a {d['stream']['coder']!r} stream is only a container's one stream")
    except CorruptDataError as e:
        raise CorruptDataError(f"{where}: {e}") from None
    return Block(b, f0, f1, chain, d["stream"], d.get("esc"), crc)


def read_blocked_head(src: BinaryIO, cap: int) -> tuple[Parsed, msgpack.Unpacker] | None:
    """The checked head of a blocked container read from the binary file ``src``, its blocks not
    read (``Parsed.blocks`` is None), and the unpacker positioned at the first block
    (``unpacker.unpack()`` gives each block's bytes in turn); None, with ``src`` back where it
    was, when the container is not in the blocked form with ``blocks`` last (as the writer
    puts it), so that the caller reads it whole. Checks as :func:`parse` (the same code)."""
    start = src.tell()
    prefix = src.read(len(MAGIC) + 1)
    if len(prefix) < len(MAGIC) + 1 or prefix[:len(MAGIC)] != MAGIC or prefix[-1] != FORMAT_VERSION:
        src.seek(start)
        return None
    unpacker = msgpack.Unpacker(src, raw=False, strict_map_key=False, use_list=True, max_buffer_size=1 << 30,
                                object_pairs_hook=_named_map)
    head: dict[str, Any] = {}
    count = None
    try:
        entries = unpacker.read_map_header()
        for i in range(entries):
            key = unpacker.unpack()
            if type(key) is not int or not 0 <= key < len(KEYS):
                break
            name = KEYS[key]
            if name == "blocks" and i == entries - 1:
                count = unpacker.read_array_header()
                break
            if name in head:
                break
            head[name] = unpacker.unpack()
        if count is not None:
            head["blocks"] = None  # (the blocks are read one by one: the head's fields are checked as parse's)
            head = _named_head(_check_nesting(head))
    except Exception:  # not a map, or damaged: the whole read says why
        count = None
    if count is None:
        src.seek(start)
        return None
    # (a declared count is only compared with frames / block: nothing is allocated per block)
    return check_head(head, cap, count), unpacker
