import os; os.environ.setdefault("UBPE_DATA", "/work/shared/data")
import sys, json, numpy as np
sys.path.insert(0, "benchmarks")
import _data
from ubpe import level3
files = sorted((_data.data_dir() / "audio").glob("*.wav"), key=lambda p: p.name.encode())
SUB = ["klavichord-4","gummy-cat-2","cembalo-1","electric-piano-3","prompt","cockchafer-gentleman-1","pipe","trumpet-1","chord-7","cembalo-6"]
data = [(p.stem, x) for p, (x, r) in zip(files, _data.audio()) if p.stem in SUB or "all" in sys.argv]
if "ppg" in sys.argv:
    from bench_unseen import as_int
    from pathlib import Path
    data = [(p.stem, as_int(np.load(p), str(p))) for p in sorted(Path("/work/unseen-data").glob("ppg-sys*.npy"))]
if "neural" in sys.argv:
    data = [("n" + str(i), x) for i, x in enumerate(_data.neural(24)) if i % 6 == 0]
if "other" in sys.argv:
    from bench_unseen import as_int
    from pathlib import Path
    data = [("ecg", _data.ecg()[:60000]), ("seismic", _data.seismic())]
    data += [("n" + str(i), x[:40000]) for i, x in enumerate(_data.neural(3))]
    for p in sorted(Path("/work/unseen-data").glob("*.npy")):
        x = as_int(np.load(p), str(p))
        if x.ndim == 1: data.append((p.stem, x[:30000]))
def run(change):
    prm = level3._vector({**level3.DEFAULTS, **change}, 1)
    tot = {}
    for name, x in data:
        y = (x.astype(np.int64) - x.min()).reshape(-1, 1)
        tot[name] = level3._coded_size(y, prm, None)
    return tot
base = run({})
print("base", sum(base.values()))
for arg in sys.argv[1:]:
    if arg in ("all", "other", "neural", "ppg"): continue
    if arg.startswith("@"):
        exec(arg[1:], {"level3": level3}); level3._prior = None; print(arg); continue
    ch = eval(f"dict({arg})")
    r = run(ch)
    print(f"{arg:40s} {sum(r.values()):8.0f} {sum(r.values())/sum(base.values())-1:+.3%}  " + " ".join(f"{k[:6]}{r[k]/base[k]-1:+.1%}" for k in r))
