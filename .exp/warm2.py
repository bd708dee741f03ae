import os; os.environ.setdefault("UBPE_DATA", "/work/shared/data")
import sys, numpy as np
sys.path.insert(0, "benchmarks")
import _data
from ubpe import level3
from ubpe._kernels import mixsignal as k
files = sorted((_data.data_dir() / "audio").glob("*.wav"), key=lambda p: p.name.encode())
T = np.zeros(4)
prm = np.array(level3._vector({**level3.DEFAULTS, **eval("dict(" + (sys.argv[1] if len(sys.argv) > 1 else "") + ")")}, 1), np.int64)
for p, (x, r) in zip(files, _data.audio()):
    y = (x.astype(np.int64) - x.min()).reshape(-1, 1)
    n = y.shape[0]
    top = int(y.max()); gs = level3._shift_of(top)
    los, his = np.zeros(1, np.int64), np.full(1, top, np.int64)
    def go(yy, tables):
        buf = np.zeros(64 + yy.size * 8, np.uint8)
        res = np.zeros((yy.shape[0], 2), np.int64)
        k.run(yy, los, his, gs, prm, buf, False, res, 0, level3.NO_TABLE, tables, *level3.NO_LPC)
        return res[:, 1]
    tb = level3._prior_tables()
    cold = go(y, tb)[-1]
    warmcoder = go(y, tb)[-1]
    pos = go(np.concatenate([y, y]), level3._prior_tables())
    both = pos[-1] - pos[n - 1]
    T += [cold, warmcoder, both, 0]
    print(f"{p.stem:24s} n={n:6d} cold={cold:6d} warm-coder={warmcoder:6d} ({warmcoder/cold-1:+.1%}) warm-both={both:6d} ({both/cold-1:+.1%})")
print(T, T[1]/T[0]-1, T[2]/T[0]-1)
