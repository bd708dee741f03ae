"""The costing memo of one ``compress`` call (``writer.candidate_fields``): candidates alike in
all but their tokens are told apart by comparing tokens (by reference up to
``MEMO_HELD_BYTES``, else by digest); equal candidates are coded once and take the same fields;
``len(memo)`` counts the candidates coded."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ubpe.alphabet import Alphabet
from ubpe.api import writer
from ubpe.format.container import values_crc
from ubpe.planner import Candidate

CODERS = ("rans", "mag", "packed")


def _base(n: int) -> dict:
    x = np.zeros(n, np.int16)
    return {"dtype": x.dtype.str, "shape": [n], "crc": values_crc(x.dtype, [n], x), "front": []}


def _candidate(tokens: np.ndarray, size: int) -> Candidate:
    return Candidate([], Alphabet(np.arange(size, dtype=np.int64)), np.zeros((0, 2), np.int32), tokens, CODERS)


@pytest.mark.parametrize("held", [writer.MEMO_HELD_BYTES, 0])
@given(st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=6), min_size=1, max_size=8), st.data())
def test_equal_candidates_are_coded_once(held, streams, data):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(writer, "MEMO_HELD_BYTES", held)  # 0: every candidate kept by digest
        _check_coded_once(held, streams, data)


def _check_coded_once(held, streams, data):
    # streams of one length (one key but for the tokens), some repeated, in a drawn order
    n = max(len(s) for s in streams)
    arrays = [np.array((s * n)[:n], np.int32) for s in streams]
    order = data.draw(st.lists(st.integers(0, len(arrays) - 1), min_size=1, max_size=12))
    memo: dict = {}
    cost = writer.cost_function(_base(n), memo)
    first: dict[bytes, tuple] = {}
    for k in order:
        c = _candidate(arrays[k].copy(), 6)  # (a fresh array: equal content, not the same object)
        size = cost(c)
        fresh = _candidate(arrays[k].copy(), 6)
        assert size == writer.cost_function(_base(n), None)(fresh)  # the exact size, memo or not
        key = arrays[k].tobytes()
        if key in first:
            assert c.packed is first[key]  # the fields of the first equal candidate
        else:
            first[key] = c.packed
    assert len(memo) == len(first)  # one entry a distinct candidate coded
    held_refs = [seen for seen, _ in memo.values() if isinstance(seen, np.ndarray)]
    assert (len(held_refs) == len(first)) if held else not held_refs


def test_other_fields_never_share_an_entry():
    tokens = np.array([0, 1, 2, 1, 0], np.int32)
    memo: dict = {}
    cost = writer.cost_function(_base(5), memo)
    a = _candidate(tokens, 3)
    b = _candidate(tokens, 4)  # another alphabet, the same tokens
    c = Candidate([], Alphabet(np.arange(3, dtype=np.int64)), np.zeros((0, 2), np.int32), tokens, ("rans",))
    cost(a), cost(b), cost(c)
    assert len(memo) == 3 and a.packed is not b.packed and a.packed is not c.packed
    d = _candidate(tokens.astype(np.int64), 3)  # the same values in another dtype: coded again
    cost(d)
    assert len(memo) == 4
