"""Shared models for small windows (issue 30.2): a model fitted on 10 windows, the others coded with it.

    nice -n 5 python benchmarks/bench_windows.py [--sizes 1000 10000] [--test 20]

For each real recording (shared/data: ECG, seismic, the first 4 neural recordings; every
integer recording of /work/unseen-data, which the project never tuned on) cut into windows of
W values: the first 10 windows fit a :class:`ubpe.SharedModel` (``ubpe.fit_shared``); each of
the next ``--test`` windows (at most) is compressed with it (``compress(w, tokenizer=model)``: a
window container, or the ordinary one when that is not larger) and alone (``compress(w)``, the
default level); every round trip is checked. The anchor: zstd -19 on each window's bytes alone
and with a dictionary trained on the 10 training windows (``zstandard.train_dictionary``, 16 KiB;
when training fails on so few samples, the training windows' bytes as a raw-content
dictionary). Sizes are summed over the test windows of a recording; a recording with fewer
than 10 + 5 windows of W values is left out. CPU seconds (``time.process_time``) per window,
encode and decode, referenced vs alone. Writes benchmarks/results/windows.md.
"""

from __future__ import annotations

import argparse
import glob
import sys
import time
import wave
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402

import ubpe  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
UNSEEN = "/work/unseen-data"
TRAIN = 10


def recordings() -> list[tuple[str, np.ndarray]]:
    out = [("ecg/mitbih_208", _data.ecg()), ("seismic/CRLZ_HHZ", _data.seismic())]
    for path in sorted((_data.data_dir() / "neural").glob("*.wav"))[:4]:
        with wave.open(str(path)) as f:
            out.append((f"neural/{path.stem[:8]}", np.frombuffer(f.readframes(f.getnframes()), "<i2")))
    for path in sorted(glob.glob(f"{UNSEEN}/*.npy")):
        x = np.load(path)
        if x.dtype.kind in "iu" and x.ndim == 1:
            out.append((f"unseen/{Path(path).stem}", x))
    return out


def zstd_sizes(train: list[np.ndarray], test: list[np.ndarray]) -> tuple[int, int, str]:
    import zstandard as zstd

    plain = zstd.ZstdCompressor(level=19)
    alone = sum(len(plain.compress(w.tobytes())) for w in test)
    try:
        d = zstd.train_dictionary(16384, [w.tobytes() for w in train])
        kind = "trained"
    except zstd.ZstdError:
        d = zstd.ZstdCompressionDict(b"".join(w.tobytes() for w in train), dict_type=zstd.DICT_TYPE_RAWCONTENT)
        kind = "raw"
    withdict = zstd.ZstdCompressor(level=19, dict_data=d)
    return alone, sum(len(withdict.compress(w.tobytes())) for w in test), kind


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    p.add_argument("--test", type=int, default=20, help="most test windows per recording")
    p.add_argument("--out", default=str(RESULTS / "windows.md"))
    args = p.parse_args(argv)
    lines = [
        "# Shared models for small windows (benchmarks/bench_windows.py)", "",
        f"Command: `nice -n 5 python benchmarks/bench_windows.py --sizes {' '.join(map(str, args.sizes))} "
        f"--test {args.test}`. A model fitted on the first {TRAIN} windows of W values (`ubpe.fit_shared`); the "
        f"next (at most {args.test}) windows compressed with it (`compress(w, tokenizer=model)`) and alone "
        "(`compress(w)`); sizes summed over those windows; `vs alone` = referenced / alone - 1. zstd -19 "
        "alone and with a dictionary of the training windows (trained, or raw content when training "
        "fails). CPU ms per window (process_time): encode and decode, referenced / alone. "
        "`window containers`: test windows the model made smaller (the others fell back to the "
        "ordinary container). `joined vs alone`: the test windows joined into one input and "
        "compressed as one (`compress(np.concatenate(test))`) against alone: what a coder that "
        "carried everything over from window to window could gain at most, roughly.", ""]
    recs = recordings()
    for size in args.sizes:
        lines += [f"## W = {size}", "",
                  "| recording | windows | alone B | referenced B | vs alone | joined vs alone | window containers | predictors "
                  "| zstd-19 B | zstd-19 + dict B | dict vs zstd | model B | fit s | enc ms ref/alone "
                  "| dec ms ref/alone |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        tot_alone = tot_ref = tot_z = tot_zd = 0
        gains = []
        for name, x in recs:
            count = min(len(x) // size, TRAIN + args.test)
            if count < TRAIN + 5:
                continue
            ws = [np.ascontiguousarray(x[i * size:(i + 1) * size]) for i in range(count)]
            train, test = ws[:TRAIN], ws[TRAIN:]
            t0 = time.process_time()
            model = ubpe.fit_shared(train)
            fit_s = time.process_time() - t0
            alone = ref = windows = 0
            enc_ref = enc_alone = dec_ref = dec_alone = 0.0
            for w in test:
                t0 = time.process_time()
                a = ubpe.compress(w)
                t1 = time.process_time()
                r = ubpe.compress(w, tokenizer=model)
                t2 = time.process_time()
                back_a = ubpe.decompress(a)
                t3 = time.process_time()
                back_r = ubpe.decompress(r, tokenizer=model)
                t4 = time.process_time()
                assert np.array_equal(back_a, w) and np.array_equal(back_r, w), name
                assert len(r) <= len(a), name
                enc_alone += t1 - t0
                enc_ref += t2 - t1
                dec_alone += t3 - t2
                dec_ref += t4 - t3
                alone += len(a)
                ref += len(r)
                windows += ubpe.shared.is_window(r)
            z, zd, kind = zstd_sizes(train, test)
            joined = len(ubpe.compress(np.concatenate(test)))
            k = len(test)
            gains.append(ref / alone - 1)
            tot_alone += alone
            tot_ref += ref
            tot_z += z
            tot_zd += zd
            lines.append(
                f"| {name} | {k} | {alone} | {ref} | {ref / alone - 1:+.1%} | {joined / alone - 1:+.1%} | {windows}/{k} | "
                f"{', '.join(v.predictor for v in model.variants)} | {z} | {zd} ({kind}) | {zd / z - 1:+.1%} | "
                f"{len(model.to_bytes())} | {fit_s:.1f} | {1e3 * enc_ref / k:.0f} / {1e3 * enc_alone / k:.0f} | "
                f"{1e3 * dec_ref / k:.1f} / {1e3 * dec_alone / k:.1f} |")
            print(lines[-1], flush=True)
        if gains:
            lines += ["", f"All {len(gains)} recordings: alone {tot_alone} B, referenced {tot_ref} B "
                      f"({tot_ref / tot_alone - 1:+.1%}); per recording median {np.median(gains):+.1%}, "
                      f"best {min(gains):+.1%}, worst {max(gains):+.1%}; recordings at least 15 % smaller: "
                      f"{sum(g <= -0.15 for g in gains)}, at least 5 %: {sum(g <= -0.05 for g in gains)}. "
                      f"zstd-19 {tot_z} B, with dictionary {tot_zd} B.", ""]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-3:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
