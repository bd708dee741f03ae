"""The taps of :func:`ubpe._kernels.predict._lms_stage32`'s split sum as explicit 16-lane vector
code (an intrinsic): the same weights and the same sum, to the bit, as the loop it replaces.

``split_taps(w, a, h, start, s, order)`` (all int32 arrays but ``start``, ``s``, ``order``):
each weight ``w[m]``, m < order, becomes ``x = w[m] + s * a[start + m]`` (int32, wrapping), and
the result is ``2 (sum (x >> 1) h[start + 2 + m] mod 2**32) + sum (x & 1) h[start + 2 + m]`` as
uint64, the first sum taken as uint32 (wrapping), the second as int32 (exact when every ``h`` is
at most 2**15 in magnitude and order <= 1024: the split sum's precondition).

Why an intrinsic: the loop numba hands LLVM (slices of three arrays that LLVM cannot prove
distinct, a trip count known only at run time) is vectorized behind per-call overlap checks and
a trip-count dispatch with a remainder loop, about 30 instructions a sample around 8 vector
iterations at order 256; here the loop is 16 lanes a block with no checks (the arrays
never overlap: ``w`` is the stage's own, ``a`` and ``h`` disjoint halves of its scratch), and
the two sums are reduced together. Two blocks an iteration, each into sums of its own, joined
before the reduction: the sums' chain of additions, on the path from one sample's residual to
the next prediction, is half as long (the default cascade forward 1.08 times as fast, its
order-256 stage inverse 1.03-1.16; four blocks an iteration were slower: 0.93-0.99;
``benchmarks/results/l2aud.md``).

Preconditions (the caller's; not checked): order a multiple of 16, at least 16; ``order <=
len(w)``; ``start >= 0``; ``start + order <= len(a)``; ``start + 2 + order <= len(h)``; ``w`` not
overlapping ``a`` or ``h``; ``s`` in {-1, 0, 1} (any int64 truncates to int32 as numba's would).
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from . import njit

LANES = 16


def _reference(w, a, h, start, s, order):
    """The definition (plain Python and numpy scalars; the compiled loop it replaces)."""
    da = 0
    db = 0
    for m in range(order):
        x = int(np.int32(np.int64(w[m]) + np.int64(s) * np.int64(a[start + m])))
        w[m] = x
        hm = int(h[start + 2 + m])
        da = (da + (x >> 1) * hm) & 0xFFFFFFFF
        db += (x & 1) * hm
    db = int(np.int32(db))
    return np.uint64((2 * da + db) & 0xFFFFFFFFFFFFFFFF)


def _arg_types(w, a, h, start, s, order):
    arrays = all(isinstance(t, types.Array) and t.dtype == types.int32 and t.ndim == 1 and t.layout == "C"
                 for t in (w, a, h))
    return arrays and all(isinstance(t, types.Integer) for t in (start, s, order))


@intrinsic
def _split_taps(typingctx, w, a, h, start, s, order):
    """The intrinsic (module docstring)."""
    if not _arg_types(w, a, h, start, s, order):
        return None

    def codegen(context, builder, sig, args):
        i32, i64 = ir.IntType(32), ir.IntType(64)
        vec = ir.VectorType(i32, LANES)
        vptr = vec.as_pointer()
        wa, aa, ha = (context.make_array(t)(context, builder, v).data for t, v in zip(sig.args[:3], args[:3]))
        st, sv, od = (context.cast(builder, v, t, types.int64) for v, t in zip(args[3:], sig.args[3:]))
        ap = builder.gep(aa, [st])
        hp = builder.gep(ha, [builder.add(st, ir.Constant(i64, 2))])
        s32 = builder.trunc(sv, i32)
        splat = builder.insert_element(ir.Constant(vec, ir.Undefined), s32, i32(0))
        splat = builder.shuffle_vector(splat, ir.Constant(vec, ir.Undefined), ir.Constant(ir.VectorType(i32, LANES), [0] * LANES))
        nblk = builder.lshr(od, ir.Constant(i64, 4))
        zero = ir.Constant(vec, [0] * LANES)
        one = ir.Constant(vec, [1] * LANES)

        def block(k, da, db):
            """Block k's 16 taps: its weights updated and stored, the two sums with its products."""
            off = builder.shl(k, ir.Constant(i64, 4))
            pw = builder.bitcast(builder.gep(wa, [off]), vptr)
            av = builder.load(builder.bitcast(builder.gep(ap, [off]), vptr), align=4)
            hv = builder.load(builder.bitcast(builder.gep(hp, [off]), vptr), align=4)
            x = builder.add(builder.load(pw, align=4), builder.mul(av, splat))
            builder.store(x, pw, align=4)
            odd = builder.icmp_unsigned("!=", builder.and_(x, one), zero)
            return builder.add(da, builder.mul(builder.ashr(x, one), hv)), builder.add(db, builder.select(odd, hv, zero))

        # two blocks an iteration, each into sums of its own (the even and the odd blocks'):
        # two chains of additions a sample, not one as long as the blocks (the sums wrap
        # modulo 2**32, the second is exact: the same totals in any order), then the last block
        # when their number is odd
        npair = builder.lshr(nblk, ir.Constant(i64, 1))
        pre = builder.block
        loop = builder.append_basic_block("taps.loop")
        join = builder.append_basic_block("taps.join")
        tail = builder.append_basic_block("taps.tail")
        last = builder.append_basic_block("taps.last")
        done = builder.append_basic_block("taps.done")
        builder.cbranch(builder.icmp_unsigned("!=", npair, ir.Constant(i64, 0)), loop, tail)
        builder.position_at_end(loop)
        j = builder.phi(i64)
        da0 = builder.phi(vec)
        db0 = builder.phi(vec)
        da1 = builder.phi(vec)
        db1 = builder.phi(vec)
        k0 = builder.shl(j, ir.Constant(i64, 1))
        da0n, db0n = block(k0, da0, db0)
        da1n, db1n = block(builder.add(k0, ir.Constant(i64, 1)), da1, db1)
        j2 = builder.add(j, ir.Constant(i64, 1))
        builder.cbranch(builder.icmp_unsigned("<", j2, npair), loop, join)
        for phi, first, again in ((j, ir.Constant(i64, 0), j2), (da0, zero, da0n), (db0, zero, db0n),
                                  (da1, zero, da1n), (db1, zero, db1n)):
            phi.add_incoming(first, pre)
            phi.add_incoming(again, loop)
        builder.position_at_end(join)
        sa, sb = builder.add(da0n, da1n), builder.add(db0n, db1n)
        builder.branch(tail)
        builder.position_at_end(tail)
        ta = builder.phi(vec)
        tb = builder.phi(vec)
        ta.add_incoming(zero, pre)
        ta.add_incoming(sa, join)
        tb.add_incoming(zero, pre)
        tb.add_incoming(sb, join)
        builder.cbranch(builder.icmp_unsigned("!=", builder.and_(nblk, ir.Constant(i64, 1)), ir.Constant(i64, 0)),
                        last, done)
        builder.position_at_end(last)
        la, lb = block(builder.sub(nblk, ir.Constant(i64, 1)), ta, tb)
        builder.branch(done)
        builder.position_at_end(done)
        fa = builder.phi(vec)
        fb = builder.phi(vec)
        fa.add_incoming(ta, tail)
        fa.add_incoming(la, last)
        fb.add_incoming(tb, tail)
        fb.add_incoming(lb, last)
        red = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i32, [vec]), "llvm.vector.reduce.add.v16i32")
        ra = builder.call(red, [fa])
        rb = builder.call(red, [fb])
        return builder.add(builder.shl(builder.zext(ra, i64), ir.Constant(i64, 1)), builder.sext(rb, i64))

    return types.uint64(w, a, h, start, s, order), codegen


if numba.config.DISABLE_JIT:  # pure-Python runs: the definition

    def split_taps(w, a, h, start, s, order):
        return _reference(w, a, h, start, s, order)

else:

    @njit(cache=True, nogil=True, inline="always")
    def split_taps(w, a, h, start, s, order):
        """:func:`_split_taps` (module docstring)."""
        return _split_taps(w, a, h, start, s, order)
