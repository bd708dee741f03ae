"""Sealed files: the envelope every ubpe model file shares (a tokenizer, a text tokenizer, a
shared model).

A sealed file is the msgpack map ``{"magic": str, "version": int, "body": bin, "sha256":
bin(32)}``, exactly those four keys, where ``sha256`` is the SHA-256 of ``body`` (docs/format.md,
"Model files"). The body's own fields are the caller's to check.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgpack

from .._validate import expect_map, field_bytes, short
from ..errors import CorruptDataError, FormatVersionError

__all__ = ["seal", "open_sealed", "unpack"]

_KEYS = ("magic", "version", "body", "sha256")


def seal(magic: str, version: int, body: bytes) -> bytes:
    """The sealed file of ``body``; equal arguments give equal bytes."""
    return msgpack.packb({"magic": magic, "version": version, "body": body,
                          "sha256": hashlib.sha256(body).digest()}, use_bin_type=True)


def unpack(data: Any, what: str) -> Any:
    """``data`` (bytes-like) as msgpack with str map keys; ``CorruptDataError`` naming ``what``
    when it does not parse, ``TypeError`` when it is not bytes."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    try:
        return msgpack.unpackb(bytes(data), raw=False, strict_map_key=True)
    except Exception as e:  # msgpack raises several unrelated types
        raise CorruptDataError(f"{what} bytes do not parse ({type(e).__name__})") from None


def open_sealed(data: Any, magic: str, newest: int, what: str) -> tuple[int, bytes]:
    """(version, body) of the sealed file ``data`` whose magic must be ``magic`` and version at
    most ``newest``; the checksum is checked. ``what`` names the file in errors ("tokenizer").

    Raises ``CorruptDataError`` (not such a file, malformed, damaged) or ``FormatVersionError``
    (a newer version), ``TypeError`` when ``data`` is not bytes.
    """
    d = unpack(data, what)
    if not isinstance(d, dict) or d.get("magic") != magic:
        raise CorruptDataError(f"not a ubpe {what} (bad magic)")
    version = d.get("version")
    if type(version) is not int or version < 1:
        raise CorruptDataError(f"{what}: invalid version {short(version)}")
    if version > newest:
        raise FormatVersionError(f"this {what}", version, newest)
    expect_map(d, what, _KEYS)
    digest = field_bytes(d, "sha256", where=what, size=32)
    body = field_bytes(d, "body", where=what)
    if hashlib.sha256(body).digest() != digest:
        raise CorruptDataError(f"{what}: checksum mismatch (the bytes are damaged)")
    return version, body
