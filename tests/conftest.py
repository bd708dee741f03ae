"""Shared fixtures: the oracle on the path, hypothesis settings, named edge-case sequences."""

import os
import pathlib
import sys

import numpy as np
import pytest
from hypothesis import settings

sys.path.insert(0, str(pathlib.Path(__file__).parent))

MAX_EXAMPLES = int(os.environ.get("UBPE_MAX_EXAMPLES", "100"))
SLOW = os.environ.get("UBPE_SLOW_TESTS") == "1"


def examples(full: int) -> int:
    """Hypothesis examples for a costly property: ``full`` in the slow tier (UBPE_SLOW_TESTS=1,
    CI's broad tier runs these properties so), a third of it (at least 1) in the default tier."""
    return full if SLOW else max(full // 3, 1)
settings.register_profile("ubpe", deadline=None, max_examples=MAX_EXAMPLES)
settings.load_profile("ubpe")

SHARED_DATA = pathlib.Path(os.environ.get("UBPE_DATA", pathlib.Path(__file__).parents[1] / ".." / "shared" / "data"))


def pytest_collection_modifyitems(config, items):
    scale_examples(items, float(os.environ.get("UBPE_EXAMPLES_SCALE", "1")))
    if os.environ.get("UBPE_SLOW_TESTS") == "1":
        return
    skip = pytest.mark.skip(reason="slow: set UBPE_SLOW_TESTS=1 to run")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def scale_examples(items, scale: float) -> None:
    """Every hypothesis property's ``max_examples`` times ``scale`` (UBPE_EXAMPLES_SCALE; at least
    1), its own ``@settings`` included: more fresh examples than CI draws, to find its failures
    first (``rm -rf .hypothesis`` or ``--hypothesis-seed=N`` for new ones)."""
    if scale == 1:
        return
    seen = set()
    for item in items:
        test = getattr(item, "obj", None)
        given = getattr(test, "_hypothesis_internal_use_settings", None)
        if given is None or id(test) in seen:
            continue
        seen.add(id(test))
        test._hypothesis_internal_use_settings = settings(given, max_examples=max(1, round(given.max_examples * scale)))


@pytest.fixture(scope="session")
def shared_data():
    """Path of ../shared/data, or skip when this checkout has no shared data beside it."""
    if not SHARED_DATA.is_dir():
        if os.environ.get("CI") == "true":  # CI always has it: a missing folder is a failure there
            pytest.fail(f"shared data not found at {SHARED_DATA} (CI=true)")
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


# Named edge cases (minbpe's test_strings, tiktoken's stress tests), as (id, values, alphabet size).
EDGE_CASES = {
    "empty": (np.zeros(0, dtype=np.int64), 4),
    "length1": (np.array([3]), 4),
    "length2": (np.array([1, 1]), 4),
    "identical10k": (np.zeros(10_000, dtype=np.uint8), 1),
    "alternating": (np.tile(np.array([2, 5], dtype=np.int16), 500), 8),
    "bounds": (np.array([0, 255, 0, 255, 255, 0, 0, 255], dtype=np.uint8), 256),
}


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pyproject's addopts): a worker a core, at most 4 (each holds the kernels it
    loaded, up to about 2.7 GB of memory in the largest tests)."""
    return max(1, min(os.cpu_count() or 1, 4))
