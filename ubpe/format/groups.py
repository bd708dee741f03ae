"""The grouped container (docs/format.md, "Grouped containers"): one ordinary container per
group of channel runs, so that channels of different character each get their own chain, model
and coder.

A grouped container is the 4 bytes ``b"ubpg"``, one byte of version (1), then one msgpack map
``{"dtype", "shape", ["source"], "groups", "crc"}``. The values are viewed as ``(F frames, C
channels)`` (:func:`ubpe.format.container.channels_frames`); a *group* is ``[L, columns,
starts, container]``: ``k`` runs of ``L`` frames, run ``j`` the frames ``[starts[j], starts[j]
+ L)`` of channel ``columns[j]``, stacked as the ``(L, k)`` array (``(L,)`` for ``k = 1``) that
``container``, an ordinary container (``b"ubpe"``) of the same dtype, holds. The runs of all
groups cover every ``(frame, channel)`` exactly once. ``crc`` is the values' CRC-32 as
:func:`~ubpe.format.container.values_crc`.

:func:`parse` checks every field (counts, column indices, starts and lengths, the cover, each
group container's head with its dtype and shape) before anything proportional to the output is
allocated; :func:`pack` writes the map. Reading needs neither the planner nor the api.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import msgpack
import numpy as np

from .._validate import expect_map, short
from ..errors import CorruptDataError, FormatVersionError
from . import container
from .fields import check_source, data_error

__all__ = ["GROUPS_MAGIC", "GROUPS_VERSION", "MAX_GROUPS", "MAX_RUNS", "Group", "Grouped", "pack", "parse",
           "is_grouped"]

#: The first 4 bytes of a grouped container (an ordinary container starts with ``b"ubpe"``).
GROUPS_MAGIC = b"ubpg"
#: The grouped-container version this ubpe writes, and the newest it reads.
GROUPS_VERSION = 1
#: Most groups a grouped container holds.
MAX_GROUPS = 1 << 16
#: Most runs over all groups.
MAX_RUNS = 1 << 20
_KEYS = ("dtype", "shape", "groups", "crc")
_OPTIONAL = ("source",)


@dataclass(frozen=True)
class Group:
    """One group: ``frames`` (L) frames of the channels ``columns`` (int64, ``k``) from the frames
    ``starts`` (int64, ``k``), coded by the ordinary container ``data`` of shape ``shape``."""

    frames: int
    columns: np.ndarray
    starts: np.ndarray
    data: bytes

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.frames,) if self.columns.size == 1 else (self.frames, int(self.columns.size))


@dataclass(frozen=True)
class Grouped:
    """A checked grouped container."""

    dtype: np.dtype
    shape: tuple[int, ...]
    n: int
    channels: int
    frames: int
    source: dict | None
    crc: int
    groups: tuple[Group, ...]


def is_grouped(data: Any) -> bool:
    """Whether ``data`` starts as a grouped container."""
    return isinstance(data, (bytes, bytearray, memoryview)) and bytes(data[:4]) == GROUPS_MAGIC


def pack(dtype: np.dtype, shape: tuple[int, ...], source: dict | None, groups: list[Group], crc: int) -> bytes:
    """The bytes of a grouped container (fields as :func:`parse` checks them)."""
    fields: dict[str, Any] = {"dtype": dtype.str, "shape": [int(s) for s in shape]}
    if source is not None:
        fields["source"] = source
    fields["groups"] = [[g.frames, g.columns.astype("<u4").tobytes(),
                         None if not g.starts.any() else g.starts.astype("<u8").tobytes(), g.data] for g in groups]
    fields["crc"] = crc
    return GROUPS_MAGIC + bytes([GROUPS_VERSION]) + msgpack.packb(fields, use_bin_type=True)


def _fail(message: str) -> None:
    raise CorruptDataError(f"grouped container: {message}")


def _check_prefix(data: bytes) -> None:
    if len(data) < len(GROUPS_MAGIC) + 2 or data[:len(GROUPS_MAGIC)] != GROUPS_MAGIC:
        _fail(f"truncated or not a grouped container ({len(data)} bytes, starting {data[:8]!r})")
    version = data[len(GROUPS_MAGIC)]
    if version > GROUPS_VERSION:
        raise FormatVersionError("this grouped container", version, GROUPS_VERSION)
    if version < 1:
        _fail(f"invalid version {version}")


def parse(data: Any, cap: int) -> Grouped:
    """The checked grouped container ``data``, with at most ``cap`` bytes of output declared.
    CorruptDataError (FormatVersionError for a newer version) for anything malformed."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    data = bytes(data)
    _check_prefix(data)
    try:
        d = msgpack.unpackb(data[len(GROUPS_MAGIC) + 1:], raw=False, strict_map_key=True, use_list=True)
    except Exception as e:  # msgpack raises several unrelated exception types
        raise CorruptDataError(f"grouped container: not one msgpack map ({type(e).__name__}): truncated or "
                               "damaged") from None
    expect_map(d, "grouped container", _KEYS, _OPTIONAL)
    dt = d["dtype"]
    if not isinstance(dt, str) or dt not in container.DTYPES:
        _fail(f"unsupported dtype {short(dt)}")
    dtype = np.dtype(dt)
    shape = d["shape"]
    if not isinstance(shape, list) or not 1 <= len(shape) <= container.MAX_NDIM or not all(
            type(s) is int and 1 <= s < (1 << 63) for s in shape):
        _fail(f"'shape' must be a list of 1 to {container.MAX_NDIM} positive ints, got {short(shape)}")
    n = math.prod(shape)
    if n * dtype.itemsize > min(cap, (1 << 63) - 1):
        _fail(f"declares {n} values ({n * dtype.itemsize} bytes), more than max_output_size={cap} bytes: "
              "pass a larger max_output_size if you trust it")
    channels, frames = container.channels_frames(shape, n)
    source = check_source(d["source"], data_error) if "source" in d else None
    crc = d["crc"]
    if type(crc) is not int or not 0 <= crc <= 0xFFFFFFFF:
        _fail("'crc' must be an int in [0, 2**32)")
    raw_groups = d["groups"]
    if not isinstance(raw_groups, list) or not 1 <= len(raw_groups) <= MAX_GROUPS:
        _fail(f"'groups' must be a list of 1 to {MAX_GROUPS} groups")
    groups, runs = [], 0
    for i, g in enumerate(raw_groups):
        groups.append(_group(i, g, dtype, channels, frames, cap))
        runs += groups[-1].columns.size
        if runs > MAX_RUNS:
            _fail(f"more than {MAX_RUNS} runs")
    _check_cover(groups, channels, frames)
    return Grouped(dtype, tuple(shape), n, channels, frames, source, crc, tuple(groups))


def _group(i: int, g: Any, dtype: np.dtype, channels: int, frames: int, cap: int) -> Group:
    where = f"group {i}"
    if not isinstance(g, list) or len(g) != 4:
        _fail(f"{where}: must be [frames, columns, starts, container]")
    length, cols_raw, starts_raw, inner = g
    if type(length) is not int or not 1 <= length <= frames:
        _fail(f"{where}: frames must be an int in [1, {frames}], got {short(length)}")
    most = (channels * frames) // length  # runs of L frames that the values can hold
    if not isinstance(cols_raw, bytes) or not cols_raw or len(cols_raw) % 4 or len(cols_raw) // 4 > most:
        _fail(f"{where}: columns must be 1 to {most} little-endian uint32 (bytes of a multiple of 4)")
    columns = np.frombuffer(cols_raw, "<u4").astype(np.int64)
    if int(columns.max()) >= channels:
        _fail(f"{where}: column {int(columns.max())} out of range (the values have {channels} channels)")
    k = columns.size
    if starts_raw is None:
        starts = np.zeros(k, np.int64)
    else:
        if not isinstance(starts_raw, bytes) or len(starts_raw) != 8 * k:
            _fail(f"{where}: starts must be nil or {k} little-endian uint64 ({8 * k} bytes)")
        wide = np.frombuffer(starts_raw, "<u8")
        if int(wide.max()) > frames - length or not wide.any():
            _fail(f"{where}: starts must be in [0, {frames - length}] for runs of {length} frames, and not all 0 "
                  "(nil then)")
        starts = wide.astype(np.int64)
    if not isinstance(inner, bytes) or inner[:4] != container.MAGIC:
        _fail(f"{where}: the group's container must be the bytes of an ordinary container")
    try:
        p = container.parse(inner, cap)
    except CorruptDataError as e:
        raise CorruptDataError(f"grouped container: {where}: {e}") from None
    group = Group(length, columns, starts, inner)
    if p.dtype != dtype or p.dtype.str != dtype.str or p.shape != group.shape:
        _fail(f"{where}: holds {p.dtype.str} of shape {p.shape}, the group needs {dtype.str} of shape {group.shape}")
    return group


def _check_cover(groups: list[Group], channels: int, frames: int) -> None:
    """Every (frame, channel) in exactly one run: the runs of each channel, by start, are end to
    end from frame 0 to ``frames``."""
    cols = np.concatenate([g.columns for g in groups])
    starts = np.concatenate([g.starts for g in groups])
    ends = np.concatenate([g.starts + g.frames for g in groups])
    order = np.lexsort((starts, cols))
    cols, starts, ends = cols[order], starts[order], ends[order]
    first = np.ones(cols.size, bool)
    first[1:] = cols[1:] != cols[:-1]
    last = np.ones(cols.size, bool)
    last[:-1] = cols[1:] != cols[:-1]
    ok = (np.unique(cols).size == channels and not starts[first].any() and bool(np.all(ends[last] == frames))
          and bool(np.all(starts[1:][~first[1:]] == ends[:-1][~first[1:]])))
    if not ok:
        _fail(f"the groups' runs do not cover the {frames} frames of the {channels} channels exactly once")
