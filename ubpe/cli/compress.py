"""``ubpe compress``: files to containers (streamed block by block when large)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import numpy as np

from .. import _files as files
from .. import _inputs
from .. import io as uio
from ..errors import UBPEError
from .common import (
    PROG,
    UsageError,
    command_line_words,
    fit_options,
    load_model,
    output_for,
    ratio_text,
    remove_input,
    report_line,
    shown_name,
)

#: ``ubpe compress`` reads .npy and raw inputs larger than this (bytes) memory-mapped, and writes
#: their blocks as they are coded (``--stream`` always): the same bytes, in bounded memory.
STREAM_ABOVE = 1 << 28


def _map_compress_input(args: argparse.Namespace, path: str, tok: Any) -> tuple[uio.Signal, int] | None:
    """The input (a regular file) memory-mapped, with its source map and size, when it is
    streamed (an .npy or raw integer file beyond :data:`STREAM_ABOVE` bytes, or ``--stream``,
    without ``--model``); else None."""
    if tok is not None or args.bytes or args.column is not None:
        return None
    kind = uio.format_for(path, "raw" if args.dtype is not None else None)
    if kind not in ("npy", "raw") or (kind == "raw" and args.dtype is None):
        return None
    size = os.path.getsize(path)
    if not (args.stream or size > STREAM_ABOVE):
        return None
    sig = uio.map_signal(path, dtype=args.dtype)
    if sig is None:
        return None
    return uio.Signal(sig.values, None, dict(sig.source or {})), size


def _read_compress_input(args: argparse.Namespace, path: str, shown: str) -> tuple[uio.Signal, int]:
    """The values and source map of the regular file ``path`` (``shown`` in messages), and the
    bytes of the file they stand for (:func:`ubpe._inputs.read_for_compress`), a note printed."""
    sig, size, note = _inputs.read_for_compress(path, dtype=args.dtype, as_bytes=args.bytes, column=args.column,
                                                shown=shown)
    if note:
        print(f"{PROG}: note: {shown}: {note}", file=sys.stderr)
    return sig, size


def cmd_compress(args: argparse.Namespace) -> int:
    tok = load_model(args.model) if args.model is not None else None
    plan = [(path, output_for(args, path, lambda p=path: files.compressed_name(p))) for path in args.inputs]
    for path, output in plan:  # every output is checked before any work
        files.check_output(output, overwrite=args.overwrite, inputs=(path, args.model))
    for path, output in plan:
        _compress_one(args, path, output, tok)
    return 0


def _compress_one(args: argparse.Namespace, path: str, output: str, tok: Any) -> None:
    with _inputs.spooled(path, sniff=not (args.bytes or args.dtype is not None)) as readable:
        mapped = _map_compress_input(args, readable, tok)
        sig, input_size = mapped if mapped is not None else _read_compress_input(args, readable, shown_name(path))
        source = dict(sig.source or {})
        source.pop("name", None)
        stored = files.check_stored_name(os.path.basename(path)) if _inputs.names_output(path) else None
        if stored is not None:
            source["name"] = stored
        source["size"] = input_size  # the ratio's numerator, for inspect and describe too
        data, size = _compress_values(args, path, output, tok, sig.values, source, mapped is not None)
    if data is not None:
        files.write_output(output, data, overwrite=args.overwrite)
    remove_input(args, path, output)
    shown = "(standard output)" if output == files.STDIO else output
    report_line(args, output, f"{shown}: {input_size} -> {size} bytes (ratio {ratio_text(input_size, size)})")


def _compress_values(args: argparse.Namespace, path: str, output: str, tok: Any, values: np.ndarray,
                     source: dict, mapped: bool) -> tuple[bytes | None, int]:
    """The container of ``values`` (None when written to ``output`` block by block) and its size."""
    from .. import _progress
    from .. import api as container
    from ..api.writer import block_frames

    delta = None if args.delta == "auto" else int(args.delta)
    common: dict[str, Any] = {"delta": delta, "level": args.level, "source": source,
                              "block_size": args.block_size, "threads": args.threads}
    if args.predictor is not None:
        common["predictor"] = args.predictor
    if args.step is not None or args.bits is not None:
        if values.dtype.kind != "f":
            raise UsageError(f"--step and --bits quantize floating-point input; {path} holds {values.dtype}")
        common.update(step=args.step, bits=args.bits)
    frames = values.shape[0] if values.ndim else 1
    channels = values.size // frames if frames else 1
    blocked = bool(block_frames(args.block_size, channels, frames, values.dtype.itemsize))
    try:
        with _progress.bar(f"compressing {shown_name(path)}", values.size if blocked else None, unit="values",
                           quiet=args.quiet, scale=True) as bar:
            common["progress"] = lambda n: bar.update(n * channels)
            if tok is not None:
                data = container.compress(values, tokenizer=tok, embed=not args.reference,
                                          escape=not args.no_escape, **common)
            elif mapped:  # block by block, straight to the output
                sizes: list[int] = []
                files.write_output(output, lambda f: sizes.append(container.compress_to(
                    f, values, n_tokens=args.n_tokens, **common, **fit_options(args))), overwrite=args.overwrite)
                return None, sizes[0]
            else:
                data = container.compress(values, n_tokens=args.n_tokens, **common, **fit_options(args))
    except TypeError as e:
        if values.dtype.kind == "f":  # not on an exact grid: the command line's words for step=/bits=
            raise TypeError(f"{shown_name(path)}: {e} (on the command line: --step S or --bits B)") from e
        raise UBPEError(f"{shown_name(path)}: {e}") from e
    except (UBPEError, ValueError) as e:
        raise UBPEError(f"{shown_name(path)}: {command_line_words(str(e))}") from e  # e.g. outside the model's alphabet
    return data, len(data)
