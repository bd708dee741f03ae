"""The kernels' numba pipeline: numba's own, less two passes that have nothing to do in them.

``njit`` (``ubpe._kernels``) compiles every kernel with :class:`KernelCompiler`: numba's default
nopython pipeline, in which two passes run only when the function has something for them:

* ``InlineClosureLikes`` (closures, list comprehensions, ``reduce`` and stencils inlined, lists
  built into arrays): only when the function's bytecode makes a function (a closure, a lambda or
  a comprehension: a code object among its constants), builds a list or names ``reduce`` or
  ``stencil`` (:func:`has_closure_likes`); the kernels do none of these.
* ``NopythonRewrites`` (array expressions fused into one loop, an array of constants built
  without its list, string-literal indexing): only when the typed IR has an array-valued
  operator or ufunc call, an ``np.array`` call or a string-literal index
  (:func:`has_rewrites`); the kernels write their loops out.

A kernel's library is a :class:`KernelCodeLibrary`: numba's, less the function-level LLVM
optimisation of the kernel's CPython wrapper (the argument unboxing numba adds to a kernel called
from Python) before the module-level optimisation, which optimises the wrapper with the rest of
the module all the same; the kernel's own functions go through both as before (about 0.14 s of
LLVM in the cold compile of levels 2 and 1, measured around those passes).

Each pass re-derives the function's liveness (numba's ``PostProcessor``) even when it changes
nothing: skipped where it has nothing to do, the cold compile of ``compress`` and ``decompress``
at levels 2 and 1 took about 1 s less CPU (``benchmarks/bench_compile.py``) for the same machine
code. A function that has something for them goes through numba's pipeline unchanged. Nothing
here is part of the cache key but the source (``ubpe._cache.cache_key``): an edit here compiles
everything afresh.
"""

from __future__ import annotations

import dis

import numpy as np
from numba.core import ir, types
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import FunctionPass, LoweringPass, register_pass
from numba.core.typed_passes import NativeLowering, NopythonRewrites
from numba.core.untyped_passes import InlineClosureLikes

_LIST_OPS = frozenset(op for op in dis.opmap if op.startswith(("BUILD_LIST", "LIST_")))
_ARRAY_OPS = frozenset(("unary", "binop", "inplace_binop"))


def has_closure_likes(code) -> bool:
    """Whether the code object ``code`` may give ``InlineClosureLikes`` something to inline: a
    nested code object (a closure, lambda or comprehension), a list built, or the global
    ``reduce`` or ``stencil``."""
    if any(hasattr(c, "co_code") for c in code.co_consts):
        return True
    if {"reduce", "stencil"} & set(code.co_names):
        return True
    return any(ins.opname in _LIST_OPS for ins in dis.get_instructions(code))


def _string_index(typemap, var) -> bool:
    return var is not None and isinstance(typemap.get(var.name), types.StringLiteral)


def has_rewrites(func_ir, typemap) -> bool:
    """Whether the typed IR has what numba's after-inference rewrites act on: an array-valued
    operator or ufunc call (or ``np.array``), or a string-literal index."""
    for block in func_ir.blocks.values():
        for inst in block.body:
            if isinstance(inst, ir.SetItem) and _string_index(typemap, inst.index):
                return True
            if not isinstance(inst, ir.Assign) or not isinstance(inst.value, ir.Expr):
                continue
            expr = inst.value
            if expr.op == "getitem" and _string_index(typemap, expr.index):
                return True
            if not isinstance(typemap.get(inst.target.name), types.Array):
                continue
            if expr.op in _ARRAY_OPS:
                return True
            if expr.op == "call":
                fn = typemap.get(expr.func.name)
                key = getattr(fn, "typing_key", None)
                if isinstance(key, np.ufunc) or key in (np.array, np.asarray):
                    return True
    return False


@register_pass(mutates_CFG=True, analysis_only=False)
class InlineClosureLikesWhenAny(FunctionPass):
    """``InlineClosureLikes`` when :func:`has_closure_likes` (module docstring)."""

    _name = "ubpe_inline_closure_likes_when_any"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        if not has_closure_likes(state.func_id.code):
            return False
        return InlineClosureLikes().run_pass(state)


@register_pass(mutates_CFG=True, analysis_only=False)
class NopythonRewritesWhenAny(FunctionPass):
    """``NopythonRewrites`` when :func:`has_rewrites` (module docstring)."""

    _name = "ubpe_nopython_rewrites_when_any"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        if not has_rewrites(state.func_ir, state.typemap):
            return False
        return NopythonRewrites().run_pass(state)


#: The prefix of the symbol of numba's CPython wrapper of a function (``FunctionDescriptor``'s
#: ``llvm_cpython_wrapper_name``: the mangled name under the namespace ``cpython``).
_CPYTHON_WRAPPER = "_ZN7cpython"


class KernelCodeLibrary(JITCodeLibrary):
    """numba's JIT code library, the function-level optimisation (``_optimize_functions``) left
    out for the CPython wrapper (module docstring)."""

    def _optimize_functions(self, ll_module):
        ll_module.data_layout = self._codegen._data_layout
        for func in ll_module.functions:
            if func.name.startswith(_CPYTHON_WRAPPER):
                continue  # (optimised with the module)
            fpm, pb = self._codegen._function_pass_manager()
            with self._recorded_timings.record(f"Function passes on {func.name!r}", pb):
                fpm.run(func, pb)


@register_pass(mutates_CFG=False, analysis_only=False)
class KernelLibrary(LoweringPass):
    """Gives the function a :class:`KernelCodeLibrary` (before ``NativeLowering``, which makes
    numba's library when there is none) when the target's codegen makes JIT code libraries."""

    _name = "ubpe_kernel_library"

    def __init__(self):
        LoweringPass.__init__(self)

    def run_pass(self, state):
        codegen = state.targetctx.codegen()
        if state.library is None and getattr(codegen, "_library_class", None) is JITCodeLibrary:
            state.library = KernelCodeLibrary(codegen, state.func_id.func_qualname)
            state.library.enable_object_caching()  # (as NativeLowering does)
        return False


_STANDS_IN = {InlineClosureLikes: InlineClosureLikesWhenAny, NopythonRewrites: NopythonRewritesWhenAny}


class KernelCompiler(CompilerBase):
    """numba's nopython pipeline, its ``InlineClosureLikes`` and ``NopythonRewrites`` passes run
    only when the function has something for them (module docstring)."""

    def define_pipelines(self):
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        try:
            pm.passes[:] = [(_STANDS_IN.get(cls, cls), what) for cls, what in pm.passes]
            at = [cls for cls, _ in pm.passes].index(NativeLowering)
            pm.passes.insert(at, (KernelLibrary, "ubpe's code library"))
            pm._finalized = False  # (finalize again: the pass list changed)
            pm.finalize()
        except (AttributeError, TypeError, ValueError, AssertionError):
            # a numba whose pass manager changed shape: its own pipeline, unchanged
            pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        return [pm]
