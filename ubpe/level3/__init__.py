"""Level 3: the strongest (and slowest) lossless coder of integer signals (issue 29).

    encode(values, *, params=None, search=True, front="auto") -> bytes
    decode(data, *, max_values=MAX_VALUES) -> the array: same dtype (native byte order), shape

``values``: (frames,) or (frames, channels), any integer dtype. Prediction is a mix of
least-squares predictors, NLMS cascades and bias estimates in integer arithmetic, and the
residuals are coded by context mixing (``ubpe._kernels.mixsignal``, normative for the payload);
the encoder chooses a front-end chain and a parameter vector on samples and stores them in the
header, so decoding is one pass.

One module per concern:

- :mod:`ubpe.level3.format`: the bytes (header, parameter vectors of versions 1-6, value
  tables, front-end records), their validation, and the decoder;
- :mod:`ubpe.level3.encoder`: ``encode`` and the choices it makes (parameter search, value
  model, exact-value contexts);
- :mod:`ubpe.level3.front`: the front-end chain's choice;
- :mod:`ubpe.level3.measure`: the sizes and samples those choices compare;
- :mod:`ubpe.level3.search`: the search's moves, plans and work budgets;
- :mod:`ubpe.level3.cost`: the deterministic model of the encoder's CPU time that lowers the
  search's work where it predicts an encode below issue 29's floor.
"""

from __future__ import annotations

from .encoder import CANDIDATES, LONG_MEMORY, encode
from .format import (
    CODER,
    DEFAULTS,
    DTYPES,
    MAX_CHANNELS,
    MAX_VALUES,
    MODE_FRONT,
    MODE_MODEL,
    MODE_RAW,
    VERSION,
    VERSIONS,
    base_params,
    decode,
    default_params,
    describe_head,
)

__all__ = [
    "CANDIDATES",
    "CODER",
    "DEFAULTS",
    "DTYPES",
    "LONG_MEMORY",
    "MAX_CHANNELS",
    "MAX_VALUES",
    "MODE_FRONT",
    "MODE_MODEL",
    "MODE_RAW",
    "VERSION",
    "VERSIONS",
    "base_params",
    "decode",
    "default_params",
    "describe_head",
    "encode",
]
