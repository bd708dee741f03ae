"""Level 2's decode kernels on ECG, two source trees in ONE process, alternated call by call:
the inverse LMS cascade (``predict.lms_cascade_rows``; ``lmsf``: the forward one on the 32 audio
files and ECG, outputs checked equal), one inverse stage (``lms_stage``), or
the "cms2" decoder (``cms2_decode``) on the same inputs.

    UBPE_DATA=/work/shared/data python benchmarks/lms_pair_ab.py BEFORE_TREE [--what lms,lmsf,st256,st32,st4,cms2]
        [--rounds 41]

BEFORE_TREE's ``ubpe`` package is copied to a temporary folder as ``ubpe_base`` (every import
inside the package is relative) and imported beside this tree's ``ubpe``; each round calls the
two kernels back to back (their order alternating) and times each with ``time.process_time``.
Printed: the least time of each, their ratio (BEFORE / THIS: above 1, this tree is faster) and
the median of the per-round ratios. Both kernels run in the same process state (the same heap,
the same neighbours on the machine), which separate processes do not share: on the shared
machine, per-round pairs varied less than the least times of two processes. The outputs of
this tree are checked against the inputs (the cascade and stage: the signal back; cms2: the
token stream).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before", type=Path)
    p.add_argument("--what", default="lms,st256,st32,st4,cms2")
    p.add_argument("--rounds", type=int, default=41)
    a = p.parse_args(argv)
    tmp = tempfile.mkdtemp()
    shutil.copytree(a.before / "ubpe", Path(tmp) / "ubpe_base", ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, tmp)
    import _data
    import ubpe_base._kernels.cmsignal2 as KA
    import ubpe_base._kernels.predict as PA

    import ubpe
    import ubpe._kernels.cmsignal2 as KB
    import ubpe._kernels.predict as PB

    x = _data.ecg().astype(np.int64)
    for what in a.what.split(","):
        if what == "cms2":
            calls = []
            real = KB.cms2_decode

            def spy(buf, vocab, out, _real=real):
                calls.append((np.asarray(buf).copy(), vocab, np.asarray(out)))
                return _real(buf, vocab, out)

            KB.cms2_decode = spy
            import ubpe.coders.cms2 as C
            held = getattr(C, "cms2_decode", None)
            if held is not None:
                C.cms2_decode = spy
            try:
                ubpe.decompress(ubpe.compress(_data.ecg(), level=2, threads=1))
            finally:
                KB.cms2_decode = real
                if held is not None:
                    C.cms2_decode = held
            data = [(buf, vocab, out.copy()) for buf, vocab, out in calls]

            def run(K, data=data):
                for buf, vocab, t in data:
                    out = np.zeros_like(t)
                    assert K.cms2_decode(buf, vocab, out) == 0 and np.array_equal(out, t)

            def fa():
                run(KA)

            def fb():
                run(KB)
        elif what == "lmsf":  # the forward cascade (compress), on every audio file and ECG
            o, sf, rl = np.array([256, 32, 4]), np.array([17, 14, 11]), np.array([1, 1, 1])
            rows = [v.astype(np.int64).reshape(1, -1) for v, _rate in _data.audio()] + [x.reshape(1, -1)]
            for s in rows:
                r1, r2 = np.empty_like(s), np.empty_like(s)
                PA.lms_cascade_rows(s, o, sf, rl, 48, False, r1)
                PB.lms_cascade_rows(s, o, sf, rl, 48, False, r2)
                assert np.array_equal(r1, r2)

            def fa(rows=rows, o=o, sf=sf, rl=rl):
                for s in rows:
                    PA.lms_cascade_rows(s, o, sf, rl, 48, False, np.empty_like(s))

            def fb(rows=rows, o=o, sf=sf, rl=rl):
                for s in rows:
                    PB.lms_cascade_rows(s, o, sf, rl, 48, False, np.empty_like(s))
        elif what == "lms":
            s = x.reshape(1, -1)
            o, sf, rl = np.array([256, 32, 4]), np.array([17, 14, 11]), np.array([1, 1, 1])
            r = np.empty_like(s)
            PA.lms_cascade_rows(s, o, sf, rl, 48, False, r)
            d1, d2 = np.empty_like(s), np.empty_like(s)
            PB.lms_cascade_rows(r, o, sf, rl, 48, True, d2)
            assert np.array_equal(d2, s)
            def fa(r=r, o=o, sf=sf, rl=rl, d1=d1):
                PA.lms_cascade_rows(r, o, sf, rl, 48, True, d1)

            def fb(r=r, o=o, sf=sf, rl=rl, d2=d2):
                PB.lms_cascade_rows(r, o, sf, rl, 48, True, d2)
        else:
            order, shift = {"st256": (256, 17), "st32": (32, 14), "st4": (4, 11)}[what]
            r = np.empty_like(x)
            PA.lms_stage(x, order, shift, 1, 48, False, r)
            d1, d2 = np.empty_like(x), np.empty_like(x)
            PB.lms_stage(r, order, shift, 1, 48, True, d2)
            assert np.array_equal(d2, x)
            def fa(r=r, o=order, s=shift, d1=d1):
                PA.lms_stage(r, o, s, 1, 48, True, d1)

            def fb(r=r, o=order, s=shift, d2=d2):
                PB.lms_stage(r, o, s, 1, 48, True, d2)
        fa()
        fb()
        ta, tb, rat = [], [], []
        for k in range(a.rounds):
            res = {}
            for f in ((fa, fb) if k % 2 == 0 else (fb, fa)):
                t = time.process_time()
                f()
                res[f] = time.process_time() - t
            ta.append(res[fa])
            tb.append(res[fb])
            rat.append(res[fa] / res[fb])
        print(f"{what:6s} before {min(ta) * 1e3:6.2f} ms  this {min(tb) * 1e3:6.2f} ms  ratio of least "
              f"{min(ta) / min(tb):.3f}  median pair ratio {np.median(rat):.3f}", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
