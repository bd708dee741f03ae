"""Borrowed arrays: a kernel's array arguments without numba's reference counting.

numba counts references to every array passed to a compiled (non-inlined) function and to every
view it makes, with an atomic instruction each (``NRT_incref`` / ``NRT_decref``, at every call of a
helper inside a loop). ``borrowed(arr)`` is ``arr`` with no owner: the same data, shape and strides,
a null meminfo and parent, so those calls do nothing on it (88 % of encoding a text once went to
them: results/text-short.md).

The rules: the caller keeps ``arr`` alive while the result is used (take it from an argument of the
kernel, or from an array the kernel holds in a variable of its own until it returns), and the result
or any view of it never leaves the kernel (never returned, stored in a container, or captured by
anything that outlives the call). Values are unchanged: a pure speed change.

``unowned(context, builder, fromty, toty, value)``: the codegen of it, for intrinsics that make an
array view of another structure (``text._bytes_array``).

Under ``NUMBA_DISABLE_JIT`` (pure-Python runs) ``borrowed`` returns its argument.
"""

from __future__ import annotations

import numba
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

if numba.config.DISABLE_JIT:  # pure-Python debugging runs

    def borrowed(arr):
        return arr

    unowned = None

else:

    def unowned(context, builder, fromty, toty, value):
        """The array structure ``value`` (of ``fromty``) as ``toty``, its owner fields null."""
        src = context.make_array(fromty)(context, builder, value)
        dst = context.make_array(toty)(context, builder)
        dst.meminfo = ir.Constant(dst.meminfo.type, None)
        dst.parent = ir.Constant(dst.parent.type, None)
        for name in ("nitems", "itemsize", "data", "shape", "strides"):
            setattr(dst, name, getattr(src, name))
        return dst._getvalue()

    @intrinsic
    def borrowed(typingctx, arr):
        """``arr`` with no owner: the same data, shape and strides, a null meminfo (module
        docstring: the caller keeps ``arr`` alive; the result never leaves the kernel)."""
        if not isinstance(arr, types.Array):
            return None

        def codegen(context, builder, sig, args):
            return unowned(context, builder, sig.args[0], sig.return_type, args[0])

        return arr(arr), codegen
