"""``ubpe decompress`` and ``ubpe test``: containers back to files, or checked."""

from __future__ import annotations

import argparse
import io
import os
import sys
from typing import Any

import numpy as np

from .. import _files as files
from .. import _inputs
from .. import io as uio
from ..errors import UBPEError
from .common import (
    DATA_ERRORS,
    PROG,
    UsageError,
    count_words,
    error_text,
    library_words,
    load_model,
    original_size,
    output_for,
    ratio_text,
    remove_input,
    report_line,
    shown_name,
)
from .compress import STREAM_ABOVE


def _decode_bytes(args: argparse.Namespace, path: str, data: bytes, tok: Any) -> tuple[Any, np.ndarray]:
    """(the container's description, its values), everything checked; errors name ``path``."""
    from .. import _progress
    from .. import api as container

    try:
        info = container.describe(data)  # cheap: parses the fields, decodes nothing
        if not info.embedded and tok is None:
            raise UBPEError(
                f"this container references its model by digest {info.digest[:16]}...: pass the "
                "model it was compressed with, --model MODEL"
            )
        if args.max_output_size is not None and info.original_size > args.max_output_size:
            raise UBPEError(
                f"the container decompresses to {info.original_size} bytes, more than "
                f"--max-output-size {args.max_output_size}"
            )
        uio.check_source(info.source)  # outside the CRC: checked before it lays out a file
        frames = info.shape[0] if info.shape else 1
        channels = info.n_values // frames if frames else 1
        with _progress.bar(f"decompressing {shown_name(path)}", info.n_values if info.blocks > 1 else None,
                           unit="values", quiet=args.quiet, scale=True) as bar:
            values = container.decompress(data, tokenizer=tok, max_output_size=args.max_output_size,
                                          threads=getattr(args, "threads", None),
                                          progress=lambda n: bar.update(n * channels))
    except UBPEError as e:
        raise UBPEError(f"{shown_name(path)}: {library_words(str(e))}") from e
    return info, values


def cmd_decompress(args: argparse.Namespace) -> int:
    if args.test:
        return cmd_test(args)
    tok = load_model(args.model) if args.model is not None else None
    for path in args.inputs:
        _decompress_one(args, path, tok)
    return 0


def _decompress_one(args: argparse.Namespace, path: str, tok: Any) -> None:
    stream = _inputs.is_stream(path)
    source_name = None
    if args.output is None and not args.stdout and path != files.STDIO and not path.endswith(files.SUFFIX):
        # the default name comes from the container: read its description first
        if stream and _inputs.names_output(path):
            raise UsageError(f"{path} does not end in {files.SUFFIX} and is read once (not a regular file): "
                              "give the output with -o OUTPUT")
        from .. import api as container

        try:
            source = {} if stream else container.describe(files.read_input(path)).source or {}
        except UBPEError as e:
            raise UBPEError(f"{path}: {e}") from e
        source_name = files.check_stored_name(source.get("name")) if not stream else None
    output = output_for(args, path, lambda: files.decompressed_name(path, source_name))
    if args.rate is not None and output != files.STDIO and uio.format_for(output) not in ("wav", "raw"):
        raise UsageError(f"--rate applies to .wav output only, not {output}")
    files.check_output(output, overwrite=args.overwrite, inputs=(path, args.model))
    with _inputs.open_input(path) as raw:
        src = _inputs.Rewindable(raw) if stream else raw
        if stream or args.stream or os.path.getsize(path) > STREAM_ABOVE // 4:
            if _stream_decompress(args, path, output, tok, src):
                return
            src.seek(0)
        data = src.read()
    info, values = _decode_bytes(args, path, data, tok)
    source = uio.check_source(info.source)
    kind = uio.format_for(output) if output != files.STDIO else None
    if args.rate is not None and (kind or (source or {}).get("format")) != "wav":
        raise UsageError(f"--rate applies to .wav output only, not {output}")
    if args.dtype is not None:
        values = uio.cast_values(values, args.dtype, f"the values of {shown_name(path)}")
    blob = uio.values_bytes(output, values, rate=args.rate, source=info.source,
                            fmt=_output_format(info.source, kind, args))
    files.write_output(output, blob, overwrite=args.overwrite)
    remove_input(args, path, output)
    shown = "(standard output)" if output == files.STDIO else output
    report_line(args, output, f"{shown}: {count_words(values.shape)}, {values.dtype}, {len(blob)} bytes")


class _NotStreamed(Exception):
    """The container's values cannot be written frame by frame to this output."""


def _npy_header(dtype: np.dtype, shape: tuple[int, ...], kept: Any) -> bytes:
    """The .npy header of the values: the one the file had when compress kept it, else numpy's."""
    if kept is not None and uio.npy.header_fields(kept) == (tuple(shape), False, np.dtype(dtype)):
        return kept
    buf = io.BytesIO()
    fields = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": tuple(shape)}
    try:
        np.lib.format.write_array_header_1_0(buf, fields)
    except ValueError:
        buf = io.BytesIO()
        np.lib.format.write_array_header_2_0(buf, fields)
    return buf.getvalue()


def _stream_decompress(args: argparse.Namespace, path: str, output: str, tok: Any, src: Any) -> bool:
    """Decode the container read from ``src`` block by block straight into ``output`` (an .npy or
    raw file, or standard output for such a container); False, and nothing written, when the
    output is another format (``src`` can then go back to its start)."""
    from .. import _progress
    from .. import api as container

    if args.dtype is not None or args.rate is not None:
        return False
    kind = uio.format_for(output) if output != files.STDIO else None
    per_frame = [1]

    def header(dtype: np.dtype, shape: tuple[int, ...], source: Any) -> bytes:
        source = uio.check_source(source)
        fmt = _output_format(source, kind, args)
        if fmt not in ("raw", "npy") or (fmt == "npy" and (not shape or (
                len(shape) > 1 and (source or {}).get("order") == "F"))):
            raise _NotStreamed
        if isinstance(src, _inputs.Rewindable):
            src.forget()  # written as it is decoded from here on: nothing more is kept
        per_frame[0] = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        bar.set_total(int(np.prod(shape)) if shape else 1)
        return b"" if fmt == "raw" else _npy_header(dtype, shape, (source or {}).get("header"))

    result: list[Any] = []
    try:
        with _progress.bar(f"decompressing {shown_name(path)}", None, unit="values", quiet=args.quiet,
                           scale=True) as bar:
            files.write_output(output, lambda f: result.append(container.decompress_to(
                f, src, tokenizer=tok, max_output_size=args.max_output_size, threads=args.threads,
                header=header, progress=lambda n: bar.update(n * per_frame[0]))), overwrite=args.overwrite)
    except _NotStreamed:
        return False
    except UBPEError as e:
        raise UBPEError(f"{shown_name(path)}: {library_words(str(e))}") from e
    dtype, shape = result[0]
    remove_input(args, path, output)
    shown = "(standard output)" if output == files.STDIO else output
    size = os.path.getsize(output) if output != files.STDIO and not files.is_special(output) else None
    written = f", {size} bytes" if size is not None else ""
    report_line(args, output, f"{shown}: {count_words(shape)}, {np.dtype(dtype)}{written}")
    return True


def _output_format(source: Any, kind: str | None, args: argparse.Namespace) -> str | None:
    """The output's format: bytes come back as bytes (a text stays a text, whatever the output's
    extension); standard output gets the input's format; otherwise the output's extension says
    (.npy, .wav, .csv/.txt, anything else the raw values)."""
    recorded = source.get("format") if isinstance(source, dict) else None
    if recorded == "bytes" and args.dtype is None:
        return "bytes"
    if kind is None:
        return recorded if recorded in ("npy", "wav", "csv", "raw", "bytes", "edf") else "raw"
    return kind


class _Sink:
    """A binary file that keeps nothing: ``ubpe test`` decodes into it."""

    def write(self, data: Any) -> int:
        return len(data)


def cmd_test(args: argparse.Namespace) -> int:
    from .. import _progress
    from .. import api as container

    tok = load_model(args.model) if args.model is not None else None
    bad = 0
    for path in args.inputs:
        seen: dict[str, Any] = {}
        try:
            with _inputs.open_input(path) as raw, _progress.bar(f"testing {shown_name(path)}", None, unit="values",
                                                                quiet=args.quiet, scale=True) as bar:
                src = _inputs.Rewindable(raw) if _inputs.is_stream(path) else raw

                def header(dtype: np.dtype, shape: tuple[int, ...], source: Any) -> bytes:
                    uio.check_source(source)  # outside the CRC: a damaged map fails the test too
                    if isinstance(src, _inputs.Rewindable):
                        src.forget()
                    seen.update(source=source, per_frame=int(np.prod(shape[1:])) if len(shape) > 1 else 1)
                    bar.set_total(int(np.prod(shape)) if shape else 1)
                    return b""

                try:
                    dtype, shape = container.decompress_to(
                        _Sink(), src, tokenizer=tok, header=header,
                        progress=lambda n: bar.update(n * seen.get("per_frame", 1)))
                except UBPEError as e:
                    raise UBPEError(f"{shown_name(path)}: {library_words(str(e))}") from e
                size = src.tell()
        except DATA_ERRORS as e:
            bad += 1
            print(f"{PROG}: {error_text(e)}", file=sys.stderr)
            continue
        if not args.quiet:
            n = int(np.prod(shape)) if shape else 1
            original = original_size(seen.get("source"), n * np.dtype(dtype).itemsize)
            print(f"{shown_name(path)}: OK ({count_words(shape)}, {np.dtype(dtype)}; ratio {ratio_text(original, size)})")
    return 1 if bad else 0
