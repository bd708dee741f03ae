"""ubpe._kernels.pipeline: the kernels' numba pipeline skips two passes only where they have
nothing to do; a function that has closures, comprehensions or array expressions compiles and
computes as with numba's own pipeline."""

import numpy as np

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
