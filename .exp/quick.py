import os; os.environ.setdefault("UBPE_DATA", "/work/shared/data")
"""Quick model check: level-3 bytes with fixed params (no search, no front) on the audio files."""
import sys, time, json
sys.path.insert(0, "benchmarks")
import numpy as np
import _data
from ubpe import level3
files = sorted((_data.data_dir() / "audio").glob("*.wav"), key=lambda p: p.name.encode())
xs = [(p.stem, x) for p, (x, r) in zip(files, _data.audio())]
extra = sys.argv[1:]
if "unseen" in extra:
    from bench_unseen import as_int
    from pathlib import Path
    for p in sorted(Path("/work/unseen-data").glob("*.npy")):
        x = as_int(np.load(p), str(p))
        if x.size <= 400000:
            xs.append(("u/" + p.stem, x))
    xs.append(("ecg", _data.ecg())); xs.append(("seismic", _data.seismic()))
out = {}
t0 = time.process_time()
for name, x in xs:
    b = level3.encode(x, search=False, front=None)
    out[name] = len(b)
    if "check" in extra:
        assert np.array_equal(level3.decode(b), x)
cpu = time.process_time() - t0
tag = [a for a in extra if a.startswith("tag=")]
if tag:
    json.dump(out, open(f".exp/{tag[0][4:]}.json", "w"))
a = sum(v for k, v in out.items() if "/" not in k and k not in ("ecg", "seismic"))
print("audio total", a, "all", sum(out.values()), "cpu %.1f" % cpu)
