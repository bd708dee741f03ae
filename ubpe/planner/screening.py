"""A chain's forward pass on the screen's sample when its leading stages describe all the values."""

from __future__ import annotations

import numpy as np

from .. import frontend
from ..frontend import Stage
from .candidates import forward_shared, stage_key
from .search import screen_sample
from .settings import Settings

#: Stages whose params describe the set of all the values, not their course in time: "rank"
#: (the table of distinct values) and "grid" (their common step). On a sample they describe the
#: sample's values only: fewer distinct values (a 24-bit drum hit: 8 517 in 16 384 sampled
#: values, 47 776 in all 192 000; the table of the sample 1/8 of the whole's, its ranks denser,
#: so "rank+delta1" rated 18 % below "lpc" and coded 30 % above it), a step that is a multiple of
#: the whole's. The screen runs them on all the values, then samples their output.
WHOLE_STAGES = frozenset({"rank", "grid"})


def screen_forward(x: np.ndarray, inputs: dict, chains: list[list[Stage]], i: int, cache: dict,
                   s: Settings) -> tuple[np.ndarray, list[dict]]:
    """Chain ``i``'s output and record on the screen's sample of ``x`` (``(channels, frames)``;
    ``inputs``: its windows and joined windows, :func:`~ubpe.planner.search.screen_sample`, or
    ``x`` itself for both), as :func:`~ubpe.planner.candidates.forward_shared` gives them, but
    the chain's leading :data:`WHOLE_STAGES` run on all of ``x`` and the rest of the chain on
    the screen's sample of their output (the record: theirs on all the values, the rest's on
    the sample). ``cache`` is shared with ``forward_shared`` across the chains (keys of their
    own here; :func:`whole_outputs` gives the leading stages' outputs on all the values back).
    When the sample is every value, ``forward_shared`` itself."""
    chain = chains[i]
    lead = 0
    while lead < len(chain) and chain[lead].name in WHOLE_STAGES:
        lead += 1
    if lead == 0 or inputs[False] is x:
        return forward_shared(inputs, chains, i, cache)
    key = ("whole",) + tuple(stage_key(st, cache) for st in chain[:lead])
    hit = cache.get(key)
    if hit is None:
        y, record = frontend.forward(x, chain[:lead])
        windows, joined, _scale = screen_sample(np.ascontiguousarray(y), s)
        hit = cache[key] = ({False: windows, True: joined}, record, {}, y)
    sampled, record, rest_cache, _ = hit
    y, rest = forward_shared(sampled, [chain[lead:]], 0, rest_cache)
    return y, record + rest


def whole_outputs(cache: dict) -> dict:
    """The outputs on all the values that :func:`screen_forward` computed into ``cache`` (its
    chains' leading :data:`WHOLE_STAGES`), keyed as
    :func:`~ubpe.planner.candidates.forward_shared` keys a pass over all the values (both
    inputs ``x``): the pass that puts the chains kept through all the values starts from them."""
    out = {}
    for key, hit in cache.items():
        if key[0] == "whole":
            y, record = hit[3], hit[1]
            out.update({(across,) + key[1:]: (y, record) for across in (False, True)})
    return out
