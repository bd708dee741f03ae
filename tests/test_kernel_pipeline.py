"""ubpe._kernels.pipeline: the kernels' numba pipeline skips two passes only where they have
nothing to do, and the function-level LLVM passes on a kernel's CPython wrapper; a function that
has closures, comprehensions or array expressions compiles and computes as with numba's own
pipeline, and a kernel called from Python converts and raises as numba's."""

import numpy as np
import pytest

from ubpe._kernels import njit
from ubpe._kernels.pipeline import has_closure_likes


def test_closures_comprehensions_and_array_expressions_still_compile():
    @njit(cache=False)
    def mixed(a):
        double = lambda v: 2 * v  # noqa: E731  (a closure: inlined by InlineClosureLikes)
        total = 0
        for v in [double(i) for i in range(4)]:  # a comprehension
            total += v
        b = a * 3 + 1  # an array expression (fused by NopythonRewrites)
        return total + b.sum() + np.array([1, 2, 3]).sum()

    a = np.arange(10, dtype=np.int64)
    assert mixed(a) == 12 + int((a * 3 + 1).sum()) + 6


def test_the_python_wrapper_unboxes_boxes_and_raises_as_numbas():
    """The CPython wrapper of a kernel (optimised with its module only, not function by function
    first) converts arguments, returns tuples and passes an exception raised in the kernel on,
    the same as numba's own pipeline."""

    def body(a, k):
        if k < 0:
            raise ValueError("k must be >= 0")
        t = 0
        for i in range(a.shape[0]):
            t += a[i] << k
        return t, a.shape[0] * 2.5

    ours, numbas = njit(cache=False)(body), __import__("numba").njit(cache=False)(body)
    a = np.arange(7, dtype=np.int32)
    for k in (0, 3):
        assert ours(a, k) == numbas(a, k) == (21 << k, 17.5)
    with pytest.raises(ValueError, match="k must be >= 0"):
        ours(a, -1)
    assert ours(a[::2], 1) == numbas(a[::2], 1) == (24, 10.0)  # a strided view


def test_closure_likes_are_found_in_the_bytecode():
    def plain(a):
        t = 0
        for i in range(a.shape[0]):
            t += a[i]
        return t

    def comprehension(n):
        return [i * i for i in range(n)]

    def closure(n):
        def h(v):
            return v + n
        return h(1)

    def listed(n):
        return [n, n]

    assert not has_closure_likes(plain.__code__)
    assert all(has_closure_likes(f.__code__) for f in (comprehension, closure, listed))
