"""The named front-end chains: ``compress(predictor=name)`` forces one, ``Tokenizer.fit(predictor=)``
fits a model behind one, and the planner measures them."""

from __future__ import annotations

from . import STAGES, Stage, stage

__all__ = ["PREDICTORS", "GRID_CHAINS", "DECORRELATE_CHAINS", "MULT_CHAINS", "build_chain", "is_fast"]

#: Front-end chains by name: ``compress(predictor=name)`` forces one (``"auto"``: the automatic choice).
PREDICTORS: dict[str, tuple[tuple[str, dict], ...]] = {
    "none": (),
    "delta1": (("delta", {"order": 1}),),
    "delta2": (("delta", {"order": 2}),),
    "lpc": (("lpc", {}),),
    "lpc+adaptive": (("lpc", {}), ("adaptive", {})),
    "delta1+adaptive": (("delta", {"order": 1}), ("adaptive", {})),
    "rank+delta1": (("rank", {}), ("delta", {"order": 1})),
}
# values on a grid offset + step * k as k, then predicted (the automatic choice offers "grid"
# followed by every chain it offers k: ubpe.planner.auto_chains)
GRID_CHAINS = ("grid+delta1", "grid+lpc", "grid+lpc+adaptive")
# channels predicted from channels, then in time (offered for two or more channels)
DECORRELATE_CHAINS = ("decorrelate+delta1", "decorrelate+lpc", "decorrelate+lpc+adaptive")
# codes split into quotient and skewed low digits, the quotient predicted (offered when
# :func:`ubpe.frontend.mult.mult_detect` proposes a split for some channel)
MULT_CHAINS = ("mult+delta1", "mult+lpc", "mult+lpc+adaptive")
for _name in GRID_CHAINS + DECORRELATE_CHAINS + MULT_CHAINS:
    _first, _rest = _name.split("+", 1)
    PREDICTORS[_name] = ((_first, {}),) + PREDICTORS[_rest]
# the grid stage followed by any other chain ("grid" alone: the grid's indices as they are), so
# that whatever chain suits values divided by their step is reachable from the values
for _name in [k for k in PREDICTORS if not k.startswith("grid")]:
    PREDICTORS["grid" if _name == "none" else "grid+" + _name] = (("grid", {}),) + PREDICTORS[_name]


def build_chain(spec: tuple[tuple[str, dict], ...]) -> list[Stage]:
    """The stages of ``spec`` (name, writer options). An ``lpc`` stage that ends the chain (its
    residual goes to the coders) is built with ``reweight=True`` unless told: its predictors
    are refitted where the residual's loudness moves (:func:`ubpe.frontend.lpc.lpc_reweight`); one
    followed by another stage ("lpc+adaptive") keeps the plain fit, on which the adaptive
    cascade does better (shared/data ecg: 56 344 B plain, 56 475 B reweighted). The rule holds
    wherever a chain is built (forced, automatic, a blocked container's blocks)."""
    stages = []
    for i, (name, opts) in enumerate(spec):
        if name == "lpc" and i == len(spec) - 1 and "reweight" not in opts:
            opts = {**opts, "reweight": True}
        stages.append(stage(name, **opts))
    return stages


#: :func:`built_chain`'s chains of the specs of :data:`PREDICTORS` by the spec's identity (with the
#: spec: those live as long as the module), built once a process
_BUILT: dict[int, tuple[tuple, tuple[Stage, ...]]] = {}


def built_chain(spec: tuple[tuple[str, dict], ...]) -> list[Stage]:
    """:func:`build_chain` of ``spec`` (a new list), whose stages are built once a process where
    ``spec`` is one of :data:`PREDICTORS`' (a stage is not changed once built, and its forward is
    a function of its input and options: the same stages; building a short file's chains, an
    "lpc" stage's options checked and tuned each time, took about 2 % of its compress)."""
    found = _BUILT.get(id(spec))
    if found is not None and found[0] is spec:
        return list(found[1])
    stages = build_chain(spec)
    if any(v is spec for v in PREDICTORS.values()):
        _BUILT[id(spec)] = (spec, tuple(stages))
    return stages


def is_fast(spec: tuple[tuple[str, dict], ...]) -> bool:
    """Whether every stage of the chain ``spec`` inverts at memory speed (``Stage.fast_inverse``)."""
    return all(STAGES[name].fast_inverse for name, _ in spec)

