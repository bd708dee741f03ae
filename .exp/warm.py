import os; os.environ.setdefault("UBPE_DATA", "/work/shared/data")
import sys, numpy as np
sys.path.insert(0, "benchmarks")
import _data
from ubpe import level3
from ubpe._kernels import mixsignal as k
files = sorted((_data.data_dir() / "audio").glob("*.wav"), key=lambda p: p.name.encode())
names = sys.argv[1:]
for p, (x, r) in zip(files, _data.audio()):
    if names and p.stem not in names: continue
    y = (x.astype(np.int64) - x.min()).reshape(-1, 1)
    n = y.shape[0]
    yy = np.concatenate([y, y])
    prm = level3.default_params(1)
    res = np.zeros((2 * n, 2), np.int64)
    level3._coded_size(yy, prm, None, skip=1, res=res)
    pos = res[:, 1]
    first = pos[n - 1]; second = pos[-1] - pos[n - 1]
    q = [pos[min(n-1, j)] for j in (255, 1023, 4095)]
    print(f"{p.stem:24s} n={n:6d} first={first:6d} second={second:6d} warm={first/second-1:+.2%}  first256={q[0]} 1024={q[1]} 4096={q[2]}; 2nd-copy same span: {pos[n+255]-pos[n-1]} {pos[n+1023]-pos[n-1]} {pos[min(2*n-1,n+4095)]-pos[n-1]}")
