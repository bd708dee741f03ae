"""Scalar helpers of the kernels as numba *intrinsics*: their LLVM is emitted straight into the
calling kernel, so numba neither inlines a copy of a Python function at each call site (which
runs its untyped passes again, then types and lowers the copy: 5-25 ms of cold compile a site)
nor compiles a function of its own (``benchmarks/bench_compile.py``).

``bit_length(v)``: the number of bits of ``v`` (``int(v).bit_length()``: 0 for 0), as int64,
for any integer ``v >= 0`` and any uint64 (64 for ``v >= 2**63``); a negative signed ``v`` gives
64. One instruction (a count of leading zeros), where a shift loop took one iteration per bit.
The one bit-length helper of every kernel module.

``imin(a, b)``, ``imax(a, b)``, ``clamp(x, lo, hi)`` and ``select(c, a, b)``: ``a if a < b else
b``, ``a if a > b else b``, ``lo if x < lo else (hi if x > hi else x)`` and ``a if c else b`` for
integers, as LLVM selects: a conditional expression in a kernel is three blocks and a merge that
numba types and lowers, and LLVM makes most of them selects anyway (about 100 conditional
expressions and min/max calls written so cut ``benchmarks/bench_compile.py``'s cold total by 1.8 s
of CPU, a median of 3 alternated runs). ``select`` evaluates both ``a`` and ``b``: only for values
that are safe to compute either way (no array read that the condition guards). The integers are
converted to int64 and the result is int64, or all are uint64 and so is the result (compared
unsigned); signed integers mixed with uint64 are refused (numba's conditional expression would give
a float64). ``c`` is a bool or an integer (true when non-zero).

``prefetch(a, i)``: a hint that ``a[i]`` (a 1-D C-contiguous array, ``0 <= i < a.shape[0]``) will be
read or written soon (``llvm.prefetch``: a read, high locality, data cache); no effect on any value.
The exact-value contexts fetch the next value's successor lists with it while this one's updates run
(``mixctx._xprefetch``: results/level3-floor-6.md).

``mulhi(a, b)``: the high 64 bits of the 128-bit product of ``a`` and ``b`` (both read as
uint64), as uint64: ``(a * b) >> 64``, one 64 x 64 -> 128-bit multiply (the rANS encoder's
division by a reciprocal).

Under ``NUMBA_DISABLE_JIT`` (pure-Python runs) each is the plain Python function of the same
values.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_I64 = ir.IntType(64)


def emit_bit_length(context, builder, value, typ):
    """LLVM of ``bit_length``: 64 minus the leading zeros of ``value`` (of numba type ``typ``)
    converted to int64 (sign- or zero-extended as numba converts it)."""
    v = context.cast(builder, value, typ, types.int64)
    return builder.sub(ir.Constant(_I64, 64), builder.ctlz(v, ir.Constant(ir.IntType(1), 0)))


@intrinsic
def _bit_length(typingctx, v):
    if not isinstance(v, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return emit_bit_length(context, builder, args[0], sig.args[0])

    return types.int64(types.unliteral(v)), codegen


def _bit_length_python(v):
    """``bit_length`` for pure-Python runs (module docstring)."""
    v = int(v)
    return v.bit_length() if v >= 0 else 64


def _common(args):
    """The type integers ``args`` are computed in (module docstring), or None."""
    args = [types.unliteral(a) for a in args]
    if not all(isinstance(a, types.Integer) for a in args):
        return None
    wide = [a.bitwidth == 64 and not a.signed for a in args]
    if all(wide):
        return types.uint64
    return None if any(wide) else types.int64


def _compare(builder, typ, op, a, b):
    return (builder.icmp_signed if typ.signed else builder.icmp_unsigned)(op, a, b)


@intrinsic
def _imin(typingctx, a, b):
    typ = _common((a, b))
    if typ is None:
        return None

    def codegen(context, builder, sig, args):
        x, y = [context.cast(builder, v, t, typ) for v, t in zip(args, sig.args)]
        return builder.select(_compare(builder, typ, "<", x, y), x, y)

    return typ(types.unliteral(a), types.unliteral(b)), codegen


@intrinsic
def _imax(typingctx, a, b):
    typ = _common((a, b))
    if typ is None:
        return None

    def codegen(context, builder, sig, args):
        x, y = [context.cast(builder, v, t, typ) for v, t in zip(args, sig.args)]
        return builder.select(_compare(builder, typ, ">", x, y), x, y)

    return typ(types.unliteral(a), types.unliteral(b)), codegen


@intrinsic
def _clamp(typingctx, x, lo, hi):
    typ = _common((x, lo, hi))
    if typ is None:
        return None

    def codegen(context, builder, sig, args):
        v, low, high = [context.cast(builder, a, t, typ) for a, t in zip(args, sig.args)]
        top = builder.select(_compare(builder, typ, ">", v, high), high, v)
        return builder.select(_compare(builder, typ, "<", v, low), low, top)

    return typ(*[types.unliteral(a) for a in (x, lo, hi)]), codegen


@intrinsic
def _select(typingctx, c, a, b):
    typ = _common((a, b))
    if typ is None or not isinstance(c, (types.Boolean, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        cond = context.cast(builder, args[0], sig.args[0], types.boolean)
        x, y = [context.cast(builder, v, t, typ) for v, t in zip(args[1:], sig.args[1:])]
        return builder.select(cond, x, y)

    return typ(*[types.unliteral(v) for v in (c, a, b)]), codegen


@intrinsic
def _mulhi(typingctx, a, b):
    if not isinstance(a, types.Integer) or not isinstance(b, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        i128 = ir.IntType(128)
        x, y = [builder.zext(context.cast(builder, v, t, types.uint64), i128) for v, t in zip(args, sig.args)]
        return builder.trunc(builder.lshr(builder.mul(x, y), ir.Constant(i128, 64)), _I64)

    return types.uint64(types.unliteral(a), types.unliteral(b)), codegen


@intrinsic
def _prefetch(typingctx, a, i):
    if not isinstance(a, types.Array) or a.ndim != 1 or not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [context.cast(builder, args[1], sig.args[1], types.intp)])
        ptr = builder.bitcast(ptr, ir.IntType(8).as_pointer())  # (one declaration for every dtype)
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32]),
                                            "llvm.prefetch.p0")
        builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.none(a, types.unliteral(i)), codegen


def _prefetch_python(a, i):
    return None


def _mulhi_python(a, b):
    return np.uint64((int(np.uint64(a)) * int(np.uint64(b))) >> 64)


def _imin_python(a, b):
    return a if a < b else b


def _imax_python(a, b):
    return a if a > b else b


def _clamp_python(x, lo, hi):
    return lo if x < lo else (hi if x > hi else x)


def _select_python(c, a, b):
    return a if c else b


if numba.config.DISABLE_JIT:
    bit_length, imin, imax, clamp, select, mulhi, prefetch = (_bit_length_python, _imin_python, _imax_python,
                                                              _clamp_python, _select_python, _mulhi_python,
                                                              _prefetch_python)
else:
    bit_length, imin, imax, clamp, select, mulhi, prefetch = (_bit_length, _imin, _imax, _clamp, _select, _mulhi,
                                                              _prefetch)
