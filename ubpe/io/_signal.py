"""What a file reader returns (:class:`Signal`) and the checks every format shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validate import QUANTIZE_HINT

#: Bytes of one piece of a long ``source`` field (a container keeps values of at most 1 KiB).
SOURCE_PIECE = 1024


def integer_dtype(dtype: Any, what: str) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{what}: {dtype!r} is not a numpy dtype ({e})") from None
    if dt.kind in "fc":
        raise TypeError(f"{what}: dtype {dt} is floating-point; {QUANTIZE_HINT}")
    if dt.kind not in "iu":
        raise TypeError(f"{what}: dtype {dt} is not an integer dtype (use e.g. '<i2', 'u1', '<i4')")
    return dt


def check_values(arr: np.ndarray, path: str, fmt: str) -> np.ndarray:
    if arr.dtype.kind == "c":
        raise TypeError(f"{path}: the {fmt} data is {arr.dtype} (complex); {QUANTIZE_HINT}")
    if arr.dtype.kind not in "iubf":
        raise TypeError(f"{path}: the {fmt} data has dtype {arr.dtype}; ubpe reads integer and float arrays only")
    if arr.ndim == 0:
        raise ValueError(f"{path}: the {fmt} file holds a single scalar, not a sequence")
    return arr


@dataclass(frozen=True)
class Signal:
    """Values read from a file, the sample rate when it has one, and how to write it back.

    ``source`` describes the file (``{"format": "wav", "rate": ..., "channels": ..., ...}``,
    ``{"format": "csv", "delimiter": ..., "header": ..., "column": ...}``, ``{"format": "npy"}``):
    pass it to ``container.compress(..., source=...)``, and give what
    ``container.describe(data).source`` returns to :func:`write_values` to write the same kind
    of file (a WAV byte for byte, header and other chunks included).
    """

    values: np.ndarray
    rate: int | None = None
    source: dict[str, Any] | None = None
