"""Compiled kernels (numba, ``cache=True``), one self-contained module per concern.

numba's on-disk cache goes to a per-user directory, never into the installed package: writing
beside the sources breaks a read-only site-packages, and files left there by one install shadow
the package after a reinstall. The directory is ``<root>/<key>``: ``<root>`` is
``$NUMBA_CACHE_DIR`` when set (numba's own setting), else ``$XDG_CACHE_HOME/ubpe/numba``
(default ``~/.cache/ubpe/numba``); ``<key>`` is a digest of every kernel module's source, of
ubpe's, numba's and Python's versions (:func:`cache_key`). numba checks a cached function
against its own file only, and kernels here share compiled helpers across files (the
context-mixing coders' ``cmcore``): keyed so, an edit to any kernel file, or another version,
compiles everything afresh in a directory of its own and can never run stale code. numba
fixes a function's cache location when its decorator runs, so every kernel module decorates
with this package's :func:`njit`, which applies the setting while the decorator runs and then
restores it: other numba code in the process is not affected, and a kernel module imported late
(the context-mixing coders, the segmenter: imported only when first used) caches in the same
place. When no such directory can be created, numba's own fallback applies (its user-wide cache).

Kernels on the default path allocate arrays through :mod:`ubpe._kernels.alloc` (intrinsics
emitted into the kernel; numba's ``np.empty``/``np.zeros``/``np.full`` compiled a function per
dtype), the context-mixing coders hash with ``cmcore._hash``, an intrinsic too, and small scalar
helpers are intrinsics (:mod:`ubpe._kernels.intrinsics`: the one ``bit_length`` of every kernel
and the integer selects ``imin``, ``imax``, ``clamp``, ``select``; ``predict.wrap``,
``entropy._rice_param``, ``train._slot``, ...): all to shorten the first, cold compilation
(``benchmarks/bench_compile.py``).

Nothing is imported here: ``import ubpe`` imports the kernel modules its own modules use, and
decorating a kernel costs about a millisecond (numba checks the cache directory per function).
"""

from __future__ import annotations

import contextlib
import inspect

import numba

from .._cache import cache_dir, cache_key, compile_lock, is_cache_warm  # noqa: F401  (re-exported)
try:
    from .pipeline import KernelCompiler
except ImportError:  # a numba whose internals moved: kernels compile with numba's own pipeline
    KernelCompiler = None
try:
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.sigutils import normalize_signature
except ImportError:  # a numba whose internals moved: each process compiles what it lacks
    global_compiler_lock = None


_UNSET = object()
_dir: object = _UNSET  # cache_dir(), asked once (at the first decorator)


@contextlib.contextmanager
def _cache_dir_applied():
    """``numba.config.CACHE_DIR`` set to :func:`cache_dir` (when there is one), then restored."""
    global _dir
    if _dir is _UNSET:
        _dir = cache_dir()
    previous = numba.config.CACHE_DIR
    if _dir is not None:
        numba.config.CACHE_DIR = _dir
    try:
        yield
    finally:
        numba.config.CACHE_DIR = previous


def njit(*args, **kwargs):
    """``numba.njit`` (same arguments, used as ``@njit(...)`` or ``@njit``), its dispatcher
    created with ubpe's cache directory applied (module docstring). An explicit signature
    compiles, or loads from that cache, right here, as numba.njit does.

    ``no_cfunc_wrapper`` is True unless given: numba otherwise compiles, for every kernel, a C
    wrapper that only a kernel passed as a first-class function value would use (none is): 10-15
    ms of cold compile a kernel (``benchmarks/bench_compile.py``). ``pipeline_class`` is
    :class:`~ubpe._kernels.pipeline.KernelCompiler` unless given: numba's pipeline less two
    passes that have nothing to do in the kernels (about 1 s of the cold compile)."""
    kwargs.setdefault("no_cfunc_wrapper", True)
    if KernelCompiler is not None:
        kwargs.setdefault("pipeline_class", KernelCompiler)
    if args and inspect.isfunction(args[0]):  # @njit, or njit(fn, ...): the dispatcher now
        with _cache_dir_applied():
            return _compiled_once(numba.njit(*args, **kwargs))
    decorate = numba.njit(*args, **kwargs)
    eager = bool(args)  # (signatures given: the decorator compiles them, or loads them, right away)

    def apply(fn):
        with _cache_dir_applied():
            if eager and global_compiler_lock is not None:
                with global_compiler_lock, compile_lock(f"{fn.__module__}.{fn.__qualname__}"):
                    return _compiled_once(decorate(fn))
            return _compiled_once(decorate(fn))

    return apply


def _compiled_once(dispatcher):
    """``dispatcher`` whose compiles of a signature it lacks hold the cache's lock of the kernel
    (:func:`ubpe._cache.compile_lock`) inside numba's compiler lock: of the processes that
    share the cache and need it at once, one compiles it and the others load it from the cache
    (numba's ``compile`` looks there first): two cold processes compressing side by side took
    50.0 s of CPU together with the locks, 88.6 s without (``benchmarks/bench_compile.py
    --processes 2``). A signature already compiled in this process takes no lock."""
    compile_ = getattr(dispatcher, "compile", None)
    if global_compiler_lock is None or compile_ is None or not hasattr(dispatcher, "overloads"):
        return dispatcher  # (NUMBA_DISABLE_JIT: the plain function)
    name = f"{dispatcher.py_func.__module__}.{dispatcher.py_func.__qualname__}"

    def compile(sig):
        if tuple(normalize_signature(sig)[0]) in dispatcher.overloads:
            return compile_(sig)
        with global_compiler_lock, compile_lock(name):
            return compile_(sig)

    dispatcher.compile = compile
    return dispatcher
