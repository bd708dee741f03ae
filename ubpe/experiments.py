"""Compression-ratio experiments: run :func:`ubpe.compress` over a grid of parameters and a set
of general-purpose codecs on the same data, check every round trip, and record the results (``ubpe bench`` is the command-line front end)."""
from __future__ import annotations

import bz2
import csv
import dataclasses
import hashlib
import io as _io
import itertools
import json
import lzma
import os
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from . import __version__
from .container import FORMAT_VERSION, compress, decompress, describe
from .io import read_values, write_atomic

__all__ = ["Row", "Skipped", "sweep", "available_codecs", "rows_to_csv", "rows_to_json"]


#: every codec this module knows, in the order rows are produced
CODECS = ("zlib", "bz2", "xz", "zstd", "brotli")


@dataclasses.dataclass(frozen=True)
class Row:
    """One measured run. Sizes in bytes, times in seconds, memory in bytes.

    ``codec`` is ``"ubpe"`` for :func:`ubpe.compress` runs (then ``n_tokens``, ``n_candidates``,
    ``predictor``, ``level`` and the container parts are set) or a peer codec's name.
    ``peak_memory`` is tracemalloc's peak of Python-heap allocations (numpy buffers included)
    during compression and decompression, not the process's resident size.
    """

    dataset: str
    codec: str
    n_values: int
    original_size: int
    size: int
    ratio: float
    bits_per_value: float
    compress_seconds: float
    decompress_seconds: float
    peak_memory: int
    n_tokens: int | None = None
    n_candidates: int | None = None
    predictor: str | None = None
    level: int | None = None
    model: int | None = None
    freq: int | None = None
    payload: int | None = None
    sha256: str = ""
    codec_version: str = ""


@dataclasses.dataclass(frozen=True)
class Skipped:
    """A requested codec that was not run, and why."""

    codec: str
    reason: str


def _codec(name: str) -> tuple[Callable[[bytes], bytes], Callable[[bytes], bytes], str]:
    """``(compress, decompress, version)`` of a peer codec; ImportError when not importable."""
    if name == "zlib":
        return (lambda b: zlib.compress(b, 9)), zlib.decompress, zlib.ZLIB_RUNTIME_VERSION
    if name == "bz2":
        return (lambda b: bz2.compress(b, 9)), bz2.decompress, "stdlib"
    if name == "xz":
        return (lambda b: lzma.compress(b, preset=9 | lzma.PRESET_EXTREME)), lzma.decompress, "stdlib"
    if name == "zstd":
        import zstandard
        return (zstandard.ZstdCompressor(level=19).compress,
                zstandard.ZstdDecompressor().decompress, zstandard.__version__)
    if name == "brotli":
        import brotli
        return (lambda b: brotli.compress(b, quality=11)), brotli.decompress, getattr(brotli, "__version__", "")
    raise ValueError(f"unknown codec {name!r}: choose from {', '.join(CODECS)}")


def available_codecs(names: Iterable[str] | str = "available") -> tuple[list[str], list[Skipped]]:
    """Split codec names into those that can run here and those skipped (with the reason).

    ``"available"`` means every name in :data:`CODECS`. Unknown names raise ``ValueError``.
    """
    if isinstance(names, str):
        names = list(CODECS) if names == "available" else [n for n in names.split(",") if n]
    ok: list[str] = []
    skipped: list[Skipped] = []
    for name in names:
        if name not in CODECS:
            raise ValueError(f"unknown codec {name!r}: choose from {', '.join(CODECS)}")
        try:
            _codec(name)
        except ImportError as e:
            skipped.append(Skipped(name, f"not importable: {e}"))
        else:
            ok.append(name)
    return ok, skipped


def _datasets(data: Any) -> list[tuple[str, np.ndarray]]:
    """``(name, values)`` pairs: one array, a list of arrays, or paths the CLI's readers read."""
    if isinstance(data, (str, os.PathLike)):
        data = [data]
    if isinstance(data, np.ndarray):
        return [("data", data)]
    out = []
    for i, item in enumerate(data):
        if isinstance(item, (str, os.PathLike)):
            out.append((os.path.basename(os.fspath(item)), np.asarray(read_values(item))))
        else:
            out.append((f"data{i}", np.asarray(item)))
    if not out:
        raise ValueError("sweep needs at least one array or path")
    return out


def _measure(enc: Callable[[], bytes], dec: Callable[[bytes], Any]) -> tuple[bytes, Any, float, float, int]:
    tracemalloc.start()
    try:
        t0 = time.perf_counter()
        blob = enc()
        t1 = time.perf_counter()
        back = dec(blob)
        t2 = time.perf_counter()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return blob, back, t1 - t0, t2 - t1, peak


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise RuntimeError(f"round trip failed: {what} did not give back the values")


def sweep(
    data: Any,
    *,
    n_tokens: Sequence[int | None] = (None,),
    n_candidates: Sequence[int] = (50,),
    predictor: Sequence[str] = ("auto",),
    level: Sequence[int] = (2,),
    codecs: Iterable[str] | str = "available",
    progress: Callable[[str], None] | None = None,
) -> tuple[list[Row], list[Skipped]]:
    """Compress every dataset with every parameter combination and every codec.

    Parameters
    ----------
    data : array, sequence of arrays, path or sequence of paths
        Each array or file is one dataset (files are read with :func:`ubpe.io.read_values`).
    n_tokens, n_candidates, predictor, level : sequences
        Grids for :func:`ubpe.compress`; ``None`` in ``n_tokens`` lets compress choose.
    codecs : ``"available"``, comma-separated str or sequence of names
        Peer codecs, run on the values' raw bytes (native byte order, C order).
    progress : callable, optional
        Called with a short label before each run.

    Returns
    -------
    rows, skipped
        One :class:`Row` per dataset x combination plus one per dataset x runnable codec, and the
        codecs not run with the reason. Every round trip is checked; a mismatch raises
        ``RuntimeError``.
    """
    names, skipped = available_codecs(codecs)
    rows: list[Row] = []
    for dname, x in _datasets(data):
        raw = np.ascontiguousarray(x).tobytes()
        digest = hashlib.sha256(raw).hexdigest()
        n = int(x.size)
        for nt, nc, pr, lv in itertools.product(n_tokens, n_candidates, predictor, level):
            if progress:
                progress(f"{dname} ubpe n_tokens={nt} n_candidates={nc} {pr} level={lv}")
            kw: dict[str, Any] = {"predictor": pr, "level": lv, "n_candidates": nc}
            if nt is not None:
                kw["n_tokens"] = nt
            blob, back, tc, td, peak = _measure(lambda: compress(x, **kw), decompress)
            _check(isinstance(back, np.ndarray) and back.dtype == x.dtype and back.shape == x.shape
                   and np.array_equal(back, x), f"ubpe on {dname} with {kw}")
            info = describe(blob)
            rows.append(Row(dname, "ubpe", n, info.original_size, len(blob),
                            info.original_size / len(blob), 8 * len(blob) / max(n, 1), tc, td, peak,
                            nt, nc, pr, lv, info.model, info.freq, info.payload, digest, __version__))
        for cname in names:
            if progress:
                progress(f"{dname} {cname}")
            enc, dec, version = _codec(cname)
            blob, back, tc, td, peak = _measure(lambda: enc(raw), dec)
            _check(back == raw, f"{cname} on {dname}")
            rows.append(Row(dname, cname, n, len(raw), len(blob), len(raw) / len(blob),
                            8 * len(blob) / max(n, 1), tc, td, peak, sha256=digest,
                            codec_version=str(version)))
    return rows, skipped


def _meta(skipped: Sequence[Skipped], parameters: dict[str, Any] | None) -> dict[str, Any]:
    return {"ubpe_version": __version__, "format_version": FORMAT_VERSION,
            "parameters": parameters or {}, "skipped": [dataclasses.asdict(s) for s in skipped]}


def rows_to_json(path: str | os.PathLike, rows: Sequence[Row], skipped: Sequence[Skipped] = (), *,
                 parameters: dict[str, Any] | None = None, overwrite: bool = False) -> None:
    """Write rows, skipped codecs and reproducibility metadata as JSON, atomically."""
    doc = dict(_meta(skipped, parameters), rows=[dataclasses.asdict(r) for r in rows])
    write_atomic(path, json.dumps(doc, indent=1, sort_keys=True).encode(), overwrite=overwrite)


def rows_from_json(path: str | os.PathLike) -> list[Row]:
    """Rows written by :func:`rows_to_json`."""
    with open(path, encoding="utf-8") as f:
        return [Row(**r) for r in json.load(f)["rows"]]


def rows_to_csv(path: str | os.PathLike, rows: Sequence[Row], *, overwrite: bool = False) -> None:
    """Write one CSV line per row (header = :class:`Row` field names), atomically."""
    buf = _io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    fields = [f.name for f in dataclasses.fields(Row)]
    w.writerow(fields)
    for r in rows:
        w.writerow(["" if getattr(r, k) is None else getattr(r, k) for k in fields])
    write_atomic(path, buf.getvalue().encode(), overwrite=overwrite)


def rows_from_csv(path: str | os.PathLike) -> list[Row]:
    """Rows written by :func:`rows_to_csv` (types restored from :class:`Row`)."""
    types = {f.name: f.type for f in dataclasses.fields(Row)}
    out = []
    with open(path, encoding="utf-8", newline="") as f:
        for rec in csv.DictReader(f):
            kw: dict[str, Any] = {}
            for k, v in rec.items():
                t = types[k]
                if v == "" and "None" in t:
                    kw[k] = None
                elif t.startswith("int"):
                    kw[k] = int(v)
                elif t == "float":
                    kw[k] = float(v)
                else:
                    kw[k] = v
            out.append(Row(**kw))
    return out


def to_pandas(rows: Sequence[Row]) -> Any:
    """A pandas DataFrame of the rows (needs pandas, which ubpe does not depend on)."""
    import pandas
    return pandas.DataFrame([dataclasses.asdict(r) for r in rows])


def _int_list(text: str) -> list[int]:
    try:
        return [int(t) for t in text.split(",") if t]
    except ValueError:
        raise ValueError(f"expected comma-separated integers, got {text!r}") from None


def plot_ratio(path: str | os.PathLike, rows: Sequence[Row]) -> None:
    """Save a PNG: ubpe's ratio against vocabulary size per dataset (one line per candidate count
    and level), each peer codec a horizontal line. Needs matplotlib (``pip install ubpe[plot]``)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(dict.fromkeys(r.dataset for r in rows))
    fig, axes = plt.subplots(len(datasets), 1, figsize=(6, 3 * len(datasets)), squeeze=False)
    for ax, d in zip(axes[:, 0], datasets):
        mine = [r for r in rows if r.dataset == d and r.codec == "ubpe" and r.n_tokens is not None]
        for key in sorted({(r.n_candidates, r.level, r.predictor) for r in mine}):
            pts = sorted((r.n_tokens, r.ratio) for r in mine if (r.n_candidates, r.level, r.predictor) == key)
            ax.plot(*zip(*pts), marker="o", label=f"ubpe c={key[0]} level={key[1]}")
        for r in rows:
            if r.dataset == d and r.codec != "ubpe":
                ax.axhline(r.ratio, linestyle="--", linewidth=1, color="grey")
                ax.annotate(r.codec, (0, r.ratio), xycoords=("axes fraction", "data"), fontsize=7)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("vocabulary size (tokens)")
        ax.set_ylabel("compression ratio")
        ax.set_title(d)
        ax.legend(fontsize=7)
    fig.tight_layout()
    buf = _io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
    write_atomic(path, buf.getvalue(), overwrite=True)


def run_bench(files: Sequence[str], *, n_tokens: str, n_candidates: str, level: str, codecs: str,
              out: str, overwrite: bool, quiet: bool = False) -> int:
    """The ``ubpe bench`` command: sweep, print a table, write ``results.csv``, ``results.json``
    and (with matplotlib) ``ratio.png`` into the folder ``out``, which must not exist unless
    ``overwrite``."""
    if os.path.exists(out) and not overwrite:
        raise FileExistsError(f"{out}: results folder exists (pass --overwrite to replace its files)")
    params = {"n_tokens": _int_list(n_tokens), "n_candidates": _int_list(n_candidates),
              "level": _int_list(level), "codecs": codecs}
    n_runs = len(files) * len(params["n_tokens"]) * len(params["n_candidates"]) * len(params["level"])
    bar = None
    if not quiet:
        from tqdm import tqdm
        bar = tqdm(total=n_runs + len(files) * len(available_codecs(codecs)[0]), unit="run")

    def tick(label: str) -> None:
        if bar is not None:
            bar.set_description(label[:40])
            bar.update(1)

    try:
        rows, skipped = sweep(list(files), n_tokens=params["n_tokens"], n_candidates=params["n_candidates"],
                              level=params["level"], codecs=codecs, progress=tick)
    finally:
        if bar is not None:
            bar.close()
    os.makedirs(out, exist_ok=True)
    rows_to_csv(os.path.join(out, "results.csv"), rows, overwrite=True)
    rows_to_json(os.path.join(out, "results.json"), rows, skipped, parameters=params, overwrite=True)
    try:
        plot_ratio(os.path.join(out, "ratio.png"), rows)
    except ImportError:
        skipped = [*skipped, Skipped("plot", "matplotlib not installed (pip install ubpe[plot])")]
    if not quiet:
        print(f"{'dataset':24} {'codec':7} {'tokens':>6} {'cand':>4} {'lvl':>3} {'bytes':>10} {'ratio':>7} {'bits/v':>7}")
        for r in rows:
            print(f"{r.dataset[:24]:24} {r.codec:7} {r.n_tokens or '':>6} {r.n_candidates or '':>4} "
                  f"{r.level or '':>3} {r.size:>10} {r.ratio:7.3f} {r.bits_per_value:7.3f}")
        for s in skipped:
            print(f"skipped {s.codec}: {s.reason}")
    return 0
