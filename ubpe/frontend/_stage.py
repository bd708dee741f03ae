"""The Stage protocol and the registry of stages by name (:mod:`ubpe.frontend` says what a stage is)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np


class Stage:
    """Base class of the front-end stages (see the module docstring for the protocol)."""

    name: ClassVar[str] = ""
    #: The stage's number in a container (fixed once a format version defines it; unique).
    number: ClassVar[int] = -1
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
    def scalable(params: dict[str, Any]) -> int:
        """Bytes of the recorded params that grow with the number of values (data a stage codes
        in its params, as "mult"'s digits): the planner scales them with the token stream when
        it sizes a sample. Most stages' params do not grow: 0."""
        return 0


#: Registered stages by name.
STAGES: dict[str, type[Stage]] = {}


def register(cls: type[Stage]) -> type[Stage]:
    """Register a stage class under ``cls.name`` (usable as a decorator)."""
    if not cls.name or cls.name in STAGES:
        raise ValueError(f"stage name {cls.name!r} is empty or already registered")
    if cls.number < 0 or any(s.number == cls.number for s in STAGES.values()):
        raise ValueError(f"stage {cls.name!r}: number {cls.number} is not a free number >= 0")
    STAGES[cls.name] = cls
    return cls



#: The signed dtype of each width (building one from its name costs a microsecond, several per decode).
SIGNED_OF_WIDTH = {w: np.dtype(f"i{w}") for w in (1, 2, 4, 8)}
#: The unsigned dtype of each width.
UNSIGNED_OF_WIDTH = {w: np.dtype(f"u{w}") for w in (1, 2, 4, 8)}
