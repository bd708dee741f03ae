"""``ubpe fit``: a model fitted on files, saved for ``compress --model``."""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

import numpy as np

from .. import _inputs
from ..alphabet import distinct
from .. import io as uio
from .._validate import QUANTIZE_HINT
from .common import UsageError, check_output, documents_of, fit_options, read_input, say

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
    from .. import frontend
    from ..frontend.chains import PREDICTORS, build_chain
    from ..tokenizer import SHARED_PREDICTORS

    names = [None] if predictor is None else list(SHARED_PREDICTORS) if predictor == "auto" else [predictor]
    sizes = []
    for name in names:
        chain = None if name is None else build_chain(PREDICTORS[name])
        seen = [distinct(np.asarray(d) if chain is None or not len(d) else
                         frontend.forward(np.ascontiguousarray(d).reshape(1, -1), chain)[0]) for d in docs]
        values = distinct(np.concatenate(seen)) if seen else np.zeros(0)
        span = int(values[-1]) - int(values[0]) + 1 if len(values) and name is not None else 0
        # (behind a chain, fit covers every residual between the extremes when n_tokens allows)
        sizes.append(max(len(values), span if span <= len(values) + FIT_MERGES else 0))
    return min(sizes) + FIT_MERGES


def cmd_fit(args: argparse.Namespace) -> int:
    from .. import _progress
    from ..alphabet import Alphabet
    from ..tokenizer import Tokenizer

    check_output(args, args.output, *args.inputs)
    docs: list[np.ndarray] = []
    for path in args.inputs:
        with _inputs.spooled(path) as readable:
            sig = read_input(args, readable)
            kind = uio.format_for(readable, "bytes" if args.bytes else None)
        if sig.values.dtype.kind == "f":
            raise TypeError(f"{path}: holds floating-point values; fit learns integer sequences: "
                            f"{QUANTIZE_HINT} (ubpe compress takes floats with --step/--bits)")
        docs.extend(documents_of(sig.values, path, kind))
    n_values = sum(len(d) for d in docs)
    if n_values == 0:
        raise ValueError("the inputs hold no values: nothing to fit")
    if args.shared is not None:  # a shared model for small windows (ubpe/shared/)
        from ..shared import fit_inputs

        start = time.perf_counter()
        model, count = fit_inputs(docs, args.shared or None)
        data = model.to_bytes()
        uio.write_atomic(args.output, data, overwrite=args.overwrite)
        say(args, f"{args.output}: shared model of {count} window(s) ({', '.join(v.predictor for v in model.variants)}; "
                   f"{model.history.size} values of history) in {time.perf_counter() - start:.1f} s; {len(data)} bytes")
        return 0
    alphabet = Alphabet(256) if args.bytes else None
    if args.range is not None:
        if args.bytes:
            raise UsageError("--range and --bytes cannot be used together (bytes are 0..255)")
        alphabet = Alphabet(np.arange(args.range[0], args.range[1] + 1, dtype=np.int64))
        if args.n_tokens is not None and args.n_tokens < len(alphabet):
            raise UsageError(f"--n-tokens {args.n_tokens} is less than the {len(alphabet)} values of --range")
    n_tokens = args.n_tokens
    if n_tokens is None:
        n_tokens = _default_n_tokens(docs, alphabet, args.predictor)
    tok = Tokenizer(alphabet, n_tokens, **fit_options(args))
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
    say(args, f"{args.output}: {tok.vocab_size} tokens ({a} symbols + {tok.vocab_size - a} merges){chosen} "
               f"from {len(docs)} document(s), {n_values} values, in {time.perf_counter() - start:.1f} s; "
               f"{len(data)} bytes")
    return 0
