"""Compression-ratio experiments: :func:`ubpe.compress` over a grid of parameters, side by side
with the codecs people use (:mod:`ubpe.peers`), every round trip checked, results as plain
rows that write to CSV and JSON and plot (``ubpe bench`` is the command-line front end).

One training serves a whole vocabulary-size axis: within a (dataset, n_candidates, predictor)
group the sizes run largest first under :func:`ubpe.trainer.reuse_training`, so each smaller
vocabulary is the exact prefix of batches of the larger run (the bytes are those of a fresh
``compress``; ``tests/test_experiments.py`` checks it) and costs no training. That makes the
``n_tokens`` axis the vocabulary growth curve (tokens against compressed size) of one training.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import csv
import dataclasses
import hashlib
import io as _io
import json
import multiprocessing
import os
import platform
import time
import tracemalloc
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from . import __version__, peers, trainer
from .errors import UBPEError
from .api import compress, decompress, describe
from .format.container import FORMAT_VERSION
from .io.atomic import write_atomic

__all__ = ["Row", "Skipped", "Dataset", "sweep", "available_codecs", "rows_to_csv", "rows_to_json",
           "rows_from_csv", "rows_from_json", "to_pandas", "summarize", "plot_ratio", "plot_bits",
           "plot_time", "CODECS"]

#: short codec names (``codecs=``, ``ubpe bench --codecs``) -> :mod:`ubpe.peers` codec, in row order
CODECS: dict[str, str] = {
    "zlib": "zlib-9", "bz2": "bz2-9", "xz": "xz-9e", "zstd": "zstd-19", "brotli": "brotli-11",
    "pcodec": "pcodec", "flac": "flac-8", "wavpack": "wavpack-hhx6", "zpaq": "zpaq-m5",
}


@dataclasses.dataclass(frozen=True)
class Row:
    """One measured run. Sizes in bytes, times in seconds (wall clock, one run), memory in bytes.

    ``codec`` is ``"ubpe"`` for :func:`ubpe.compress` runs (then ``n_tokens`` (None: compress
    chose), ``n_candidates``, ``predictor``, ``level``, the chosen front end ``chain``, the model's
    ``vocabulary`` (alphabet + merges; below ``n_tokens`` when training ran out of pairs) and the
    container parts ``model``, ``freq``, ``payload`` are set) or a peer codec's name with its
    level (``"xz-9e"``). ``ratio = original_size / size``, the same ratio ``ubpe compress``,
    ``inspect`` and ``describe`` give: ``original_size`` is the input file's bytes (a dataset
    read from a file), else the array's bytes (``n_values`` x itemsize). ``n_values`` counts
    values (frames x channels). ``train_seconds`` is the training the run did itself (part of
    ``compress_seconds``); ``training_reused`` means its training was the prefix of a larger
    run's (then ``train_seconds`` is 0). ``peak_memory`` is tracemalloc's peak of Python-heap
    allocations (numpy buffers included) during compression and decompression; None for codecs
    that run as separate programs.

    A configuration that could not run on the dataset (``n_tokens`` below the values' alphabet,
    a codec that does not apply to them, a file that cannot be read) is a row too: ``error``
    says why, and ``size``, ``ratio``, ``bits_per_value`` and the times are None. A run whose
    decompressed values differ from the input has ``error`` starting with ``"round trip failed"``.
    """

    dataset: str
    group: str
    codec: str
    n_values: int
    original_size: int
    size: int | None
    ratio: float | None
    bits_per_value: float | None
    compress_seconds: float | None
    decompress_seconds: float | None
    peak_memory: int | None = None
    n_tokens: int | None = None
    n_candidates: int | None = None
    predictor: str | None = None
    level: int | None = None
    chain: str | None = None
    vocabulary: int | None = None
    model: int | None = None
    freq: int | None = None
    payload: int | None = None
    train_seconds: float | None = None
    training_reused: bool | None = None
    sha256: str = ""
    codec_version: str = ""
    error: str = ""

    @property
    def ok(self) -> bool:
        """Whether the run happened (``error`` is empty)."""
        return not self.error


@dataclasses.dataclass(frozen=True)
class Skipped:
    """A requested codec that was not run (on ``dataset``, or on any when ``dataset`` is ""), and why."""

    codec: str
    reason: str
    dataset: str = ""


@dataclasses.dataclass(frozen=True)
class Dataset:
    """One input of a sweep: a name, a group (a file's folder; rows aggregate by group in the
    summaries and plots), and the file's path or the array itself.

    A file is read as ``ubpe compress`` reads it (:meth:`read`): by its extension, a raw file
    with ``dtype`` (e.g. ``"<i2"``), any file as its bytes with ``as_bytes``, one CSV column
    with ``column`` (a header name or a 0-based index); a file whose extension names no format
    (without ``dtype``), and a ``.csv``/``.txt`` that is not a table of numbers, as its bytes.
    """

    name: str
    group: str
    path: str | None = None
    values: np.ndarray | None = dataclasses.field(default=None, compare=False, repr=False)
    dtype: str | None = None
    as_bytes: bool = False
    column: str | int | None = None

    def load(self) -> np.ndarray:
        return self.read()[0]

    def read(self) -> tuple[np.ndarray, dict[str, Any] | None, int]:
        """The values, the source map ``ubpe compress`` would store with them (the file's layout,
        its name and size: a bench row's container is the one ``ubpe compress`` writes), and the
        bytes ratios are taken against (the file's, else the array's)."""
        if self.values is not None:
            return self.values, None, int(self.values.nbytes)
        from ._files import check_stored_name
        from ._inputs import read_for_compress

        sig, size, _ = read_for_compress(self.path, dtype=self.dtype, as_bytes=self.as_bytes, column=self.column)
        source = dict(sig.source or {})
        name = check_stored_name(os.path.basename(self.path))
        if name is not None:
            source["name"] = name
        source["size"] = size
        return sig.values, source, size

    def sha256(self) -> str:
        """SHA-256 of the file's bytes, or of an array's values (C order, native byte order)."""
        if self.path is not None:
            h = hashlib.sha256()
            with open(self.path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            return h.hexdigest()
        return hashlib.sha256(np.ascontiguousarray(self.values).tobytes()).hexdigest()


def available_codecs(names: Iterable[str] | str = "available") -> tuple[list[str], list[Skipped]]:
    """Split short codec names (keys of :data:`CODECS`) into those that can run here and those
    skipped for a missing package or program, with the reason.

    ``"available"`` means every codec of :data:`CODECS`; a str may list names separated by
    commas; ``""`` or ``"none"`` means none. Unknown names raise ``ValueError``.
    """
    if isinstance(names, str):
        names = list(CODECS) if names == "available" else [n.strip() for n in names.split(",")
                                                            if n.strip() and n.strip() != "none"]
    ok: list[str] = []
    skipped: list[Skipped] = []
    for name in names:
        if name not in CODECS:
            raise ValueError(f"unknown codec {name!r}: choose from {', '.join(CODECS)}")
        why = peers.missing(CODECS[name])
        if why:
            skipped.append(Skipped(CODECS[name], why))
        else:
            ok.append(name)
    return ok, skipped


def _datasets(data: Any, dtype: Any = None, as_bytes: bool = False, column: str | int | None = None
              ) -> list[Dataset]:
    """One array, a 2-D array (one dataset), a sequence of arrays, paths, or :class:`Dataset`;
    paths read with ``dtype``, ``as_bytes`` and ``column`` (see :class:`Dataset`)."""
    if isinstance(data, (str, os.PathLike, np.ndarray, Dataset)):
        data = [data]
    out: list[Dataset] = []
    for i, item in enumerate(data):
        if isinstance(item, Dataset):
            out.append(item)
        elif isinstance(item, (str, os.PathLike)):
            path = os.fspath(item)
            if not os.path.isfile(path):
                raise FileNotFoundError(f"{path}: no such file")
            group = os.path.basename(os.path.dirname(os.path.abspath(path)))
            out.append(Dataset(os.path.basename(path), group, path=path,
                               dtype=None if dtype is None else np.dtype(dtype).str, as_bytes=as_bytes,
                               column=column))
        else:
            arr = np.asarray(item)
            if arr.dtype.kind not in "iubf":
                raise TypeError(f"dataset {i}: sweep takes integer or float arrays, got dtype {arr.dtype}")
            out.append(Dataset(f"data{i}" if len(data) > 1 else "data", "data", values=arr))
    if not out:
        raise ValueError("sweep needs at least one array or path")
    names = [d.name for d in out]
    if len(set(names)) != len(names):  # files of one name in different folders: named by folder too
        twice = {n for n in names if names.count(n) > 1}
        out = [dataclasses.replace(d, name=f"{d.group}/{d.name}") if d.name in twice else d for d in out]
        names = [d.name for d in out]
    if len(set(names)) != len(names):
        raise ValueError("datasets must have distinct names (pass ubpe.experiments.Dataset(name, group, "
                         "path=...) with names of your own)")
    return out


def _reason(e: BaseException) -> str:
    """Why a configuration did not run, in one line."""
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _measure(enc: Callable[[], bytes], dec: Callable[[bytes], Any], memory: bool
             ) -> tuple[bytes, Any, float, float, int | None]:
    """Compress and decompress once each, timed; the decompression is preceded by an untimed
    one, which loads the decoder's compiled kernels (its first call in a process would time
    their loading, not the decoding)."""
    if memory:
        tracemalloc.start()
    try:
        t0 = time.perf_counter()
        blob = enc()
        compress_seconds = time.perf_counter() - t0
        dec(blob)
        t1 = time.perf_counter()
        back = dec(blob)
        decompress_seconds = time.perf_counter() - t1
        peak = tracemalloc.get_traced_memory()[1] if memory else None
    finally:
        if memory:
            tracemalloc.stop()
    return blob, back, compress_seconds, decompress_seconds, peak


def _chain_name(front: Sequence[dict]) -> str:
    names = [f"delta{s['order']}" if s.get("stage") == "delta" else str(s.get("stage")) for s in front]
    return "+".join(names) or "none"


def _failed(ds: Dataset, codec: str, n: int, original: int, sha: str, reason: str, **params: Any) -> Row:
    return Row(ds.name, ds.group, codec, n, original, None, None, None, None, None, sha256=sha, error=reason,
               **params)


def _loaded(ds: Dataset) -> tuple[np.ndarray | None, dict | None, int, str]:
    """The dataset's values (None when they cannot be read), source map, original size, and
    why it could not be read."""
    try:
        x, source, original = ds.read()
    except (OSError, ValueError, TypeError, UBPEError) as e:
        size = os.path.getsize(ds.path) if ds.path and os.path.isfile(ds.path) else 0
        return None, None, size, f"cannot read: {_reason(e)}"
    return x, source, original, ""


def _ubpe_group(ds: Dataset, n_candidates: int, predictor: str, n_tokens: Sequence[int | None],
                levels: Sequence[int], sha: str, reuse: bool, memory: bool) -> list[Row]:
    """Every (n_tokens, level) run of one (dataset, n_candidates, predictor) group; a run that
    cannot be made is a row with the reason."""
    x, source, original, unread = _loaded(ds)
    n = 0 if x is None else int(x.size)
    order = sorted(n_tokens, key=lambda t: -1 if t is None else t, reverse=True)  # largest first
    rows: dict[tuple, Row] = {}
    context = trainer.reuse_training() if reuse and x is not None else contextlib.nullcontext()
    with context as kept, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "fit stopped early": the row's vocabulary says it
        for nt in order:
            for lv in levels:
                params = dict(n_tokens=nt, n_candidates=n_candidates, predictor=predictor, level=lv)
                if x is None:
                    rows[(nt, lv)] = _failed(ds, "ubpe", n, original, sha, unread, **params)
                    continue
                kw: dict[str, Any] = {"predictor": predictor, "level": lv, "n_candidates": n_candidates,
                                      "source": source}
                if nt is not None:
                    kw["n_tokens"] = nt
                seconds, reused = (kept.seconds, kept.reused) if kept is not None else (0.0, 0)
                try:
                    blob, back, tc, td, peak = _measure(lambda: compress(x, **kw), decompress, memory)
                except (ValueError, TypeError, UBPEError, MemoryError) as e:
                    rows[(nt, lv)] = _failed(ds, "ubpe", n, original, sha, _reason(e), **params)
                    continue
                info = describe(blob)
                error = ""
                if not (isinstance(back, np.ndarray) and back.dtype == x.dtype and back.shape == x.shape
                        and np.array_equal(back, x, equal_nan=x.dtype.kind == "f")):
                    shown = {k: v for k, v in kw.items() if k != "source"}
                    error = (f"round trip failed: ubpe on {ds.name} with {shown} did not give back the values "
                             "(please report this bug)")
                trained = kept.seconds - seconds if kept is not None else None
                rows[(nt, lv)] = Row(
                    ds.name, ds.group, "ubpe", n, original, len(blob), original / len(blob),
                    8 * len(blob) / max(n, 1), tc, td, peak,
                    nt, n_candidates, predictor, lv, _chain_name(info.front),
                    (info.alphabet_size or 0) + (info.n_merges or 0), info.model, info.freq, info.payload,
                    trained, None if kept is None else (kept.reused > reused and trained == 0.0),
                    sha, __version__, error)
    return [rows[(nt, lv)] for nt in n_tokens for lv in levels]


def _codec_rows(ds: Dataset, names: Sequence[str], sha: str, memory: bool) -> tuple[list[Row], list[Skipped]]:
    """Each peer codec on one dataset: the values' little-endian bytes (C order; FLAC and
    WavPack: the channels of a 2-D array as channels); one that does not apply is a row with the
    reason."""
    x, _, original, unread = _loaded(ds)
    versions = peers.codec_versions()
    rows: list[Row] = []
    for short in names:
        name = CODECS[short]
        version = str(versions.get(peers.VERSION_KEY.get(name, name)) or "")
        if x is None:
            rows.append(dataclasses.replace(_failed(ds, name, 0, original, sha, unread), codec_version=version))
            continue
        external = name in peers.BINARIES
        if memory and not external:
            tracemalloc.start()
        try:
            try:
                (r,) = peers.run_codecs(x if x.ndim == 2 else x.reshape(-1), [name])
            except (ValueError, TypeError) as e:  # the codec does not apply to these values (stated in e)
                rows.append(dataclasses.replace(_failed(ds, name, int(x.size), original, sha, _reason(e)),
                                                codec_version=version))
                continue
            except peers.RoundTripError as e:
                rows.append(dataclasses.replace(
                    _failed(ds, name, int(x.size), original, sha, f"round trip failed: {_reason(e)}"),
                    codec_version=version))
                continue
            peak = tracemalloc.get_traced_memory()[1] if memory and not external else None
        finally:
            if memory and not external:
                tracemalloc.stop()
        rows.append(Row(ds.name, ds.group, name, int(x.size), original, int(r["bytes"]),
                        original / r["bytes"], 8 * r["bytes"] / max(int(x.size), 1),
                        r["compress_s"], r["decompress_s"], peak, sha256=sha, codec_version=version))
    return rows, []


def _warm_up() -> None:
    """Load (or compile) the kernels before anything is timed: a worker's first compress would
    otherwise carry it."""
    x = np.cumsum(np.arange(4096) % 7 - 3).astype(np.int16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for lv in (1, 2):
            decompress(compress(x, level=lv))
            decompress(compress(x, level=lv, n_tokens=300, n_candidates=4))


def _task(kind: str, *args: Any) -> tuple[list[Row], list[Skipped]]:
    if kind == "ubpe":
        return _ubpe_group(*args), []
    return _codec_rows(*args)


def sweep(
    data: Any,
    *,
    n_tokens: Sequence[int | None] = (None,),
    n_candidates: Sequence[int] = (50,),
    predictor: Sequence[str] = ("auto",),
    level: Sequence[int] = (2,),
    codecs: Iterable[str] | str = "available",
    jobs: int = 1,
    reuse_training: bool = True,
    memory: bool = True,
    progress: Callable[[str, int], None] | None = None,
    dtype: Any = None,
    as_bytes: bool = False,
    column: str | int | None = None,
) -> tuple[list[Row], list[Skipped]]:
    """Compress every dataset with every parameter combination and every codec.

    Parameters
    ----------
    data : array, sequence of arrays, path, sequence of paths or :class:`Dataset`
        Each array or file is one dataset (files are read as ``ubpe compress`` reads them,
        :class:`Dataset`). A file's group is its folder's name.
    n_tokens, n_candidates, predictor, level : sequences
        The grid for :func:`ubpe.compress`; ``None`` in ``n_tokens`` lets compress choose the
        size, ``"auto"`` in ``predictor`` the front end.
    codecs : ``"available"``, comma-separated str or sequence of short names (:data:`CODECS`)
        Peer codecs, run on the values' little-endian bytes; ``"available"`` runs every one
        installed and lists the others in ``skipped``.
    jobs : int
        Worker processes (1: this process). Rows and sizes do not depend on it; times do.
    reuse_training : bool
        Answer smaller vocabularies from the largest one's training (see the module docstring).
        Sizes are the same either way; only times change.
    memory : bool
        Measure ``peak_memory`` with tracemalloc (which slows Python code a little).
    progress : callable, optional
        ``progress(label, runs)`` after each finished group of runs.
    dtype, as_bytes, column : optional
        How files are read: a raw file's dtype (``"<i2"``), any file as its bytes, one CSV
        column (:class:`Dataset`).

    Returns
    -------
    rows, skipped
        For each dataset, one :class:`Row` per combination (in grid order, ``n_tokens``
        slowest-varying... ``level`` fastest), then one per codec; and the codecs not
        installed here, with the reason. A combination that cannot run never stops the sweep:
        its row says why (``Row.error``), and so does the row of a codec that does not apply to
        a dataset. Every round trip is checked: a mismatch is a row whose ``error`` starts with
        ``"round trip failed"``.
    """
    datasets = _datasets(data, dtype, as_bytes, column)
    grid = [list(n_tokens), list(n_candidates), list(predictor), list(level)]
    for name, values in zip(("n_tokens", "n_candidates", "predictor", "level"), grid):
        if not values:
            raise ValueError(f"{name} must list at least one value")
    jobs = max(1, int(jobs))
    names, skipped = available_codecs(codecs)
    tasks: list[tuple[int, tuple]] = []
    for i, ds in enumerate(datasets):
        sha = ds.sha256()
        for nc in grid[1]:
            for pr in grid[2]:
                tasks.append((i, ("ubpe", ds, nc, pr, grid[0], grid[3], sha, reuse_training, memory)))
        if names:
            tasks.append((i, ("codecs", ds, names, sha, memory)))
    results: dict[int, tuple[list[Row], list[Skipped]]] = {}

    def done(k: int, out: tuple[list[Row], list[Skipped]]) -> None:
        results[k] = out
        if progress is not None:
            args = tasks[k][1]
            label = f"{args[1].name} " + (f"c={args[2]} {args[3]}" if args[0] == "ubpe" else "codecs")
            progress(label, len(out[0]))

    if jobs == 1 or len(tasks) == 1:
        _warm_up()
        for k, (_, args) in enumerate(tasks):
            done(k, _task(*args))
    else:
        ctx = multiprocessing.get_context("spawn")  # numba and threads are not fork-safe
        with concurrent.futures.ProcessPoolExecutor(min(jobs, len(tasks)), mp_context=ctx,
                                                    initializer=_warm_up) as pool:
            futures = {pool.submit(_task, *args): k for k, (_, args) in enumerate(tasks)}
            for f in concurrent.futures.as_completed(futures):
                done(futures[f], f.result())
    # rows in grid order: each dataset's ubpe rows (n_tokens x level within n_candidates x predictor)
    rows: list[Row] = []
    for i in range(len(datasets)):
        mine = [results[k] for k, (j, _) in enumerate(tasks) if j == i]
        ubpe_rows = [r for rs, _ in mine for r in rs if r.codec == "ubpe"]
        key = {(nt, nc, pr, lv): r for r in ubpe_rows
               for nt, nc, pr, lv in [(r.n_tokens, r.n_candidates, r.predictor, r.level)]}
        rows += [key[(nt, nc, pr, lv)] for nt in grid[0] for nc in grid[1] for pr in grid[2] for lv in grid[3]]
        for rs, sk in mine:
            rows += [r for r in rs if r.codec != "ubpe"]
            skipped += sk
    return rows, skipped


# -- results files --------------------------------------------------------------------------

def metadata(skipped: Sequence[Skipped] = (), parameters: dict[str, Any] | None = None,
             datasets: Sequence[Dataset] = ()) -> dict[str, Any]:
    """What a result file records to be reproduced: versions of ubpe, its format and every codec,
    the platform, the parameters, each input's path and SHA-256, and the skipped codecs."""
    return {
        "ubpe_version": __version__, "format_version": FORMAT_VERSION,
        "python": platform.python_version(), "numpy": np.__version__, "platform": platform.platform(),
        "codec_versions": peers.codec_versions(),
        "parameters": parameters or {},
        "datasets": [{"name": d.name, "group": d.group, "path": d.path, "sha256": d.sha256()} for d in datasets],
        "skipped": [dataclasses.asdict(s) for s in skipped],
    }


def rows_to_json(path: str | os.PathLike, rows: Sequence[Row], skipped: Sequence[Skipped] = (), *,
                 parameters: dict[str, Any] | None = None, datasets: Sequence[Dataset] = (),
                 overwrite: bool = False) -> None:
    """Write rows with :func:`metadata` as JSON, atomically."""
    doc = dict(metadata(skipped, parameters, datasets), rows=[dataclasses.asdict(r) for r in rows])
    write_atomic(path, json.dumps(doc, indent=1, sort_keys=True).encode(), overwrite=overwrite)


def rows_from_json(path: str | os.PathLike) -> list[Row]:
    """Rows written by :func:`rows_to_json`."""
    with open(path, encoding="utf-8") as f:
        return [Row(**r) for r in json.load(f)["rows"]]


def rows_to_csv(path: str | os.PathLike, rows: Sequence[Row], *, overwrite: bool = False) -> None:
    """Write one CSV line per row (header: :class:`Row`'s field names; None as ""), atomically."""
    buf = _io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    fields = [f.name for f in dataclasses.fields(Row)]
    w.writerow(fields)
    for r in rows:
        w.writerow(["" if getattr(r, k) is None else repr(getattr(r, k)) if isinstance(getattr(r, k), float)
                    else getattr(r, k) for k in fields])
    write_atomic(path, buf.getvalue().encode(), overwrite=overwrite)


def rows_from_csv(path: str | os.PathLike) -> list[Row]:
    """Rows written by :func:`rows_to_csv`, types restored from :class:`Row` (floats exactly)."""
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
                elif t.startswith("float"):
                    kw[k] = float(v)
                elif t.startswith("bool"):
                    kw[k] = v == "True"
                else:
                    kw[k] = v
            out.append(Row(**kw))
    return out


def to_pandas(rows: Sequence[Row]) -> Any:
    """A pandas DataFrame of the rows (needs pandas, which ubpe does not depend on)."""
    import pandas

    return pandas.DataFrame([dataclasses.asdict(r) for r in rows])


# -- summaries and plots --------------------------------------------------------------------

def _config(r: Row) -> str:
    if r.codec != "ubpe":
        return r.codec
    nt = "auto" if r.n_tokens is None else r.n_tokens
    pr = "" if r.predictor == "auto" else f" {r.predictor}"
    return f"ubpe L{r.level} t={nt} c={r.n_candidates}{pr}"


def summarize(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """Per group and configuration (a codec, or ubpe's parameters): the totals over the group's
    datasets (``ratio`` = summed original bytes / summed compressed bytes, ``bits_per_value``,
    compression and decompression speed in values per second), largest ratio first per group.

    Every configuration of the rows is listed. ``datasets`` counts the datasets it ran on, out
    of ``of`` in its group; the totals are over those (``partial`` when it did not run on every
    one). ``errors`` lists ``(dataset, reason)`` of the rows that did not run; a configuration
    that ran on none has ``size``, ``ratio`` and the speeds None and comes last."""
    groups: dict[str, list[str]] = {}
    for r in rows:
        names = groups.setdefault(r.group, [])
        if r.dataset not in names:
            names.append(r.dataset)
    acc: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        a = acc.setdefault((r.group, _config(r)), dict(group=r.group, config=_config(r), codec=r.codec,
                           n_tokens=r.n_tokens, n_candidates=r.n_candidates, level=r.level,
                           predictor=r.predictor, datasets=0, of=len(groups[r.group]), n_values=0,
                           original_size=0, size=0, cs=0.0, ds=0.0, errors=[]))
        if not r.ok:
            a["errors"].append((r.dataset, r.error))
            continue
        a["datasets"] += 1
        a["n_values"] += r.n_values
        a["original_size"] += r.original_size
        a["size"] += r.size
        a["cs"] += r.compress_seconds
        a["ds"] += r.decompress_seconds
    out = []
    for a in acc.values():
        cs, ds = a.pop("cs"), a.pop("ds")
        a["partial"] = 0 < a["datasets"] < a["of"]
        if a["datasets"] == 0:
            a.update(size=None, ratio=None, bits_per_value=None, compress_values_per_second=None,
                     decompress_values_per_second=None)
        else:
            a.update(ratio=a["original_size"] / a["size"], bits_per_value=8 * a["size"] / max(a["n_values"], 1),
                     compress_values_per_second=a["n_values"] / cs if cs > 0 else float("inf"),
                     decompress_values_per_second=a["n_values"] / ds if ds > 0 else float("inf"))
        out.append(a)
    order = {g: i for i, g in enumerate(groups)}
    return sorted(out, key=lambda a: (order[a["group"]], a["ratio"] is None, a["partial"], -(a["ratio"] or 0),
                                      a["config"]))


def _group_totals(summary: Sequence[dict[str, Any]], rows: Sequence[Row] | None = None) -> dict[str, str]:
    heads: dict[str, str] = {}
    for g in dict.fromkeys(a["group"] for a in summary):
        block = [a for a in summary if a["group"] == g]
        full = [a for a in block if a["datasets"] == a["of"]]
        head = f"{g}: {block[0]['of']} dataset{'s' if block[0]['of'] != 1 else ''}"
        if full:
            head += f", {full[0]['n_values']} values, {full[0]['original_size']} bytes"
        heads[g] = head
    return heads


def format_summary(summary: Sequence[dict[str, Any]]) -> str:
    """The summary as a text table, one block per group: every configuration, those that did
    not run on some dataset with the reason (a ``*`` marks totals over fewer datasets)."""
    lines = []
    width = max([len(a["config"]) for a in summary] + [24]) + 2
    heads = _group_totals(summary)
    for g in heads:
        block = [a for a in summary if a["group"] == g]
        lines.append(heads[g])
        lines.append(f"  {'configuration':{width}} {'bytes':>11} {'ratio':>7} {'bits/v':>7} {'comp Mv/s':>10} "
                     f"{'dec Mv/s':>9}")
        notes = []
        for a in block:
            name = a["config"] + (" *" if a["partial"] else "")
            if a["ratio"] is None:
                lines.append(f"  {name:{width}} {'not run':>11}")
            else:
                lines.append(f"  {name:{width}} {a['size']:>11} {a['ratio']:7.3f} {a['bits_per_value']:7.3f} "
                             f"{a['compress_values_per_second'] / 1e6:10.3f} "
                             f"{a['decompress_values_per_second'] / 1e6:9.3f}")
            reasons: dict[str, list[str]] = {}
            for dataset, reason in a["errors"]:
                reasons.setdefault(reason, []).append(dataset)
            for reason, names in reasons.items():
                on = "" if len(names) == a["of"] else f" on {', '.join(names)}"
                notes.append(f"    {a['config']}{on}: {reason}")
        if any(a["partial"] for a in block):
            notes.append("    * totals over the datasets it ran on")
        if notes:
            lines.append("  not run:")
            lines += notes
    return "\n".join(lines)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


#: The PNG text key under which each plot records what it draws (:func:`plotted`).
PLOT_KEY = "ubpe:plotted"


def _drawn(fig: Any) -> list[dict[str, Any]]:
    """What the figure's artists draw, read back from them: per plotted configuration its
    group, config and the value drawn (``y``: a ratio or bits per value; None for a "not run"
    note). Each artist carries ``{"group", "configs"}`` as its gid (JSON), one config per point."""
    out = []
    for ax in fig.axes:
        for artist in [*ax.lines, *ax.collections, *ax.patches, *ax.texts]:
            gid = artist.get_gid()
            if not gid:
                continue
            meta = json.loads(gid)
            if hasattr(artist, "get_ydata"):
                ys = list(artist.get_ydata())
            elif hasattr(artist, "get_offsets"):
                ys = [float(p[1]) for p in artist.get_offsets()]
            elif hasattr(artist, "get_height"):
                ys = [float(artist.get_y() + artist.get_height())]
            else:
                ys = [None] * len(meta["configs"])
            ys = ys[:1] * len(meta["configs"]) if meta.get("level_line") else ys
            for config, y in zip(meta["configs"], ys):
                out.append({"group": meta["group"], "config": config,
                            "y": None if y is None else float(y)})
    return out


def plotted(path: str | os.PathLike) -> list[dict[str, Any]]:
    """What a plot written here draws: the ``{"group", "config", "y"}`` entries read back from its
    artists when it was drawn, as the PNG records them (needs Pillow, which matplotlib brings)."""
    from PIL import Image

    with Image.open(path) as img:
        return json.loads(img.text[PLOT_KEY])


def _save(fig: Any, path: str | os.PathLike) -> None:
    plt = _pyplot()
    fig.canvas.draw()
    buf = _io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None, PLOT_KEY: json.dumps(_drawn(fig))})
    plt.close(fig)
    write_atomic(path, buf.getvalue(), overwrite=True)


def _gid(group: str, configs: Sequence[str], **extra: Any) -> str:
    return json.dumps({"group": group, "configs": list(configs), **extra})


def _not_run_notes(ax: Any, group: str, block: Sequence[dict[str, Any]]) -> None:
    """A note in the axes for each configuration that ran on none of the group's datasets."""
    failed = [a for a in block if a["ratio"] is None]
    for i, a in enumerate(failed):
        reason = a["errors"][0][1] if a["errors"] else ""
        ax.text(0.01, 0.02 + 0.05 * i, f"not run: {a['config']}: {reason[:70]}", transform=ax.transAxes,
                fontsize=6, color="C3", gid=_gid(group, [a["config"]]))


def plot_ratio(path: str | os.PathLike, rows: Sequence[Row]) -> None:
    """PNG: per group, the ratio (group totals) of every configuration of :func:`summarize`:
    ubpe's against the vocabulary size, a line per (n_candidates, level, predictor); ubpe with
    the size chosen by compress (``auto``) a solid horizontal line; each peer codec a dashed
    one; a configuration that did not run a note. Needs matplotlib (``pip install ubpe[plot]``)."""
    plt = _pyplot()
    summary = summarize(rows)
    groups = list(dict.fromkeys(a["group"] for a in summary))
    fig, axes = plt.subplots(len(groups), 1, figsize=(7, 3.6 * len(groups)), squeeze=False)
    for ax, g in zip(axes[:, 0], groups):
        block = [a for a in summary if a["group"] == g]
        ran = [a for a in block if a["ratio"] is not None]
        sized = [a for a in ran if a["codec"] == "ubpe" and a["n_tokens"] is not None]
        for i, (lv, nc, pr) in enumerate(sorted({(a["level"], a["n_candidates"], a["predictor"]) for a in sized})):
            mine = [a for a in sized if (a["level"], a["n_candidates"], a["predictor"]) == (lv, nc, pr)]
            label = f"ubpe level {lv}, {nc} candidates" + ("" if pr == "auto" else f", {pr}")
            pts = sorted((a["n_tokens"], a["ratio"], a["config"]) for a in mine if not a["partial"])
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=f"C{i % 10}", label=label,
                        gid=_gid(g, [p[2] for p in pts]))
            part = sorted((a["n_tokens"], a["ratio"], a["config"]) for a in mine if a["partial"])
            if part:  # totals over fewer files: not comparable, drawn apart (hollow, not joined)
                ax.scatter([p[0] for p in part], [p[1] for p in part], marker="o", facecolors="none",
                           edgecolors=f"C{i % 10}", label=None if pts else label, gid=_gid(g, [p[2] for p in part]))
        for j, a in enumerate(a for a in ran if a["codec"] == "ubpe" and a["n_tokens"] is None):
            ax.axhline(a["ratio"], linestyle="-", linewidth=1.2, color=f"C{(j + 5) % 10}",
                       label=a["config"].replace("t=auto", "size chosen by compress"),
                       gid=_gid(g, [a["config"]], level_line=True))
        for a in ran:
            if a["codec"] != "ubpe":
                ax.axhline(a["ratio"], linestyle="--", linewidth=1, color="grey", gid=_gid(g, [a["config"]],
                                                                                         level_line=True))
                ax.annotate(a["codec"], (1.0, a["ratio"]), xycoords=("axes fraction", "data"), fontsize=7,
                            xytext=(2, 0), textcoords="offset points", va="center")
        _not_run_notes(ax, g, block)
        if sized:
            ax.set_xscale("log", base=2)
        ax.set_xlabel("vocabulary size requested (n_tokens)")
        ax.set_ylabel("compression ratio (file bytes / compressed)")
        hollow = any(a["partial"] for a in sized)
        note = "; hollow: totals over the files it ran on" if hollow else ""
        ax.set_title(f"{g} ({block[0]['of']} datasets){note}", fontsize=10)
        if any(a["codec"] == "ubpe" for a in ran):
            ax.legend(fontsize=7)
    fig.tight_layout()
    _save(fig, path)


def plot_bits(path: str | os.PathLike, rows: Sequence[Row]) -> None:
    """PNG: bits per value per group, for each codec and for ubpe's best configuration at each
    level (bars, each labelled by the configuration it is). Needs matplotlib."""
    plt = _pyplot()
    summary = summarize(rows)
    groups = list(dict.fromkeys(a["group"] for a in summary))
    series: dict[str, dict[str, dict[str, Any]]] = {}
    for a in summary:
        if a["bits_per_value"] is None:
            continue
        label = f"ubpe L{a['level']} (best)" if a["codec"] == "ubpe" else a["codec"]
        s = series.setdefault(label, {})
        if a["group"] not in s or a["bits_per_value"] < s[a["group"]]["bits_per_value"]:
            s[a["group"]] = a
    labels = sorted(series, key=lambda k: (not k.startswith("ubpe"), k))
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(groups) * len(labels) / 3), 4))
    width = 0.8 / max(len(labels), 1)
    for j, label in enumerate(labels):
        for i, g in enumerate(groups):
            a = series[label].get(g)
            if a is None:
                continue
            ax.bar([i + j * width], [a["bits_per_value"]], width, color=plt.get_cmap("tab20")(j % 20),
                   label=label if i == min(k for k, h in enumerate(groups) if h in series[label]) else None,
                   gid=_gid(g, [a["config"]]))
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(groups))], groups)
    ax.set_ylabel("bits per value")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    _save(fig, path)


def plot_time(path: str | os.PathLike, rows: Sequence[Row]) -> None:
    """PNG: ratio against compression speed (values per second, log scale), a point per
    configuration and group that ran. Needs matplotlib."""
    plt = _pyplot()
    summary = [a for a in summarize(rows) if a["ratio"] is not None]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    markers = "osD^v<>ph*"
    for i, g in enumerate(dict.fromkeys(a["group"] for a in summary)):
        block = [a for a in summary if a["group"] == g]
        for codec, color in (("ubpe", "C0"), (None, "C1")):
            pts = [a for a in block if (a["codec"] == "ubpe") == (codec == "ubpe")]
            if not pts:
                continue
            ax.scatter([a["compress_values_per_second"] for a in pts], [a["ratio"] for a in pts],
                       marker=markers[i % len(markers)], color=color,
                       label=f"{g}: {'ubpe' if codec else 'peer codecs'}", gid=_gid(g, [a["config"] for a in pts]))
        for a in block:
            if a["codec"] != "ubpe":
                ax.annotate(a["config"], (a["compress_values_per_second"], a["ratio"]), fontsize=6)
    ax.set_xscale("log")
    ax.set_xlabel("compression speed (values per second)")
    ax.legend(fontsize=7)
    ax.set_ylabel("compression ratio")
    fig.tight_layout()
    _save(fig, path)


# -- the command ----------------------------------------------------------------------------

def _int_list(option: str, text: str, allow_auto: bool = False) -> list[Any]:
    out: list[Any] = []
    for t in (t.strip() for t in text.split(",")):
        if not t:
            continue
        if allow_auto and t == "auto":
            out.append(None)
            continue
        try:
            v = int(t)
        except ValueError:
            raise ValueError(f"{option}: expected comma-separated integers, got {text!r}") from None
        if v < 1:
            raise ValueError(f"{option}: values must be positive, got {v}")
        out.append(v)
    if not out:
        raise ValueError(f"{option}: give at least one value")
    return out


PLOTS = {"ratio.png": plot_ratio, "bits.png": plot_bits, "time.png": plot_time}


def run_bench(files: Sequence[str], *, n_tokens: str, n_candidates: str, level: str, predictor: str,
              codecs: str, out: str, overwrite: bool, jobs: int, plots: bool = True,
              quiet: bool = False, dtype: Any = None, as_bytes: bool = False,
              column: str | int | None = None) -> int:
    """The ``ubpe bench`` command: sweep, print a summary table per group, write
    ``results.csv``, ``results.json`` and (with matplotlib) the plots of :data:`PLOTS` into the
    folder ``out``, which must not exist unless ``overwrite`` (checked before any work). Files are
    read as ``ubpe compress`` reads them (``dtype``, ``as_bytes``, ``column``: :class:`Dataset`).
    Returns 0, or 1 when a round trip failed (a bug, reported in the table)."""
    from . import _progress
    from .frontend.chains import PREDICTORS

    if os.path.exists(out) and not overwrite:
        raise FileExistsError(f"{out}: results folder exists (pass --overwrite to replace its files)")
    params = {"n_tokens": _int_list("--n-tokens", n_tokens, allow_auto=True),
              "n_candidates": _int_list("--n-candidates", n_candidates),
              "level": _int_list("--level", level),
              "predictor": [p.strip() for p in predictor.split(",") if p.strip()], "codecs": codecs}
    for name in params["predictor"]:
        if name != "auto" and name not in PREDICTORS:
            raise ValueError(f"--predictor {name!r}: choose among auto, {', '.join(PREDICTORS)}")
    if not params["predictor"]:
        raise ValueError("--predictor: give at least one front end")
    datasets = _datasets(list(files), dtype, as_bytes, column)
    names, _ = available_codecs(codecs)
    for lv in params["level"]:
        if lv not in (1, 2):
            raise ValueError(f"--level: levels are 1 and 2, got {lv}")
    os.makedirs(out, exist_ok=True)
    if not os.access(out, os.W_OK):
        raise PermissionError(f"{out}: results folder is not writable")
    n_runs = len(datasets) * (len(params["n_tokens"]) * len(params["n_candidates"]) * len(params["level"])
                              * len(params["predictor"]) + len(names))
    t0 = time.perf_counter()
    with _progress.bar("bench", n_runs, unit="runs", quiet=quiet) as bar:
        def tick(label: str, runs: int) -> None:
            bar.set_postfix_str(label[:40])
            bar.update(runs)

        rows, skipped = sweep(datasets, n_tokens=params["n_tokens"], n_candidates=params["n_candidates"],
                              level=params["level"], predictor=params["predictor"], codecs=codecs,
                              jobs=jobs, progress=tick)
    seconds = time.perf_counter() - t0
    params["jobs"] = jobs
    if dtype is not None or as_bytes or column is not None:
        params["read"] = {"dtype": None if dtype is None else np.dtype(dtype).str, "bytes": as_bytes,
                          "column": column}
    rows_to_csv(os.path.join(out, "results.csv"), rows, overwrite=True)
    rows_to_json(os.path.join(out, "results.json"), rows, skipped, parameters=params, datasets=datasets,
                 overwrite=True)
    written = ["results.csv", "results.json"]
    if plots:
        try:
            for name, plot in PLOTS.items():
                plot(os.path.join(out, name), rows)
                written.append(name)
        except ImportError:
            skipped = [*skipped, Skipped("plots", "matplotlib is not installed (pip install ubpe[plot])")]
    broken = [r for r in rows if r.error.startswith("round trip failed")]
    if not quiet:
        print(format_summary(summarize(rows)))
        for s in skipped:
            print(f"skipped {s.codec}{' on ' + s.dataset if s.dataset else ''}: {s.reason}")
        ran = sum(r.ok for r in rows)
        print(f"{ran} runs in {seconds:.1f} s, every round trip checked"
              + (f"; {len(rows) - ran} configuration(s) did not run (listed above)" if ran < len(rows) else "")
              + f"; wrote {', '.join(os.path.join(out, w) for w in written)}")
    if broken:
        import sys

        for r in broken:
            print(f"ubpe: error: {r.dataset}: {r.codec}: {r.error}", file=sys.stderr)
        return 1
    return 0
