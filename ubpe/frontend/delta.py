"""Differences of order ``k`` along each channel, and zigzag: exact modulo ``2**bits``.

* :func:`delta` / :func:`undelta`: prediction by differences of order ``k`` (the residual of a
  polynomial extrapolation of degree ``k - 1`` from the ``k`` previous values). A smooth signal
  becomes small numbers around zero, which BPE and the entropy stage code in fewer bits.
* :func:`zigzag` / :func:`unzigzag`: signed integers to unsigned ones of the same width,
  interleaving ``0, -1, 1, -2, 2, ...`` as ``0, 1, 2, 3, 4, ...``.
* :class:`DeltaStage`, the front-end stage ``"delta"``.

Every function here is lossless for every value of every integer dtype, extremes included:
the arithmetic is done modulo ``2**bits`` (``bits = 8 * itemsize`` of the input), the way
fixed-width hardware integers wrap, and each transform has an exact inverse in that ring.
Results are native-byte-order arrays of the same shape as the input.
"""

from __future__ import annotations

import numbers
from typing import Any, ClassVar

import numpy as np

from .._kernels import predict as _kp
from .._validate import check_int, expect_map, field_int
from ..errors import CorruptDataError
from ._stage import SIGNED_OF_WIDTH, Stage, register


def _int_array(x: Any, name: str, kinds: str = "iu") -> np.ndarray:
    """``x`` as an integer array (no copy when it is one already), or raise TypeError."""
    arr = np.asarray(x)
    if arr.dtype.kind not in kinds:
        want = {"iu": "an integer", "i": "a signed integer", "u": "an unsigned integer"}[kinds]
        raise TypeError(f"{name} must be {want} array, got dtype {arr.dtype}")
    return arr


def _order(order: Any) -> int:
    if isinstance(order, (bool, np.bool_)) or not isinstance(order, numbers.Integral):
        raise TypeError(f"order must be an integer, got {type(order).__name__} {order!r}")
    if order < 0:
        raise ValueError(f"order must be >= 0, got {order}")
    return int(order)


def _work(arr: np.ndarray, axis: int, copy: bool = True) -> tuple[np.ndarray, int]:
    """A native unsigned copy of ``arr`` (same width) in which to compute modulo 2**bits
    (``copy`` False: ``arr`` itself viewed so when it is native, not to be written)."""
    if arr.ndim == 0:
        raise ValueError("delta and undelta need an array of at least one dimension, got a 0-d array")
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"axis must be an integer, got {type(axis).__name__} {axis!r}")
    if not -arr.ndim <= axis < arr.ndim:
        raise ValueError(f"axis {axis} is out of bounds for an array of {arr.ndim} dimension(s)")
    axis = int(axis) % arr.ndim
    unsigned = np.dtype(f"u{arr.dtype.itemsize}")
    if copy:
        work = np.array(arr, dtype=arr.dtype.newbyteorder("="), copy=True).view(unsigned)
    else:
        work = arr.astype(arr.dtype.newbyteorder("="), copy=False).view(unsigned)
    return work, axis


def _delta_rows(x: np.ndarray, order: int) -> np.ndarray:
    """``delta(x, order, axis=-1)`` of integers ``x`` ``(channels, frames)`` (``order >= 0``, an
    int): the same copy and subtractions, without the checks, the axis' normalisation and
    ``moveaxis`` (about a third of a short channel's delta)."""
    size = x.dtype.itemsize
    native = x.dtype if x.dtype.isnative else x.dtype.newbyteorder("=")
    work = np.array(x, dtype=native, order="C", copy=True).view(_UNSIGNED[size])
    for j in range(min(order, work.shape[1] - 1)):
        work[:, j + 1:] = np.subtract(work[:, j + 1:], work[:, j:-1])  # unsigned: wraps
    return work.view(_SIGNED[size])


#: the unsigned and signed native dtypes by width in bytes (:func:`_delta_rows`' views)
_UNSIGNED = {k: np.dtype(f"u{k}") for k in (1, 2, 4, 8)}
_SIGNED = {k: np.dtype(f"i{k}") for k in (1, 2, 4, 8)}


def delta(x: Any, order: int = 1, axis: int = -1) -> np.ndarray:
    """Differences of order ``order`` along ``axis``, modulo ``2**bits``, as signed integers.

    Definition, for a 1-D ``x`` of length ``n`` and ``k = order``: first differences applied
    ``k`` times, pass ``j`` (``j = 1 .. k``) leaving its first ``j`` elements as they are::

        d = x.copy()
        for j in range(k):
            d[j + 1:] = d[j + 1:] - d[j:-1]      # modulo 2**bits

    so that ``d[i]`` is the backward difference of order ``min(i, k)`` at ``i``:
    ``d[0] = x[0]``, ``d[1] = x[1] - x[0]``, and for ``i >= k``
    ``d[i] = sum_{m=0..k} (-1)**m * C(k, m) * x[i - m]`` (``x[i]`` minus its prediction from the
    ``k`` previous values). Only ``d[0]`` is a raw value whatever the order; the other leading
    values are lower-order differences, small on a smooth signal. A length ``n <= k`` simply
    gets differences of every order up to ``n - 1``; ``order=0`` returns ``x`` unchanged (as
    signed integers).

    Parameters
    ----------
    x : array_like of integers, at least 1-D
        Any integer dtype and byte order; bool and floating-point arrays raise ``TypeError``.
    order : int, default 1
        ``k >= 0``.
    axis : int, default -1
        The axis along which to take the differences (each 1-D slice independently).

    Returns
    -------
    numpy.ndarray
        Same shape as ``x``; dtype the *signed* integer of the same width in native byte order
        (``int16`` for ``uint16`` or ``>i2`` input), so that a small step down stays a small
        negative number. Values are exact modulo ``2**bits``: ``undelta(delta(x, k), k,
        dtype=x.dtype)`` equals ``x`` for every ``x``, extremes and wrap-around included.

    Examples
    --------
    >>> import numpy as np
    >>> from ubpe.signal import delta, undelta
    >>> x = np.array([10, 12, 15, 19, 24], dtype=np.int16)
    >>> delta(x, 1)
    array([10,  2,  3,  4,  5], dtype=int16)
    >>> delta(x, 2)
    array([10,  2,  1,  1,  1], dtype=int16)
    >>> delta(np.array([0, 255, 1], dtype=np.uint8))        # modulo 256, as int8
    array([ 0, -1,  2], dtype=int8)
    >>> undelta(delta(x, 2), 2, dtype=x.dtype)
    array([10, 12, 15, 19, 24], dtype=int16)
    """
    arr = _int_array(x, "x")
    k = _order(order)
    work, axis = _work(arr, axis)
    w = np.moveaxis(work, axis, -1)
    for j in range(min(k, w.shape[-1] - 1)):
        w[..., j + 1:] = np.subtract(w[..., j + 1:], w[..., j:-1])  # unsigned: wraps
    return work.view(np.dtype(f"i{arr.dtype.itemsize}"))


def undelta(d: Any, order: int = 1, dtype: Any = None, axis: int = -1) -> np.ndarray:
    """The inverse of :func:`delta`: ``order`` running sums along ``axis``, modulo ``2**bits``.

    Pass ``j = k - 1 .. 0`` replaces ``d[j:]`` by its running sum, undoing pass ``j + 1`` of
    :func:`delta`.

    Parameters
    ----------
    d : array_like of integers, at least 1-D
        Differences as :func:`delta` returns them (any integer dtype of the width of ``dtype``;
        they are taken modulo ``2**bits``).
    order : int, default 1
        The order ``d`` was computed with.
    dtype : dtype, optional
        The dtype of the values to restore (byte order included), an integer dtype of the same
        width as ``d``; default ``d.dtype``.
    axis : int, default -1

    Returns
    -------
    numpy.ndarray
        Same shape as ``d``, in ``dtype``.

    Raises
    ------
    ValueError
        ``dtype`` has another width than ``d``: the arithmetic is modulo ``2**bits`` of that
        width, and values of another width would not invert.

    Examples
    --------
    >>> import numpy as np
    >>> from ubpe.signal import undelta
    >>> undelta(np.array([10, 2, 1, 1, 1], dtype=np.int16), 2)
    array([10, 12, 15, 19, 24], dtype=int16)
    >>> undelta(np.array([0, -1, 2], dtype=np.int8), 1, dtype=np.uint8)
    array([  0, 255,   1], dtype=uint8)
    """
    arr = _int_array(d, "d")
    k = _order(order)
    out_dtype = arr.dtype if dtype is None else np.dtype(dtype)
    if out_dtype.kind not in "iu":
        raise TypeError(f"dtype must be an integer dtype, got {out_dtype}")
    if out_dtype.itemsize != arr.dtype.itemsize:
        raise ValueError(
            f"d holds {arr.dtype.itemsize}-byte integers but dtype {out_dtype} has "
            f"{out_dtype.itemsize} bytes: undelta works modulo 2**bits of the values' own width"
        )
    src, axis = _work(arr, axis, copy=False)  # (a view of d when it is native: never written)
    s = np.moveaxis(src, axis, -1)
    m = min(k, s.shape[-1] - 1)
    if m <= 0 or s.size == 0:
        work = src.copy()
    else:  # the running sums in one compiled pass per order, in place on a C-ordered copy, rows
        # along ``axis`` (numpy's cumsum took ~1.4 to 2 ns a value: a quarter of decoding the
        # neural recordings)
        rows = np.array(s, order="C", copy=True)
        _kp.undelta_rows(rows.reshape(-1, rows.shape[-1]), m)
        work = rows if axis == src.ndim - 1 else np.ascontiguousarray(np.moveaxis(rows, -1, axis))
    native = work.view(out_dtype.newbyteorder("="))
    return native if native.dtype == out_dtype else native.astype(out_dtype)


def zigzag(x: Any) -> np.ndarray:
    """Signed integers to unsigned ones of the same width: ``0, -1, 1, -2, 2`` -> ``0, 1, 2, 3, 4``.

    ``z = 2 * x`` for ``x >= 0`` and ``z = -2 * x - 1`` for ``x < 0``, computed as
    ``(x << 1) ^ (x >> (bits - 1))``; a bijection of the ``bits``-bit integers (``-2**(bits-1)``
    maps to ``2**bits - 1``). Small magnitudes of either sign become small numbers.

    Parameters
    ----------
    x : array_like of signed integers, any shape

    Returns
    -------
    numpy.ndarray
        Same shape; the unsigned integer dtype of the same width, native byte order.

    Examples
    --------
    >>> import numpy as np
    >>> from ubpe.signal import zigzag, unzigzag
    >>> zigzag(np.array([0, -1, 1, -2, 2, -128, 127], dtype=np.int8))
    array([  0,   1,   2,   3,   4, 255, 254], dtype=uint8)
    >>> unzigzag(np.array([0, 1, 2, 3, 255], dtype=np.uint8))
    array([   0,   -1,    1,   -2, -128], dtype=int8)
    """
    arr = _int_array(x, "x", "i")
    bits = 8 * arr.dtype.itemsize
    s = arr.astype(arr.dtype.newbyteorder("="), copy=False)
    unsigned = np.dtype(f"u{arr.dtype.itemsize}")
    return np.asarray((s.view(unsigned) << unsigned.type(1)) ^ (s >> (bits - 1)).view(unsigned))


def unzigzag(z: Any) -> np.ndarray:
    """The inverse of :func:`zigzag`: unsigned integers to signed ones of the same width.

    ``x = (z >> 1) ^ -(z & 1)``, modulo ``2**bits``.

    Parameters
    ----------
    z : array_like of unsigned integers, any shape

    Returns
    -------
    numpy.ndarray
        Same shape; the signed integer dtype of the same width, native byte order.

    Examples
    --------
    >>> import numpy as np
    >>> from ubpe.signal import unzigzag
    >>> unzigzag(np.array([0, 1, 2, 65535], dtype=np.uint16))
    array([     0,     -1,      1, -32768], dtype=int16)
    """
    arr = _int_array(z, "z", "u")
    u = arr.astype(arr.dtype.newbyteorder("="), copy=False)
    one = u.dtype.type(1)
    out = (u >> one) ^ (np.zeros_like(u) - (u & one))  # unsigned: wraps
    return np.asarray(out).view(np.dtype(f"i{arr.dtype.itemsize}"))



@register
class DeltaStage(Stage):
    """Differences of order ``order`` along each channel (:func:`ubpe.signal.delta`), modulo
    ``2**bits``, as signed integers of the same width. Parameters: ``{"order": k}``,
    ``1 <= k <= MAX_ORDER``; not defined for bool values."""

    name = "delta"
    number = 0  #: its number on the wire (``ubpe.format.container.STAGES``)
    MAX_ORDER: ClassVar[int] = 4

    def __init__(self, order: int = 1) -> None:
        self.order = check_int("order", order, 1, self.MAX_ORDER)

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        if x.dtype.kind not in "iu":
            raise TypeError(f"the delta stage takes integer values, got dtype {x.dtype}")
        if x.ndim == 2:  # (channels, frames): delta's own steps without its argument handling
            return _delta_rows(x, self.order), {"order": self.order}
        return delta(x, self.order, axis=-1), {"order": self.order}

    def inverse(self, y: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        # signed -> same-width signed: the input dtype is restored by a view afterwards
        if y.ndim == 2 and y.dtype.kind in "iu" and y.dtype.isnative:
            # undelta's own path for (channels, frames) rows, without its argument handling (a
            # short channel's decode paid more for it than for the sums): a C-ordered copy,
            # the running sums in place on its unsigned view
            rows = np.array(y, order="C", copy=True)
            m = min(params["order"], rows.shape[1] - 1)
            if m > 0:
                _kp.undelta_rows(rows.view(f"u{rows.dtype.itemsize}"), m)
            return rows
        return undelta(y, params["order"], dtype=y.dtype, axis=-1)

    def check(self, params: dict[str, Any], dtype: np.dtype, shape: tuple[int, int]) -> dict[str, Any]:
        expect_map(params, "front: delta", ("order",))
        field_int(params, "order", 1, self.MAX_ORDER, where="front: delta")
        if dtype.kind not in "iu":
            raise CorruptDataError(f"front: 'delta' is not defined for {dtype} values")
        return params

    def output_dtype(self, dtype: np.dtype, params: dict[str, Any]) -> np.dtype:
        return SIGNED_OF_WIDTH[np.dtype(dtype).itemsize]
