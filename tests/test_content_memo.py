"""The content memo (:mod:`ubpe._memo`) shared by the lpc analysis cache and the planner's costing
memo: a value comes back for an equal array only, kept arrays stop at the byte cap (digests
beyond), and the planner's threads may store and look up in one memo at once."""

from __future__ import annotations

import sys
import threading

import numpy as np

from ubpe import _memo


def test_a_value_comes_back_for_an_equal_array_only():
    memo: dict = {}
    a = np.arange(10, dtype=np.int32)
    key = (a.dtype.str, a.shape)
    assert _memo.lookup(memo, key, a) is None
    _memo.store(memo, key, a, "first", held=1 << 20, copy=True)
    b = a.copy()
    b[3] += 1
    _memo.store(memo, key, b, "second", held=1 << 20, copy=True)
    assert _memo.lookup(memo, key, a.copy()) == "first"
    assert _memo.lookup(memo, key, b.copy()) == "second"
    c = b.copy()
    c[0] -= 1
    assert _memo.lookup(memo, key, c) is None
    a[0] = 99  # kept as a copy: the caller's change does not reach the memo
    assert _memo.lookup(memo, key, np.arange(10, dtype=np.int32)) == "first"


def test_beyond_the_byte_cap_arrays_are_kept_by_digest():
    memo: dict = {}
    a, b = np.zeros(100, np.int64), np.ones(100, np.int64)
    key = ("<i8", (100,))
    _memo.store(memo, key, a, 1, held=1000, copy=False)
    _memo.store(memo, key, b, 2, held=1000, copy=False)  # 800 + 800 bytes > 1000: a digest
    kept = [entry[0] for entry in memo.values()]
    assert isinstance(kept[0], np.ndarray) and kept[1] == _memo.digest(b)
    assert _memo.lookup(memo, key, np.ones(100, np.int64)) == 2
    assert _memo.lookup(memo, key, np.full(100, 2, np.int64)) is None


def test_threads_store_and_look_up_in_one_memo():
    """Eight threads storing into one memo (the planner's costing memo is shared so): before
    the store's lock, summing the kept bytes while another thread added an entry raised
    "dictionary changed size during iteration" within a few hundred stores."""
    memo: dict = {}
    arrays = [np.arange(i, i + 8, dtype=np.int32) for i in range(64)]
    errors: list[str] = []

    def work(t: int) -> None:
        try:
            for r in range(2000):
                a = arrays[(r * 7 + t) % 64]
                key = ("<i4", (8,), r % 5)
                if _memo.lookup(memo, key, a) is None:
                    _memo.store(memo, key, a, (r % 5, int(a[0])), held=1 << 30, copy=False)
        except Exception as e:  # noqa: BLE001 (any error is the finding)
            errors.append(repr(e))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    for (key, _), (kept, value) in memo.items():  # every entry's value is its own array's
        assert value == (key[2], int(kept[0]))
