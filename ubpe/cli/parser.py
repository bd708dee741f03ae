"""The command line's parser: argument types, options and subcommands (``ubpe --help``)."""

from __future__ import annotations

import argparse
import os
import re

import numpy as np

from .. import __version__
from .. import io as uio
from .common import PROG
from .compress import cmd_compress
from .decompress import cmd_decompress, cmd_test
from .demo import cmd_demo
from .fit import FIT_MERGES, cmd_fit
from .report import cmd_bench, cmd_inspect

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


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
                   "text), much smaller on text and signals but slower to decode (about 4-7 M values/s on signals); 1: the static "
                   "rANS coder only, fast to decode (tens of M values/s); 3: integer signals also through the "
                   "level-3 coder (ubpe.level3, 'mixsignal'), the smallest: about 0.2 to 0.3 M values/s to compress "
                   "(a short recording's parameters searched on a prefix), 0.5 to decompress")
    p.add_argument("--best", dest="level", action="store_const", const=3, help="the same as --level 3")
    for n in (1, 2, 3):  # as gzip, xz and zstd: -1 fast ... -3 strongest
        p.add_argument(f"-{n}", dest="level", action="store_const", const=n, help=f"the same as --level {n}")
    for n in (0, 4, 5, 6, 7, 8, 9):  # other tools' presets: refused by name (cli._usage_problem)
        p.add_argument(f"-{n}", dest="numbered_preset", action="store_const", const=n, help=argparse.SUPPRESS)
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
