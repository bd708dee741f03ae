"""ubpe: byte-pair encoding over any integer alphabet.

This is the public API of ubpe. ``ubpe.inspect`` is the former name of :func:`describe`, kept as
an alias (it shadows the standard library's ``inspect`` module after ``from ubpe import *``).
"""

from .alphabet import Alphabet
from .container import ContainerInfo, compress, decompress, describe, inspect
from .errors import CorruptDataError, FormatVersionError, NotFittedError, UBPEError
from .model import Model
from .text import TextTokenizer
from .tokenizer import Tokenizer

__version__ = "0.1.0"

__all__ = [
    "Alphabet",
    "ContainerInfo",
    "CorruptDataError",
    "FormatVersionError",
    "Model",
    "TextTokenizer",
    "NotFittedError",
    "Tokenizer",
    "UBPEError",
    "compress",
    "decompress",
    "describe",
    "inspect",
    "__version__",
]
