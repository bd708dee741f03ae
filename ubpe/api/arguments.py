"""The public functions' argument checks: one place for every message a caller may see."""

from __future__ import annotations

import functools
import os
from typing import Any, Callable

import numpy as np

from .._validate import as_sequence, check_choice, check_int
from ..frontend import Stage
from ..frontend import floats as _floats
from ..frontend.chains import PREDICTORS
from ..frontend.delta import DeltaStage
from ..tokenizer import Tokenizer

#: Most dimensions a container's values may have.
MAX_NDIM = 32
#: Largest delta order ``compress(delta=k)`` accepts.
MAX_DELTA = DeltaStage.MAX_ORDER
#: ``compress(..., level=)``: 1 static model and rANS (fast decoding); 2 (default) also the
#: context-mixing coders. What each level tries: :mod:`ubpe.planner`. 3: the smaller of level 2's
#: container and one whose stream is the level-3 signal coder "mixsignal" (:mod:`ubpe.level3`).
LEVELS = (1, 2, 3)
DEFAULT_LEVEL = 2


def as_values(values: Any) -> np.ndarray:
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
    check_time_axis(arr)
    return arr


def check_time_axis(arr: np.ndarray) -> None:
    """Refuse a 2-D array with more channels than frames: almost always a transposed signal."""
    if arr.ndim == 2 and arr.shape[1] > arr.shape[0] > 0:  # no frames yet is no transposition
        raise ValueError(
            f"values have shape {arr.shape}: axis 0 is time (frames) and axis 1 channels, so this "
            f"is {arr.shape[1]} channels of {arr.shape[0]} frames; pass x.T for "
            f"{arr.shape[1]} frames of {arr.shape[0]} channels (or x.reshape(-1) for one channel)"
        )


def float_argument(arr: np.ndarray, step: Any, bits: Any, lossless: Callable[[], Stage]) -> Stage | None:
    """The float stage ``compress`` puts first for float values (None for integers): the lossy
    quantizer with ``step`` or ``bits``, else ``lossless()`` (the lossless mode chosen for them)."""
    if arr.dtype.kind != "f":
        if step is not None or bits is not None:
            raise ValueError(f"step= and bits= quantize floating-point values; these values are {arr.dtype}")
        return None
    if step is not None and bits is not None:
        raise ValueError("pass either step= or bits=, not both")
    if step is not None or bits is not None:
        _floats.check_finite(arr)  # first: the position named is in the values' own shape
        stage = _floats.QuantizeStage(step, bits)
        _floats.quantize(np.zeros(0, arr.dtype), step=step, bits=bits)  # the arguments' errors first
        return stage
    return lossless()


def delta_argument(delta: Any, dtype: np.dtype) -> int | None:
    """``compress``'s ``delta``: None (automatic) or an order in [0, MAX_DELTA]."""
    if delta is None:
        return 0 if dtype.kind == "b" else None
    order = check_int("delta", delta, 0, MAX_DELTA)
    if order and dtype.kind == "b":
        raise ValueError("delta applies to numeric values; bool values are compressed with delta=0")
    return order


def predictor_argument(predictor: Any, delta: Any, dtype: np.dtype) -> tuple | None:
    """``compress``'s ``predictor``: None for "auto", else the forced chain's spec."""
    if not isinstance(predictor, str):
        raise TypeError(f"predictor must be a str, got {type(predictor).__name__}")
    check_choice("predictor", predictor, ("auto", *PREDICTORS))
    if predictor == "auto":
        return None
    if delta is not None:
        raise ValueError("pass either delta= or predictor=, not both")
    spec = PREDICTORS[predictor]
    if spec and dtype.kind == "b":
        raise ValueError(f"predictor={predictor!r} applies to numeric values; bool values take 'none'")
    return spec


def level_argument(level: Any) -> int:
    """``compress``'s ``level``: 1, 2 or 3."""
    level = check_int("level", level, min(LEVELS), max(LEVELS))
    return level


def fit_options_argument(n_tokens: Any, fit_options: dict) -> None:
    """Validate the fit options with the Tokenizer's own messages; refuse ``weighting`` without
    ``n_tokens``."""
    Tokenizer(None, 1 if n_tokens is None else n_tokens, **fit_options)
    if n_tokens is None and "weighting" in fit_options:
        raise ValueError(
            "weighting decides which tokens a model of n_tokens keeps; without n_tokens compress "
            "keeps a prefix of the merges in priority order, which weighting does not change: "
            "pass n_tokens= with weighting="
        )


def threads_argument(threads: Any) -> int:
    """``threads``: None (every core) or an int >= 1."""
    if threads is None:
        return cores()
    return check_int("threads", threads, 1)


@functools.lru_cache(maxsize=1)
def cores() -> int:
    """The machine's cores, asked once (``os.cpu_count()`` took ~10 us, a tenth of decoding a
    short level-1 container)."""
    return max(os.cpu_count() or 1, 1)

