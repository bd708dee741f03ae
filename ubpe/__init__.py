"""ubpe: byte-pair encoding over any integer alphabet.

This is the public API of ubpe.
"""

from .alphabet import Alphabet
from .container import ContainerInfo, compress, decompress, describe, inspect
from .errors import CorruptDataError, FormatVersionError, NotFittedError, UBPEError
from .model import Model
from .tokenizer import Tokenizer

__version__ = "0.1.0"

__all__ = [
    "Alphabet",
    "ContainerInfo",
    "CorruptDataError",
    "FormatVersionError",
    "NotFittedError",
    "Tokenizer",
    "UBPEError",
    "compress",
    "decompress",
    "describe",
    "inspect",
    "__version__",
]
