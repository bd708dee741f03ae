"""Level 3's encode split into its parts, and its final coding timed alone (issue 29's encode
floor: benchmarks/results/level3-floor-2.md). One tree, one process; CPU time
(``time.process_time``), the least of ``--repeat`` runs.

    UBPE_DATA=/work/shared/data python benchmarks/level3_encode_split.py REC.npy [...]
        [--repeat N] [--kernel] [--xctx K]

Without ``--kernel``: per recording, the encode's M values a CPU second and the ms of its parts
(``encoder._run_encode``: the final coding; ``_choose_front_proxy``; ``_search``; ``_choose_xctx``
and ``_choose_vmod``: their sample's coding), each wrapped in a timer. With ``--kernel``: the
final coding's arguments captured from one ``encode`` and that call timed again (``--xctx``
forces the contexts' set: 0 off, 1, 2; the bytes then differ from the encoder's), with the
payload's length and SHA-1 (a same-bytes kernel change keeps them).
"""

from __future__ import annotations

import argparse
import hashlib
import time

import numpy as np

PARTS = ("_run_encode", "_choose_front_proxy", "_search", "_choose_xctx", "_choose_vmod")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("npy", nargs="+", help=".npy recordings, (frames,) or (frames, channels) integers")
    p.add_argument("--repeat", type=int, default=2, help="runs of each timing, the least kept")
    p.add_argument("--kernel", action="store_true", help="time the final coding alone")
    p.add_argument("--xctx", type=int, default=None, help="(--kernel) force the contexts' set: 0, 1 or 2")
    a = p.parse_args(argv)

    from ubpe import level3
    from ubpe.level3 import encoder

    spent: dict[str, float] = {}
    captured: dict[str, tuple] = {}
    originals = {name: getattr(encoder, name) for name in PARTS}

    def timed(name):
        def part(*args, **kw):
            if name == "_run_encode":
                captured["args"] = (args, kw)
            t = time.process_time()
            out = originals[name](*args, **kw)
            spent[name] = spent.get(name, 0.0) + time.process_time() - t
            return out
        return part

    for name in PARTS:
        setattr(encoder, name, timed(name))
    first = np.load(a.npy[0])
    level3.decode(level3.encode(first[:2000]))  # (the kernels compiled outside the timings)
    for path in a.npy:
        x = np.load(path)
        label = path.rsplit("/", 1)[-1][:32]
        if not a.kernel:
            best = None
            for _ in range(max(1, a.repeat)):
                spent.clear()
                t = time.process_time()
                data = level3.encode(x)
                took = time.process_time() - t
                if best is None or took < best[0]:
                    best = (took, dict(spent), len(data))
            took, parts, size = best
            split = " ".join(f"{k.strip('_')} {v * 1e3:.0f}" for k, v in parts.items())
            print(f"{label:32s} {x.size:8d} values {size:8d} B  enc {x.size / took / 1e6:.3f} M/s  "
                  f"{took * 1e3:.0f} ms: {split}", flush=True)
            continue
        level3.encode(x)
        args, kw = captured["args"]
        prm = list(args[4])
        if a.xctx is not None:
            prm[encoder._kernels().PRM_XCTX] = a.xctx
            args = args[:4] + (prm,) + args[5:]
        times = []
        for _ in range(max(1, a.repeat)):
            t = time.process_time()
            data = originals["_run_encode"](*args, **kw)
            times.append(time.process_time() - t)
        print(f"{label:32s} xctx {prm[encoder._kernels().PRM_XCTX]}  kernel {x.size / min(times) / 1e6:.3f} M/s  "
              f"{len(data)} B sha1 {hashlib.sha1(data).hexdigest()[:12]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
