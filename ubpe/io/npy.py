"""The npy format: numpy's own files, read with ``allow_pickle=False``, and memory mapping."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from .._validate import expect_map, field_bytes, field_str
from ..errors import CorruptDataError
from ._signal import check_values


def read(name: str) -> np.ndarray:
    with open(name, "rb") as f:  # FileNotFoundError as such
        raw = f.read()
    if raw[:4] == b"PK\x03\x04":
        raise ValueError(f"{name}: is an .npz archive, not a single .npy array")
    if raw[:6] != b"\x93NUMPY":
        raise ValueError(f"{name}: not a readable .npy file (no NUMPY magic at its start)")
    try:
        arr = np.load(io.BytesIO(raw), allow_pickle=False)
    except ValueError as e:
        if "allow_pickle" in str(e):
            raise TypeError(f"{name}: the .npy file holds Python objects; ubpe reads integer arrays only") from None
        raise ValueError(f"{name}: not a readable .npy file ({e})") from None
    except Exception as e:  # numpy raises several types for damaged headers
        raise ValueError(f"{name}: not a readable .npy file ({e})") from None
    return check_values(arr, name, ".npy")


#: Longest .npy header kept in a source map to write the file back byte for byte.
MAX_NPY_HEADER = 1024


def to_bytes(values: np.ndarray, source: dict | None) -> bytes:
    """An .npy file of ``values``: numpy's own, or laid out as the file read (``source``)."""
    order = "F" if source and source.get("order") == "F" and values.ndim > 1 else "C"
    if source and "header" in source:
        header = source["header"]
        shape, fortran, dtype = header_fields(header)
        if shape == values.shape and dtype == values.dtype and fortran == (order == "F"):
            return header + values.tobytes(order=order)
    buf = io.BytesIO()
    np.save(buf, np.asfortranarray(values) if order == "F" else values, allow_pickle=False)
    return buf.getvalue()


def header_fields(header: bytes) -> tuple[tuple[int, ...], bool, np.dtype]:
    buf = io.BytesIO(header)
    try:
        version = np.lib.format.read_magic(buf)
        read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
        if version not in read:
            raise ValueError(f"version {version} is not kept")
        shape, fortran, dtype = read[version](buf, max_header_size=MAX_NPY_HEADER)
    except Exception as e:  # numpy raises several types for damaged headers
        raise CorruptDataError(f"source (npy metadata): the stored header does not parse ({e})") from None
    if buf.tell() != len(header):
        raise CorruptDataError("source (npy metadata): the stored header has trailing bytes")
    return tuple(shape), bool(fortran), np.dtype(dtype)


def source_of(name: str, arr: np.ndarray) -> dict[str, Any]:
    """{"format": "npy"}, plus "order": "F" for a Fortran-ordered file, plus the file's own header
    bytes when numpy would write another one (another writer's padding or version), so that the
    file comes back byte for byte."""
    source: dict[str, Any] = {"format": "npy"}
    if arr.ndim > 1 and arr.flags.f_contiguous and not arr.flags.c_contiguous:
        source["order"] = "F"
    with open(name, "rb") as f:
        raw = f.read()
    mine = to_bytes(arr, source)
    if mine != raw:
        header = raw[: len(raw) - arr.nbytes] if arr.nbytes <= len(raw) else b""
        if 0 < len(header) <= MAX_NPY_HEADER and raw[len(header):] == arr.tobytes(order=source.get("order", "C")):
            try:
                if header_fields(header) == (arr.shape, source.get("order") == "F", arr.dtype):
                    source["header"] = header
            except CorruptDataError:
                pass  # a header we cannot check is not kept: the file comes back in numpy's layout
    return source


def check_source(source: dict) -> dict:
    where = "source (npy metadata)"
    expect_map(source, where, ("format",), ("order", "header"))
    if "order" in source:
        field_str(source, "order", where=where, choices=("C", "F"))
    if "header" in source:
        field_bytes(source, "header", where=where, max_size=MAX_NPY_HEADER)
        header_fields(source["header"])
    return source
