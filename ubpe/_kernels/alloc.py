"""Array allocation inside kernels without numba's per-dtype overload compilations.

``np.empty``, ``np.zeros`` and ``np.full`` called in a kernel are numba *overloads*: each
distinct (shape type, dtype) compiles a small function of its own, and ``np.zeros`` compiles
three (itself, ``np.empty`` again and a zero fill), for the first calling kernel of each: on a
default ``compress`` + ``decompress`` 27 such compilations, 1.2-1.3 s of the cold compile (CPU,
``benchmarks/bench_compile.py``). :func:`empty`, :func:`zeros` and :func:`full` are
*intrinsics* instead: their LLVM is emitted directly into the calling kernel (numba's own
allocation routine: the same memory, alignment, shape checks and ``ValueError`` for a negative
size as ``np.empty``), so no function is compiled for them.

``empty(shape, dtype)``, ``zeros(shape, dtype)``, ``full(shape, fill_value, dtype)``: ``shape``
an integer (1-D) or a tuple of integers, ``dtype`` a numpy integer or float type (``np.int64``,
``np.uint16``, ``np.float64``, ...: positional, not a keyword), ``fill_value`` an integer or
float, converted to ``dtype`` as an element store converts it (as numba's ``np.full``). The
result is a new C-contiguous array of that shape and dtype: uninitialised, all zero, or every
element ``fill_value``, exactly as ``np.empty``, ``np.zeros`` and ``np.full`` with the same
arguments. One compilation of a kernel serves every fill constant (the fill is not a literal).

Used by the kernels of the default path (``predict``, ``residual``, ``entropy``, ``cmsignal2``,
and ``cm``'s squash/stretch tables); the other coders' and the tokenizer's kernels keep numpy's
functions (they compile only when used, and their speed was not re-measured with these).

These rely on numba's array-construction helpers (``numba.np.arrayobj``, the ones numba's own
``np.empty`` lowers with); when they are missing (another numba version) or under
``NUMBA_DISABLE_JIT``, the three are ``np.empty``, ``np.zeros`` and ``np.full`` themselves.
"""

from __future__ import annotations

import numba
import numpy as np

try:
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic
    from numba.np.arrayobj import (_empty_nd_impl, _parse_shape, store_item, ty_parse_dtype,
                                   ty_parse_shape)
except ImportError:  # pragma: no cover - another numba: numpy's functions (numba overloads)
    intrinsic = None


def _new_array(context, builder, arrtype, shape_type, shape):
    """A new C-contiguous ``arrtype`` array (LLVM value of numba's array struct) of ``shape``:
    numba's own ``np.empty`` lowering (shape checks, NRT allocation, alignment)."""
    shapes = _parse_shape(context, builder, shape_type, shape)
    return _empty_nd_impl(context, builder, arrtype, shapes)


def _array_type(shape, dtype):
    """The result type of an allocation, or None when ``shape``/``dtype`` do not describe one."""
    nb_dtype = ty_parse_dtype(dtype)
    ndim = ty_parse_shape(shape)
    if not isinstance(nb_dtype, (types.Integer, types.Float)) or ndim is None:
        return None
    return types.Array(nb_dtype, ndim, "C")


def _empty(typingctx, shape, dtype):
    arrtype = _array_type(shape, dtype)
    if arrtype is None:
        return None

    def codegen(context, builder, sig, args):
        return _new_array(context, builder, arrtype, sig.args[0], args[0])._getvalue()

    return arrtype(shape, dtype), codegen


def _zeros(typingctx, shape, dtype):
    arrtype = _array_type(shape, dtype)
    if arrtype is None:
        return None

    def codegen(context, builder, sig, args):
        ary = _new_array(context, builder, arrtype, sig.args[0], args[0])
        cgutils.memset(builder, ary.data, builder.mul(ary.itemsize, ary.nitems), 0)
        return ary._getvalue()

    return arrtype(shape, dtype), codegen


def _full(typingctx, shape, fill_value, dtype):
    arrtype = _array_type(shape, dtype)
    if arrtype is None or not isinstance(fill_value, (types.Integer, types.Float)):
        return None
    fill_type = types.unliteral(fill_value)  # one compilation for every fill constant

    def codegen(context, builder, sig, args):
        ary = _new_array(context, builder, arrtype, sig.args[0], args[0])
        # the fill converted as an element store converts it (np.full's loop in numba)
        value = context.cast(builder, args[1], sig.args[1], arrtype.dtype)
        with cgutils.for_range(builder, ary.nitems) as loop:
            store_item(context, builder, arrtype, value, builder.gep(ary.data, [loop.index]))
        return ary._getvalue()

    return arrtype(shape, fill_type, dtype), codegen


if intrinsic is None or numba.config.DISABLE_JIT:
    empty = np.empty
    zeros = np.zeros
    full = np.full
else:
    empty = intrinsic(_empty)
    zeros = intrinsic(_zeros)
    full = intrinsic(_full)
