"""Token streams shared by the coder tests (test_coders, test_cmcore, test_cms2, test_cmt2)."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from conftest import examples  # noqa: E402

#: the coders' round trips (the context-mixing coders: about 1 us a bit): a third of the examples
#: in the default tier, all of them in the slow tier (CI's broad tier)
SETTINGS = settings(
    deadline=None,
    max_examples=examples(int(os.environ.get("UBPE_MAX_EXAMPLES", "100"))),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def streams(draw, max_len: int = 3000, max_vocab: int = 70000):
    """(tokens, vocab): uniform, skewed, few-symbol, extreme, periodic and Markov token streams."""
    vocab = draw(st.integers(1, max_vocab))
    n = draw(st.integers(0, max_len))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["uniform", "zipf", "few", "bounds", "repeat", "markov"]))
    if kind == "uniform":
        tokens = rng.integers(0, vocab, size=n)
    elif kind == "zipf":
        tokens = (np.minimum(rng.zipf(1.3, size=n) - 1, vocab - 1) * draw(st.integers(1, 7))) % vocab
    elif kind == "few":
        tokens = rng.choice(rng.integers(0, vocab, size=draw(st.integers(1, 4))), size=n)
    elif kind == "bounds":
        tokens = rng.choice(np.array([0, vocab - 1]), size=n)
    elif kind == "repeat":
        period = rng.integers(0, vocab, size=draw(st.integers(1, 50)))
        tokens = np.resize(period, n)
        flips = rng.random(n) < 0.02
        tokens[flips] = rng.integers(0, vocab, size=int(flips.sum()))
    else:
        step = rng.integers(0, vocab, size=8)
        tokens = np.zeros(n, dtype=np.int64)
        for i in range(1, n):
            tokens[i] = (tokens[i - 1] + step[tokens[i - 1] % 8]) % vocab
    return tokens.astype(np.int64), vocab


def signal(n: int, seed: int = 3) -> tuple[np.ndarray, int]:
    """Ids (in value order) of a noisy AR(2) oscillation: the kind of stream "cms2" is for."""
    rng = np.random.default_rng(seed)
    x = np.zeros(n)
    e = rng.normal(0, 3, n)
    for i in range(2, n):
        x[i] = 1.8 * x[i - 1] - 0.9 * x[i - 2] + e[i]
    values, ids = np.unique(np.round(x).astype(np.int64), return_inverse=True)
    return ids.astype(np.int64), len(values)


def text_stream(data: bytes) -> tuple[np.ndarray, np.ndarray, int]:
    """(tokens, classes, vocab): the ids of ``data``'s distinct byte values (sorted) and their
    text classes (what a container of bytes with no merges codes)."""
    from ubpe.coders import text_classes

    values = np.unique(np.frombuffer(data, dtype=np.uint8)) if data else np.array([65], np.uint8)
    ids = np.searchsorted(values, np.frombuffer(data, dtype=np.uint8)).astype(np.int64)
    classes = text_classes(values.astype(np.int64))
    assert classes is not None
    return ids, classes, len(values)
