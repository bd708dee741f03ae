"""What the commands share: reading inputs and models, checking outputs, reporting, messages."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import _files as files
from .. import _inputs
from .. import io as uio
from ..errors import UBPEError

# ============================================================== helpers


PROG = "ubpe"

#: Data and file errors: reported in one line with exit code 1.
#: Exceptions about the user's data or files: exit code 1. ``TypeError`` is one because the
#: library raises it for input of the wrong kind (e.g. floating-point samples in a .npy).
DATA_ERRORS = (UBPEError, OSError, ValueError, TypeError, MemoryError, EOFError)
#: Any other exception is a bug: its traceback is printed and the exit code is this.
EXIT_INTERNAL = 3
#: Standard output closed by its reader (a pipe into ``head``): this code (128 + SIGPIPE), no message.
EXIT_PIPE = 141
#: Commands that run compiled kernels (the first run compiles them: a notice is printed).
KERNEL_COMMANDS = ("fit", "compress", "decompress", "test", "demo")



def say(args: argparse.Namespace, text: str) -> None:
    if not args.quiet:
        print(text)


def fit_options(args: argparse.Namespace) -> dict[str, Any]:
    names = ("n_candidates", "min_count", "weighting", "window")
    return {k: getattr(args, k) for k in names if getattr(args, k, None) is not None}


def read_input(args: argparse.Namespace, path: str) -> uio.Signal:
    return uio.read_signal(path, dtype=args.dtype, as_bytes=args.bytes, column=args.column)


def documents_of(values: np.ndarray, path: str, kind: str) -> list[np.ndarray]:
    if values.ndim == 1:
        return [values]
    if values.ndim == 2:
        # a WAV or CSV is (frames, channels): each channel is a document; a 2-D array: each row
        return list(values.T) if kind in ("wav", "csv") else list(values)
    raise ValueError(f"{path}: expected a 1-D or 2-D array, got shape {values.shape}")


def check_output(args: argparse.Namespace, output: str, *inputs: str | None) -> None:
    """Refuse early: an output that is one of the inputs, exists without --overwrite, or has no directory."""
    parent = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(parent):
        raise FileNotFoundError(errno.ENOENT, "No such directory", parent)
    if os.path.lexists(output):
        for path in inputs:
            if path and os.path.exists(path) and os.path.exists(output) and os.path.samefile(path, output):
                raise FileExistsError(
                    f"output {output} is the input file {path}: ubpe never writes over its inputs, "
                    "choose another output path"
                )
        if not args.overwrite:
            raise FileExistsError(f"{output} already exists; pass --overwrite to replace it")


def read_file_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def load_model(path: str):
    return model_of(read_file_bytes(path), path)


def model_of(data: bytes, path: str):
    from ..shared import SharedModel, is_shared_model_file
    from ..tokenizer import Tokenizer

    try:
        if is_shared_model_file(data):
            return SharedModel.from_bytes(data)
        return Tokenizer.from_bytes(data)
    except UBPEError as e:
        raise UBPEError(f"{path}: not a usable ubpe model: {e}") from e


def ratio_text(raw: int, packed: int) -> str:
    return f"{raw / packed:.3f}" if packed else "inf"


@contextlib.contextmanager
def warnings_to_stderr() -> Iterator[None]:
    """Show library warnings (e.g. fit stopped early) as one ``ubpe: warning:`` line each."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            seen = set()
            for w in caught:
                if issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning)):
                    continue
                text = " ".join(str(w.message).split())
                if text not in seen:
                    seen.add(text)
                    print(f"{PROG}: warning: {text}", file=sys.stderr)


def with_args(args: argparse.Namespace, **changes: Any) -> argparse.Namespace:
    new = argparse.Namespace(**vars(args))
    for k, v in changes.items():
        setattr(new, k, v)
    return new


def output_for(args: argparse.Namespace, path: str, default: Any) -> str:
    """The output of ``path``: -c, -o, standard output for standard input, else ``default()``,
    which only an input that names a file may give (never a device or /dev/stdin)."""
    if args.stdout:
        return files.STDIO
    if args.output is not None:
        return args.output
    if path == files.STDIO:
        return files.STDIO
    if not _inputs.names_output(path):
        raise UsageError(f"{path} is not a file an output can be named after: give the output with "
                          "-o OUTPUT (or -c for standard output)")
    return default()


def report_line(args: argparse.Namespace, output: str, text: str) -> None:
    """The one-line summary: on standard error when the data goes to standard output."""
    if not args.quiet:
        print(text, file=sys.stderr if output == files.STDIO else sys.stdout)


def remove_input(args: argparse.Namespace, path: str, output: str) -> None:
    if (args.rm and path != files.STDIO and output != files.STDIO and not files.is_special(output)
            and not _inputs.is_stream(path)):
        os.unlink(path)


def shown_name(path: str) -> str:
    return "(standard input)" if path == files.STDIO else path


def count_words(shape: Any) -> str:
    """What a shape holds, named: ``57536 values (28768 frames x 2 channels)``."""
    shape = tuple(int(d) for d in shape)
    n = int(np.prod(shape)) if shape else 1
    if len(shape) <= 1:
        return f"{n} value{'s' if n != 1 else ''}"
    inner = " x ".join(str(d) for d in shape[1:])
    return f"{n} values ({shape[0]} frames x {inner} channels)"


def command_line_words(text: str) -> str:
    """A library message in the command line's terms (``n_tokens`` is ``--n-tokens``)."""
    return text.replace("n_tokens=", "--n-tokens ").replace("smallest n_tokens", "smallest --n-tokens")


def library_words(text: str) -> str:
    """A library message about a container in the command line's terms."""
    if "not a ubpe file" in text and ("\\x93NUMPY" in text or "RIFF" in text):
        text += " (a file of values: 'ubpe compress' makes a container of it)"
    text = text.replace("pass the saved model with decompress(data, tokenizer=ubpe.Tokenizer.load(path))",
                        "pass the model it was compressed with, --model MODEL")
    return text.replace("pass a larger max_output_size if you trust the container",
                        "pass a larger --max-output-size if you trust the container")


def original_size(source: Any, values_bytes: int) -> int:
    """The ratio's numerator: the bytes of the file the values came from (recorded by compress
    in the source map), else the values' own bytes: the ratio ``describe`` gives."""
    recorded = source.get("size") if isinstance(source, dict) else None
    return recorded if type(recorded) is int and recorded >= 0 else values_bytes


class UsageError(Exception):
    """A usage problem found after parsing: exit code 2."""


def error_text(e: BaseException) -> str:
    if isinstance(e, OSError) and e.filename is not None and e.strerror:
        text = f"{e.filename}: {e.strerror}"
    else:
        text = str(e) or type(e).__name__
    return " ".join(text.split())
