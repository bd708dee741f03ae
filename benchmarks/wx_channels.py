"""Per channel, where level 3's bytes go against paq8px -8 (issue 29, the hourly weather years).

    python benchmarks/wx_channels.py FILE.npy [FILE.npy ...] [--params k=v,...]

Each channel coded alone by ``ubpe.level3.encode`` (its own search), its bytes against paq8px -8
on the same channel (one mono 16-bit wav, ``_level3_peers.run_paq8px``: the cached figure of
results/unseen2-peers.json, or the binary of $UBPE_PAQ8PX when set). Prints one row a channel.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _level3_peers as l3peers
from bench_unseen import rate_from_name

import ubpe.level3 as l3


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+")
    a = p.parse_args(argv)
    cache = l3peers.Cache(Path(__file__).parent / "results" / "unseen2-peers.json")
    exe = l3peers.binary("paq8px")
    tot_u = tot_p = 0
    for f in a.files:
        x = np.load(f)
        x2 = x.reshape(x.shape[0], -1)
        rate = rate_from_name(Path(f)) or 1000.0
        for c in range(x2.shape[1]):
            col = np.ascontiguousarray(x2[:, c])
            t0 = time.process_time()
            b = len(l3.encode(col))
            dt = time.process_time() - t0
            r = l3peers.run_paq8px(exe, col, rate, cache)
            pq = r["bytes"] if r else None
            tot_u += b
            tot_p += pq or 0
            gap = f"{100 * (b / pq - 1):+.2f} %" if pq else "-"
            print(f"{Path(f).stem} ch{c}: distinct {np.unique(col).size} range {int(col.min())}..{int(col.max())}"
                  f"  L3 {b}  paq8px {pq}  {gap}  ({dt:.1f} s)", flush=True)
    print(f"total L3 {tot_u} paq8px {tot_p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
