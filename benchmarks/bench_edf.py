"""EDF/BDF files (issue 30): ubpe's container of the whole file (header, annotations, every
signal; checked to give the file back byte for byte) against FLAC -8 on its signals alone, each
signal a mono stream at its own rate (annotation signals left out), in one run.

    nice -n 5 python benchmarks/bench_edf.py [FILE.edf ...] [--md out.md]

Without files: pyedflib's test files (its wheel ships them: ``pip download --no-deps
pyedflib==0.1.42``, or the installed package's ``tests/data``). Also shown: ubpe on each signal
alone (sizes summed); the one-stream container (``Settings.channel_groups=False``, as before
channel groups) and the groups of ubpe's container (ubpe/api/groups.py). FLAC runs as
``flac -8 --no-padding --no-seektable`` on raw little-endian samples; without ``flac`` on the
PATH its column is skipped.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ubpe  # noqa: E402
from ubpe import edf  # noqa: E402
from ubpe.planner import settings as planner_settings  # noqa: E402


def flac_size(x: np.ndarray, width: int, rate: float) -> int:
    with tempfile.TemporaryDirectory() as d:
        raw, out = os.path.join(d, "x.raw"), os.path.join(d, "x.flac")
        Path(raw).write_bytes(edf._sample_bytes(x, width))
        subprocess.run(["flac", "-8", "--no-padding", "--no-seektable", "--silent", "--force-raw-format",
                        "--endian=little", "--sign=signed", "--channels=1", f"--bps={8 * width}",
                        f"--sample-rate={max(1, min(655350, round(rate)))}", "-o", out, raw], check=True)
        return os.path.getsize(out)


def default_files() -> list[Path]:
    spec = importlib.util.find_spec("pyedflib")
    if spec is None:
        return []
    return sorted((Path(spec.origin).parent / "tests" / "data").glob("*.[eb]df"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", type=Path, nargs="*")
    ap.add_argument("--md", type=Path)
    args = ap.parse_args()
    files = args.files or default_files()
    has_flac = shutil.which("flac") is not None
    if not has_flac:
        print("note: flac not found: its column is skipped")
    head = ("| file | bytes | signals (samples per record) | FLAC -8, signals | ubpe, whole file | ubpe / FLAC | "
            "ubpe, each signal alone | ubpe, one stream | groups |")
    rows = [head, "|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(rows))
    for path in files:
        raw = path.read_bytes()
        values, _, source = edf.read(path.name, raw)
        data = ubpe.compress(values, source=source)
        back = edf.to_bytes(ubpe.decompress(data), path.name, ubpe.describe(data).source)
        assert back == raw, path
        layout = edf.parse_header(raw, print, len(raw))
        apart = edf.check_source(source)[2].apart
        records = edf._samples(raw[layout.header_bytes:layout.header_bytes + layout.data_bytes], layout)
        duration = float(raw[244:252].decode("ascii"))
        signals = [(i, edf._signal(records, layout, i)) for i in range(len(layout.spr)) if i not in apart]
        fl = sum(flac_size(s, layout.width, layout.spr[i] / duration) for i, s in signals) if has_flac else None
        alone = sum(len(ubpe.compress(s)) for _, s in signals)
        with planner_settings.configured(channel_groups=False):  # before channel groups: one stream
            one = len(ubpe.compress(values, source=source))
        groups = ubpe.describe(data).groups
        row = (f"| {path.name} | {len(raw)} | {len(layout.spr)} ({', '.join(map(str, sorted(set(layout.spr))))}) | "
               f"{fl if fl is not None else '-'} | {len(data)} | "
               f"{len(data) / fl:.3f} | {alone} | {one} | {groups} |" if fl
               else f"| {path.name} | {len(raw)} | - | - | {len(data)} | - | {alone} | {one} | {groups} |")
        rows.append(row)
        print(row, flush=True)
    if args.md:
        args.md.write_text("\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
