"""Where one level-2 ``ubpe.decompress`` of ECG spends its CPU time, measured inside the decode:
the "cms2" decoder, the inverse LMS cascade and the LPC filter timed as the decode calls them
(``time.process_time`` around each kernel call), the rest (Python, conversions, checksums), and
the minor page faults a decode takes.

    UBPE_DATA=/work/shared/data python benchmarks/level2_decode_parts.py [--rounds 25]

Printed: the parts of the fastest whole decode, the least time of each part over the rounds,
and page faults a decode (``getrusage``) over 10 more decodes.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=25)
    a = p.parse_args(argv)
    import _data

    import ubpe
    import ubpe._kernels.cmsignal2 as K
    import ubpe._kernels.predict as P
    import ubpe.coders.cms2 as C
    import ubpe.frontend.adaptive as A
    import ubpe.frontend.lpc as L

    blob = ubpe.compress(_data.ecg(), level=2, threads=1)
    acc: dict[str, float] = {}

    def timed(name, real):
        def f(*args):
            t = time.process_time()
            r = real(*args)
            acc[name] = acc.get(name, 0.0) + time.process_time() - t
            return r
        return f

    K.cms2_decode = timed("cms2", K.cms2_decode)
    C.cms2_decode = K.cms2_decode
    cascade = "lms_cascade_rows_into" if hasattr(P, "lms_cascade_rows_into") else "lms_cascade_rows"
    setattr(P, cascade, timed("lms", getattr(P, cascade)))
    P.lpc_filter = timed("lpc", P.lpc_filter)
    for m in (A, L):  # (both reach the kernels as attributes of the predict module)
        assert not hasattr(m, cascade) and not hasattr(m, "lpc_filter")
    for _ in range(3):
        ubpe.decompress(blob)
    best, mins = None, {}
    for _ in range(a.rounds):
        acc.clear()
        t = time.process_time()
        ubpe.decompress(blob)
        row = dict(acc, whole=time.process_time() - t)
        row["rest"] = row["whole"] - sum(v for k, v in row.items() if k != "whole")
        if best is None or row["whole"] < best["whole"]:
            best = row
        for k, v in row.items():
            mins[k] = min(mins.get(k, v), v)
    print("fastest decode (ms):", " ".join(f"{k} {v * 1e3:.2f}" for k, v in best.items()))
    print("least of each (ms): ", " ".join(f"{k} {v * 1e3:.2f}" for k, v in mins.items()))
    f0 = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(10):
        ubpe.decompress(blob)
    f1 = resource.getrusage(resource.RUSAGE_SELF)
    print(f"page faults a decode: minor {(f1.ru_minflt - f0.ru_minflt) / 10:.1f}, "
          f"major {(f1.ru_majflt - f0.ru_majflt) / 10:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
