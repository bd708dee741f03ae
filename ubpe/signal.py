"""Signal transforms for users: exact integer prediction by differences, zigzag, and lossy
quantization of floats with a stated bound.

* :func:`delta` / :func:`undelta`: differences of order ``k`` modulo ``2**bits``;
* :func:`zigzag` / :func:`unzigzag`: signed integers to unsigned ones of the same width;
* :func:`quantize` and :class:`Quantizer`: floats to integers on a grid (lossy).

They are the front end's own transforms (:mod:`ubpe.frontend.delta`,
:mod:`ubpe.frontend.floats`), for preparing values by hand; ``ubpe.compress`` applies them (and
the other stages) by itself.
"""

from __future__ import annotations

from .frontend.delta import delta, undelta, unzigzag, zigzag
from .frontend.floats import Quantizer, quantize

__all__ = ["delta", "undelta", "zigzag", "unzigzag", "quantize", "Quantizer"]
