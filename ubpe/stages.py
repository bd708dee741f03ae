"""Prediction stages of the front end: :mod:`ubpe.predict`'s transforms, one per channel.

Each stage applies one of :mod:`ubpe.predict`'s exact transforms to every row (channel) of the
``(channels, frames)`` layout on its own, and records one params map per channel:
``{"stage": name, "channels": [params of channel 0, params of channel 1, ...]}`` with each
entry exactly as the transform returns it. :meth:`check` validates every entry with the
transform's ``check_*_params`` against the channel's length and the stage's input dtype, so
untrusted params raise :class:`~ubpe.CorruptDataError` before any kernel runs.

* ``lpc``: exact block linear prediction (:func:`ubpe.predict.lpc_forward`); output the signed
  integer type of the input's width.
* ``adaptive``: a cascade of sign-sign LMS predictors (:func:`ubpe.predict.adaptive_forward`),
  nothing stored but the stage list; output the signed type of the input's width.
* ``rank``: each value's rank among its channel's distinct values
  (:func:`ubpe.predict.rank_forward`); output the smallest unsigned dtype that holds the
  largest channel's ``count - 1``.

Importing this module registers the stages (:func:`ubpe.frontend.register`).
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar

import numpy as np

from . import predict
from ._validate import expect_map
from .errors import CorruptDataError
from .frontend import Stage, register

__all__ = ["LpcStage", "AdaptiveStage", "RankStage"]


class _PerChannel(Stage):
    """A transform of :mod:`ubpe.predict` applied to each channel, params recorded per channel."""

    _forward: ClassVar[Callable[..., tuple[np.ndarray, dict]]]
    _inverse: ClassVar[Callable[[np.ndarray, dict], np.ndarray]]
    _check: ClassVar[Callable[[Any, int, Any], Any]]

    def _options(self) -> dict[str, Any]:
        return {}

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        if x.dtype.kind not in "iu":
            raise TypeError(f"the {self.name} stage takes integer values, got dtype {x.dtype}")
        outs, params = [], []
        for row in x:
            y, p = type(self)._forward(np.ascontiguousarray(row), **self._options())
            outs.append(y)
            params.append(p)
        out_dtype = self.output_dtype(x.dtype, {"channels": params})
        y = np.empty(x.shape, dtype=out_dtype)
        for i, r in enumerate(outs):
            y[i] = r
        return y, {"channels": params}

    def inverse(self, y: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        rows = [type(self)._inverse(np.ascontiguousarray(row), p) for row, p in zip(y, params["channels"])]
        if not rows:
            return np.zeros(y.shape, dtype=y.dtype)
        return np.stack(rows)

    def _where(self) -> str:
        return f"front: {self.name}"

    def check(self, params: dict[str, Any], dtype: np.dtype, shape: tuple[int, int]) -> dict[str, Any]:
        where = self._where()
        expect_map(params, where, ("channels",))
        channels = params["channels"]
        if dtype.kind not in "iu":
            raise CorruptDataError(f"{where}: not defined for {dtype} values")
        if not isinstance(channels, list) or len(channels) != shape[0]:
            raise CorruptDataError(f"{where}: 'channels' must be a list of {shape[0]} params maps")
        for p in channels:
            self._check_channel(p, dtype, shape[1])
        return params

    def _check_channel(self, p: Any, dtype: np.dtype, frames: int) -> None:
        type(self)._check(p, frames, self.output_dtype(dtype, {}))
        if p["unsigned"] != int(dtype.kind == "u"):
            raise CorruptDataError(f"{self._where()}: 'unsigned' contradicts the {dtype} input")

    def output_dtype(self, dtype: np.dtype, params: dict[str, Any]) -> np.dtype:
        return np.dtype(f"i{np.dtype(dtype).itemsize}")


@register
class LpcStage(_PerChannel):
    """Exact block LPC per channel (:func:`ubpe.predict.lpc_forward`, its default options)."""

    name = "lpc"
    _forward = staticmethod(predict.lpc_forward)
    _inverse = staticmethod(predict.lpc_inverse)
    _check = staticmethod(predict.check_lpc_params)


@register
class AdaptiveStage(_PerChannel):
    """Sign-sign LMS cascade per channel (:func:`ubpe.predict.adaptive_forward`, its default
    cascade :data:`ubpe.predict.DEFAULT_STAGES`)."""

    name = "adaptive"
    fast_inverse = False  # the decoder repeats the cascade's arithmetic: ~3 M values/s
    _forward = staticmethod(predict.adaptive_forward)
    _inverse = staticmethod(predict.adaptive_inverse)
    _check = staticmethod(predict.check_adaptive_params)


def _rank_dtype(count: int) -> np.dtype:
    """The smallest unsigned dtype holding ranks ``0 .. count - 1``."""
    return np.dtype(next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64)
                         if count <= np.iinfo(t).max + 1))


@register
class RankStage(_PerChannel):
    """Ranks among each channel's distinct values (:func:`ubpe.predict.rank_forward`)."""

    name = "rank"
    _forward = staticmethod(predict.rank_forward)
    _inverse = staticmethod(predict.rank_inverse)
    _check = staticmethod(predict.check_rank_params)

    def output_dtype(self, dtype: np.dtype, params: dict[str, Any]) -> np.dtype:
        counts = [p["count"] for p in params.get("channels", [])]
        return _rank_dtype(max(counts, default=0))

    def _check_channel(self, p: Any, dtype: np.dtype, frames: int) -> None:
        where = self._where()
        predict.check_rank_params(p, frames, np.dtype(np.uint64))
        if p["bits"] != 8 * dtype.itemsize or p["unsigned"] != int(dtype.kind == "u"):
            raise CorruptDataError(f"{where}: 'bits' or 'unsigned' contradicts the {dtype} input")
