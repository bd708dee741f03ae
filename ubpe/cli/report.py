"""``ubpe inspect`` and ``ubpe bench``: what a container or a model holds, and experiments."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

from .. import _files as files
from ..errors import UBPEError
from .common import (
    DATA_ERRORS,
    PROG,
    count_words,
    error_text,
    library_words,
    model_of,
    original_size,
    ratio_text,
    shown_name,
)


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
    from ..tokenizer import MODEL_FORMAT_VERSION

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
    elif info.coder == "floatpack":  # a short float series: no model (ubpe.coders.floatpack)
        model = "none (the float values coded as their decimal integers by 'floatpack')"
    elif info.embedded:
        model = f"embedded: {info.alphabet_size} symbols + {info.n_merges} merges"
    else:
        model = f"referenced by digest sha256:{info.digest} (decompress needs --model)"
    front = " -> ".join(_describe_stage(stage) for stage in getattr(info, "front", ())) or "none"
    lines = [
        f"{path}: ubpe container (format {info.version}), {size} bytes",
        f"  values       {count_words(info.shape)} of {np.dtype(info.dtype)} ({info.dtype}), shape "
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
        f"  ratio        {ratio_text(original_size(info.source, info.original_size), size)} "
        f"({original_size(info.source, info.original_size)} -> {size} bytes"
        + (", the file compressed)" if original_size(info.source, -1) >= 0 else ", the values)"),
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
    from .. import experiments
    return experiments.run_bench(args.inputs, n_tokens=args.n_tokens, n_candidates=args.n_candidates,
                                 level=args.level, predictor=args.predictor, codecs=args.codecs, out=args.out,
                                 overwrite=args.overwrite, jobs=args.jobs, plots=not args.no_plots,
                                 quiet=args.quiet, dtype=args.dtype, as_bytes=args.bytes, column=args.column)


def cmd_inspect(args: argparse.Namespace) -> int:
    from .. import api as container
    from ..tokenizer import MODEL_MAGIC

    bad = 0
    for i, path in enumerate(args.inputs):
        try:
            data = files.read_input(path)
            if MODEL_MAGIC.encode() in data[:64]:
                report = inspect_model(model_of(data, path), path, args.tokens)
            else:
                try:
                    report = _format_report(container.describe(data), shown_name(path))
                except UBPEError as e:
                    raise UBPEError(f"{shown_name(path)}: not a readable ubpe container or model: "
                                    f"{library_words(str(e))}") from e
        except DATA_ERRORS as e:
            if len(args.inputs) == 1:
                raise
            bad += 1
            print(f"{PROG}: error: {error_text(e)}", file=sys.stderr)
            continue
        print(("\n" if i else "") + report)
    return 1 if bad else 0
