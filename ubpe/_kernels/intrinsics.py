"""Scalar helpers of the kernels as numba *intrinsics*: their LLVM is emitted straight into the
calling kernel, so numba neither inlines a copy of a Python function at each call site (which
runs its untyped passes again, then types and lowers the copy: 5-25 ms of cold compile a site)
nor compiles a function of its own (``benchmarks/bench_compile.py``).

``bit_length(v)``: the number of bits of ``v`` (``int(v).bit_length()``: 0 for 0), as int64,
for any integer ``v >= 0`` and any uint64 (64 for ``v >= 2**63``); a negative signed ``v`` gives
64. One instruction (a count of leading zeros), where a shift loop took one iteration per bit.
The one bit-length helper of every kernel module.

Under ``NUMBA_DISABLE_JIT`` (pure-Python runs) each is the plain Python function of the same
values.
"""

from __future__ import annotations

import numba
from llvmlite import ir
from numba import types
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


bit_length = _bit_length_python if numba.config.DISABLE_JIT else _bit_length
