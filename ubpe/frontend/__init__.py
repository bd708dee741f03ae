"""Front ends: ordered chains of exact, reversible stages applied before tokenization.

A container records its front end as a list of stages, applied in order by the writer and
inverted in reverse order by the reader, e.g. ``[{"stage": "delta", "order": 2}]``. Every stage
works on the same layout: a 2-D array ``(channels, frames)`` of native-endian integers (floats
only before a float stage), one row per channel (:func:`to_channels` is the one rule that maps
any array to that layout).

A stage is a class registered by name (:func:`register`) with

* ``forward(x) -> (y, params)``: ``x`` of shape ``(C, F)``; ``y`` of the same shape, of dtype
  ``output_dtype(x.dtype, params)``; ``params`` a dict of ints, strs, bytes and lists of ints
  (per-channel or per-block parameters), msgpack-ready, without the key ``"stage"``;
* ``inverse(y, params) -> x``: exact, ``x`` in the stage's input dtype;
* ``check(params, dtype, shape) -> params``: validates *untrusted* params read from a
  container for an input of ``dtype`` and ``shape == (channels, frames)`` (per-channel or
  per-block parameters are checked against it), raising :class:`~ubpe.CorruptDataError`, and
  returns them normalised;
* ``output_dtype(dtype, params) -> dtype`` (may differ from the input's, e.g. a quantizer);
* ``accepts_float``: whether the stage takes floating-point input (the only way a float dtype
  may appear in a container: ``"floatgrid"`` and ``"quantize"``, :mod:`ubpe.frontend.floats`);
* ``fast_inverse``: whether ``inverse`` runs at memory speed (level 1 offers only such chains);
* ``scalable(params)``: bytes of its params that grow with the values (data it codes there).

One module per stage: :mod:`~ubpe.frontend.delta`, :mod:`~ubpe.frontend.lpc`,
:mod:`~ubpe.frontend.adaptive`, :mod:`~ubpe.frontend.grid`, :mod:`~ubpe.frontend.rank`,
:mod:`~ubpe.frontend.decorrelate`, :mod:`~ubpe.frontend.mult`, :mod:`~ubpe.frontend.floats` (the exact
grid and the lossy quantizer), :mod:`~ubpe.frontend.floatcodes` (the decimal and binary modes).
Importing this package imports and so registers every one of them: decoding never depends on
what else was imported. The named chains (``compress(predictor=name)``) are
:data:`~ubpe.frontend.chains.PREDICTORS`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validate import short
from ..errors import CorruptDataError
from ._stage import STAGES, Stage, register

__all__ = [
    "Stage", "STAGES", "MAX_STAGES", "register", "stage",
    "to_channels", "from_channels", "forward", "inverse", "parse_chain", "chain_dtypes", "growing_bytes",
]

#: Most stages a container may chain.
MAX_STAGES = 8


def growing_bytes(record: list[dict[str, Any]]) -> int:
    """Bytes of a chain's recorded params (``forward``'s record) that grow with the number of
    values (``Stage.scalable``, as "mult"'s digits)."""
    return sum(STAGES[entry["stage"]].scalable(entry) for entry in record)


def stage(name: str, **options: Any) -> Stage:
    """A configured stage by name, e.g. ``stage("delta", order=2)``."""
    if name not in STAGES:
        raise ValueError(f"unknown front-end stage {name!r}; registered: {sorted(STAGES)}")
    return STAGES[name](**options)


def to_channels(arr: np.ndarray) -> np.ndarray:
    """The ``(channels, frames)`` layout of ``arr`` (native byte order, C-contiguous).

    The rule: for ``ndim >= 2`` axis 0 is time (frames) and the other axes, flattened in C
    order, are channels; a 1-D array is one channel; a 0-d array one channel of one frame.
    """
    native = arr.dtype.newbyteorder("=") if arr.dtype.byteorder == ">" else arr.dtype
    if arr.ndim <= 1:
        return np.ascontiguousarray(arr.reshape(1, -1), dtype=native)
    frames = arr.shape[0]
    channels = math.prod(arr.shape[1:])
    return np.ascontiguousarray(arr.reshape(frames, channels).T, dtype=native)


def from_channels(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The inverse of :func:`to_channels`: ``x`` of shape ``(channels, frames)`` to ``shape``."""
    if len(shape) <= 1:
        return x.reshape(shape)
    return np.ascontiguousarray(x.T).reshape(shape)


def forward(x: np.ndarray, chain: list[Stage]) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Apply ``chain`` to ``x`` (``(C, F)``); return the output and the recorded chain."""
    record = []
    for s in chain:
        x, params = s.forward(x)
        record.append({"stage": s.name, **params})
    return x, record


def chain_dtypes(record: list[dict[str, Any]], dtype: np.dtype) -> list[np.dtype]:
    """The dtype entering each stage of a (checked) chain, then the dtype of its output."""
    if type(record) is CheckedChain and record.dtypes[0] == dtype:
        return record.dtypes  # (found by parse_chain)
    dtypes = [np.dtype(dtype)]
    for entry in record:
        params = {k: v for k, v in entry.items() if k != "stage"}
        dtypes.append(_instance(entry["stage"]).output_dtype(dtypes[-1], params))
    return dtypes


def inverse(y: np.ndarray, record: list[dict[str, Any]], dtype: np.dtype,
            dtypes: list[np.dtype] | None = None) -> np.ndarray:
    """Invert a (checked) recorded chain: ``y`` in the chain's output dtype, back to ``dtype``
    (``dtypes``: ``chain_dtypes(record, dtype)`` when the caller has it already)."""
    if dtypes is None:
        dtypes = chain_dtypes(record, dtype)
    stage_params = record.params if type(record) is CheckedChain else None
    for i in range(len(record) - 1, -1, -1):
        entry = record[i]
        params = {k: v for k, v in entry.items() if k != "stage"} if stage_params is None else stage_params[i]
        y = _instance(entry["stage"]).inverse(y, params)
        if y.dtype != dtypes[i]:
            y = y.view(dtypes[i]) if y.dtype.itemsize == dtypes[i].itemsize else y.astype(dtypes[i])
    return y


class CheckedChain(list):
    """A chain as :func:`parse_chain` checked it (equal to the plain list of entries, and written
    the same) with what decoding would otherwise rebuild on every call: ``dtypes``, the dtype
    entering each stage then the chain's output (:func:`chain_dtypes`), and ``params``, each
    entry's params without its ``"stage"`` (what a stage's ``inverse`` reads). Read only."""

    __slots__ = ("dtypes", "params")


#: One default instance per stage class, for ``check``, ``output_dtype`` and ``inverse`` (which
#: read everything from their params): building one per call cost more than decoding a short
#: channel (``LpcStage()`` validates its window by running an analysis).
_INSTANCES: dict[type[Stage], Stage] = {}


def _instance(name: str) -> Stage:
    cls = STAGES[name]
    s = _INSTANCES.get(cls)
    if s is None:
        try:
            s = cls()
        except TypeError:  # a stage whose constructor needs options: inverse/check need none
            s = cls.__new__(cls)
        _INSTANCES[cls] = s
    return s


def parse_chain(front: Any, dtype: np.dtype, shape: tuple[int, int]) -> list[dict[str, Any]]:
    """Validate an untrusted ``front`` list for values of ``dtype`` in the layout ``shape ==
    (channels, frames)``; raise CorruptDataError."""
    if not isinstance(front, list):
        raise CorruptDataError(f"container: 'front' must be a list of stages, got {type(front).__name__}")
    if len(front) > MAX_STAGES:
        raise CorruptDataError(f"front: {len(front)} stages, at most {MAX_STAGES} are allowed")
    current = np.dtype(dtype)
    out = CheckedChain()
    out.dtypes, out.params = [current], []
    for i, entry in enumerate(front):
        if not isinstance(entry, dict) or not isinstance(entry.get("stage"), str):
            raise CorruptDataError(f"front: stage {i} must be a map with a string 'stage'")
        name = entry["stage"]
        if name not in STAGES:
            raise CorruptDataError(f"front: stage {short(name)} is not defined in this format version")
        s = _instance(name)
        if current.kind == "f" and not s.accepts_float:
            raise CorruptDataError(f"front: stage {name!r} does not take floating-point values")
        params = s.check({k: v for k, v in entry.items() if k != "stage"}, current, shape)
        out.append({"stage": name, **params})
        out.params.append(params)
        current = s.output_dtype(current, params)
        out.dtypes.append(current)
    if current.kind == "f":
        raise CorruptDataError(
            f"container: dtype {dtype} needs a first front-end stage that maps floating-point "
            "values to integers ('floatgrid' or 'quantize')"
        )
    return out



# every stage registers itself here, before anything can decode (noqa: the imports are the point)
from . import adaptive, decorrelate, delta, floatcodes, floats, grid, lpc, mult, rank  # noqa: E402,F401
