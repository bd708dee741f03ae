"""ubpe: byte-pair encoding over any integer alphabet.

This is the public API of ubpe. Its names are imported on first access (PEP 562), so ``import
ubpe`` costs a few milliseconds: numpy, msgpack and the compiled kernels (numba) load when a
function that needs them is first called. ``ubpe.inspect`` is the former name of
:func:`describe`, kept as an alias (it shadows the standard library's ``inspect`` module after
``from ubpe import *``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import CorruptDataError, FormatVersionError, NotFittedError, UBPEError

__version__ = "0.1.0"

#: Each public name and the module that defines it.
_LAZY = {
    "Alphabet": "alphabet",
    "ContainerInfo": "api",
    "compress": "api",
    "compress_to": "api",
    "decompress": "api",
    "decompress_to": "api",
    "describe": "api",
    "inspect": "api",
    "Model": "model",
    "SharedModel": "shared",
    "fit_shared": "shared",
    "Tokenizer": "tokenizer",
    "TextTokenizer": "text",
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from .alphabet import Alphabet
    from .api import ContainerInfo, compress, compress_to, decompress, decompress_to, describe, inspect
    from .model import Model
    from .shared import SharedModel, fit_shared
    from .text import TextTokenizer
    from .tokenizer import Tokenizer


def __getattr__(name: str) -> Any:
    """The public names, imported on first access."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Alphabet",
    "ContainerInfo",
    "CorruptDataError",
    "FormatVersionError",
    "Model",
    "TextTokenizer",
    "NotFittedError",
    "SharedModel",
    "Tokenizer",
    "UBPEError",
    "compress",
    "compress_to",
    "decompress",
    "decompress_to",
    "describe",
    "fit_shared",
    "inspect",
    "__version__",
]
