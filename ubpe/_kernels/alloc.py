"""Array allocation inside kernels without numba's per-dtype overload compilations.

``np.empty``, ``np.zeros`` and ``np.full`` called in a kernel are numba *overloads*: each
distinct (shape type, dtype) compiles a small function of its own, and ``np.zeros`` compiles
three (itself, ``np.empty`` again and a zero fill), for the first calling kernel of each: on a
default ``compress`` + ``decompress`` 27 such compilations, 1.2-1.3 s of the cold compile (CPU,
``benchmarks/bench_compile.py``). :func:`empty`, :func:`zeros` and :func:`full` are
*intrinsics* instead: their LLVM is emitted directly into the calling kernel (an NRT
allocation as numba's ``np.empty`` makes: the same memory and alignment; ``ValueError`` for a
negative size or one whose bytes overflow), so no function is compiled for them.

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

These rely on numba's array-structure helpers (``numba.np.arrayobj``: ``make_array``,
``populate_array``, ``store_item``, dtype/shape parsing); when they are missing (another numba version) or under
``NUMBA_DISABLE_JIT``, the three are ``np.empty``, ``np.zeros`` and ``np.full`` themselves.
"""

from __future__ import annotations

import numba
import numpy as np

try:
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic
    from llvmlite import ir
    from numba.np.arrayobj import (make_array, populate_array, store_item, ty_parse_dtype,
                                   ty_parse_shape)
except ImportError:  # pragma: no cover - another numba: numpy's functions (numba overloads)
    intrinsic = None


def _new_array(context, builder, arrtype, shape_type, shape):
    """A new C-contiguous ``arrtype`` array (numba's array structure) of ``shape``, allocated
    as numba's ``np.empty`` allocates (NRT, the dtype's preferred alignment), with one check:
    ``ValueError`` when a dimension is negative or the byte size overflows. Leaner than numba's
    own routine (``_empty_nd_impl``: two checks, and a call to a compiled allocator function
    whose status is checked again), which lowered 2-4 ms slower per allocation site."""
    intp = context.get_value_type(types.intp)
    if isinstance(shape_type, types.BaseTuple):
        values = cgutils.unpack_tuple(builder, shape, len(shape_type))
        dims = [context.cast(builder, v, t, types.intp) for v, t in zip(values, shape_type)]
    else:
        dims = [context.cast(builder, shape, shape_type, types.intp)]
    itemsize = context.get_abi_sizeof(context.get_data_type(arrtype.dtype))
    nbytes = ir.Constant(intp, itemsize)
    bad = cgutils.false_bit
    for d in dims:
        # subtle: a uint64 size above 2**63 - 1 is negative as intp, so it is refused here too
        bad = builder.or_(bad, cgutils.is_neg_int(builder, d))
        prod = builder.smul_with_overflow(nbytes, d)
        nbytes = builder.extract_value(prod, 0)
        bad = builder.or_(bad, builder.extract_value(prod, 1))
    with builder.if_then(bad, likely=False):
        context.call_conv.return_user_exc(
            builder, ValueError, ("negative dimensions not allowed, or array too big",))
    strides = [ir.Constant(intp, itemsize)]
    for d in reversed(dims[1:]):
        strides.append(builder.mul(strides[-1], d))
    strides.reverse()
    align = context.get_preferred_array_alignment(arrtype.dtype)
    meminfo = context.nrt.meminfo_alloc_aligned(builder, nbytes, align)
    data = context.nrt.meminfo_data(builder, meminfo)
    ary = make_array(arrtype)(context, builder)
    populate_array(ary, data=builder.bitcast(data, context.get_data_type(arrtype.dtype).as_pointer()),
                   shape=cgutils.pack_array(builder, dims, ty=intp),
                   strides=cgutils.pack_array(builder, strides, ty=intp),
                   itemsize=ir.Constant(intp, itemsize), meminfo=meminfo)
    return ary


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
