import os; os.environ.setdefault("UBPE_DATA", "/work/shared/data")
import sys, numpy as np
sys.path.insert(0, "benchmarks")
import _data
from ubpe import level3
files = sorted((_data.data_dir() / "audio").glob("*.wav"), key=lambda p: p.name.encode())
B = int(sys.argv[1]) if len(sys.argv) > 1 else 32
def lapcost(e, s):
    # two-sided geometric with mean |e| = s: p(m) for m=|e|: theta = s/(1+s)
    s = np.maximum(s, 0.3)
    th = s / (1 + s)
    # P(e) = (1-th)/(1+th) * th^|e|
    return -(np.log2((1 - th) / (1 + th)) + np.abs(e) * np.log2(th))
T = [0, 0, 0, 0]
for p, (x, r) in zip(files, _data.audio()):
    y = (x.astype(np.int64) - x.min()).reshape(-1, 1)
    n = y.shape[0]
    res = np.zeros((n, 2), np.int64)
    actual = level3._coded_size(y, level3.default_params(1), None, res=res)
    e = res[:, 0].astype(float)
    a = np.abs(e)
    # causal scale: ema rate 1/16 with init 8
    s = np.empty(n); m = 8.0
    for t in range(n):
        s[t] = m; m += (a[t] - m) / 16
    c1 = lapcost(e, s).sum() / 8
    # oracle: the block's mean |e| mixed geometrically with causal
    nb = (n + B - 1) // B
    bm = np.array([a[i*B:(i+1)*B].mean() for i in range(nb)])
    lev = np.round(2 * np.log2(bm + 1))  # half-octave levels
    sb = np.repeat(2 ** (lev / 2) - 1, B)[:n]
    c2 = lapcost(e, np.sqrt(np.maximum(sb, .3) * s)).sum() / 8
    c3 = lapcost(e, sb).sum() / 8
    # level cost: entropy of level deltas
    d = np.diff(lev, prepend=lev[0]); _, cnt = np.unique(d, return_counts=True)
    lc = -(cnt * np.log2(cnt / cnt.sum())).sum() / 8
    T[0] += actual; T[1] += c1; T[2] += min(c2, c3) + lc; T[3] += lc
    print(f"{p.stem:24s} actual={actual:6.0f} lap-causal={c1:8.0f} lap-oracle-geo={c2 + lc:8.0f} lap-oracle={c3 + lc:8.0f} (levels {lc:5.0f}) gain {(min(c2,c3)+lc)/c1-1:+.1%}")
print(T, T[2]/T[1]-1)
