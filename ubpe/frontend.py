"""Front ends: ordered chains of exact, reversible stages applied before tokenization.

A container (format version 2) records its front end as a list of stages, applied in order by
the writer and inverted in reverse order by the reader, e.g. ``[{"stage": "delta", "order":
2}]``. Every stage works on the same layout: a 2-D array ``(channels, frames)`` of native-endian
integers, one row per channel, each row transformed on its own (:func:`to_channels` is the one
rule that maps any array to that layout).

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
  may appear in a container: ``"floatgrid"`` and ``"quantize"``, :mod:`ubpe.quantize`).

Adding a stage means writing the class and calling :func:`register`; the container parses and
inverts any registered stage, and the planner offers whatever chains it is given.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from ._validate import check_int, expect_map, field_int, short
from .errors import CorruptDataError
from .signal import delta as _delta
from .signal import undelta as _undelta

__all__ = [
    "Stage", "DeltaStage", "STAGES", "MAX_STAGES", "register", "stage",
    "to_channels", "from_channels", "forward", "inverse", "parse_chain", "chain_dtypes", "chain_version",
    "growing_bytes",
]

#: Most stages a container may chain.
MAX_STAGES = 8


class Stage:
    """Base class of the front-end stages (see the module docstring for the protocol)."""

    name: ClassVar[str] = ""
    accepts_float: ClassVar[bool] = False
    #: Whether ``inverse`` runs at memory speed (tens of millions of values per second); the
    #: fast level (``compress(level=1)``) only chooses chains of such stages.
    fast_inverse: ClassVar[bool] = True

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:  # pragma: no cover
        raise NotImplementedError

    def inverse(self, y: np.ndarray, params: dict[str, Any]) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def check(self, params: dict[str, Any], dtype: np.dtype,
              shape: tuple[int, int]) -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError

    def output_dtype(self, dtype: np.dtype, params: dict[str, Any]) -> np.dtype:
        return np.dtype(dtype)

    @staticmethod
    def version(params: dict[str, Any]) -> int:
        """The oldest container format version that defines these params (0: every version
        that defines the stage); a writer marks its container with at least it, a reader
        refuses them in an older container. Override when a param value is newer than the stage."""
        return 0

    @staticmethod
    def scalable(params: dict[str, Any]) -> int:
        """Bytes of the recorded params that grow with the number of values (data a stage codes
        in its params, as "mult"'s digits): the planner scales them with the token stream when
        it sizes a sample. Most stages' params do not grow: 0."""
        return 0


#: Registered stages by name.
STAGES: dict[str, type[Stage]] = {}


def growing_bytes(record: list[dict[str, Any]]) -> int:
    """Bytes of a chain's recorded params (``forward``'s record) that grow with the number of
    values (``Stage.scalable``, as "mult"'s digits)."""
    return sum(STAGES[entry["stage"]].scalable(entry) for entry in record)


def register(cls: type[Stage]) -> type[Stage]:
    """Register a stage class under ``cls.name`` (usable as a decorator)."""
    if not cls.name or cls.name in STAGES:
        raise ValueError(f"stage name {cls.name!r} is empty or already registered")
    STAGES[cls.name] = cls
    return cls


@register
class DeltaStage(Stage):
    """Differences of order ``order`` along each channel (:func:`ubpe.signal.delta`), modulo
    ``2**bits``, as signed integers of the same width. Parameters: ``{"order": k}``,
    ``1 <= k <= MAX_ORDER``; not defined for bool values."""

    name = "delta"
    MAX_ORDER: ClassVar[int] = 4

    def __init__(self, order: int = 1) -> None:
        self.order = check_int("order", order, 1, self.MAX_ORDER)

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        if x.dtype.kind not in "iu":
            raise TypeError(f"the delta stage takes integer values, got dtype {x.dtype}")
        return _delta(x, self.order, axis=-1), {"order": self.order}

    def inverse(self, y: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        # signed -> same-width signed: the input dtype is restored by a view afterwards
        return _undelta(y, params["order"], dtype=y.dtype, axis=-1)

    def check(self, params: dict[str, Any], dtype: np.dtype, shape: tuple[int, int]) -> dict[str, Any]:
        expect_map(params, "front: delta", ("order",))
        field_int(params, "order", 1, self.MAX_ORDER, where="front: delta")
        if dtype.kind not in "iu":
            raise CorruptDataError(f"front: 'delta' is not defined for {dtype} values")
        return params

    def output_dtype(self, dtype: np.dtype, params: dict[str, Any]) -> np.dtype:
        return _SIGNED_OF_WIDTH[np.dtype(dtype).itemsize]


#: The signed dtype of each width (building one from its name cost a microsecond).
_SIGNED_OF_WIDTH = {w: np.dtype(f"i{w}") for w in (1, 2, 4, 8)}


def stage(name: str, **options: Any) -> Stage:
    """A configured stage by name, e.g. ``stage("delta", order=2)``."""
    if name not in STAGES:
        raise ValueError(f"unknown front-end stage {name!r}; registered: {sorted(STAGES)}")
    return STAGES[name](**options)


# ============================================================================ layout


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


# ============================================================================ chains


def forward(x: np.ndarray, chain: list[Stage]) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Apply ``chain`` to ``x`` (``(C, F)``); return the output and the recorded chain."""
    record = []
    for s in chain:
        x, params = s.forward(x)
        record.append({"stage": s.name, **params})
    return x, record


def chain_version(record: list[dict[str, Any]]) -> int:
    """The oldest format version defining every stage's params of ``record`` (0: any); see
    :meth:`Stage.version`."""
    return max((STAGES[e["stage"]].version(e) for e in record if e.get("stage") in STAGES), default=0)


def chain_dtypes(record: list[dict[str, Any]], dtype: np.dtype) -> list[np.dtype]:
    """The dtype entering each stage of a (checked) chain, then the dtype of its output."""
    dtypes = [np.dtype(dtype)]
    for entry in record:
        params = {k: v for k, v in entry.items() if k != "stage"}
        dtypes.append(_instance(entry["stage"]).output_dtype(dtypes[-1], params))
    return dtypes


def inverse(y: np.ndarray, record: list[dict[str, Any]], dtype: np.dtype) -> np.ndarray:
    """Invert a (checked) recorded chain: ``y`` in the chain's output dtype, back to ``dtype``."""
    dtypes = chain_dtypes(record, dtype)
    for i in range(len(record) - 1, -1, -1):
        entry = record[i]
        params = {k: v for k, v in entry.items() if k != "stage"}
        y = _instance(entry["stage"]).inverse(y, params)
        if y.dtype != dtypes[i]:
            y = y.view(dtypes[i]) if y.dtype.itemsize == dtypes[i].itemsize else y.astype(dtypes[i])
    return y


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
    out = []
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
        current = s.output_dtype(current, params)
    if current.kind == "f":
        raise CorruptDataError(
            f"container: dtype {dtype} needs a first front-end stage that maps floating-point "
            "values to integers ('floatgrid' or 'quantize')"
        )
    return out
