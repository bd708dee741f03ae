"""The LPC analysis's windows (ubpe._kernels.predict._window, both analyses' kernels use it): the
Tukey tapers computed once for both ends give the floats of the formula evaluated at every
sample, bit for bit, at every length up to 3 000 and at the block lengths the stage uses."""

from __future__ import annotations

import numpy as np

from ubpe._kernels import njit
from ubpe._kernels.predict import _window


@njit(nogil=True)
def _each_sample(w, m, kind):
    """The window as it was computed before, one sample at a time (the reference)."""
    for i in range(m):
        if kind == 1:
            t = (2.0 * i - (m - 1)) / (m + 1.0)
            w[i] = 1.0 - t * t
        elif kind == 2 or kind == 4:
            edge = (0.25 if kind == 2 else 0.125) * m
            if i < edge:
                w[i] = 0.5 - 0.5 * np.cos(np.pi * i / edge)
            elif i > m - 1 - edge:
                w[i] = 0.5 - 0.5 * np.cos(np.pi * (m - 1 - i) / edge)
            else:
                w[i] = 1.0
        elif kind == 3:
            w[i] = 0.5 - 0.5 * np.cos(2.0 * np.pi * (i + 0.5) / m)
        else:
            w[i] = 1.0


@njit(nogil=True)
def _window_of(w, m, kind):
    _window(w, m, kind)


def test_windows_are_the_per_sample_formula_bit_for_bit():
    lengths = list(range(0, 3001)) + [4095, 4096, 4097, 9696, 16383, 16384, 65537, 1 << 20]
    for m in lengths:
        for kind in range(5):
            expected = np.full(m + 2, 7.0)
            got = np.full(m + 2, 7.0)
            _each_sample(expected, m, kind)
            _window_of(got, m, kind)
            assert got.tobytes() == expected.tobytes(), (m, kind)  # (and nothing past w[m - 1] written)


def test_tukey_taper_values():
    w = np.empty(8)
    _window_of(w, 8, 2)  # edge 2: samples 0, 1 and 7, 6 tapered
    assert w[0] == w[7] == 0.0 and w[1] == w[6] and abs(w[1] - 0.5) < 1e-15 and w[2:6].tolist() == [1.0] * 4
