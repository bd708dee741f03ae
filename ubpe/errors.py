"""The library's exceptions.

Misuse (a wrong type or an out-of-range argument) raises the builtin ``TypeError`` or
``ValueError`` at the call site. Problems with *data* (bytes that fail to parse, are truncated,
inconsistent, or written by a newer version) raise a subclass of :class:`UBPEError`, so
``except ubpe.UBPEError`` catches every library failure about data.
"""

from __future__ import annotations


class UBPEError(Exception):
    """Base class of every error ubpe raises about data or state."""


class NotFittedError(UBPEError, RuntimeError):
    """A tokenizer was used (encode, decode, save) before ``fit``."""


class CorruptDataError(UBPEError, ValueError):
    """Bytes fail to parse, are truncated, or are inconsistent with themselves."""


class FormatVersionError(UBPEError):
    """Data written by a newer format version than this ubpe reads.

    Attributes ``found`` and ``supported`` hold the two versions.
    """

    def __init__(self, what: str, found: int, supported: int) -> None:
        self.found = found
        self.supported = supported
        super().__init__(
            f"{what} has format version {found}, but this ubpe reads versions up to "
            f"{supported}: upgrade ubpe"
        )
