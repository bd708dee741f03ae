"""Containers of any front-end chain: what ``compress(predictor=name)`` writes for a named chain,
for chains without a name (stages configured by hand, chains the writer never proposes)."""

from __future__ import annotations

import numpy as np

from ubpe import frontend
from ubpe.api import writer
from ubpe.format import container
from ubpe.frontend.chains import build_chain
from ubpe.planner import current


def compress_chain(x: np.ndarray, chain: list | tuple, level: int = 1) -> bytes:
    """The container ``compress(x, level=level)`` writes when its front end is ``chain``: a list
    of configured stages, or a spec of (name, options) pairs as in ``PREDICTORS``. Integer
    values of at least one dimension; the planner's own search (model, coders), one chain."""
    x = np.asarray(x)
    stages = build_chain(tuple(chain)) if chain and isinstance(chain[0], tuple) else list(chain)
    native = x.dtype.newbyteorder("=")
    flat = np.ascontiguousarray(x.reshape(-1), dtype=native)
    shape = [int(d) for d in x.shape]
    base = {"dtype": x.dtype.str, "shape": shape, "crc": container.values_crc(x.dtype, shape, flat), "front": []}
    xc = frontend.to_channels(x)
    if x.size == 0:
        return container.pack(writer.empty_fields(base, xc, stages, level))
    return container.pack(writer.planned_fields(base, xc, [stages], level, None, {}, current(), 1))


def compress_chains(x: np.ndarray, specs: list, level: int = 1) -> bytes:
    """The container ``compress(x, level=level)`` writes when the automatic choice measures the
    chains ``specs`` (as ``auto_chains`` gives them) instead of its own."""
    x = np.asarray(x)
    native = x.dtype.newbyteorder("=")
    flat = np.ascontiguousarray(x.reshape(-1), dtype=native)
    shape = [int(d) for d in x.shape]
    base = {"dtype": x.dtype.str, "shape": shape, "crc": container.values_crc(x.dtype, shape, flat), "front": []}
    chains = [build_chain(tuple(spec)) for spec in specs]
    return container.pack(writer.planned_fields(base, frontend.to_channels(x), chains, level, None, {}, current(), 1))
