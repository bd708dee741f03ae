"""A second held-out set for bench_unseen2.py: real recordings of kinds /work/unseen-data lacks
(stereo and 24-bit audio, 8-bit audio, speech, music, EMG, 64-channel EEG, a 3-axis
accelerometer, weather), taken from registry packages and written as NAME_<rate>hz.npy plus
PROVENANCE.tsv (source package, file, licence, kind, sampling rate, dtype, shape). Nothing is
committed: the recordings stay in OUT.

    V=/tmp/u2venv; python3 -m venv $V && $V/bin/pip install numpy h5py soundfile
    $V/bin/python benchmarks/unseen2_data.py /work/unseen2 --download /tmp/u2dl

Downloads (skipped when the file is already in --download): `pip download --no-deps` of
biosignalsnotebooks 0.6.14 (wheel) and pvlib 0.16.1 (sdist); `apt-get download` of
asterisk-core-sounds-en-wav, asterisk-moh-opsound-wav, hydrogen-drumkits, psi-plus-sounds,
oxygen-sounds, xblast-tnt-sounds (Debian bookworm). h5py reads the OpenSignals .h5 files and
soundfile decodes the one Vorbis file; a recording whose reader is missing is skipped with a note.

Natural dtype and shape: a .wav's samples as the file holds them ((frames, channels) when it has
more than one channel; 8-bit .wav is unsigned: uint8; 24-bit: int32 carrying 24 bits); ADC codes
as the device file stores them (uint16); the EDF's digital samples (int16, (frames, 64)); weather
readings printed with one decimal as integers of tenths (int16), whole units as they are.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import wave
import zipfile
from pathlib import Path

import numpy as np

PIP = {"biosignalsnotebooks": ("0.6.14", "biosignalsnotebooks-0.6.14-py3-none-any.whl", []),
       "pvlib": ("0.16.1", "pvlib-0.16.1.tar.gz", ["--no-binary", ":all:"])}
DEBS = ["asterisk-core-sounds-en-wav", "asterisk-moh-opsound-wav", "hydrogen-drumkits", "psi-plus-sounds",
        "oxygen-sounds", "xblast-tnt-sounds"]
BSN = "biosignalsnotebooks/notebook_files/osf_files/signal_samples/"
KITS = "usr/share/hydrogen/data/drumkits/"


def fetch(dl: Path, pip: dict | None = None, debs: list[str] | None = None) -> dict[str, Path]:
    """Download what is missing of ``pip`` ({package: (version, file, pip options)}) and the
    Debian packages ``debs`` (default: this set's, PIP and DEBS); return {package: archive path}."""
    pip = PIP if pip is None else pip
    debs = DEBS if debs is None else debs
    dl.mkdir(parents=True, exist_ok=True)
    out = {}
    for pkg, (ver, fname, extra) in pip.items():
        p = dl / fname
        if not p.exists():
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", *extra, "-d", str(dl),
                            f"{pkg}=={ver}"], check=False)
        out[pkg] = p
    for deb in debs:
        have = sorted(dl.glob(f"{deb}_*.deb"))
        if not have:
            subprocess.run(["apt-get", "download", deb], cwd=dl, check=False)
            have = sorted(dl.glob(f"{deb}_*.deb"))
        if have:
            out[deb] = have[-1]
            x = dl / "x" / deb
            if not x.exists():
                x.mkdir(parents=True)
                subprocess.run(["dpkg-deb", "-x", str(have[-1]), str(x)], check=True)
    return out


def wav(path: Path) -> tuple[np.ndarray, int]:
    """A PCM .wav's samples in their natural dtype, (frames, channels) when stereo, and its rate."""
    with wave.open(str(path)) as w:
        ch, width, rate, raw = w.getnchannels(), w.getsampwidth(), w.getframerate(), w.readframes(w.getnframes())
    if width == 1:
        a = np.frombuffer(raw, np.uint8)
    elif width == 3:
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        v = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        a = np.where(v >= 1 << 23, v - (1 << 24), v).astype(np.int32)
    else:
        a = np.frombuffer(raw, {2: "<i2", 4: "<i4"}[width]).astype({2: np.int16, 4: np.int32}[width])
    a = a.reshape(-1, ch)
    return (a[:, 0].copy() if ch == 1 else a.copy()), rate


def edf_digital(raw: bytes) -> tuple[np.ndarray, list[str], float]:
    """The ordinary (non-annotation) signals of an EDF+ file with equal samples per record:
    (records * spr, signals) int16 digital samples, their labels, the rate."""
    ns = int(raw[252:256])
    h = raw[256:256 + 256 * ns]
    field = lambda off, w, i: h[ns * off + w * i: ns * off + w * (i + 1)].decode().strip()  # noqa: E731
    labels = [field(0, 16, i) for i in range(ns)]
    spr = [int(field(216, 8, i)) for i in range(ns)]
    n_rec, dur = int(raw[236:244]), float(raw[244:252])
    rec = sum(spr)
    data = np.frombuffer(raw[256 * (ns + 1): 256 * (ns + 1) + 2 * rec * n_rec], "<i2").reshape(n_rec, rec)
    keep = [i for i in range(ns) if "Annotations" not in labels[i]]
    assert len({spr[i] for i in keep}) == 1
    offs = np.cumsum([0] + spr)
    x = np.stack([data[:, offs[i]:offs[i + 1]].reshape(-1) for i in keep], axis=1)
    return np.ascontiguousarray(x), [labels[i] for i in keep], spr[keep[0]] / dur


def opensignals_txt(text: str, columns: list[str]) -> tuple[np.ndarray, float]:
    import json

    lines = text.splitlines()
    head = json.loads(lines[1][1:].strip())
    dev = next(iter(head.values()))
    idx = [dev["column"].index(c) for c in columns]
    rows = [ln.split() for ln in lines if ln and not ln.startswith("#")]
    return np.array([[int(r[i]) for i in idx] for r in rows], dtype=np.uint16), float(dev["sampling rate"])


def bsrn_lr0100(text: str) -> dict[str, np.ndarray]:
    """BSRN LR0100 (1-minute basic measurements, two lines a minute) -> columns as integers."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("*U0100")) + 1
    body = [ln for ln in lines[start:] if ln.strip() and not ln.startswith("*")]
    a, b = body[0::2], body[1::2]
    f1 = [ln.split() for ln in a]
    f2 = [ln.split() for ln in b]
    col = lambda rows, k: np.array([float(r[k]) for r in rows])  # noqa: E731
    return {"global": col(f1, 2), "direct": col(f1, 6), "diffuse": col(f2, 0), "longwave": col(f2, 4),
            "temp": col(f2, 8), "rh": col(f2, 9), "pressure": col(f2, 10)}


def tenths(v: np.ndarray) -> np.ndarray:
    t = np.round(v * 10)
    assert np.allclose(t / 10, v), "not one decimal"
    return t.astype(np.int16)


def build(dl: Path, out: Path) -> list[tuple]:
    arch = fetch(dl)
    X = dl / "x"
    recs: list[tuple] = []  # name, array, rate, source package, file, licence, kind

    def add(name, x, rate, pkg, path, lic, kind):
        recs.append((name, np.ascontiguousarray(x), rate, pkg, path, lic, kind))

    # ---- biosignalsnotebooks: EEG 64 ch (PhysioNet EEGMMIDB), EMG, 3-axis accelerometer
    bsn = arch.get("biosignalsnotebooks")
    if bsn and bsn.exists():
        with zipfile.ZipFile(bsn) as z:
            x, labels, rate = edf_digital(z.read(BSN + "S001R02.edf"))
            add("eeg64-eegmmidb", x, rate, "biosignalsnotebooks 0.6.14 (PyPI wheel)", BSN + "S001R02.edf",
                "ODC-By-1.0 (PhysioNet EEGMMIDB S001R02); package MIT",
                f"EEG, 64 channels ({labels[0]}..{labels[-1]}), EDF digital samples, eyes closed baseline")
            x, rate = opensignals_txt(z.read(BSN + "signal_sample_single_hub_cACC_2017_1_20.txt").decode(),
                                      ["PORT4_CHN1", "PORT6_CHN1", "PORT7_CHN1"])
            add("acc3-cacc", x, rate, "biosignalsnotebooks 0.6.14 (PyPI wheel)",
                BSN + "signal_sample_single_hub_cACC_2017_1_20.txt columns PORT4_CHN1,PORT6_CHN1,PORT7_CHN1",
                "MIT", "3-axis accelerometer (biosignalsplux cACC), 16-bit ADC codes, (frames, 3)")
            try:
                import io

                import h5py
                for fn, ch, name, kind in [("emg_fatigue.h5", "channel_2", "emg-fatigue",
                                            "surface EMG, fatigue protocol (bioplux, 12-bit ADC codes)"),
                                           ("emg_1000_hz_16_bits_solo.h5", "channel_1", "emg-16bit",
                                            "surface EMG (channeller, 16-bit ADC codes stored as uint32)")]:
                    f = h5py.File(io.BytesIO(z.read(BSN + fn)))
                    dev = next(iter(f))
                    x = f[dev]["raw"][ch][:, 0]
                    add(name, x, float(f[dev].attrs["sampling rate"]), "biosignalsnotebooks 0.6.14 (PyPI wheel)",
                        f"{BSN}{fn} {dev}/raw/{ch}", "MIT", kind)
            except ImportError:
                print("note: h5py missing: EMG recordings skipped")
    else:
        print("note: biosignalsnotebooks wheel missing: EEG/EMG/accelerometer skipped")

    # ---- Debian audio
    ast = X / "asterisk-core-sounds-en-wav/usr/share/asterisk/sounds/en_US_f_Allison/demo-instruct.wav"
    if ast.exists():
        x, r = wav(ast)
        add("speech-allison", x, r, "Debian asterisk-core-sounds-en-wav 1.6.1-1",
            str(ast.relative_to(X / "asterisk-core-sounds-en-wav")), "CC-BY-SA-3.0",
            "speech, telephone prompts (one female voice), 16-bit mono")
    moh = X / "asterisk-moh-opsound-wav/usr/share/asterisk/moh/reno_project-system.wav"
    if moh.exists():
        x, r = wav(moh)
        add("music-moh-reno", x, r, "Debian asterisk-moh-opsound-wav 2.03-1.1",
            str(moh.relative_to(X / "asterisk-moh-opsound-wav")), "CC-BY-SA-3.0",
            "music (hold music track), 16-bit mono, long")
    kits = X / "hydrogen-drumkits" / KITS
    for rel, name, lic, kind in [
            ("ForzeeStereo/HiHatOpen-0.wav", "drum-hihat24", "GPL-2",
             "open hi-hat, 24-bit stereo (int32 carrying 24 bits), long"),
            ("ForzeeStereo/Kick-0.wav", "drum-kick24", "GPL-2", "kick drum, 24-bit stereo"),
            ("Audiophob/104227__minorr__hhat-paiste-302-14-open-p.wav", "drum-cymbal16", "CC0",
             "open hi-hat, 16-bit stereo"),
            ("Audiophob/116973__cbeeching__hat-light.wav", "drum-hat24mono", "CC0", "hi-hat, 24-bit mono")]:
        p = kits / rel
        if p.exists():
            x, r = wav(p)
            add(name, x, r, "Debian hydrogen-drumkits 2017.09.19~dfsg-1", KITS + rel, lic, kind)
    psi = X / "psi-plus-sounds/usr/share/psi-plus/sound"
    for fn, name, kind in [("email.wav", "jingle-psi-email", "notification jingle, 16-bit stereo"),
                           ("watcher.wav", "chime-psi-watcher8", "notification sound, 8-bit unsigned mono")]:
        if (psi / fn).exists():
            x, r = wav(psi / fn)
            add(name, x, r, "Debian psi-plus-sounds 1.4.554-5", "usr/share/psi-plus/sound/" + fn,
                "GPL-2+", kind)
    xb = X / "xblast-tnt-sounds/usr/share/games/xblast-tnt/sounds/xb_intro.raw"
    if xb.exists():
        add("music-xblast-intro8", np.fromfile(xb, np.uint8), 22050, "Debian xblast-tnt-sounds 20040429-3.1",
            "usr/share/games/xblast-tnt/sounds/xb_intro.raw", "GPL-2",
            "game intro music, headerless 8-bit unsigned mono (rate assumed 22050)")
    ox = X / "oxygen-sounds/usr/share/sounds/Oxygen-Sys-Log-In.ogg"
    if ox.exists():
        try:
            import soundfile as sf

            x, r = sf.read(str(ox), dtype="int16")
            add("music-oxygen-login", x, r, "Debian oxygen-sounds 4:5.27.5-2", "usr/share/sounds/Oxygen-Sys-Log-In.ogg",
                "LGPL-3.0+", "music (desktop login theme), stereo, Vorbis decoded to 16-bit by libsndfile 1.2.2")
        except ImportError:
            print("note: soundfile missing: the Vorbis music skipped")

    # ---- pvlib: weather / environmental readings
    pv = arch.get("pvlib")
    if pv and pv.exists():
        with tarfile.open(pv) as t:
            lr = "pvlib-0.16.1/tests/data/bsrn-lr0100-pay0616.dat"
            c = bsrn_lr0100(t.extractfile(lr).read().decode("latin-1"))
            rad = np.stack([c[k] for k in ("global", "direct", "diffuse", "longwave")], axis=1).astype(np.int16)
            add("solar-bsrn-payerne", rad, 1 / 60, "pvlib 0.16.1 (PyPI sdist)", lr,
                "BSRN data (MeteoSwiss Payerne), as shipped in pvlib (BSD-3)",
                "1-minute radiation, W/m2: global, direct, diffuse, longwave down (frames, 4), June 2016")
            add("temp-bsrn-payerne", tenths(c["temp"]), 1 / 60, "pvlib 0.16.1 (PyPI sdist)", lr + " air temperature",
                "BSRN data (MeteoSwiss Payerne), as shipped in pvlib (BSD-3)",
                "1-minute air temperature in 0.1 degC (-99.9 = missing kept)")
            add("pressure-bsrn-payerne", c["pressure"].astype(np.int16), 1 / 60, "pvlib 0.16.1 (PyPI sdist)",
                lr + " station pressure", "BSRN data (MeteoSwiss Payerne), as shipped in pvlib (BSD-3)",
                "1-minute station pressure, whole hPa")
            tmy = "pvlib-0.16.1/pvlib/data/723170TYA.CSV"
            rows = [ln.split(",") for ln in t.extractfile(tmy).read().decode().splitlines()[2:] if ln]
            hdr = t.extractfile(tmy).read().decode().splitlines()[1].split(",")
            pick = ["Dry-bulb (C)", "Dew-point (C)", "Pressure (mbar)", "Wspd (m/s)"]
            cols = [hdr.index(k) for k in pick]
            m = np.array([[float(r[i]) for i in cols] for r in rows])
            tm = np.stack([tenths(m[:, 0]), tenths(m[:, 1]), m[:, 2].astype(np.int16), tenths(m[:, 3])], axis=1)
            add("weather-tmy3-greensboro", tm, 1 / 3600, "pvlib 0.16.1 (PyPI sdist)",
                tmy + " columns " + ";".join(pick), "TMY3 (NREL, public), as shipped in pvlib (BSD-3)",
                "hourly typical-year weather: dry-bulb, dew point (0.1 degC), pressure (mbar), wind (0.1 m/s), (frames, 4)")
    else:
        print("note: pvlib sdist missing: weather skipped")
    return recs


def rate_tag(rate: float) -> str:
    if rate >= 1 and rate == int(rate):
        return f"{int(rate)}hz"
    return f"{rate:.4g}".replace(".", "p") + "hz"


def write_set(out: Path, recs: list) -> None:
    """Each recording of ``recs`` (name, values, rate, package, path, licence, kind) as
    ``out/<name>_<rate>.npy``, and their provenance as ``out/PROVENANCE.tsv``."""
    lines = ["file\tsource\tpath\tlicence\tkind\trate_hz\tdtype\tshape\tvalues\trange"]
    for name, x, rate, pkg, path, lic, kind in recs:
        fn = f"{name}_{rate_tag(rate)}.npy"
        np.save(out / fn, x)
        lines.append("\t".join([fn, pkg, path, lic, kind, f"{rate:.6g}", str(x.dtype),
                                "x".join(map(str, x.shape)), str(x.size), f"{x.min()}..{x.max()}"]))
        print(f"{fn}: {x.dtype} {x.shape} {x.min()}..{x.max()}")
    (out / "PROVENANCE.tsv").write_text("\n".join(lines) + "\n")
    print(f"{len(recs)} recordings in {out}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--download", type=Path, default=Path("/tmp/u2dl"))
    a = p.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    write_set(a.out, build(a.download, a.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
