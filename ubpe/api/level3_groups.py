"""Channel groups at level 3: :func:`smaller`, the grouping step of ``compress(level=3)`` for
integer input of more than one channel (``ubpe.api.groups.smaller`` hands it over).

``compress(level=3)`` of such input has built two one-stream containers, the level-3 coder's
and level 2's (``ubpe.api._level3``). Each grouping of :func:`ubpe.api.groups.candidates` is
then measured with level 2's container of every group (each distinct group built once: the
groupings share groups), which gives a grouped container of level 2's groups; the level-3 coder
codes a grouping's groups only when it may win: when the level-2 groups' bytes scaled by a
share of the level-3 coder's gain on the one stream (its bytes over level 2's, to the power
``Settings.level3_group_gain_share``: groups coded apart lose the cross-channel prediction that
is part of that gain), plus the grouped container's own fields, come within
``Settings.level3_group_margin`` of the smallest container so far, and, on a recording long
enough to be sampled (``Settings.level3_group_sample_*``), when a second estimate is also
smaller than that container: the one stream's level-3 container times the level-3 coder's
payload of the groups' middle sample over that of the stream's (each group's estimate at most
its level-2 container's bytes; the samples coded once). The groups are then coded from the
smallest up, and the grouping is given up as soon as the groups coded so far project it past
that margin (:func:`_coded_while_it_may_win`). Each group keeps the smaller of its two
containers, so that level 3 is never larger than level 2 on a grouping level 2 measured (the
step before coded every group with ``compress(level=3)``, where a one-channel group of 2 048 to
65 536 values skipped level 2: benchmarks/results/level3-multichannel.md).

Cost: level 2's container of each distinct group (what ``compress(level=2)`` builds), the
level-3 coder on the middle 1/8 of the stream and of the groups of the groupings the first
estimate lets through, and in full on the groups of the groupings that may win, until one
projects a loss (before: every group of every grouping; results/level3-groups-cost.md).
Memory: one group's copy and the distinct groups' containers beside the input.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..format import container
from ..format import groups as fmt
from ..planner import settings as _settings
from . import writer

__all__ = ["smaller"]


def smaller(arr: np.ndarray, data: bytes, level2: bytes, level3: bytes, groupings: list[list[list[int]]], *,
            group_of: Callable[[list[int]], np.ndarray], level2_container: Callable[[np.ndarray], bytes],
            source: dict | None, s: _settings.Settings) -> bytes:
    """The smallest of ``data`` (the one-stream container ``compress(level=3)`` wrote: the smaller
    of ``level2`` and ``level3``, both of the whole of ``arr``) and the grouped containers of
    ``groupings`` (column groups of the ``(frames, channels)`` view of the integer ``arr``, each
    covering every column once), measured as the module docstring says. ``group_of(cols)``: the
    group's values; ``level2_container(values)``: level 2's container of them (both given by
    :func:`ubpe.api.groups.smaller`, which owns how groups are cut and compressed)."""
    shape = tuple(int(d) for d in arr.shape)
    _, frames = container.channels_frames(shape, arr.size)
    ratio = len(level3) / max(1, len(level2))
    native = arr.dtype.newbyteorder("=") if arr.dtype.byteorder == ">" else arr.dtype
    crc = container.values_crc(arr.dtype, shape, np.ascontiguousarray(arr.reshape(-1), dtype=native))
    two: dict[tuple[int, ...], bytes] = {}
    three: dict[tuple[int, ...], bytes] = {}

    def level2_of(cols: list[int]) -> bytes:
        key = tuple(cols)
        if key not in two:
            two[key] = level2_container(group_of(cols))
        return two[key]

    def level3_of(cols: list[int]) -> bytes:
        """The smaller of the group's level-2 container and the level-3 coder's."""
        key = tuple(cols)
        if key not in three:
            sub = group_of(cols)
            sub_shape = [int(d) for d in sub.shape]
            sub_native = np.ascontiguousarray(sub.reshape(-1), dtype=native)
            base = {"dtype": sub.dtype.str, "shape": sub_shape,
                    "crc": container.values_crc(sub.dtype, sub_shape, sub_native)}
            fields = writer.values_coded_fields(base, sub)
            coded = container.pack(fields) if fields is not None else None
            alt = level2_of(cols)
            three[key] = coded if coded is not None and len(coded) < len(alt) else alt
        return three[key]

    def packed(grouping: list[list[int]], parts: list[bytes]) -> bytes:
        return fmt.pack(arr.dtype, shape, source,
                        [fmt.Group(frames, np.asarray(cols, np.int64), np.zeros(len(cols), np.int64), part)
                         for cols, part in zip(grouping, parts)], crc)

    best = data
    scored = []
    kept = ratio ** s.level3_group_gain_share  # (the groups' expected level-3 bytes over their level-2 bytes)
    for grouping in groupings:
        parts = [level2_of(cols) for cols in grouping]
        candidate = packed(grouping, parts)
        if len(candidate) < len(best):
            best = candidate
        own = len(candidate) - sum(len(p) for p in parts)  # (the grouped container's own fields)
        scored.append((kept * (len(candidate) - own) + own, grouping, own))
    sampled = _Sample(arr.reshape(frames, -1), len(level3), s)
    for estimate, grouping, own in sorted(scored, key=lambda t: t[0]):
        if estimate >= len(best) * (1 + s.level3_group_margin):
            break  # (sorted: the others' estimates are larger)
        if sampled.on:
            guess = sum(min(len(level2_of(cols)), sampled.level3_of(cols)) for cols in grouping)
            if guess + own >= len(best) * (1 + s.level3_group_sample_margin):
                continue  # (the sample says the level-3 coder's groups do not win)
        parts = _coded_while_it_may_win(grouping, level2_of, level3_of, own, len(best) * (1 + s.level3_group_margin))
        if parts is None:
            continue
        candidate = packed(grouping, parts)
        if len(candidate) < len(best):
            best = candidate
    return best


def _coded_while_it_may_win(grouping: list[list[int]], level2_of: Callable[[list[int]], bytes],
                            level3_of: Callable[[list[int]], bytes], own: int, bound: float) -> list[bytes] | None:
    """Each group's container (``level3_of``: the smaller of the level-3 coder's and level 2's),
    the groups coded from the smallest level-2 container up; None as soon as the grouping's
    projected container reaches ``bound`` bytes with groups left to code (those not coded yet
    projected at level 2's bytes times the coded groups' level-3 bytes over their level-2
    bytes, plus ``own``, the grouped container's own fields): a grouping that loses is given up
    after its first groups, the cheapest to code."""
    two = [level2_of(cols) for cols in grouping]
    order = sorted(range(len(grouping)), key=lambda i: (len(two[i]), i))
    parts: list[bytes | None] = [None] * len(grouping)
    coded3 = coded2 = 0
    for k, i in enumerate(order):
        parts[i] = level3_of(grouping[i])
        coded3 += len(parts[i])
        coded2 += len(two[i])
        left = sum(len(two[j]) for j in order[k + 1:])
        if left and coded3 + left * coded3 / max(1, coded2) + own >= bound:
            return None
    return parts  # type: ignore[return-value]


class _Sample:
    """The level-3 coder on the middle frames of ``x`` (``(frames, channels)``) and of its column
    groups (``Settings.level3_group_sample_*``): :meth:`level3_of` estimates a group's level-3
    container as ``stream_bytes`` (the one stream's) times the coder's payload of the group's
    sample over the stream's sample's. ``on``: the recording is long enough to be sampled."""

    def __init__(self, x: np.ndarray, stream_bytes: int, s: _settings.Settings) -> None:
        frames = x.shape[0]
        length = max(s.level3_group_sample_frames, int(s.level3_group_sample_share * frames))
        self.on = length <= s.level3_group_sample_most * frames
        start = (frames - length) // 2
        self.x, self.rows, self.stream_bytes = x, slice(start, start + length), stream_bytes
        self.stream: int | None = None
        self.sizes: dict[tuple[int, ...], int] = {}

    def _coded(self, cols: list[int] | None) -> int:
        from ..coders import mixsignal

        part = self.x[self.rows] if cols is None else self.x[self.rows, cols[0] if len(cols) == 1 else cols]
        return len(mixsignal.encode_values(np.ascontiguousarray(part))["payload"])

    def level3_of(self, cols: list[int]) -> int:
        """The estimated bytes of the level-3 coder's container of the group ``cols``."""
        if self.stream is None:
            self.stream = max(1, self._coded(None))
        key = tuple(cols)
        if key not in self.sizes:
            self.sizes[key] = self._coded(cols)
        return int(self.stream_bytes * self.sizes[key] / self.stream)
