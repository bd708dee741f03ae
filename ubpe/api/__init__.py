"""The public entry points: :func:`compress`, :func:`decompress`, their streaming forms
:func:`compress_to` and :func:`decompress_to`, and :func:`describe`.

This is the one place that joins the parts, in the order of the data flow:

1. the arguments are checked (:mod:`ubpe.api.arguments`);
2. the values go to the ``(channels, frames)`` layout (:func:`ubpe.frontend.to_channels`); floats
   through a float stage first (:mod:`ubpe.frontend.floats`);
3. the planner (:mod:`ubpe.planner`) chooses a front-end chain, a model and coders by the exact
   size :mod:`ubpe.api.writer` gives each candidate, or a given model codes them;
4. the format (:mod:`ubpe.format.container`) packs the fields; long inputs become blocks that
   share one model, coded on several threads.

Decompression walks back: :func:`ubpe.format.container.parse` checks every field before anything
proportional to the output is allocated, and :mod:`ubpe.api.reader` decodes the streams, inverts
the chain and checks the CRC.
"""

from __future__ import annotations

import math
from typing import Any, BinaryIO, Callable, Iterator

import numpy as np

from .. import frontend, shared
from .._validate import check_bool, check_int
from ..errors import CorruptDataError
from ..format import container
from ..format import describe as _format
from ..format import groups as grouped
from ..format.describe import ContainerInfo
from ..format.fields import argument_error, check_source
from ..frontend.floatcodes import PER_BLOCK
from ..frontend.mult import detection_cache as _detection_cache
from ..model import DEFAULT_MAX_OUTPUT_SIZE, Model
from ..planner import settings as _settings
from ..planner.candidates import run_threads
from ..tokenizer import Tokenizer
from . import groups, reader, writer
from .arguments import (
    DEFAULT_LEVEL, as_values, delta_argument, fit_options_argument, float_argument, level_argument,
    predictor_argument, threads_argument,
)

__all__ = ["ContainerInfo", "compress", "compress_to", "decompress", "decompress_to", "describe", "inspect"]

def describe(data: bytes | bytearray | memoryview) -> ContainerInfo:
    """Describe a container without decoding it: sizes of its parts, ratio, front end, source.

    The fields are validated as by :func:`decompress` (except the model's merge table, the
    token stream and the checksum, which only decoding checks); malformed input raises
    ``CorruptDataError``. No output-size cap applies. A window container (``ubpe.shared``) is
    described without its model.
    """
    if shared.is_window(data):
        return shared.describe_window(data)
    if grouped.is_grouped(data):
        return groups.describe_grouped(data)
    return _format.describe(data)


#: The former name of :func:`describe`, kept as an alias (``ubpe.inspect`` shadows the standard
#: library's ``inspect`` module in code that does ``from ubpe import *``).
inspect = describe
_NO_CAP = 1 << 256


def compress(
    values: Any,
    *,
    tokenizer: Tokenizer | Model | None = None,
    n_tokens: int | None = None,
    embed: bool = True,
    delta: int | None = None,
    predictor: str = "auto",
    level: int = DEFAULT_LEVEL,
    source: dict[str, Any] | None = None,
    step: float | None = None,
    bits: int | None = None,
    escape: bool = True,
    block_size: int | None = None,
    threads: int | None = None,
    progress: Callable[[int], None] | None = None,
    **fit_options: Any,
) -> bytes:
    """Compress integer or float values into self-describing bytes (format: ``docs/format.md``).

    Parameters
    ----------
    values : array_like
        A numpy integer, bool or float16/32/64 array of any shape (dtype, byte order and shape
        are restored by :func:`decompress`), a list of ints (as int64) or of floats (float64),
        or bytes (as uint8). For ``ndim >= 2`` axis 0 is time and the other axes are channels,
        each predicted on its own; a 2-D array with more channels than frames (``shape[1] >
        shape[0] > 0``) raises ``ValueError`` (pass ``x.T``). Floats: without ``step`` and
        ``bits`` they must lie on an exact grid (:func:`ubpe.frontend.floats.exact_grid`: every value
        ``k * 2**e``, ``|k| <= 2**53``, as integers stored as floats are) and come back bit
        for bit (``-0.0`` included); otherwise
        ``TypeError`` asks for ``step=`` or ``bits=``. NaN and infinities raise ``ValueError``
        naming the first.
    tokenizer : Tokenizer or Model, optional
        A fitted model to encode with (a :class:`Tokenizer`, or its :class:`~ubpe.Model`).
        Without one, a model is fitted on the values and embedded.
    n_tokens : int, optional
        Vocabulary size (alphabet included) of the fitted model. By default the size that
        minimises the container is chosen (:mod:`ubpe.planner`).
    embed : bool, default True
        With a ``tokenizer``: ``True`` embeds its alphabet and merge table; ``False`` stores
        only its digest (``Model.digest``: mode, alphabet and merges), and :func:`decompress`
        then needs a model with that digest.
    delta : int, optional
        Forces the front end: ``k`` in ``[1, MAX_DELTA]`` the delta chain of order ``k``
        (:func:`ubpe.signal.delta` along each channel, modulo ``2**bits``), ``0`` no front end.
        ``None`` (default), when a model is fitted: the chain that gives the smallest
        container (see ``predictor``), every one measured (on samples for long inputs:
        :mod:`ubpe.planner`). ``None`` with a ``tokenizer``: the smallest container of the
        orders 0, 1 and 2 with that model (a model fitted on ``ubpe.signal.delta(x, k)`` is
        best used with order ``k``, found so without being told). Bool values take no front end.
    predictor : str, default "auto"
        Forces the front-end chain by name (:data:`ubpe.frontend.chains.PREDICTORS`): ``"none"``, ``"delta1"``,
        ``"delta2"``, ``"lpc"`` (exact block LPC per channel), ``"lpc+adaptive"`` (then a
        sign-sign LMS cascade), ``"delta1+adaptive"``, ``"rank+delta1"`` (ranks among the
        distinct values, then delta 1). ``"auto"`` leaves the choice to ``delta``, else
        measures the chains of :func:`ubpe.planner.auto_chains` (all of the above, ``rank+delta1`` only
        when the distinct values are few relative to their span). Cannot be combined with
        ``delta``. With a ``tokenizer`` any chain applies: the one the model was fitted on
        (``ubpe fit --predictor``), its per-window parameters (LPC coefficients) in the container;
        a tokenizer fitted with ``predictor=`` brings its own (``Tokenizer.predictor``).
    escape : bool, default True
        With a ``tokenizer``: values (after the front end) outside its alphabet are *escaped*:
        coded as the nearest alphabet value, and the true value stored beside the stream with its
        position (``describe(data).escapes`` counts them), so a shared model never refuses new
        data. ``False`` refuses them with ``ValueError`` naming the first.
    level : {1, 2, 3}, default 2
        ``1``: a static model, the tokens coded by rANS (or bit packing, or a constant); fast
        to decode. ``2``: also offers the adaptive context-mixing coders (``"cms2"`` for
        signals, ``"cmt2"`` for text) and the vocabulary sizes chosen for them, and the adaptive
        prediction stage; smaller on data with context, and 20-100x slower to decode when one is
        chosen (:func:`describe` reports ``coder``). ``3`` (integer signals; issue 29): the
        smaller of level 2's container and one whose stream is the level-3 signal coder
        (``"mixsignal"``, :mod:`ubpe.level3`: prediction by a mix of least-squares and NLMS
        predictors, residuals by context mixing; about 0.2 M values/s to compress and 0.5 M to
        decompress, decoded whole). Level 2's container is built beside it only where it may
        win or costs little (more than one channel, at most 2 048 or at least 65 536 values, or
        at most 2 bits a value at level 3: ``Settings.level3_level2_*``); elsewhere level 3's
        container may be a little larger than level 2's (at most 2.7 % on the recordings
        measured: benchmarks/results/level3-skip.md); with more than one channel its channel
        groupings keep, group by group, the smaller of level 2's and the level-3 coder's
        containers, never larger than level 2's (:mod:`ubpe.api.level3_groups`). Other
        input, or ``tokenizer``, ``delta``, ``predictor``, ``n_tokens`` or fit options, gives
        level 2's container.
    source : dict, optional
        Metadata about where the values came from (e.g. ``{"format": "wav", "rate": 48000}``),
        stored as it is and returned by :func:`describe`: at most 32 str keys (up to 64
        characters) with int (64-bit), float, bool, str or bytes values (up to 1024
        characters or bytes).
    step, bits : optional
        Floats only, at most one: quantize them first (:func:`ubpe.signal.quantize`, lossy);
        :func:`decompress` returns the dequantized floats (within about ``step / 2`` of the
        values: the bound is on :meth:`ubpe.frontend.floats.Quantizer.dequantize`), the container's
        CRC covers those, and :func:`describe` reports ``lossy=True`` and the ``quantizer``.
        The rest of the chain is chosen on the quantized integers as for integer input.
    block_size : int, optional
        Values per block (default ``2**20``, and ``2**26``, for one-byte values such as text; ``0``:
        never cut).
        Larger inputs, when a model is fitted, are cut into blocks of ``max(1, block_size //
        channels)`` frames that share one model (chain, merges and coders chosen on a sample of
        ``Settings.sample`` values, the alphabet extended to every block's values), each
        block with its own front-end parameters (predictors restart per block), stream and CRC
        (``docs/format.md``, "Blocks"): compressed and decompressed in
        parallel, and decompressed in part (``decompress(start=, stop=)``). With a
        ``tokenizer``, its model codes every block as it is (chain and use of its merges
        measured on the sample; values outside its alphabet escaped). Inputs of at most
        ``block_size`` values give one stream. :func:`compress_to` writes a blocked container of
        a memory-mapped integer input (no ``tokenizer``) block by block.
    threads : int, optional
        Threads that compress the blocks and measure the front-end chains side by side
        (default: every core). The bytes do not depend on it.
    progress : callable, optional
        ``progress(frames)`` each time that many more frames are coded: as each block of a
        blocked container is, from the thread that coded it (so it must be thread-safe, as
        ``tqdm.update`` is); once for all the frames of a one-stream container, when it is done.
    **fit_options
        ``n_candidates``, ``min_count``, ``window`` (and with ``n_tokens``, ``weighting``):
        passed to :class:`Tokenizer` when a model is fitted. ``weighting`` decides which
        tokens a fixed-size model keeps, so it needs ``n_tokens``; the automatic size keeps a
        prefix of the merges in priority order, which no weighting changes, and refuses it.

    Returns
    -------
    bytes

    Examples
    --------
    >>> import numpy as np, ubpe
    >>> x = np.tile(np.array([3, -1, 4, 1, 5], dtype=np.int16), 200)
    >>> data = ubpe.compress(x)
    >>> len(data) < x.nbytes
    True
    >>> y = ubpe.decompress(data)
    >>> y.dtype, bool(np.array_equal(x, y))
    (dtype('int16'), True)

    Floats: integers stored as floats come back bit for bit; other floats take a step (lossy).

    >>> counts = np.tile(np.array([3, 5, 4, -2], dtype=np.float32), 250)
    >>> ubpe.decompress(ubpe.compress(counts)).tobytes() == counts.tobytes()
    True
    >>> wave = np.sin(np.arange(2000) / 50.0)
    >>> data = ubpe.compress(wave, step=0.001)
    >>> bool(np.abs(ubpe.decompress(data) - wave).max() <= 0.0005), ubpe.describe(data).lossy
    (True, True)
    """
    if isinstance(tokenizer, shared.SharedModel):  # a window coded with a shared model (ubpe/shared/)
        if progress is not None and not callable(progress):
            raise TypeError(f"progress must be a callable or None, got {type(progress).__name__}")
        alone = b"".join(_parts(values, True, n_tokens=n_tokens, delta=delta, predictor=predictor, level=level,
                                source=source, step=step, bits=bits, block_size=block_size, threads=threads,
                                fit_options=fit_options))  # (embed, escape: how a tokenizer is referenced)
        return shared.compress_window(values, tokenizer, alone, source=source, lossy=step is not None or bits is not None,
                               progress=progress)
    if tokenizer is None and delta is None and isinstance(predictor, str) and predictor == "auto" and step is None \
            and bits is None and n_tokens is None and not fit_options and progress is None and type(level) is int \
            and level == 2:  # (level 2: channels each alone, when its one stream would be blocked and theirs not)
        if source is not None:
            check_source(source, argument_error)
        alone = groups.blocked_alone(values, level=level, source=source, threads=threads, block_size=block_size)
        if alone is not None:  # (a blocked one stream whose channels each fit one block: each alone)
            return alone
    pair: list[bytes] = []  # (level 3: its two one-stream containers, level 2's and the level-3 coder's)
    # one scope of "mult" detections for the call: the channel groups' containers below detect
    # the same channels' digits again (a 4-channel weather file: 12 detections, 3 a channel)
    with _detection_cache():
        data = b"".join(_parts(values, True, tokenizer=tokenizer, n_tokens=n_tokens, embed=embed, delta=delta,
                               predictor=predictor, level=level, source=source, step=step, bits=bits, escape=escape,
                               block_size=block_size, threads=threads, progress=progress, fit_options=fit_options,
                               pair=pair))
        if tokenizer is None and delta is None and predictor == "auto" and step is None and bits is None \
                and n_tokens is None and not fit_options:  # one stream per channel group when smaller
            data = groups.smaller(values, data, level=level, source=source, threads=threads,
                                  block_size=block_size, pair=pair)
    return data


def compress_to(out: BinaryIO, values: Any, **options: Any) -> int:
    """Write ``compress(values, **options)`` to the binary file ``out``; return the bytes written.

    The same bytes, but a blocked container of integers (more than ``block_size`` values, no
    ``tokenizer``) is written block by block, and ``values`` read block by block (twice: once
    to extend the alphabet to every block's values, once to code them): with a memory-mapped
    array (``np.load(path, mmap_mode="r")``, ``np.memmap``) memory stays within a few blocks
    per thread, however large the values. Other containers are built in memory, then written.
    """
    names = ("tokenizer", "n_tokens", "embed", "delta", "predictor", "level", "source", "step", "bits", "escape",
             "block_size", "threads", "progress")
    named = {k: options.pop(k) for k in names if k in options}
    written = 0
    for part in _parts(values, False, fit_options=options, **named):
        out.write(part)
        written += len(part)
    return written


def _parts(values: Any, keep: bool, *, tokenizer: Tokenizer | Model | None = None, n_tokens: int | None = None,
           embed: bool = True, delta: int | None = None, predictor: str = "auto", level: int = DEFAULT_LEVEL,
           source: dict[str, Any] | None = None, step: float | None = None, bits: int | None = None,
           escape: bool = True, block_size: int | None = None, threads: int | None = None,
           progress: Callable[[int], None] | None = None, fit_options: dict,
           pair: list[bytes] | None = None) -> Iterator[bytes]:
    """The container of :func:`compress`'s arguments as consecutive byte strings; ``keep``: a
    blocked container of integers keeps its blocks' front-end outputs between its two passes
    (else reads the values twice, memory bounded by a few blocks per thread); ``pair`` (level 3):
    filled with level 2's and the level-3 coder's one-stream containers where both were built."""
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable or None, got {type(progress).__name__}")
    arr = as_values(values)
    level = level_argument(level)
    if level == 3:  # the smaller of level 2's container and one of the level-3 signal coder
        yield _level3(values, arr, tokenizer=tokenizer, n_tokens=n_tokens, embed=embed, delta=delta,
                      predictor=predictor, source=source, step=step, bits=bits, escape=escape, block_size=block_size,
                      threads=threads, progress=progress, fit_options=fit_options, pair=pair)
        return
    s = _settings.current()
    float_stage = float_argument(arr, step, bits, lambda: _lossless_float_stage(arr, level, s))
    embed = check_bool("embed", embed)
    order = delta_argument(delta, arr.dtype)
    forced = predictor_argument(predictor, delta, arr.dtype)
    if forced is not None and all(name == "delta" for name, _ in forced) and len(forced) <= 1:
        order, forced = (forced[0][1]["order"] if forced else 0), None
    threads = threads_argument(threads)
    if block_size is not None:
        check_int("block_size", block_size, 0)
    src = check_source(source, argument_error) if source is not None else None
    dtype = arr.dtype
    if dtype.kind == "b":
        arr = arr.view(np.uint8) != 0  # normalise bool bytes to 0/1 (the CRC covers them)
    shape = [int(d) for d in arr.shape]
    native = dtype.newbyteorder("=") if dtype.byteorder == ">" else dtype
    channels, frames = container.channels_frames(shape, math.prod(shape))
    block = 0 if channels * frames == 0 else writer.block_frames(block_size, channels, frames, dtype.itemsize)
    if tokenizer is None:
        if not embed:
            raise ValueError("embed=False stores only a model's digest: pass the tokenizer= to reference")
        fit_options_argument(n_tokens, fit_options)
    elif n_tokens is not None or fit_options:
        raise ValueError("n_tokens and fit options apply when compress fits a model; "
                         "they cannot be combined with tokenizer=")
    base: dict[str, Any] = {"dtype": dtype.str, "shape": shape}
    if src is not None:
        base["source"] = src
    if block and float_stage is None and tokenizer is None:  # integers: read block by block, never all at once
        base["crc"] = 0  # (the planner sizes one-stream candidates of the sample)
        frames_source = writer.Frames(
            channels, frames, lambda f0, f1: frontend.to_channels(arr[f0:f1]),
            lambda f0, f1: np.ascontiguousarray(arr[f0:f1], dtype=native).reshape(f1 - f0, -1), [])
        yield from writer.blocked_parts(base, frames_source, block, writer.forced_chains(forced, order), level,
                                        n_tokens, fit_options, s, threads, keep=keep, progress=progress)
        return
    x = frontend.to_channels(arr)  # (channels, frames), native
    checked = np.ascontiguousarray(arr.reshape(-1), dtype=native)
    prefix: list[dict[str, Any]] = []  # the float stage, ahead of the chain chosen on its integers
    if float_stage is not None:
        x, prefix = frontend.forward(x, [float_stage])
        if prefix[0]["stage"] == "quantize":  # lossy: the checksum covers what decompress returns
            checked = frontend.from_channels(frontend.inverse(x, prefix, native), tuple(shape)).reshape(-1)
    base["crc"] = container.values_crc(dtype, shape, checked)  # written last: candidate_fields moves it
    base["front"] = prefix  # the chosen chain is appended to it
    if tokenizer is not None:
        yield from _given_model_parts(base, x, checked, prefix, tokenizer, forced, order, dtype, embed, escape,
                                      level, block, s, threads, arr, float_stage, progress)
        return
    if x.size == 0:
        chain = writer.forced_chains(forced, order) or [[]]
        yield container.pack(writer.empty_fields(base, x, chain[0], level))
        return
    if block:  # floats: the float stage's parameters are chosen on all the values
        rows = checked.reshape(x.shape[1], -1)  # (frames, channels): the values the CRCs cover
        src_frames = writer.Frames(x.shape[0], x.shape[1], lambda f0, f1: x[:, f0:f1], lambda f0, f1: rows[f0:f1],
                                   prefix)
        if float_stage.name in PER_BLOCK:  # each block its own exceptions and raw bits
            src_frames = writer.float_frames(src_frames, frontend.to_channels(arr), float_stage)
        yield from writer.blocked_parts(base, src_frames, block, writer.forced_chains(forced, order), level,
                                        n_tokens, fit_options, s, threads, progress=progress)
        return
    from ..frontend.chains import built_chain
    from ..frontend.mult import detection_cache
    from ..planner import auto_chains

    with detection_cache():  # (auto_chains' "mult" detections are the plan's: made once)
        chains = writer.forced_chains(forced, order) or [built_chain(spec) for spec in auto_chains(x, level, s)]
        data = writer.planned_container(base, x, chains, level, n_tokens, fit_options, s, threads)
    if level == 2 and float_stage is not None and step is None and bits is None:
        # each level chooses its own lossless float mode: level 1's container, kept when smaller
        one = b"".join(_parts(values, keep, n_tokens=n_tokens, embed=embed, delta=delta, predictor=predictor,
                              level=1, source=source, escape=escape, block_size=block_size, threads=threads,
                              fit_options=fit_options))
        data = one if len(one) < len(data) else data
    if prefix and prefix[0]["stage"] == "floatdec" and checked.size <= s.float_packed_max_values:
        short = writer.floatpack_fields(base, checked, prefix[0])  # a short series' container, when smaller
        if short is not None:
            packed = container.pack(short)
            data = packed if len(packed) < len(data) else data
    if progress is not None:
        progress(x.shape[1])
    yield data


def _level3(values: Any, arr: np.ndarray, *, tokenizer: Any, n_tokens: int | None, delta: int | None,
            predictor: str, source: dict | None, step: Any, bits: Any, block_size: int | None, fit_options: dict,
            pair: list[bytes] | None = None, **options: Any) -> bytes:
    """``compress(level=3)``: level 2's container (every argument checked by it), or one whose
    stream is the level-3 signal coder "mixsignal" over the values when that is smaller (integer
    values of at least one axis and one value, no ``tokenizer``, ``delta``, ``predictor``,
    ``n_tokens`` or fit options; one stream whatever ``block_size``). Level
    2's container is built beside the level-3 one only where the planner expects it may win
    or costs little (:func:`ubpe.planner.level3_pair.level2_wanted`)."""
    def level2() -> bytes:
        return b"".join(_parts(values, True, tokenizer=tokenizer, n_tokens=n_tokens, delta=delta, predictor=predictor,
                               level=2, source=source, step=step, bits=bits, block_size=block_size,
                               fit_options=fit_options, **options))

    if tokenizer is not None or delta is not None or predictor != "auto" or n_tokens is not None or fit_options \
            or arr.dtype.kind not in "iu" or arr.size == 0:
        return level2()
    two = None
    if step is not None or bits is not None:
        two = level2()  # (checks them)
    else:  # the arguments level 2 would check, checked before the level-3 coder runs
        check_bool("embed", options.get("embed", True))
        threads_argument(options.get("threads"))
        if block_size is not None:
            check_int("block_size", block_size, 0)
    shape = [int(d) for d in arr.shape]
    base: dict[str, Any] = {"dtype": arr.dtype.str, "shape": shape}
    if source is not None:
        base["source"] = check_source(source, argument_error)
    native = arr.dtype.newbyteorder("=") if arr.dtype.byteorder == ">" else arr.dtype
    base["crc"] = container.values_crc(arr.dtype, shape, np.ascontiguousarray(arr.reshape(-1), dtype=native))
    fields = writer.values_coded_fields(base, arr)
    if fields is None:
        return level2() if two is None else two
    three = container.pack(fields)
    from ..planner.level3_pair import level2_wanted

    channels, frames = container.channels_frames(tuple(shape), arr.size)
    if two is None and not level2_wanted(int(arr.size), channels, len(three), _settings.current()):
        progress = options.get("progress")
        if progress is not None:
            progress(frames)
        return three
    two = level2() if two is None else two
    if pair is not None:  # (the grouping step's estimate: ubpe.api.level3_groups)
        pair[:] = [two, three]
    return two if len(two) <= len(three) else three


def _given_model_parts(base: dict, x: np.ndarray, checked: np.ndarray, prefix: list[dict], tokenizer: Any,
                       forced: tuple | None, order: int | None, dtype: np.dtype, embed: bool, escape: Any, level: int,
                       block: int, s: _settings.Settings, threads: int, arr: np.ndarray,
                       float_stage: frontend.Stage | None,
                       progress: Callable[[int], None] | None = None) -> Iterator[bytes]:
    """The container of ``x`` (``(channels, frames)``) coded with a given model: its own chain
    (or the one forced; else the smallest of the delta orders 0 to 2), its merges or none of
    them, whichever gives the smaller container (measured on a sample of a blocked input)."""
    from ..frontend.chains import PREDICTORS, build_chain
    from ..planner.fast import with_settings

    model = writer.model_argument(tokenizer)
    recorded = getattr(tokenizer, "predictor", None) if isinstance(tokenizer, Tokenizer) else None
    if recorded is not None and forced is None and order is None:
        forced = PREDICTORS[recorded]  # the chain the model was fitted behind
    escape = check_bool("escape", escape)
    if forced is not None:
        chains = [build_chain(forced)]
    elif order is not None:
        chains = [writer.delta_chain(order)]
    else:
        chains = [writer.delta_chain(k) for k in ([0, 1, 2] if dtype.kind != "b" else [0])]
    chains = [with_settings(chain, s) for chain in chains]  # (an "lpc" stage's refit: the settings' tuning)
    given_rows = None
    if block:  # the chain and the bare choice measured on a sample, then every block coded alike
        rows = checked.reshape(x.shape[1], -1)
        given_rows = writer.Frames(x.shape[0], x.shape[1], lambda f0, f1: x[:, f0:f1], lambda f0, f1: rows[f0:f1],
                                   prefix)
        if float_stage is not None and float_stage.name in PER_BLOCK:  # each block its own exceptions, raw bits
            given_rows = writer.float_frames(given_rows, frontend.to_channels(arr), float_stage)
        x = writer.sample_frames(given_rows.get, x.shape[0], x.shape[1], s.sample, s.windows)
    best = choice = None
    for i, chain in enumerate(chains):
        # the model's merges, or none of them: tokens below A decode as themselves, so the
        # reader needs nothing to tell them apart (an adaptive coder often does better on the
        # bare values of a window than on a vocabulary fitted to other windows)
        prepared = None  # the chain's ids and escapes, made once for both
        for bare in (False, True):
            try:
                if prepared is None:
                    prepared = writer.given_model_input(x, model, chain, escape)
                packed = container.pack(writer.given_model_fields(base, x, model, chain, embed, level, escape, bare,
                                                                  prepared))
            except ValueError:
                if i == len(chains) - 1 and best is None and bare:
                    raise
                continue
            if best is None or len(packed) < len(best):
                best, choice = packed, (chain, bare)
    if given_rows is not None:
        given = writer.Given(model, embed, escape, choice[1])
        yield from writer.blocked_parts(base, given_rows, block, [choice[0]], level, None, {}, s, threads,
                                        given=given, progress=progress)
        return
    if progress is not None:
        progress(x.shape[1])
    yield best


def _lossless_float_stage(arr: np.ndarray, level: int, s: _settings.Settings) -> frontend.Stage:
    """The lossless float stage for the floats ``arr`` (:func:`ubpe.planner.floats.choose`), its
    finalists measured as the bytes of their params and of their integers compressed at ``level``."""
    import msgpack

    from ..planner.floats import choose

    def measure(stage: frontend.Stage, sample: np.ndarray) -> int:
        y, params = stage.forward(sample)
        ints = y.T if y.shape[0] > 1 else y.reshape(-1)
        return len(compress(ints, level=level, threads=1)) + len(msgpack.packb(params, use_bin_type=True))

    return choose(frontend.to_channels(arr), s, measure)


def decompress(data: bytes | bytearray | memoryview, *, tokenizer: Tokenizer | Model | None = None,
               max_output_size: int | None = None, start: int | None = None, stop: int | None = None,
               threads: int | None = None, progress: Callable[[int], None] | None = None) -> np.ndarray:
    """Values compressed by :func:`compress`, with their dtype (byte order included) and shape.

    Parameters
    ----------
    data : bytes-like
    tokenizer : Tokenizer or Model, optional
        Needed when the container references its model by digest (``compress(...,
        embed=False)``); its ``Model.digest`` must match. Ignored when the container embeds its
        model.
    max_output_size : int, optional
        Largest accepted output, in bytes of the returned array (values x itemsize); ``None``
        means 4 GiB (``ubpe.model.DEFAULT_MAX_OUTPUT_SIZE``). A container declaring more is
        refused before anything is allocated. Intermediate arrays are at most about 8 bytes per
        value. With ``start``/``stop``, the cap applies to what must be decoded: the blocks
        holding the frames asked for (a one-stream container: all its values).
    start, stop : int, optional
        The frames (indices along axis 0, with slice semantics: negative counts from the end,
        out-of-range clips) to return: ``decompress(data, start=a, stop=b)`` equals
        ``decompress(data)[a:b]``. A blocked container decodes only the blocks holding them
        (and checks only their CRCs); a one-stream container is decoded whole, then sliced.
    threads : int, optional
        Threads that decode the blocks of a blocked container (default: every core).
    progress : callable, optional
        ``progress(frames)`` each time that many more frames are decoded: as each block of a
        blocked container is, from the thread that decoded it; once for a one-stream container.

    Raises
    ------
    CorruptDataError
        Malformed, truncated or inconsistent bytes, a CRC mismatch, an output beyond
        ``max_output_size``, a referenced model that is missing or differs, or an output the
        machine cannot allocate (a ``MemoryError`` is reported as this error).
    FormatVersionError
        A container written by a newer format version.
    """
    threads = threads_argument(threads)
    if shared.is_window(data):
        out = shared.decompress_window(data, tokenizer, max_output_size)
        return out[slice(start, stop)] if start is not None or stop is not None else out
    if isinstance(tokenizer, shared.SharedModel):  # a window that its shared model did not make smaller
        tokenizer = None
    part = start is not None or stop is not None
    cap = DEFAULT_MAX_OUTPUT_SIZE if max_output_size is None else check_int("max_output_size", max_output_size, 0)
    if grouped.is_grouped(data):  # channel groups

        if tokenizer is not None and not isinstance(tokenizer, (Tokenizer, Model)):
            raise TypeError(f"tokenizer must be a ubpe.Tokenizer or a ubpe.Model, got {type(tokenizer).__name__}")
        if progress is not None and not callable(progress):
            raise TypeError(f"progress must be a callable or None, got {type(progress).__name__}")
        out = groups.decompress_grouped(data, tokenizer, cap, threads)
        if progress is not None:
            progress(out.shape[0])
        return out[slice(start, stop)] if part else out
    p = container.parse(data, _NO_CAP if part else cap)  # a frame range: the cap applies to what is decoded
    if tokenizer is not None and not isinstance(tokenizer, (Tokenizer, Model)):
        raise TypeError(f"tokenizer must be a ubpe.Tokenizer or a ubpe.Model, got {type(tokenizer).__name__}")
    if part and not p.shape:
        raise ValueError("start= and stop= select frames (axis 0); this container holds a 0-d array")
    # (no range asked: every frame, without slice's arithmetic)
    lo, hi = reader.frame_range(start, stop, p.shape[0]) if part else (0, p.shape[0] if p.shape else 0)
    if part:
        if p.block:  # the blocks holding the frames are decoded whole
            decoded = min(-(-hi // p.block) * p.block, p.frames) - (lo // p.block) * p.block if hi > lo else 0
        else:
            decoded = p.frames
        size = decoded * p.channels * p.dtype.itemsize
        if size > cap:
            raise CorruptDataError(
                f"frames {lo} to {hi} need {size} bytes decoded, more than max_output_size={cap} bytes: pass a "
                "larger max_output_size if you trust the container")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable or None, got {type(progress).__name__}")
    try:
        if p.block:
            return reader.decode_blocks(p, tokenizer, lo, hi, threads, progress)
        out = reader.decode_stream_form(p, tokenizer)
        if progress is not None:
            progress(hi - lo)
        return out[lo:hi] if part else out
    except MemoryError:
        raise CorruptDataError(
            f"the container declares {p.n} values ({p.n * p.dtype.itemsize} bytes) and this machine "
            "could not allocate them: pass a smaller max_output_size to refuse such containers early"
        ) from None


def decompress_to(out: BinaryIO, src: BinaryIO, *, tokenizer: Tokenizer | Model | None = None,
                  max_output_size: int | None = None, threads: int | None = None,
                  header: Callable[[np.dtype, tuple[int, ...], dict | None], bytes] | None = None,
                  progress: Callable[[int], None] | None = None) -> tuple[np.dtype, tuple[int, ...]]:
    """Write the values of the container in the binary file ``src`` to ``out``: ``header(dtype,
    shape, source)`` when given (e.g. an .npy header; it may raise to stop before anything is
    written), then the values' bytes in C order and the container's dtype; return ``(dtype,
    shape)``.

    A blocked container whose ``blocks`` come last (as :func:`compress` writes them) is read and
    decoded block by block, ``threads`` blocks at a time: memory stays within a few blocks per
    thread, however large the container and its values. Other containers are read whole and
    decoded with :func:`decompress`. The head is checked as :func:`decompress` checks it (the
    same code) before anything is written; a block found corrupt after others were written
    leaves ``out`` with those blocks' bytes (write to a temporary file), and so do bytes after
    the last block. ``progress(frames)`` as in :func:`decompress`, as the blocks are written.
    """
    threads = threads_argument(threads)
    cap = DEFAULT_MAX_OUTPUT_SIZE if max_output_size is None else check_int("max_output_size", max_output_size, 0)
    if isinstance(tokenizer, shared.SharedModel):  # a window container or a small one: read whole (ubpe/shared/)
        data = src.read()
        values = decompress(data, tokenizer=tokenizer, max_output_size=cap, threads=threads, progress=progress)
        if header is not None:
            out.write(header(values.dtype, values.shape, describe(data).source))
        out.write(memoryview(np.ascontiguousarray(values).reshape(-1).view(np.uint8)))
        return values.dtype, values.shape
    if tokenizer is not None and not isinstance(tokenizer, (Tokenizer, Model)):
        raise TypeError(f"tokenizer must be a ubpe.Tokenizer or a ubpe.Model, got {type(tokenizer).__name__}")
    head = container.read_blocked_head(src, cap)
    if head is None:
        data = src.read()
        values = decompress(data, tokenizer=tokenizer, max_output_size=max_output_size, threads=threads,
                            progress=progress)
        if header is not None:
            info = describe(data) if grouped.is_grouped(data) else container.parse(data, _NO_CAP)  # (channel groups)
            out.write(header(values.dtype, values.shape, info.source))
        out.write(memoryview(np.ascontiguousarray(values).reshape(-1).view(np.uint8)))
        return values.dtype, values.shape
    p, unpacker = head
    native, channels = p.native, p.channels
    model = reader.shared(p, tokenizer)
    if header is not None:
        out.write(header(p.dtype, p.shape, p.source))
    step = 2 * threads

    def decode(item: tuple[int, bytes]) -> np.ndarray:
        b, raw = item
        rows = reader.decode_block(p, model, container.parse_block(p, b, raw), native, channels)
        return rows.astype(p.dtype) if native != p.dtype else np.ascontiguousarray(rows)

    for first in range(0, p.n_blocks, step):
        batch = []
        for b in range(first, min(first + step, p.n_blocks)):
            try:
                raw = unpacker.unpack()
            except Exception:
                raise CorruptDataError(f"block {b}: truncated or damaged: the container ends before it") from None
            if not isinstance(raw, bytes):
                raise CorruptDataError(f"block {b}: expected bytes, got {type(raw).__name__}")
            batch.append((b, raw))
        for rows in run_threads(decode, batch, threads):
            out.write(memoryview(rows.reshape(-1).view(np.uint8)))
            if progress is not None:
                progress(rows.shape[0])
    # any byte after the last block is other data, even the start of an incomplete msgpack value
    if unpacker.read_bytes(1) == b"":
        return p.dtype, p.shape
    raise CorruptDataError("other data after the container's blocks (two files joined, or a damaged file)")
