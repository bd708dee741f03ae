"""Text compression: ``ubpe.compress`` of a text's bytes (default level, and level 1) against
bz2 -9, xz -9e, brotli -11, zstd -19 and zpaq -m5, every round trip checked.

    python benchmarks/bench_text_compress.py [--no-debian] [--md OUT]

Texts: ../shared/data/text/taylorswift.txt, and real texts from Debian packages fetched with
``apt-get download`` into benchmarks/.text-cache (not installed; skipped with a message when
apt-get cannot run): the fortune cookies of ``fortunes`` and ``fortunes-min`` (all files of
the package, concatenated in name order), the ``debian`` fortune file alone (a small text), and
three reStructuredText sources of the Python 3.11 documentation (``python3.11-doc``:
library/os, library/stdtypes, library/functions, concatenated). The target of issue 8: smaller
than zpaq -m5 on every text.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _data  # noqa: E402

import ubpe  # noqa: E402
from ubpe import peers  # noqa: E402

CACHE = Path(__file__).resolve().parent / ".text-cache"
CODECS = ["bz2-9", "xz-9e", "brotli-11", "zstd-19", "zpaq-m5"]


def debian_texts() -> dict[str, bytes]:
    """The Debian texts (see the module docstring), fetched once into CACHE."""
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        print("note: apt-get or dpkg-deb missing: Debian texts skipped")
        return {}
    CACHE.mkdir(exist_ok=True)
    root = CACHE / "x"
    for pkg in ("fortunes", "fortunes-min", "python3.11-doc"):
        if not list(CACHE.glob(f"{pkg}_*.deb")):
            r = subprocess.run(["apt-get", "download", pkg], cwd=CACHE, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"note: apt-get download {pkg} failed: {r.stderr.strip()[-200:]}; Debian texts skipped")
                return {}
        for deb in CACHE.glob(f"{pkg}_*.deb"):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    fort = root / "usr/share/games/fortunes"
    files = sorted(p for p in fort.iterdir() if p.is_file() and not p.suffix and not p.is_symlink())
    docs = root / "usr/share/doc/python3.11/html/_sources/library"
    return {
        "fortunes (all)": b"".join(p.read_bytes() for p in files),
        "fortunes/debian": (fort / "debian").read_bytes(),
        "python docs (os, stdtypes, functions .rst)": b"".join(
            (docs / f"{name}.rst.txt").read_bytes() for name in ("os", "stdtypes", "functions")),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-debian", action="store_true")
    ap.add_argument("--md", default=str(Path(__file__).resolve().parent / "results" / "text-compress.md"))
    args = ap.parse_args(argv)
    texts = {"taylorswift.txt": _data.text()}
    if not args.no_debian:
        texts.update(debian_texts())
    ubpe.decompress(ubpe.compress(np.frombuffer(b"warm up the kernels " * 50, np.uint8)))
    head = ["text", "bytes", "ubpe", "ubpe L1", *CODECS, "ubpe vs zpaq-m5"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    wins = []
    for name, raw in texts.items():
        x = np.frombuffer(raw, np.uint8)
        sizes, times = {}, {}
        for label, level in (("ubpe", 2), ("ubpe L1", 1)):
            t0 = time.perf_counter()
            blob = ubpe.compress(x, level=level)
            t1 = time.perf_counter()
            if not np.array_equal(ubpe.decompress(blob), x):
                raise AssertionError(f"ubpe level {level} did not round-trip {name}")
            times[label] = (t1 - t0, time.perf_counter() - t1)
            sizes[label] = len(blob)
        coder = ubpe.describe(ubpe.compress(x)).coder
        for row in peers.run_codecs(raw, [c for c in CODECS if not peers.missing(c)]):
            sizes[row["name"]] = row["bytes"]
        z = sizes.get("zpaq-m5")
        margin = f"{100 * (sizes['ubpe'] / z - 1):+.2f}%" if z else "-"
        if z:
            wins.append(sizes["ubpe"] < z)
        cells = [name, str(len(raw))] + [
            f"{len(raw) / sizes[k]:.3f}" if k in sizes else "-" for k in ["ubpe", "ubpe L1", *CODECS]] + [margin]
        lines.append("| " + " | ".join(cells) + " |")
        print(f"{name}: {len(raw)} bytes; ubpe {sizes['ubpe']} ({coder}, compress {times['ubpe'][0]:.2f} s, "
              f"decompress {times['ubpe'][1]:.2f} s); " + ", ".join(f"{k} {v}" for k, v in sizes.items()), flush=True)
    lines.append("")
    lines.append("Ratio = text bytes / compressed bytes. ubpe: `ubpe.compress(np.frombuffer(text, np.uint8))` "
                 "(default level 2), ubpe L1: `level=1`. Peers through `ubpe.peers` (zpaq: `zpaq a -m5`, "
                 "the archive's size). Target: ubpe smaller than zpaq -m5 on every text: "
                 + ("PASS" if wins and all(wins) else "FAIL") + ".")
    md = "\n".join(lines) + "\n"
    print(md)
    with tempfile.NamedTemporaryFile("w", dir=Path(args.md).parent, delete=False) as f:
        f.write(md)
    Path(f.name).replace(args.md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
