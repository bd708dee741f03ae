"""Float and decimal recordings for bench_floats.py, taken from registry packages: fetched with
the ordinary client (`pip download --no-deps`) and written as NAME.npy plus PROVENANCE.tsv
(package, version, path, what, dtype, length). Nothing is committed: the files stay in OUT.

    python benchmarks/float_data.py /tmp/float-data

The series, as the packages ship them (none is made up; two are made float by a gain, said so):
- decimal readings from CSV files: vega_datasets' Seattle weather (daily), its hourly San
  Francisco and Seattle temperatures, pvlib's TMY3 hourly weather for Greensboro NC (dry-bulb
  and dew-point temperature, humidity, pressure, wind speed, precipitable water);
- sktime's BasicMotions smartwatch accelerometer and gyroscope (6 decimals), ACSF1 appliance power
  (z-normalised, printed from float32: 8 significant digits);
- obspy's test traces: pitsa_noise.npy (float64), the SAC files seism.sac, LMOW.BHE.SAC (float32),
  KARC.LHZ.SAC (float32 counts after processing, from an ASCII dump) and KARC_corrected (float64
  velocity after instrument correction, float32 precision);
- float audio: the Debian alsa-utils Front_Center.wav (int16) times a gain of 0.7 / 32768 in
  float32, as an editor's gain stage makes it.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import struct
import subprocess
import sys
import tempfile
import wave
import zipfile
from pathlib import Path

import numpy as np

PIP = {"vega-datasets": "0.9.0", "pvlib": "0.16.1", "sktime": "1.2.0", "obspy": "1.5.1"}


def pip_get(pkg: str, cache: Path) -> Path:
    """The wheel (or sdist) of ``pkg`` at PIP's version in ``cache``, downloaded once."""
    cache.mkdir(parents=True, exist_ok=True)
    stem = pkg.replace("-", "_")
    found = [p for p in cache.iterdir() if p.name.lower().startswith(stem.lower() + "-" + PIP[pkg])]
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cache),
                        f"{pkg}=={PIP[pkg]}"], check=True)
        found = [p for p in cache.iterdir() if p.name.lower().startswith(stem.lower() + "-" + PIP[pkg])]
    return found[0]


def member(wheel: Path, path: str) -> bytes:
    with zipfile.ZipFile(wheel) as z:
        return z.read(path)


def csv_column(text: str, column: str, skip: int = 0) -> np.ndarray:
    rows = list(csv.reader(io.StringIO(text)))[skip:]
    j = rows[0].index(column)
    return np.array([float(r[j]) for r in rows[1:]])


def ts_dimension(text: str, dim: int) -> np.ndarray:
    """One dimension of every case of an sktime .ts file, joined."""
    out, started = [], False
    for line in text.splitlines():
        if line.startswith("@data"):
            started = True
        elif started and line.strip():
            out.append(np.array([float(v) for v in line.split(":")[dim].split(",")]))
    return np.concatenate(out)


def sac(raw: bytes) -> np.ndarray:
    npts = struct.unpack_from("<i", raw, 316)[0]
    return np.frombuffer(raw[632:632 + 4 * npts], "<f4").copy()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "ubpe-float-wheels")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []

    def save(name: str, x: np.ndarray, pkg: str, path: str, what: str) -> None:
        np.save(args.out / f"{name}.npy", x)
        rows.append([f"{name}.npy", f"{pkg} {PIP.get(pkg, '')}".strip(), path, what, str(x.dtype), str(x.size)])
        print(f"{name}.npy: {x.size:,} {x.dtype}  <- {pkg} {path}", flush=True)

    vega = pip_get("vega-datasets", args.cache)
    text = member(vega, "vega_datasets/_data/seattle-weather.csv").decode()
    for col in ("precipitation", "temp_max", "temp_min", "wind"):
        save(f"seattle-weather-{col.replace('_', '-')}", csv_column(text, col), "vega-datasets",
             "vega_datasets/_data/seattle-weather.csv", f"daily {col}, 1 decimal")
    for name in ("sf-temps", "seattle-temps"):
        save(name, csv_column(member(vega, f"vega_datasets/_data/{name}.csv").decode(), "temp"), "vega-datasets",
             f"vega_datasets/_data/{name}.csv", "hourly temperature (F), 1 decimal")
    pvlib = pip_get("pvlib", args.cache)
    text = member(pvlib, "pvlib/data/723170TYA.CSV").decode("latin-1")
    for col, short in (("Dry-bulb (C)", "drybulb"), ("Dew-point (C)", "dewpoint"), ("RHum (%)", "rhum"),
                       ("Pressure (mbar)", "pressure"), ("Wspd (m/s)", "wspd"), ("Pwat (cm)", "pwat")):
        save(f"tmy3-greensboro-{short}", csv_column(text, col, skip=1), "pvlib", "pvlib/data/723170TYA.CSV",
             f"TMY3 hourly {col}")
    sktime = pip_get("sktime", args.cache)
    text = member(sktime, "sktime/datasets/data/BasicMotions/BasicMotions_TRAIN.ts").decode()
    save("basicmotions-acc-x", ts_dimension(text, 0), "sktime", "sktime/datasets/data/BasicMotions/BasicMotions_TRAIN.ts",
         "smartwatch accelerometer x, 10 Hz, 6 decimals")
    save("basicmotions-gyr-x", ts_dimension(text, 3), "sktime", "sktime/datasets/data/BasicMotions/BasicMotions_TRAIN.ts",
         "smartwatch gyroscope x, 10 Hz, 6 decimals")
    text = member(sktime, "sktime/datasets/data/ACSF1/ACSF1_TRAIN.ts").decode()
    save("acsf1-power", ts_dimension(text, 0), "sktime", "sktime/datasets/data/ACSF1/ACSF1_TRAIN.ts",
         "appliance power, z-normalised, printed from float32")
    obspy = pip_get("obspy", args.cache)
    save("obspy-pitsa-noise", np.load(io.BytesIO(member(obspy, "obspy/signal/tests/data/pitsa_noise.npy"))), "obspy",
         "obspy/signal/tests/data/pitsa_noise.npy", "seismic noise, float64")
    for f in ("seism.sac", "LMOW.BHE.SAC"):
        save(f"obspy-{f.split('.')[0].lower()}", sac(member(obspy, f"obspy/io/sac/tests/data/{f}")), "obspy",
             f"obspy/io/sac/tests/data/{f}", "SAC float32 trace")
    for f, name, dtype in (("KARC.LHZ.SAC.asc.gz", "obspy-karc-lhz", np.float32),
                           ("KARC_corrected.sac.asc.gz", "obspy-karc-corrected", np.float64)):
        lines = gzip.decompress(member(obspy, f"obspy/signal/tests/data/{f}")).decode().split()
        save(name, np.array([float(v) for v in lines]).astype(dtype), "obspy", f"obspy/signal/tests/data/{f}",
             "broadband trace, processed")
    deb = args.cache / "alsa-utils.deb"
    if not deb.exists():
        with tempfile.TemporaryDirectory() as d:
            subprocess.run(["apt-get", "download", "-q", "alsa-utils"], cwd=d, check=True)
            next(Path(d).glob("alsa-utils_*.deb")).rename(deb)
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["dpkg-deb", "-x", str(deb), d], check=True)
        with wave.open(str(Path(d) / "usr/share/sounds/alsa/Front_Center.wav")) as w:
            pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2")
    save("alsa-front-center-f32", pcm.astype(np.float32) * np.float32(0.7 / 32768), "alsa-utils (Debian)",
         "usr/share/sounds/alsa/Front_Center.wav", "int16 speech times 0.7/32768 in float32 (a gain stage)")
    with open(args.out / "PROVENANCE.tsv", "w") as f:
        f.write("file\tpackage\tpath\twhat\tdtype\tvalues\n")
        f.writelines("\t".join(r) + "\n" for r in rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
