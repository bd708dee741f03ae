"""Level 3's encoder cost model (issue 29's speed floor): a deterministic prediction, never a timing,
of the CPU time ``encode`` spends on a recording, from its shape and one cheap cue, so that the same
input gives the same bytes on any machine.

    search_share(n, C, recur, settings) -> the search's work, in codings of the recording

Before its final coding the encoder compares the front-end chains and searches the parameters on
a prefix (``search.budget_plan``: at most ``Settings.level3_search_work`` codings of the recording,
counted in frames), and where the values recur (``recur``: ``encoder.pair_recurrence`` of the
sample and a symbol range the contexts take) it codes a sample with the exact-value contexts
(``encoder._choose_xctx``), each value of it costing about twice a plain coding's. A short or
multi-channel recording then spends three codings or more before and with its final one, which
puts it below the floor. ``search_share`` lowers the search's work where the model predicts an
encode below ``FLOOR`` (at ``level3_search_work``) to what keeps it at ``FLOOR`` times
``ENC_MARGIN``, down to ``level3_search_model_least``; elsewhere it is ``level3_search_work`` and
the bytes are as before. On at most ``Settings.level3_search_model_final`` frames, where the sample
is coded, the final coding counts with the contexts too (``encode_ns``' ``final``: a one-channel
hourly year's final coding with them runs at about half a plain one's speed;
results/level3-floor-4.md). The constants: kernel times on one core of the shared machine
(results/level3-floor.md).
"""

from __future__ import annotations

FLOOR = 200_000  #: issue 29's floor, values a CPU second on one core
ENC_MARGIN = 1.2  #: the share of the floor the cut aims at (0.24 M values/s)
#: ns a value of one coding without the contexts: one channel, and more a further channel (the
#: cross-channel least squares), at most ``CODER_CHANNELS`` channels counted
CODER_NS = (2000.0, 150.0)
CODER_CHANNELS = 8
XCTX_NS = 1500.0  #: ns a value the lighter contexts (``xctx`` = 2) add to a coding of the sample
FIXED_NS = 1.0e6  #: ns an encode spends once (the cues, the front-end chains' transforms, Python)
CHAINS_SHARE = 0.5  #: the front-end chains with stages, in codings of the prefix (their part of it)


def coder_ns(C: int) -> float:
    """The model's ns a value of one coding without the contexts, C channels."""
    base, more = CODER_NS
    return base + more * (min(max(C, 1), CODER_CHANNELS) - 1)


def encode_ns(n: int, C: int, work: float, sample: int, final: bool = False) -> float:
    """The model's CPU ns a value of ``encode`` on n frames x C channels: ``FIXED_NS``, the final
    coding, ``work`` codings of the recording by the search and the chains (``CHAINS_SHARE`` of
    the prefix, counted within ``work``'s bound as ``budget_plan`` counts them) and ``sample``
    values of the contexts' sample (0: none coded). ``final``: where the sample is coded, the final
    coding counted with the contexts (``XCTX_NS`` a value more), as where the sample keeps them."""
    v = max(1, n * C)
    per = coder_ns(C)
    ctx = XCTX_NS if final and sample > 0 else 0.0
    return FIXED_NS / v + per * (1.0 + max(0.0, work)) + ctx + sample * (per + XCTX_NS) / v


def search_share(n: int, C: int, sample: int, settings, final: bool | None = None) -> float:
    """The search's work bound, in codings of a recording of n frames x C channels
    (``budget_plan``'s ``settings.level3_search_work``), where ``encode_ns`` with it predicts at
    least 1e9 / FLOOR ns a value: the work that predicts 1e9 / (FLOOR ENC_MARGIN), at least
    ``settings.level3_search_model_least``; else ``settings.level3_search_work``. ``sample``: the
    values of the contexts' sample the encoder will code (0: none). ``final``: ``encode_ns``'s
    (None: n at most ``settings.level3_search_model_final``)."""
    work = settings.level3_search_work
    if not settings.level3_search_model or work <= 0 or n * C <= 0:
        return work
    final = 0 < n <= settings.level3_search_model_final if final is None else final
    if encode_ns(n, C, work, sample, final) * FLOOR <= 1e9:
        return work
    per = coder_ns(C)
    room = 1e9 / (FLOOR * ENC_MARGIN) - encode_ns(n, C, 0.0, sample, final)
    return max(settings.level3_search_model_least, min(work, room / per))
