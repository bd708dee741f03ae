"""Channel groups: a grouped container (``ubpe/format/groups.py``; docs/format.md, "Grouped
containers") holds one ordinary container per group of channels, so that channels that share
nothing, or differ in character (an EDF file's square wave, noise and ECG), each get their own
front-end chain, model and coder.

:func:`smaller` is the planner's step: for integer values of more than one channel (or an EDF
file's signals of different rates, joined in a 1-D array) it measures a few groupings
(:func:`candidates`) and returns the smallest of them and the one-stream container it is given,
so a container is never larger than before. The groupings:

- *correlated*: channels joined when the correlation of their first differences, on a sample of
  ``Settings.group_sample`` frames, is at least ``Settings.group_correlation`` (connected
  components; constant channels one group);
- *correlated, the rest together*: the same, the channels correlated with none in one group;
- *each alone*: one group per channel (up to ``Settings.group_alone_channels`` channels);
- (a grouping of more than ``Settings.group_max_groups`` groups is not measured);
- an EDF file's signals (1-D layout): signals of one rate stacked as one group, or each alone.

Each group is compressed by :func:`ubpe.compress` with the caller's level (through
``compress_to``: the same bytes, a blocked group read twice rather than its front-end outputs
kept), and, from ``Settings.group_decorrelate_channels`` channels (default 0: never), also with
the chain ``"decorrelate+delta1"`` when the planner's own chain does not decorrelate: the
smaller is kept. The same check runs on the one-stream container.

Level 2 skips measuring where the outcome was the same on every input measured (issue 28: each
grouping's compression costs about one compression of the values): it keeps the one-stream
container when the largest group of correlated channels holds nearly all of them
(``Settings.group_joined_share``), and writes the channels each alone without the one stream
when that would be blocked and each channel fits one block (:func:`blocked_alone`,
``Settings.group_blocked_alone``).

Memory: the correlation screen holds ``group_sample x C`` float32 differences and a ``C x C``
float32 matrix (1 024 channels: 16 MB and 4 MB); writing, one group's copy (at most the input's
size) and its container beside the input; decoding, the output, one group's decoded array and its
container's working memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import CorruptDataError
from ..format import container
from ..format import groups as fmt
from ..planner import settings as _settings
from . import level3_groups

__all__ = ["smaller", "candidates", "grouped_bytes", "decompress_grouped", "describe_grouped", "edf_runs"]

#: A grouping: each group ``(frames L, columns, starts)`` (``starts`` None: all 0).
Grouping = list[tuple[int, list[int], list[int] | None]]


def _compress(values: np.ndarray, level: int, threads: int | None, block_size: int | None,
              s: _settings.Settings, given: bytes | None = None, source: dict | None = None) -> bytes:
    """``ubpe.compress(values)`` (``given``: it, already made), or with the chain
    "decorrelate+delta1" when that is smaller (see the module docstring)."""
    import io

    from . import compress_to
    from .. import describe

    def compress(x: np.ndarray, **options: Any) -> bytes:
        """``ubpe.compress``'s bytes, by ``compress_to``: a blocked input is read twice rather than
        its front-end outputs kept (memory: a few blocks per thread)."""
        out = io.BytesIO()
        compress_to(out, x, **options)
        return out.getvalue()

    data = given if given is not None else compress(values, level=level, threads=threads, block_size=block_size)
    if (values.ndim != 2 or not s.group_decorrelate_channels or values.shape[1] < s.group_decorrelate_channels
            or values.shape[0] < 2):
        return data
    if any(e.get("stage") == "decorrelate" for e in describe(data).front):
        return data
    forced = compress(values, level=level, threads=threads, block_size=block_size, source=source,
                      predictor="decorrelate+delta1")
    return forced if len(forced) < len(data) else data


def _runs(x: np.ndarray, length: int, columns: list[int], starts: list[int] | None) -> np.ndarray:
    """The group's ``(L, k)`` array (``(L,)`` for one run) of ``x`` (``(F, C)``): a view when its
    runs are consecutive columns from frame 0 (``compress`` reads a long one block by block), else
    a copy."""
    if starts is None and columns == list(range(columns[0], columns[0] + len(columns))):
        sub = x[:length, columns[0]:columns[0] + len(columns)]
        return sub[:, 0] if len(columns) == 1 else sub
    if starts is None:
        sub = x[:length, columns]
    else:
        sub = np.stack([x[s:s + length, c] for c, s in zip(columns, starts)], axis=1)
    return np.ascontiguousarray(sub[:, 0] if len(columns) == 1 else sub)


class _Scatter:
    """A binary file whose writes are a group's values, frame after frame (``decompress_to``):
    each frame's ``k`` values go to their runs' places in ``out`` (``(F, C)``) as they come, so
    a blocked group is never held whole."""

    def __init__(self, out: np.ndarray, group: fmt.Group, dtype: np.dtype) -> None:
        self.out, self.group, self.dtype = out, group, dtype
        self.k = int(group.columns.size)
        self.frame_bytes = self.k * dtype.itemsize
        self.pending = b""
        self.frame = 0
        self.runs = None if not group.starts.any() else list(zip(group.columns.tolist(), group.starts.tolist()))

    def write(self, raw: Any) -> int:
        data = self.pending + bytes(raw)
        whole = len(data) - len(data) % self.frame_bytes
        self.pending = data[whole:]
        if whole:
            rows = np.frombuffer(data[:whole], self.dtype).reshape(-1, self.k)
            f0, f1 = self.frame, self.frame + rows.shape[0]
            if f1 > self.group.frames:
                raise CorruptDataError("grouped container: a group decoded to more frames than it declares")
            if self.runs is None:
                self.out[f0:f1, self.group.columns] = rows
            else:
                for j, (c, a) in enumerate(self.runs):
                    self.out[a + f0:a + f1, c] = rows[:, j]
            self.frame = f1
        return len(raw)


def grouped_bytes(arr: np.ndarray, grouping: Grouping, *, level: int, source: dict | None = None,
                  threads: int | None = None, block_size: int | None = None,
                  s: _settings.Settings | None = None, within: int | None = None,
                  memo: dict | None = None) -> bytes | None:
    """The grouped container of the integer values ``arr`` (any shape of at least one axis) with
    ``grouping`` (runs of the ``(frames, channels)`` view that cover it exactly once); None as
    soon as its groups' containers reach ``within`` bytes (a container not smaller than that).
    ``memo``: the groups' containers by run, shared by the groupings of one call (a group in two
    groupings is compressed once: the same bytes)."""
    s = s or _settings.current()
    shape = tuple(int(d) for d in arr.shape)
    channels, frames = container.channels_frames(shape, arr.size)
    x = arr.reshape(frames, channels)
    groups = []
    for length, columns, starts in grouping:
        key = (length, tuple(columns), None if starts is None else tuple(starts))
        if memo is None or key not in memo:
            data = _compress(_runs(x, length, columns, starts), level, threads, block_size, s)
            if memo is not None:
                memo[key] = data
        data = data if memo is None else memo[key]
        groups.append(fmt.Group(length, np.asarray(columns, np.int64),
                                np.zeros(len(columns), np.int64) if starts is None else np.asarray(starts, np.int64),
                                data))
        if within is not None and sum(len(g.data) for g in groups) >= within:
            return None
    native = arr.dtype.newbyteorder("=") if arr.dtype.byteorder == ">" else arr.dtype
    crc = container.values_crc(arr.dtype, shape, np.ascontiguousarray(arr.reshape(-1), dtype=native))
    return fmt.pack(arr.dtype, shape, source, groups, crc)


def _components(x: np.ndarray, s: _settings.Settings) -> tuple[list[list[int]], list[int]]:
    """(groups of correlated channels, constant channels) of ``x`` (``(F, C)``, C > 1): the
    connected components of ``|corr| >= group_correlation`` of the first differences on a sample."""
    frames, channels = x.shape
    per = max(2, s.group_sample // max(1, s.group_windows))
    if frames <= s.group_sample:
        parts = [x]
    else:
        at = np.linspace(0, frames - per, s.group_windows).astype(np.int64)
        parts = [x[a:a + per] for a in at]
    d = np.concatenate([np.diff(p.astype(np.float32), axis=0) for p in parts if p.shape[0] > 1])
    d -= d.mean(axis=0)
    norm = np.sqrt(np.einsum("ij,ij->j", d, d))
    const = [int(c) for c in np.flatnonzero(norm == 0)]
    live = np.flatnonzero(norm > 0)
    d = d[:, live] / norm[live]
    near = np.abs(d.T @ d) >= s.group_correlation
    label = -np.ones(live.size, np.int64)
    comps: list[list[int]] = []
    for i in range(live.size):
        if label[i] >= 0:
            continue
        label[i] = len(comps)
        todo, members = [i], [i]
        while todo:
            j = todo.pop()
            for m in np.flatnonzero(near[j] & (label < 0)):
                label[m] = len(comps)
                todo.append(int(m))
                members.append(int(m))
        comps.append(sorted(int(live[m]) for m in members))
    comps.sort(key=lambda g: g[0])
    return comps, const


def candidates(x: np.ndarray, s: _settings.Settings) -> list[list[list[int]]]:
    """The column groupings of ``x`` (``(F, C)``, C > 1) worth measuring (each a list of column
    lists covering every column once; never the one group of all columns)."""
    channels = x.shape[1]
    comps, const = _components(x, s)
    out: list[list[list[int]]] = []

    def add(grouping: list[list[int]]) -> None:
        grouping = sorted((sorted(g) for g in grouping if g), key=lambda g: g[0])
        if 1 < len(grouping) <= s.group_max_groups and grouping not in out:
            out.append(grouping)

    add(comps + [const])
    singles = [g[0] for g in comps if len(g) == 1] + const
    add([g for g in comps if len(g) > 1] + [singles])
    if channels <= s.group_alone_channels:
        add([[c] for c in range(channels)])
    return out


def _joined(x: np.ndarray, data: bytes, level: int, s: _settings.Settings) -> bool:
    """Whether level 2 keeps ``data`` (the one-stream container of ``x``, ``(F, C)``, C > 1)
    without measuring a grouping: its largest group of correlated channels holds at least
    ``Settings.group_joined_share`` of them and ``data`` is one block (a blocked one stream
    measures its channels alone: each may fit one block, planned on all its values)."""
    if level != 2 or s.group_joined_share > 1:
        return False
    from .. import describe

    if describe(data).blocks > 1:
        return False
    comps, const = _components(x, s)
    return max((len(g) for g in comps), default=0) >= s.group_joined_share * x.shape[1]


def blocked_alone(values: Any, *, level: int, source: dict | None, threads: int | None,
                  block_size: int | None) -> bytes | None:
    """Level 2's grouped container of ``values``' channels each alone when its one-stream
    container would be blocked (more than ``block_size`` values) while each channel alone fits
    one block, from ``Settings.group_blocked_alone_frames`` frames (``group_blocked_alone``);
    None otherwise (``compress`` then writes the
    one stream and :func:`smaller` measures the groupings). Such a container is what
    :func:`smaller` chose on every such input measured (module docstring of
    ``ubpe.planner.settings``, ``group_blocked_alone``), without the one stream's compression."""
    arr = np.asarray(values)
    s = _settings.current()
    if (level != 2 or not s.channel_groups or not s.group_blocked_alone or arr.dtype.kind not in "iu"
            or arr.ndim < 2 or arr.size == 0):
        return None
    if block_size is not None and (type(block_size) is not int or block_size < 0):
        return None  # (compress refuses it)
    from .writer import block_frames

    shape = tuple(int(d) for d in arr.shape)
    channels, frames = container.channels_frames(shape, arr.size)
    if not 1 < channels <= s.group_alone_channels or frames < max(2, s.group_blocked_alone_frames) \
            or edf_runs(source, shape):
        return None
    itemsize = arr.dtype.itemsize
    if not block_frames(block_size, channels, frames, itemsize) or block_frames(block_size, 1, frames, itemsize):
        return None
    return grouped_bytes(arr, [(frames, [c], None) for c in range(channels)], level=level, source=source,
                         threads=threads, block_size=block_size, s=s)


def edf_runs(source: Any, shape: tuple[int, ...]) -> list[Grouping]:
    """The groupings of an EDF file's signals joined in a 1-D array (signals of different rates,
    ``ubpe.edf.read``): those of one rate stacked, and each alone; none for another source."""
    if not isinstance(source, dict) or source.get("format") != "edf" or len(shape) != 1:
        return []
    from .. import edf

    try:
        _, _, layout = edf.check_source(source)
    except CorruptDataError:
        return []
    if layout.uniform or layout.records < 1 or layout.shape != shape:
        return []
    lengths = [layout.records * spr for spr in layout.kept]
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).tolist()
    alone: Grouping = [(n, [0], None if a == 0 else [a]) for n, a in zip(lengths, starts)]
    by_rate: Grouping = []
    for n in sorted(set(lengths)):
        at = [a for m, a in zip(lengths, starts) if m == n]
        by_rate.append((n, [0] * len(at), at if any(at) else None))
    out = [alone]
    if len(by_rate) < len(alone):
        out.append(by_rate)
    return out


def smaller(values: Any, data: bytes, *, level: int, source: dict | None, threads: int | None,
            block_size: int | None, pair: list[bytes] | None = None) -> bytes:
    """``data`` (the one-stream container of ``values``, written by ``compress`` with no option
    but these), or a smaller container: a grouped one, or one stream with the chain
    "decorrelate+delta1" (module docstring). Only integer values of more than one channel (or an
    EDF file's signals of different rates) are tried. ``pair``: level 3's two one-stream
    containers (level 2's, the level-3 coder's), when built: :mod:`ubpe.api.level3_groups` then
    measures the groupings, unless level 2's rule keeps the one stream (:func:`_joined` on
    level 2's container: one group of correlated channels holds nearly all of them)."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu" or arr.ndim < 1 or arr.size == 0 or bytes(data[:4]) != container.MAGIC:
        return data
    s = _settings.current()
    if not s.channel_groups:
        return data
    shape = tuple(int(d) for d in arr.shape)
    channels, frames = container.channels_frames(shape, arr.size)
    groupings: list[Grouping] = edf_runs(source, shape)
    if channels > 1 and frames > 1 and level == 3 and pair and not groupings and not s.group_decorrelate_channels:
        x2 = arr.reshape(frames, channels)
        if _joined(x2, pair[0], 2, s):  # (level 2's rule on its own container: the level-3 coder
            return data  # predicts each channel from the others too, which groups would split)
        return level3_groups.smaller(
            arr, data, pair[0], pair[1], candidates(x2, s), group_of=lambda cols: _runs(x2, frames, cols, None),
            level2_container=lambda sub: _compress(sub, 2, threads, block_size, s), source=source, s=s)
    if channels > 1 and frames > 1:
        x2 = arr.reshape(frames, channels)
        data = _compress(arr, level, threads, block_size, s, given=data, source=source)
        if not groupings and _joined(x2, data, level, s):
            return data
        groupings += [[(frames, g, None) for g in cols] for cols in candidates(x2, s)]
    best, memo = data, {}
    for grouping in groupings:
        packed = grouped_bytes(arr, grouping, level=level, source=source, threads=threads, block_size=block_size,
                               s=s, within=len(best), memo=memo)
        if packed is not None and len(packed) < len(best):
            best = packed
    return best


def decompress_grouped(data: Any, tokenizer: Any, cap: int, threads: int | None = None) -> np.ndarray:
    """The values of the grouped container ``data`` (checked whole by :func:`ubpe.format.groups.parse`
    before any group is decoded; each group's container then as ``ubpe.decompress`` checks it)."""
    import io

    from . import decompress_to

    g = fmt.parse(data, cap)
    native = g.dtype.newbyteorder("=") if g.dtype.byteorder == ">" else g.dtype
    out = np.empty((g.frames, g.channels), native)
    for i, group in enumerate(g.groups):
        sink = _Scatter(out, group, g.dtype)  # (decompress_to writes the values' bytes in their dtype)
        try:
            dtype, shape = decompress_to(sink, io.BytesIO(group.data), tokenizer=tokenizer, max_output_size=cap,
                                         threads=threads)
        except CorruptDataError as e:
            raise CorruptDataError(f"grouped container: group {i}: {e}") from None
        if shape != group.shape or dtype != g.dtype or sink.frame != group.frames or sink.pending:
            raise CorruptDataError(f"grouped container: group {i}: decoded {dtype} {shape}")  # (parse checked)
    flat = out.reshape(-1)
    if container.values_crc(g.dtype, g.shape, flat) != g.crc:
        raise CorruptDataError("grouped container: CRC mismatch: the groups do not assemble to the values written")
    result = flat.reshape(g.shape)
    return result.astype(g.dtype) if native != g.dtype else result


def describe_grouped(data: Any) -> Any:
    """The :class:`~ubpe.ContainerInfo` of a grouped container: its parts summed over the groups'
    containers (``header`` also holds the grouped container's own fields), ``coder`` the most
    frequent of theirs, ``front`` group 0's chain, ``groups`` their number."""
    from ..format.describe import ContainerInfo, describe

    g = fmt.parse(data, 1 << 256)
    infos = [describe(group.data) for group in g.groups]
    model = sum(i.model for i in infos)
    freq = sum(i.freq for i in infos)
    payload = sum(i.payload for i in infos)
    coders = tuple(c for i in infos for c in (i.coders or (i.coder,)))
    size = len(data)
    original = g.n * g.dtype.itemsize
    recorded = g.source.get("size") if isinstance(g.source, dict) else None
    file_size = recorded if type(recorded) is int and recorded >= 0 else None
    first = infos[0]
    return ContainerInfo(
        version=data[4], dtype=g.dtype.str, shape=g.shape, n_values=g.n, original_size=original, size=size,
        header=size - model - freq - payload, model=model, freq=freq, payload=payload,
        ratio=(original if file_size is None else file_size) / size, embedded=all(i.embedded for i in infos),
        digest=None, alphabet_size=None, n_merges=None, coder=max(coders, key=coders.count),
        n_tokens=sum(i.n_tokens for i in infos), delta=first.delta, front=first.front, channels=g.channels,
        source=g.source, escapes=sum(i.escapes for i in infos), escape_bytes=sum(i.escape_bytes for i in infos),
        method=first.method, blocks=sum(i.blocks for i in infos), block_frames=0, coders=coders,
        file_size=file_size, groups=len(g.groups))
