"""The ``ubpe`` command: fit, compress, decompress, inspect, demo.

Exit codes: 0 success; 1 a data or file error (one line ``ubpe: error: ...`` on stderr, a
traceback only with ``--debug``); 2 a usage error. See ``docs/cli.md``.
"""

from __future__ import annotations

import argparse
import bz2
import contextlib
import errno
import io
import lzma
import os
import re
import sys
import time
import traceback
import warnings
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from . import __version__
from . import _cache as kernels
from . import _files as files
from . import _inputs
from . import io as uio
from ._validate import QUANTIZE_HINT
from .errors import UBPEError

PROG = "ubpe"
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}

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


# ============================================================== argument types


def _size(text: str) -> int:
    """A byte count: an integer, optionally with a 1024-based suffix K, M, G, T (KiB, MB...)."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)(i?b)?\s*", text, re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"invalid size {text!r}: use bytes, or a suffix K, M, G (1024-based)")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _step(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    if not (value > 0 and np.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


#: Largest alphabet --range may ask for.
MAX_RANGE = 1 << 24


def _value_range(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(-?\d+)\s*:\s*(-?\d+)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"invalid range {text!r}: use LO:HI, e.g. -2048:2047")
    lo, hi = int(m.group(1)), int(m.group(2))
    if hi < lo:
        raise argparse.ArgumentTypeError(f"range {text!r}: HI must be at least LO")
    if hi - lo + 1 > MAX_RANGE:
        raise argparse.ArgumentTypeError(f"range {text!r} holds {hi - lo + 1} values, at most {MAX_RANGE}")
    if lo < -(1 << 63) or hi >= 1 << 63:
        raise argparse.ArgumentTypeError(f"range {text!r} does not fit in 64-bit integers")
    return lo, hi


def _dtype(text: str) -> np.dtype:
    try:
        dt = np.dtype(text)
    except TypeError:
        raise argparse.ArgumentTypeError(f"invalid dtype {text!r} (examples: '<i2', 'u1', '>i4')") from None
    if dt.kind not in "iu":
        raise argparse.ArgumentTypeError(f"dtype {text!r} is not an integer dtype (examples: '<i2', 'u1', '>i4')")
    return dt


# ============================================================== parser


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ubpe`` command."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="no progress bar and no summary")
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the traceback of an error")

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Byte-pair encoding over any integer alphabet: fit tokenizers, compress and "
        "decompress integer sequences (signals, ids, bytes).",
        epilog="Exit codes: 0 success, 1 data or file error, 2 usage error, 3 internal error (a bug: "
        "please report it). Run 'ubpe COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    parser.commands = sub.choices  # name -> subparser, for usage errors found after parsing

    def add_input_options(p: argparse.ArgumentParser) -> None:
        g = p.add_mutually_exclusive_group()
        g.add_argument("--bytes", "--text", action="store_true",
                       help="read the input as bytes (values 0..255), whatever its extension; --text says "
                       "the same for text (any encoding, restored byte for byte; the default level codes "
                       "text bytes with the text coder)")
        g.add_argument("--dtype", type=_dtype, metavar="DTYPE",
                       help="read the input as raw binary values of this integer dtype, e.g. '<i2'")
        p.add_argument("--column", metavar="NAME|INDEX",
                       help="CSV input: read this column only, by header name or 0-based index "
                       "(default: every column, as channels)")

    def add_fit_options(p: argparse.ArgumentParser, *, fit: bool) -> None:
        p.add_argument("--n-tokens", type=_positive, metavar="N",
                       help="vocabulary size, alphabet included (default: " + (
                           f"the alphabet + {FIT_MERGES} merges" if fit else "chosen by ubpe.compress") + ")")
        p.add_argument("--n-candidates", type=_positive, metavar="K",
                       help="pairs merged per training iteration (default 50; 1 is classic BPE)")
        p.add_argument("--min-count", type=_positive, metavar="C",
                       help="never merge pairs seen fewer times (default 2)")
        p.add_argument("--weighting", choices=("idf", "count", "tfidf"),
                       help="token weight that orders ids and guides trimming (default idf)")
        p.add_argument("--window", type=_positive, metavar="W",
                       help="idf units of W values (default: each input a unit, a single one cut "
                       "into windows of 1024)")

    def add_output_options(p: argparse.ArgumentParser, *, required: bool = True) -> None:
        p.add_argument("-o", "--output", required=required, metavar="OUTPUT",
                       help="file to write ('-': standard output; a device or FIFO is written in place)"
                       + ("" if required else "; default: see above"))
        p.add_argument("--overwrite", "-f", "--force", action="store_true",
                       help="replace OUTPUT if it is an existing regular file")

    def add_many_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("-c", "--stdout", action="store_true", help="write to standard output")
        g = p.add_mutually_exclusive_group()
        g.add_argument("--keep", action="store_true", help="keep the input files (the default)")
        g.add_argument("--rm", action="store_true",
                       help="remove each input file once its output is written and checked")

    p = sub.add_parser(
        "fit", parents=[common], help="learn a tokenizer (model file) from inputs",
        description="Learn a tokenizer from the inputs (each one a document: no pair spans two "
        "inputs) and save it as a model file.",
    )
    p.add_argument("inputs", nargs="+", metavar="INPUT", help=".npy, .wav, .csv/.txt, or raw with --dtype/--bytes")
    add_output_options(p)
    add_fit_options(p, fit=True)
    add_input_options(p)
    p.add_argument("--predictor", metavar="CHAIN",
                   help="fit on the residuals of this front-end chain (delta1, lpc, delta1+adaptive, "
                   "..., or auto: the one whose model compresses held-out inputs smallest), each "
                   "channel on its own, and record it in the model: compress --model applies it by itself")
    p.add_argument("--range", type=_value_range, metavar="LO:HI",
                   help="the alphabet: every integer from LO to HI (inclusive), whatever the inputs "
                   "hold; values outside it are refused here and escaped by compress")
    p.add_argument("--shared", nargs="?", type=_positive, const=0, metavar="N",
                   help="fit a shared model for small windows instead (docs/signals.md): predictors, coder "
                   "tables and a primer, for compress --model; the inputs cut into windows of N values "
                   "(without N each input is a window), the first 10 fitted on")
    p.set_defaults(func=cmd_fit)

    p = sub.add_parser(
        "compress", parents=[common], help="compress an integer sequence into a container",
        description="Compress INPUT into a ubpe container. Without --model a tokenizer is fitted "
        "on INPUT and embedded; with --model that tokenizer is used (embedded, or only referenced "
        "with --reference, in which case decompress needs the same --model).",
    )
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help=".npy, .wav, .csv/.txt (numbers), raw with --dtype, anything else as bytes; '-': "
                   "standard input. Each is written to INPUT.ubpe unless -o/-c says otherwise")
    add_output_options(p, required=False)
    add_many_options(p)
    p.add_argument("--model", metavar="MODEL", help="use this tokenizer (from 'ubpe fit')")
    p.add_argument("--reference", action="store_true",
                   help="with --model: store only the model's digest, not the model itself")
    p.add_argument("--no-escape", action="store_true",
                   help="with --model: refuse values outside its alphabet instead of storing them "
                   "beside the stream (escapes, counted by ubpe inspect)")
    p.add_argument("--predictor", metavar="CHAIN",
                   help="force the front-end chain: none, delta1, delta2, lpc, lpc+adaptive, "
                   "delta1+adaptive, ... (default: chosen by measured size; with --model, the chain "
                   "the model records)")
    p.add_argument("--delta", choices=("auto", "0", "1", "2", "3", "4"), default="auto",
                   help="prediction front end: compress the differences of this order (0: the "
                   "values as they are); 'auto' (default): the front end that gives the smallest "
                   "container (every chain of --predictor is measured), with --model the chain it "
                   "records, else the smallest of the orders 0, 1, 2 with that model")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--step", type=_step, metavar="S",
                   help="float input: quantize to multiples of S (lossy, error at most about S/2); "
                   "without --step/--bits floats are compressed losslessly, bit for bit")
    g.add_argument("--bits", type=_positive, metavar="B",
                   help="float input: quantize to 2**B levels over the values' range (lossy)")
    p.add_argument("--level", type=int, choices=(1, 2, 3), default=2,
                   help="2 (default): also try the context-mixing coders ('cms2' for signals, 'cmt2' for "
                   "text), much smaller on text and signals but slower to decode (about 1-4 M values/s on signals); 1: the static "
                   "rANS coder only, fast to decode (tens of M values/s); 3: integer signals also through the "
                   "level-3 coder (ubpe.level3, 'mixsignal'), the smallest, about 0.2 M values/s both ways")
    p.add_argument("--best", dest="level", action="store_const", const=3, help="the same as --level 3")
    p.add_argument("--block-size", type=_size, metavar="N",
                   help="values per block (default 1M = 1048576, 64M for one-byte values such as text; "
                   "0: one stream): larger inputs are cut "
                   "into blocks that share one model and are coded in parallel")
    p.add_argument("--threads", type=_positive, metavar="T", help="threads (default: every core)")
    p.add_argument("--stream", action="store_true",
                   help=".npy and raw integer input: read it memory-mapped and write each block as it "
                   "is coded, in bounded memory, for files larger than memory (automatic above 256 MiB; "
                   "the same bytes)")
    add_fit_options(p, fit=False)
    add_input_options(p)
    p.set_defaults(func=cmd_compress)

    p = sub.add_parser(
        "decompress", parents=[common], help="restore the values of a container",
        description="Decompress a ubpe container. OUTPUT's extension picks the format: .npy, "
        ".wav, .csv/.txt, anything else the raw bytes of the array.",
    )
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="containers written by 'ubpe compress' ('-': standard input); X.ubpe is written "
                   "to X, in the format it was compressed from, unless -o/-c says otherwise")
    add_output_options(p, required=False)
    add_many_options(p)
    p.add_argument("-t", "--test", action="store_true", help="decode and check, write nothing (as 'ubpe test')")
    p.add_argument("--model", metavar="MODEL", help="the model a --reference container was made with")
    p.add_argument("--max-output-size", type=_size, metavar="BYTES",
                   help="refuse containers that would decode to more than this (suffixes K, M, G)")
    p.add_argument("--dtype", type=_dtype, metavar="DTYPE",
                   help="write the values as this integer dtype (checked to fit), e.g. '>i2'")
    p.add_argument("--rate", type=_positive, metavar="HZ",
                   help=".wav output: sample rate to record instead of the input's (default: the "
                   f"rate of the .wav compressed, else {uio.DEFAULT_WAV_RATE})")
    p.add_argument("--threads", type=_positive, metavar="T", help="threads (default: every core)")
    p.add_argument("--stream", action="store_true",
                   help="to .npy or raw output: decode block by block and write each block as it is "
                   "decoded, in bounded memory (automatic for containers above 64 MiB)")
    p.set_defaults(func=cmd_decompress)

    p = sub.add_parser(
        "test", parents=[common], help="decode containers and check them, writing nothing",
        description="Decode each container and check its checksum, writing nothing (like flac -t, "
        "zstd -t, gzip -t). One line per file; exit code 0 when every file is good, 1 otherwise.",
    )
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="containers ('-': standard input)")
    p.add_argument("--model", metavar="MODEL", help="the model --reference containers were made with")
    p.set_defaults(func=cmd_test, output=None, stdout=False, rm=False, keep=False, overwrite=False,
                   max_output_size=None, dtype=None, rate=None, test=True)

    p = sub.add_parser(
        "inspect", parents=[common], help="describe a container or a model file",
        description="For a container: the size of each part and the compression ratio. For a "
        "model: its header and a table of the first tokens by id.",
    )
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="containers or model files")
    p.add_argument("-n", "--tokens", type=int, default=20, metavar="N",
                   help="model: how many merged tokens to list (default 20, 0 for none, -1 for all)")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser(
        "demo", parents=[common], help="compress a bundled ECG signal, compare with zlib, bz2, lzma",
        description="Compress 60 s of ECG (MIT-BIH record 208, bundled) with ubpe and with "
        "zlib -9, bz2 -9 and lzma -9e, check every round trip, and print the ratios.",
    )
    p.add_argument("--n-tokens", type=_positive, metavar="N",
                   help="ubpe vocabulary size (default: chosen by ubpe.compress)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        "bench", parents=[common], help="compression-ratio sweep, side by side with other codecs",
        description="Compress each FILE with every combination of the parameters and with the peer "
        "codecs, check every round trip, print a summary per folder and write results.csv, results.json "
        "(with versions, parameters and each input's SHA-256) and, with matplotlib (ubpe[plot]), "
        "ratio.png, bits.png and time.png into --out. Ratios are the file's bytes over the compressed "
        "bytes, as compress prints them. A configuration that cannot run on a file (a vocabulary "
        "below its alphabet, a codec that does not apply) is a row with the reason, never the end of "
        "the run. Vocabulary sizes of one (file, candidates, predictor) come from one training "
        "(priority prefixes; the bytes are those of a fresh fit).")
    p.add_argument("inputs", nargs="+", metavar="FILE",
                   help=".npy, .wav, .csv/.txt, raw with --dtype, anything else as bytes (as compress reads them)")
    p.add_argument("--n-tokens", default="auto,256,1024,4096", metavar="LIST",
                   help="vocabulary sizes; 'auto' lets compress choose, as it does by default "
                   "(default auto,256,1024,4096)")
    p.add_argument("--n-candidates", default="1,50", metavar="LIST", help="default 1,50")
    p.add_argument("--level", default="1,2", metavar="LIST", help="default 1,2")
    p.add_argument("--predictor", default="auto", metavar="LIST",
                   help="front ends: auto, none, delta1, delta2, lpc, ... (default auto)")
    p.add_argument("--codecs", default="available", metavar="LIST",
                   help="zlib,bz2,xz,zstd,brotli,pcodec,flac,wavpack,zpaq, 'available' (default: every one "
                   "installed; the others are listed as skipped) or 'none'")
    p.add_argument("--out", default="results", metavar="DIR", help="results folder (default results)")
    p.add_argument("--overwrite", action="store_true", help="replace the files of an existing results folder")
    p.add_argument("-j", "--jobs", type=_positive, default=os.cpu_count() or 1, metavar="N",
                   help="worker processes (default: the number of CPUs)")
    p.add_argument("--no-plots", action="store_true", help="write no PNG files")
    add_input_options(p)
    p.set_defaults(func=cmd_bench)
    return parser


# ============================================================== helpers


def _say(args: argparse.Namespace, text: str) -> None:
    if not args.quiet:
        print(text)


def _fit_options(args: argparse.Namespace) -> dict[str, Any]:
    names = ("n_candidates", "min_count", "weighting", "window")
    return {k: getattr(args, k) for k in names if getattr(args, k, None) is not None}


def _read_input(args: argparse.Namespace, path: str) -> uio.Signal:
    return uio.read_signal(path, dtype=args.dtype, as_bytes=args.bytes, column=args.column)


def _documents(values: np.ndarray, path: str, kind: str) -> list[np.ndarray]:
    if values.ndim == 1:
        return [values]
    if values.ndim == 2:
        # a WAV or CSV is (frames, channels): each channel is a document; a 2-D array: each row
        return list(values.T) if kind in ("wav", "csv") else list(values)
    raise ValueError(f"{path}: expected a 1-D or 2-D array, got shape {values.shape}")


def _check_output(args: argparse.Namespace, output: str, *inputs: str | None) -> None:
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


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _load_model(path: str):
    return _model_of(_read_bytes(path), path)


def _model_of(data: bytes, path: str):
    from .shared import SharedModel, is_shared_model_file
    from .tokenizer import Tokenizer

    try:
        if is_shared_model_file(data):
            return SharedModel.from_bytes(data)
        return Tokenizer.from_bytes(data)
    except UBPEError as e:
        raise UBPEError(f"{path}: not a usable ubpe model: {e}") from e


def _ratio(raw: int, packed: int) -> str:
    return f"{raw / packed:.3f}" if packed else "inf"


@contextlib.contextmanager
def _warnings_to_stderr() -> Iterator[None]:
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


# ============================================================== commands


#: Merges ``ubpe fit`` adds to the alphabet when --n-tokens is not given.
FIT_MERGES = 1024


def _default_n_tokens(docs: list[np.ndarray], alphabet: Any, predictor: str | None) -> int:
    """``ubpe fit``'s vocabulary size when none is given: the alphabet the model will have (the
    values, or with a predictor its residuals; ``auto``: the smallest of its chains', so that
    chains of many more distinct values are left out, with a warning) plus :data:`FIT_MERGES`
    merges."""
    if alphabet is not None:
        return len(alphabet) + FIT_MERGES
    from . import frontend
    from .frontend.chains import PREDICTORS, build_chain
    from .tokenizer import SHARED_PREDICTORS

    names = [None] if predictor is None else list(SHARED_PREDICTORS) if predictor == "auto" else [predictor]
    sizes = []
    for name in names:
        chain = None if name is None else build_chain(PREDICTORS[name])
        seen = [np.unique(d if chain is None or not len(d) else
                          frontend.forward(np.ascontiguousarray(d).reshape(1, -1), chain)[0]) for d in docs]
        values = np.unique(np.concatenate(seen)) if seen else np.zeros(0)
        span = int(values[-1]) - int(values[0]) + 1 if len(values) and name is not None else 0
        # (behind a chain, fit covers every residual between the extremes when n_tokens allows)
        sizes.append(max(len(values), span if span <= len(values) + FIT_MERGES else 0))
    return min(sizes) + FIT_MERGES


def cmd_fit(args: argparse.Namespace) -> int:
    from . import _progress
    from .alphabet import Alphabet
    from .tokenizer import Tokenizer

    _check_output(args, args.output, *args.inputs)
    docs: list[np.ndarray] = []
    for path in args.inputs:
        with _inputs.spooled(path) as readable:
            sig = _read_input(args, readable)
            kind = uio.format_for(readable, "bytes" if args.bytes else None)
        if sig.values.dtype.kind == "f":
            raise TypeError(f"{path}: holds floating-point values; fit learns integer sequences: "
                            f"{QUANTIZE_HINT} (ubpe compress takes floats with --step/--bits)")
        docs.extend(_documents(sig.values, path, kind))
    n_values = sum(len(d) for d in docs)
    if n_values == 0:
        raise ValueError("the inputs hold no values: nothing to fit")
    if args.shared is not None:  # a shared model for small windows (ubpe/shared.py)
        from .shared import fit_inputs

        start = time.perf_counter()
        model, count = fit_inputs(docs, args.shared or None)
        data = model.to_bytes()
        uio.write_atomic(args.output, data, overwrite=args.overwrite)
        _say(args, f"{args.output}: shared model of {count} window(s) ({', '.join(v.predictor for v in model.variants)}; "
                   f"{model.history.size} values of history) in {time.perf_counter() - start:.1f} s; {len(data)} bytes")
        return 0
    alphabet = Alphabet(256) if args.bytes else None
    if args.range is not None:
        if args.bytes:
            raise _UsageError("--range and --bytes cannot be used together (bytes are 0..255)")
        alphabet = Alphabet(np.arange(args.range[0], args.range[1] + 1, dtype=np.int64))
        if args.n_tokens is not None and args.n_tokens < len(alphabet):
            raise _UsageError(f"--n-tokens {args.n_tokens} is less than the {len(alphabet)} values of --range")
    n_tokens = args.n_tokens
    if n_tokens is None:
        n_tokens = _default_n_tokens(docs, alphabet, args.predictor)
    tok = Tokenizer(alphabet, n_tokens, **_fit_options(args))
    start = time.perf_counter()
    with _progress.bar("fit", None, unit="merges", quiet=args.quiet) as bar:
        last = [0]

        def merged(done: int, most: int) -> None:  # the bar learns its total from the first report
            bar.set_total(most)
            bar.update(done - last[0])
            last[0] = done

        try:
            with warnings.catch_warnings():
                if args.n_tokens is None:  # "up to" FIT_MERGES, the summary says: stopping early is no news
                    warnings.filterwarnings("ignore", message="fit stopped early", category=UserWarning)
                tok.fit(docs, progress=merged, predictor=args.predictor)
        except ValueError as e:
            if "alphabet size" in str(e) and args.n_tokens is not None:  # the alphabet is larger than asked
                raise ValueError(f"--n-tokens {args.n_tokens}: {e}") from e
            raise
    data = tok.to_bytes()
    uio.write_atomic(args.output, data, overwrite=args.overwrite)
    a = len(tok.alphabet)
    chosen = "" if args.n_tokens is not None else f" (n_tokens {n_tokens}: the alphabet + up to {FIT_MERGES} merges)"
    _say(args, f"{args.output}: {tok.vocab_size} tokens ({a} symbols + {tok.vocab_size - a} merges){chosen} "
               f"from {len(docs)} document(s), {n_values} values, in {time.perf_counter() - start:.1f} s; "
               f"{len(data)} bytes")
    return 0


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


def _with(args: argparse.Namespace, **changes: Any) -> argparse.Namespace:
    new = argparse.Namespace(**vars(args))
    for k, v in changes.items():
        setattr(new, k, v)
    return new


def _outputs(args: argparse.Namespace, path: str, default: Any) -> str:
    """The output of ``path``: -c, -o, standard output for standard input, else ``default()``,
    which only an input that names a file may give (never a device or /dev/stdin)."""
    if args.stdout:
        return files.STDIO
    if args.output is not None:
        return args.output
    if path == files.STDIO:
        return files.STDIO
    if not _inputs.names_output(path):
        raise _UsageError(f"{path} is not a file an output can be named after: give the output with "
                          "-o OUTPUT (or -c for standard output)")
    return default()


def _report(args: argparse.Namespace, output: str, text: str) -> None:
    """The one-line summary: on standard error when the data goes to standard output."""
    if not args.quiet:
        print(text, file=sys.stderr if output == files.STDIO else sys.stdout)


def _remove_input(args: argparse.Namespace, path: str, output: str) -> None:
    if (args.rm and path != files.STDIO and output != files.STDIO and not files.is_special(output)
            and not _inputs.is_stream(path)):
        os.unlink(path)


def _shown(path: str) -> str:
    return "(standard input)" if path == files.STDIO else path


def _counts(shape: Any) -> str:
    """What a shape holds, named: ``57536 values (28768 frames x 2 channels)``."""
    shape = tuple(int(d) for d in shape)
    n = int(np.prod(shape)) if shape else 1
    if len(shape) <= 1:
        return f"{n} value{'s' if n != 1 else ''}"
    inner = " x ".join(str(d) for d in shape[1:])
    return f"{n} values ({shape[0]} frames x {inner} channels)"


def cmd_compress(args: argparse.Namespace) -> int:
    tok = _load_model(args.model) if args.model is not None else None
    plan = [(path, _outputs(args, path, lambda p=path: files.compressed_name(p))) for path in args.inputs]
    for path, output in plan:  # every output is checked before any work
        files.check_output(output, overwrite=args.overwrite, inputs=(path, args.model))
    for path, output in plan:
        _compress_one(args, path, output, tok)
    return 0


def _compress_one(args: argparse.Namespace, path: str, output: str, tok: Any) -> None:
    with _inputs.spooled(path, sniff=not (args.bytes or args.dtype is not None)) as readable:
        mapped = _map_compress_input(args, readable, tok)
        sig, input_size = mapped if mapped is not None else _read_compress_input(args, readable, _shown(path))
        source = dict(sig.source or {})
        source.pop("name", None)
        stored = files.check_stored_name(os.path.basename(path)) if _inputs.names_output(path) else None
        if stored is not None:
            source["name"] = stored
        source["size"] = input_size  # the ratio's numerator, for inspect and describe too
        data, size = _compress_values(args, path, output, tok, sig.values, source, mapped is not None)
    if data is not None:
        files.write_output(output, data, overwrite=args.overwrite)
    _remove_input(args, path, output)
    shown = "(standard output)" if output == files.STDIO else output
    _report(args, output, f"{shown}: {input_size} -> {size} bytes (ratio {_ratio(input_size, size)})")


def _compress_values(args: argparse.Namespace, path: str, output: str, tok: Any, values: np.ndarray,
                     source: dict, mapped: bool) -> tuple[bytes | None, int]:
    """The container of ``values`` (None when written to ``output`` block by block) and its size."""
    from . import _progress
    from . import api as container
    from .api.writer import block_frames

    delta = None if args.delta == "auto" else int(args.delta)
    common: dict[str, Any] = {"delta": delta, "level": args.level, "source": source,
                              "block_size": args.block_size, "threads": args.threads}
    if args.predictor is not None:
        common["predictor"] = args.predictor
    if args.step is not None or args.bits is not None:
        if values.dtype.kind != "f":
            raise _UsageError(f"--step and --bits quantize floating-point input; {path} holds {values.dtype}")
        common.update(step=args.step, bits=args.bits)
    frames = values.shape[0] if values.ndim else 1
    channels = values.size // frames if frames else 1
    blocked = bool(block_frames(args.block_size, channels, frames, values.dtype.itemsize))
    try:
        with _progress.bar(f"compressing {_shown(path)}", values.size if blocked else None, unit="values",
                           quiet=args.quiet, scale=True) as bar:
            common["progress"] = lambda n: bar.update(n * channels)
            if tok is not None:
                data = container.compress(values, tokenizer=tok, embed=not args.reference,
                                          escape=not args.no_escape, **common)
            elif mapped:  # block by block, straight to the output
                sizes: list[int] = []
                files.write_output(output, lambda f: sizes.append(container.compress_to(
                    f, values, n_tokens=args.n_tokens, **common, **_fit_options(args))), overwrite=args.overwrite)
                return None, sizes[0]
            else:
                data = container.compress(values, n_tokens=args.n_tokens, **common, **_fit_options(args))
    except TypeError as e:
        if values.dtype.kind == "f":  # not on an exact grid: the command line's words for step=/bits=
            raise TypeError(f"{_shown(path)}: {e} (on the command line: --step S or --bits B)") from e
        raise UBPEError(f"{_shown(path)}: {e}") from e
    except (UBPEError, ValueError) as e:
        raise UBPEError(f"{_shown(path)}: {_command_line_words(str(e))}") from e  # e.g. outside the model's alphabet
    return data, len(data)


def _command_line_words(text: str) -> str:
    """A library message in the command line's terms (``n_tokens`` is ``--n-tokens``)."""
    return text.replace("n_tokens=", "--n-tokens ").replace("smallest n_tokens", "smallest --n-tokens")


def _library_words(text: str) -> str:
    """A library message about a container in the command line's terms."""
    if "not a ubpe file" in text and ("\\x93NUMPY" in text or "RIFF" in text):
        text += " (a file of values: 'ubpe compress' makes a container of it)"
    text = text.replace("pass the saved model with decompress(data, tokenizer=ubpe.Tokenizer.load(path))",
                        "pass the model it was compressed with, --model MODEL")
    return text.replace("pass a larger max_output_size if you trust the container",
                        "pass a larger --max-output-size if you trust the container")


def _original(source: Any, values_bytes: int) -> int:
    """The ratio's numerator: the bytes of the file the values came from (recorded by compress
    in the source map), else the values' own bytes: the ratio ``describe`` gives."""
    recorded = source.get("size") if isinstance(source, dict) else None
    return recorded if type(recorded) is int and recorded >= 0 else values_bytes


def _decode_bytes(args: argparse.Namespace, path: str, data: bytes, tok: Any) -> tuple[Any, np.ndarray]:
    """(the container's description, its values), everything checked; errors name ``path``."""
    from . import _progress
    from . import api as container

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
        with _progress.bar(f"decompressing {_shown(path)}", info.n_values if info.blocks > 1 else None,
                           unit="values", quiet=args.quiet, scale=True) as bar:
            values = container.decompress(data, tokenizer=tok, max_output_size=args.max_output_size,
                                          threads=getattr(args, "threads", None),
                                          progress=lambda n: bar.update(n * channels))
    except UBPEError as e:
        raise UBPEError(f"{_shown(path)}: {_library_words(str(e))}") from e
    return info, values


def cmd_decompress(args: argparse.Namespace) -> int:
    if args.test:
        return cmd_test(args)
    tok = _load_model(args.model) if args.model is not None else None
    for path in args.inputs:
        _decompress_one(args, path, tok)
    return 0


def _decompress_one(args: argparse.Namespace, path: str, tok: Any) -> None:
    stream = _inputs.is_stream(path)
    source_name = None
    if args.output is None and not args.stdout and path != files.STDIO and not path.endswith(files.SUFFIX):
        # the default name comes from the container: read its description first
        if stream and _inputs.names_output(path):
            raise _UsageError(f"{path} does not end in {files.SUFFIX} and is read once (not a regular file): "
                              "give the output with -o OUTPUT")
        from . import api as container

        try:
            source = {} if stream else container.describe(files.read_input(path)).source or {}
        except UBPEError as e:
            raise UBPEError(f"{path}: {e}") from e
        source_name = files.check_stored_name(source.get("name")) if not stream else None
    output = _outputs(args, path, lambda: files.decompressed_name(path, source_name))
    if args.rate is not None and output != files.STDIO and uio.format_for(output) not in ("wav", "raw"):
        raise _UsageError(f"--rate applies to .wav output only, not {output}")
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
        raise _UsageError(f"--rate applies to .wav output only, not {output}")
    if args.dtype is not None:
        values = uio.cast_values(values, args.dtype, f"the values of {_shown(path)}")
    blob = uio.values_bytes(output, values, rate=args.rate, source=info.source,
                            fmt=_output_format(info.source, kind, args))
    files.write_output(output, blob, overwrite=args.overwrite)
    _remove_input(args, path, output)
    shown = "(standard output)" if output == files.STDIO else output
    _report(args, output, f"{shown}: {_counts(values.shape)}, {values.dtype}, {len(blob)} bytes")


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
    from . import _progress
    from . import api as container

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
        with _progress.bar(f"decompressing {_shown(path)}", None, unit="values", quiet=args.quiet,
                           scale=True) as bar:
            files.write_output(output, lambda f: result.append(container.decompress_to(
                f, src, tokenizer=tok, max_output_size=args.max_output_size, threads=args.threads,
                header=header, progress=lambda n: bar.update(n * per_frame[0]))), overwrite=args.overwrite)
    except _NotStreamed:
        return False
    except UBPEError as e:
        raise UBPEError(f"{_shown(path)}: {_library_words(str(e))}") from e
    dtype, shape = result[0]
    _remove_input(args, path, output)
    shown = "(standard output)" if output == files.STDIO else output
    size = os.path.getsize(output) if output != files.STDIO and not files.is_special(output) else None
    written = f", {size} bytes" if size is not None else ""
    _report(args, output, f"{shown}: {_counts(shape)}, {np.dtype(dtype)}{written}")
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
    from . import _progress
    from . import api as container

    tok = _load_model(args.model) if args.model is not None else None
    bad = 0
    for path in args.inputs:
        seen: dict[str, Any] = {}
        try:
            with _inputs.open_input(path) as raw, _progress.bar(f"testing {_shown(path)}", None, unit="values",
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
                    raise UBPEError(f"{_shown(path)}: {_library_words(str(e))}") from e
                size = src.tell()
        except DATA_ERRORS as e:
            bad += 1
            print(f"{PROG}: {_error_text(e)}", file=sys.stderr)
            continue
        if not args.quiet:
            n = int(np.prod(shape)) if shape else 1
            original = _original(seen.get("source"), n * np.dtype(dtype).itemsize)
            print(f"{_shown(path)}: OK ({_counts(shape)}, {np.dtype(dtype)}; ratio {_ratio(original, size)})")
    return 1 if bad else 0


def _describe_alphabet(alphabet: Any) -> str:
    n = len(alphabet)
    if alphabet.kind == "range":
        return f"range: values 0 .. {n - 1} ({n} symbols)"
    if alphabet.kind == "integers":
        v = alphabet.values
        return f"integers: {n} values from {v[0]} to {v[-1]}" if n else "integers: empty"
    shown = ", ".join(repr(s) for s in alphabet.values[:8])
    return f"symbols: {n} ({shown}{', ...' if n > 8 else ''})"


def _render(values: np.ndarray, dtype: np.dtype, limit: int = 12) -> str:
    items = values.tolist()
    more = " ..." if len(items) > 3 * limit else ""
    if dtype == np.uint8:
        return repr(bytes(items[: 3 * limit])) + more
    if dtype.kind == "U":
        return repr("".join(map(str, items[: 3 * limit]))) + more
    text = " ".join(map(str, items[:limit]))
    return f"[{text}{' ...' if len(items) > limit else ''}]"


def inspect_model(tok: Any, path: str, n_tokens: int = 20) -> str:
    """A model's header and a table of its first ``n_tokens`` merged tokens by public id."""
    from .tokenizer import MODEL_FORMAT_VERSION

    a = len(tok.alphabet)
    m = tok.vocab_size - a
    lines = [
        f"{path}: ubpe tokenizer (model format {MODEL_FORMAT_VERSION})",
        f"  digest      sha256:{tok.digest}",
        f"  alphabet    {_describe_alphabet(tok.alphabet)}",
        f"  dtype       {tok.dtype}",
        f"  vocabulary  {tok.vocab_size} tokens ({a} symbols + {m} merges, n_tokens={tok.n_tokens})",
        f"  training    n_candidates={tok.n_candidates} min_count={tok.min_count} "
        f"weighting={tok.weighting} window={tok.window}; {tok.n_units} idf units, "
        f"{int(tok.batches[-1]) + 1 if m else 0} batches",
        f"  mode        {tok.mode} (encodes by {'replay' if tok.mode == 'classic' else tok.method})",
        f"  front end   {getattr(tok, 'predictor', None) or 'none recorded'} (what compress --model applies)",
    ]
    shown = m if n_tokens < 0 else min(n_tokens, m)
    if shown:
        priority = np.argsort(tok.token_ids)  # public id -> priority-space index
        lines += ["", f"  first {shown} merged tokens by id (lower id = higher weight):",
                  f"  {'id':>7} {'left':>7} {'right':>7} {'count':>9} {'df':>7} {'weight':>10} {'len':>5}  values"]
        for t in range(a, a + shown):
            k = int(priority[t]) - a
            left, right = (int(v) for v in tok.token_ids[tok.merges[k]])  # the pair, in either mode
            seq = tok.sequence(t)
            lines.append(f"  {t:>7} {left:>7} {right:>7} {int(tok.counts[k]):>9} {int(tok.df[k]):>7} "
                         f"{float(tok.weights[k]):>10.4g} {len(seq):>5}  {_render(seq, tok.dtype)}")
        if shown < m:
            lines.append(f"  ... {m - shown} more (--tokens -1 lists all)")
    return "\n".join(lines)


def _format_report(info: Any, path: str) -> str:
    """The :class:`ubpe.ContainerInfo` of a container, for people."""
    size = info.size

    def part(name: str, n: int) -> str:
        share = f"{100 * n / size:5.1f}%" if size else ""
        return f"    {name:<12} {n:>10} bytes {share}"

    if info.coder == "mixsignal":  # level 3: no model (ubpe.level3)
        model = "none (level 3: the values coded by the 'mixsignal' signal coder)"
    elif info.embedded:
        model = f"embedded: {info.alphabet_size} symbols + {info.n_merges} merges"
    else:
        model = f"referenced by digest sha256:{info.digest} (decompress needs --model)"
    front = " -> ".join(_describe_stage(stage) for stage in getattr(info, "front", ())) or "none"
    lines = [
        f"{path}: ubpe container (format {info.version}), {size} bytes",
        f"  values       {_counts(info.shape)} of {np.dtype(info.dtype)} ({info.dtype}), shape "
        f"{tuple(info.shape)}: {info.original_size} bytes",
        f"  model        {model}",
        f"  front end    {front}",
        f"  coder        {info.coder}, {info.n_tokens} tokens, encoded by {getattr(info, 'method', 'replay')}",
        *([f"  blocks       {info.blocks} of {info.block_frames} frames, one model; front end and "
           f"coders per block: {', '.join(f'{c} x{info.coders.count(c)}' for c in sorted(set(info.coders)))}"]
          if getattr(info, "blocks", 1) > 1 else []),
        f"  exactness    {_describe_exactness(info)}",
        f"  source       {_describe_source(getattr(info, 'source', None))}{_describe_file(info.source)}",
        f"  escapes      {getattr(info, 'escapes', 0)} values outside the model's alphabet "
        f"({getattr(info, 'escape_bytes', 0)} bytes, in the header)",
        "  parts",
        part("header", info.header),
        part("model", info.model),
        part("frequencies", info.freq),
        part("payload", info.payload),
        f"    {'total':<12} {size:>10} bytes",
        f"  ratio        {_ratio(_original(info.source, info.original_size), size)} "
        f"({_original(info.source, info.original_size)} -> {size} bytes"
        + (", the file compressed)" if _original(info.source, -1) >= 0 else ", the values)"),
    ]
    return "\n".join(lines)


def _describe_stage(stage: dict) -> str:
    if stage.get("stage") == "delta":
        return f"delta of order {stage.get('order')}"
    if stage.get("stage") == "mult" and isinstance(stage.get("low"), dict):
        splits = ", ".join(f"{c.get('base')}q+{c.get('offset')}+r" if c.get("base") != 1 else "none"
                           for c in stage.get("channels") or () if isinstance(c, dict))
        low = stage["low"]
        return f"mult({splits}; digits: {low.get('coder')}, {len(low.get('payload', b''))} bytes)"
    params = [f"{k}={v}" for k, v in stage.items() if k != "stage" and not isinstance(v, (bytes, list, dict))]
    return stage.get("stage", "?") + (f"({', '.join(params)})" if params else "")


def _describe_exactness(info: Any) -> str:
    if getattr(info, "lossy", False):
        q = getattr(info, "quantizer", None) or {}
        return f"lossy (quantized, step {q.get('step')}, offset {q.get('offset')}): values within step/2"
    return "lossless (bit-exact)"


def _describe_source(source: Any) -> str:
    if isinstance(source, dict):
        source = {k: v for k, v in source.items() if k not in ("name", "size")}
    if not source:
        return "not recorded"
    if not isinstance(source, dict):
        return "damaged"
    kind = source.get("format")
    if kind == "wav":
        sample = f"{source.get('bits')}-bit {'float' if source.get('float') else 'PCM'}"
        ext = ", WAVE_FORMAT_EXTENSIBLE" if source.get("extensible") else ""
        return f"wav, {source.get('rate')} Hz, {source.get('channels')} channel(s), {sample}{ext}"
    if kind == "csv":
        column = f", column {source['column']}" if "column" in source else ""
        header = f", header {source['header']!r}" if "header" in source else ""
        return f"csv, {source.get('columns')} column(s){column}{header}"
    if kind in ("npy", "raw", "bytes"):
        layout = ", Fortran order" if source.get("order") == "F" else ""
        return f"{kind}{layout}"
    shown = ", ".join(f"{k}={v!r}" for k, v in list(source.items())[:6] if not isinstance(v, bytes))
    return shown or "present"


def _describe_file(source: Any) -> str:
    """The input file a source map records: its name and size, or ''."""
    if not isinstance(source, dict):
        return ""
    name, size = files.check_stored_name(source.get("name")), source.get("size")
    parts = ([name] if name else []) + ([f"{size} bytes"] if type(size) is int else [])
    return f"; file {', '.join(parts)}" if parts else ""


def cmd_bench(args: argparse.Namespace) -> int:
    from . import experiments
    return experiments.run_bench(args.inputs, n_tokens=args.n_tokens, n_candidates=args.n_candidates,
                                 level=args.level, predictor=args.predictor, codecs=args.codecs, out=args.out,
                                 overwrite=args.overwrite, jobs=args.jobs, plots=not args.no_plots,
                                 quiet=args.quiet, dtype=args.dtype, as_bytes=args.bytes, column=args.column)


def cmd_inspect(args: argparse.Namespace) -> int:
    from . import api as container
    from .tokenizer import MODEL_MAGIC

    bad = 0
    for i, path in enumerate(args.inputs):
        try:
            data = files.read_input(path)
            if MODEL_MAGIC.encode() in data[:64]:
                report = inspect_model(_model_of(data, path), path, args.tokens)
            else:
                try:
                    report = _format_report(container.describe(data), _shown(path))
                except UBPEError as e:
                    raise UBPEError(f"{_shown(path)}: not a readable ubpe container or model: "
                                    f"{_library_words(str(e))}") from e
        except DATA_ERRORS as e:
            if len(args.inputs) == 1:
                raise
            bad += 1
            print(f"{PROG}: error: {_error_text(e)}", file=sys.stderr)
            continue
        print(("\n" if i else "") + report)
    return 1 if bad else 0


def cmd_demo(args: argparse.Namespace) -> int:
    from . import api as container

    values = uio.demo_signal()
    raw = values.astype("<i2").tobytes()
    print(f"demo signal: 60 s of ECG, MIT-BIH Arrhythmia Database record 208 at {uio.DEMO_RATE} Hz, "
          f"{len(values)} int16 samples = {len(raw)} bytes")
    print("(ODC-By 1.0, Moody & Mark 2001, PhysioNet; see ubpe/data/ATTRIBUTION.md)")
    rows: list[tuple[str, int, float]] = []

    # The first call of each numba kernel compiles it (cached on disk afterwards; main() said so
    # before): do that on a small slice so that the table times the compression, not the compiler.
    start = time.perf_counter()
    container.decompress(container.compress(values[:4096]))
    warm = time.perf_counter() - start
    if warm > 1.0:
        print(f"(first use: loading and compiling the kernels took {warm:.1f} s; cached for later runs)")

    start = time.perf_counter()
    packed = container.compress(values, n_tokens=args.n_tokens)
    back = container.decompress(packed)
    _check_round_trip("ubpe", np.array_equal(np.asarray(back), values) and np.asarray(back).shape == values.shape)
    rows.append(("ubpe", len(packed), time.perf_counter() - start))

    codecs = [
        ("zlib -9", lambda b: zlib.compress(b, 9), zlib.decompress),
        ("bz2 -9", lambda b: bz2.compress(b, 9), bz2.decompress),
        ("lzma -9e", lambda b: lzma.compress(b, preset=9 | lzma.PRESET_EXTREME), lzma.decompress),
    ]
    for name, enc, dec in codecs:
        start = time.perf_counter()
        out = enc(raw)
        _check_round_trip(name, dec(out) == raw)
        rows.append((name, len(out), time.perf_counter() - start))

    print()
    print(f"  {'method':<10} {'bytes':>8} {'ratio':>7} {'time':>8}   (compress + decompress)")
    for name, size, seconds in rows:
        print(f"  {name:<10} {size:>8} {_ratio(len(raw), size):>7} {seconds:>7.2f}s")
    print()
    print(f"ratio = {len(raw)} raw bytes / compressed bytes; every round trip checked "
          "(decompressed output equals the input)")
    return 0


def _check_round_trip(name: str, ok: bool) -> None:
    if not ok:
        raise UBPEError(f"demo: the {name} round trip did not give back the input (please report this bug)")


# ============================================================== entry point


class _UsageError(Exception):
    """A usage problem found after parsing: exit code 2."""


def _usage_problem(args: argparse.Namespace) -> str | None:
    """Option combinations argparse cannot express; reported as usage errors (exit 2)."""
    for path in getattr(args, "inputs", ()):
        if re.fullmatch(r"-\d+", path):  # gzip's -1..-9: argparse takes a negative number for a file name
            return (f"{path}: ubpe has no numbered presets like gzip {path}: the levels are --level 2 (the "
                    "default, smallest) and --level 1 (faster to decompress); a file of that name is ./" + path)
    if args.command == "compress" and args.model is None and args.reference:
        return "--reference needs --model"
    if args.command == "compress" and args.model is None and args.no_escape:
        return "--no-escape applies with --model"
    if args.command == "compress" and args.predictor is not None and args.delta != "auto":
        return "--predictor and --delta cannot be used together"
    if args.command in ("compress", "fit") and getattr(args, "predictor", None) is not None:
        from .frontend.chains import PREDICTORS

        allowed = tuple(PREDICTORS) + (("auto",) if args.command == "fit" else ())
        if args.predictor not in allowed:
            return f"--predictor {args.predictor!r}: choose one of {', '.join(allowed)}"
    if args.command == "compress" and args.model is not None and (args.n_tokens is not None or _fit_options(args)):
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


def _error_text(e: BaseException) -> str:
    if isinstance(e, OSError) and e.filename is not None and e.strerror:
        text = f"{e.filename}: {e.strerror}"
    else:
        text = str(e) or type(e).__name__
    return " ".join(text.split())


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
            raise _UsageError(problem)
        if args.command in KERNEL_COMMANDS and not args.quiet and not kernels.is_cache_warm():
            print(f"{PROG}: compiling the kernels on first use, once (20 to 30 s of CPU; cached in "
                  f"{kernels.cache_dir() or 'numba default cache'})", file=sys.stderr, flush=True)
        with _warnings_to_stderr():
            return args.func(args)
    except _UsageError as e:
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
        print(f"{PROG}: error: {_error_text(e)}", file=sys.stderr)
        return 1
    except Exception:  # anything else is a bug in ubpe, not a problem with the user's data
        traceback.print_exc()
        print(f"{PROG}: internal error (a bug in ubpe {__version__}): please report it with the "
              "traceback above", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
