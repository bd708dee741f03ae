"""ubpe: byte-pair encoding over any integer alphabet.

This is the public API of ubpe. ``ubpe.inspect`` is the former name of :func:`describe`, kept as
an alias (it shadows the standard library's ``inspect`` module after ``from ubpe import *``).

:class:`TextTokenizer` is imported on first access (``ubpe.TextTokenizer``, ``from ubpe import
TextTokenizer``): compressing and decompressing arrays never needs ``ubpe.text``.
"""

from .alphabet import Alphabet
from .container import ContainerInfo, compress, decompress, describe, inspect
from .errors import CorruptDataError, FormatVersionError, NotFittedError, UBPEError
from .model import Model
from .tokenizer import Tokenizer

__version__ = "0.1.0"


def __getattr__(name: str):
    """The attributes imported on first access (PEP 562): ``TextTokenizer``."""
    if name == "TextTokenizer":
        from .text import TextTokenizer

        globals()["TextTokenizer"] = TextTokenizer
        return TextTokenizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"TextTokenizer"})


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
