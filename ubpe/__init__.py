"""ubpe: byte-pair encoding over any integer alphabet."""

from .errors import CorruptDataError, FormatVersionError, NotFittedError, UBPEError

__version__ = "0.1.0"

__all__ = ["CorruptDataError", "FormatVersionError", "NotFittedError", "UBPEError", "__version__"]
