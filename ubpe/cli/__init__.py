"""The ``ubpe`` command: fit, compress, decompress, inspect, demo.

Exit codes: 0 success; 1 a data or file error (one line ``ubpe: error: ...`` on stderr, a
traceback only with ``--debug``); 2 a usage error. See ``docs/cli.md``.

The command is a package, one module per concern: :mod:`.parser` (options), :mod:`.common`
(what the commands share), one module per command (:mod:`.fit`, :mod:`.compress`,
:mod:`.decompress` with ``test``, :mod:`.report` with ``inspect`` and ``bench``, :mod:`.demo`),
and here the entry point, :func:`main`, which maps exceptions to exit codes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import traceback
from collections.abc import Sequence

from .. import __version__
from .. import _cache as kernels
from .. import _files as files
from .common import (
    DATA_ERRORS,
    EXIT_INTERNAL,
    EXIT_PIPE,
    KERNEL_COMMANDS,
    PROG,
    UsageError,
    error_text,
    fit_options,
    warnings_to_stderr,
)
from .parser import build_parser

# ============================================================== entry point


def _usage_problem(args: argparse.Namespace) -> str | None:
    """Option combinations argparse cannot express; reported as usage errors (exit 2)."""
    levels = ("the levels are -1 (fast to decompress), -2 (the default) and -3 or --best (the smallest, "
              "slowest)")
    if getattr(args, "numbered_preset", None) is not None:
        return f"-{args.numbered_preset}: ubpe has no preset -{args.numbered_preset}: {levels}"
    for path in getattr(args, "inputs", ()):
        if re.fullmatch(r"-\d+", path):  # argparse takes a negative number for a file name
            return (f"{path}: ubpe {args.command} has no numbered options (compress takes -1, -2 and -3 as "
                    f"levels); a file of that name is ./{path}")
    if args.command == "compress" and args.model is None and args.reference:
        return "--reference needs --model"
    if args.command == "compress" and args.model is None and args.no_escape:
        return "--no-escape applies with --model"
    if args.command == "compress" and args.predictor is not None and args.delta != "auto":
        return "--predictor and --delta cannot be used together"
    if args.command in ("compress", "fit") and getattr(args, "predictor", None) is not None:
        from ..frontend.chains import PREDICTORS

        allowed = tuple(PREDICTORS) + (("auto",) if args.command == "fit" else ())
        if args.predictor not in allowed:
            return f"--predictor {args.predictor!r}: choose one of {', '.join(allowed)}"
    if args.command == "compress" and args.model is not None and (args.n_tokens is not None or fit_options(args)):
        return "--n-tokens and the fit options cannot be used with --model (the model is already fitted)"
    if args.command in ("compress", "decompress"):
        if args.output is not None and args.stdout:
            return "-o and -c/--stdout cannot be used together"
        if args.output is not None and len(args.inputs) > 1:
            return "-o names one output: with several inputs, leave it out (each gets its default name)"
        if args.stdout and len(args.inputs) > 1:
            return "-c/--stdout takes one input"
        if args.rm and files.STDIO in args.inputs:
            return "--rm cannot remove standard input"
        if args.inputs.count(files.STDIO) > 1:
            return "standard input ('-') can be read once"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ubpe`` command with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, usage errors
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    args.quiet = getattr(args, "quiet", False)
    args.debug = getattr(args, "debug", False)
    problem = _usage_problem(args)
    try:
        if problem:
            raise UsageError(problem)
        if args.command in KERNEL_COMMANDS and not args.quiet and not kernels.is_cache_warm():
            print(f"{PROG}: compiling the kernels on first use, once (20 to 30 s of CPU; cached in "
                  f"{kernels.cache_dir() or 'numba default cache'})", file=sys.stderr, flush=True)
        with warnings_to_stderr():
            return args.func(args)
    except UsageError as e:
        parser.commands[args.command].print_usage(sys.stderr)
        print(f"{PROG} {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`ubpe inspect x.ubpe | head`): quietly, as cat does
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # (Python would report the failed flush at exit)
        return EXIT_PIPE
    except DATA_ERRORS as e:
        if args.debug:
            traceback.print_exc()
        print(f"{PROG}: error: {error_text(e)}", file=sys.stderr)
        return 1
    except Exception:  # anything else is a bug in ubpe, not a problem with the user's data
        traceback.print_exc()
        print(f"{PROG}: internal error (a bug in ubpe {__version__}): please report it with the "
              "traceback above", file=sys.stderr)
        return EXIT_INTERNAL

