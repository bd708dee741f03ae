"""Where compress(level=3) spends its time on a recording (issue 29): the level-3 coder alone
(``ubpe.level3.encode``: its search, front-end and value-model choices and the final coding),
the coder's kernel alone (``encode(search=False, front=None)``: one coding, the per-value cost),
level 2's one-stream container (``compress(level=2)`` without channel groups), level 2 whole
(with its groupings), compress(level=3) and decompress, each CPU seconds (time.process_time)
and M values/s, one call each after a warm-up call of every part on a walk.

    python benchmarks/bench_level3_parts.py FILE.npy [...] [--md OUT.md]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--md", type=Path, default=None, help="also write the table here")
    a = p.parse_args(argv)
    import ubpe
    from ubpe import level3
    from ubpe.planner import settings

    def cpu(fn):
        c0 = time.process_time()
        out = fn()
        return out, time.process_time() - c0

    walk = np.cumsum(np.random.default_rng(1).integers(-40, 41, (9000, 2)), axis=0).astype(np.int16)
    for part in (walk, walk[:3000], walk[:500, 0].copy()):
        for level in (2, 3):
            ubpe.decompress(ubpe.compress(part, level=level, threads=1))
        level3.decode(level3.encode(part, search=False, front=None))
    head = ("| recording | shape | coder s | kernel s | L2 one-stream s | L2 s | L3 s | L3 bytes | L3 decode s "
            "| M values/s: coder | kernel | L3 | L3 decode |")
    lines = [head, "|---" * 13 + "|"]
    print(head)
    for path in a.files:
        x = np.load(path)
        n = x.size
        _, coder = cpu(lambda: level3.encode(x))
        _, kernel = cpu(lambda: level3.encode(x, search=False, front=None))
        with settings.configured(channel_groups=False):
            _, one = cpu(lambda: ubpe.compress(x, level=2, threads=1))
        _, two = cpu(lambda: ubpe.compress(x, level=2, threads=1))
        data, three = cpu(lambda: ubpe.compress(x, level=3, threads=1))
        back, dec = cpu(lambda: ubpe.decompress(data, threads=1))
        assert np.array_equal(back, x)
        line = (f"| {path.stem} | {'x'.join(map(str, x.shape))} | {coder:.2f} | {kernel:.2f} | {one:.2f} | {two:.2f} "
                f"| {three:.2f} | {len(data):,} | {dec:.2f} | {n / coder / 1e6:.3f} | {n / kernel / 1e6:.3f} "
                f"| {n / three / 1e6:.3f} | {n / dec / 1e6:.3f} |")
        print(line, flush=True)
        lines.append(line)
    if a.md:
        a.md.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
