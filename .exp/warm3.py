import os; os.environ.setdefault("UBPE_DATA", "/work/shared/data")
import sys, numpy as np
sys.path.insert(0, "benchmarks")
import _data
from ubpe import level3
from ubpe._kernels import mixsignal as k
files = sorted((_data.data_dir() / "audio").glob("*.wav"), key=lambda p: p.name.encode())
prm = np.array(level3._vector({**level3.DEFAULTS, "bias": 0}, 1), np.int64)
def go(y, tables):
    top = int(y.max()); gs = level3._shift_of(top)
    los, his = np.zeros(1, np.int64), np.full(1, top, np.int64)
    buf = np.zeros(64 + y.size * 8, np.uint8)
    return k.run(y, los, his, gs, prm, buf, False, np.zeros((0, 0), np.int64), 0, level3.NO_TABLE, tables, *level3.NO_LPC)
ys = [(p.stem, (x.astype(np.int64) - x.min()).reshape(-1, 1)) for p, (x, r) in zip(files, _data.audio())]
T = np.zeros(3)
for i, (name, y) in enumerate(ys):
    cold = go(y, level3._prior_tables())
    tb = level3._prior_tables()
    other = ys[(i + 7) % len(ys)][1]
    go(other, tb)
    k.relax_counts(tb[1], tb[5], int(sys.argv[1]) if len(sys.argv) > 1 else 4)
    w = go(y, tb)
    T += [cold, w, 0]
    print(f"{name:24s} cold={cold:6d} other-trained={w:6d} ({w/cold-1:+.1%}) trained on {ys[(i + 7) % len(ys)][0]}")
print(T, T[1]/T[0]-1)
