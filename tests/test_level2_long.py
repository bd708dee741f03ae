"""Level 2 on an input longer than ``full_fit`` values (one stream, below the blocked form's
``block_size``): the lean search plans it (``Settings.lean_upto``), its chains screened on
``lean_long_screen`` values and every finalist's static candidates sized near exactly on all the
values (``lean_static_finalists_above``), the winner built on all of them. Its container round-trips
and is within 0.2 % of every forced chain's and of the exhaustive search's (``lean_upto =
full_fit``: the search before, which sized its candidates on a ``sample``)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy.signal import lfilter

from common import check_roundtrip
from ubpe import compress, describe
from ubpe.planner import DEFAULT, configured

#: The margin the lean search may cost on a long input, against the best forced chain and the
#: exhaustive search.
MARGIN = 1.002


@functools.lru_cache(maxsize=None)
def _long_signal() -> np.ndarray:
    """20 000 values more than ``full_fit``: a resonance (AR(2)) driven by noise whose loudness
    steps every 4 000 values between three levels, as speech's: a few percent of it (the screen's
    sample) rates the chains' static coding up to 4 % off."""
    n = DEFAULT.full_fit + 20_000
    rng = np.random.default_rng(5)
    loud = np.repeat(rng.choice([30.0, 300.0, 3000.0], size=n // 4000 + 1), 4000)[:n]
    y = lfilter([1.0], [1.0, -1.6, 0.8], rng.normal(size=n) * loud)
    return np.clip(np.round(y), -32768, 32767).astype(np.int16)


@functools.lru_cache(maxsize=None)
def _automatic() -> bytes:
    return check_roundtrip(_long_signal(), level=2)


def test_long_input_is_one_stream_searched_lean():
    """The input is longer than ``full_fit`` and shorter than a block: one stream, planned by
    the lean search under the default settings."""
    x = _long_signal()
    assert DEFAULT.full_fit < x.size <= DEFAULT.lean_upto
    info = describe(_automatic())
    assert info.blocks == 1 and info.n_values == x.size


@pytest.mark.parametrize("forced", [{"delta": 1}, {"predictor": "lpc"}, {"predictor": "lpc+adaptive"}])
def test_long_input_is_no_larger_than_a_forced_chain(forced):
    """The automatic choice is within ``MARGIN`` of each forced chain's level-2 container."""
    auto = len(_automatic())
    one = len(check_roundtrip(_long_signal(), level=2, **forced))
    assert auto <= MARGIN * one, (forced, auto, one)


def test_long_input_is_within_the_margin_of_the_exhaustive_search():
    """Against the search before (exhaustive beyond ``full_fit``, sized on a sample): within
    ``MARGIN``; here the static coder on "lpc" wins in both (the context mixer's best chain is
    also "lpc", 0.46 % larger: the static candidates are sized on all the values)."""
    with configured(lean_upto=DEFAULT.full_fit):
        exhaustive = check_roundtrip(_long_signal(), level=2)
    auto = _automatic()
    assert len(auto) <= MARGIN * len(exhaustive)
    assert describe(auto).coders == ("mag",)


def test_long_input_bytes_do_not_depend_on_threads():
    assert compress(_long_signal(), level=2, threads=2) == _automatic()
