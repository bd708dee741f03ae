"""Level-3 encode/decode CPU time of version 3 and version 4 bytes, alternated, on audio + ecg slices."""
import os; os.environ.setdefault("UBPE_DATA", "/work/shared/data")
import sys, time, numpy as np
sys.path.insert(0, "benchmarks")
import _data
from ubpe import level3
from ubpe.planner import configured
xs = [x for x, r in _data.audio()][::3] + [_data.ecg()[:60000], _data.neural(1)[0][:60000]]
n = sum(x.size for x in xs)
def enc(v, search):
    with configured(level3_version=v):
        return [level3.encode(x, search=search, front=None) for x in xs]
def dec(bs):
    for b in bs: level3.decode(b)
for v in (3, 4): enc(v, False)  # warm
res = {3: [[], [], []], 4: [[], [], []]}
for rnd in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
    for v in ((3, 4) if rnd % 2 == 0 else (4, 3)):
        t = time.process_time(); bs = enc(v, False); res[v][0].append(time.process_time() - t)
        t = time.process_time(); dec(bs); res[v][1].append(time.process_time() - t)
        t = time.process_time(); enc(v, True); res[v][2].append(time.process_time() - t)
for v in (3, 4):
    e, d, s = (min(a) for a in res[v])
    print(f"version {v}: encode (defaults) {n / e / 1e6:.3f} M/s, decode {n / d / 1e6:.3f} M/s, encode (searched) {n / s / 1e6:.3f} M/s  [{n} values]")
print("v4/v3 CPU time: encode %.3f decode %.3f searched %.3f" % tuple(min(res[4][i]) / min(res[3][i]) for i in range(3)))
