"""Many channels (issue 30): electrode arrays of up to 1 024 channels compressed as one
``(frames, channels)`` array against each channel alone, with the memory each call takes.

    nice -n 5 python benchmarks/bench_channels.py [--frames 30000] [--channels 384] [--levels 1,2] [--md out.md]

The arrays are built from the shared neural recordings (Neuralink's, one electrode each, 19.5
kHz, ~10-bit codes; ``UBPE_DATA``), as an array records them:

- ``array``: 384 electrodes along a shank; 6 recordings play local sources whose fields decay
  with the distance (exponentially, over 30 electrodes), every electrode adds interference
  common to all (50 Hz mains and a slow reference drift) and its own recording as its noise
  (each electrode a different recording, or a different stretch of one).
- ``array-1024``: the same geometry with 1 024 electrodes and fewer frames.
- ``independent``: the 120 recordings side by side, which share nothing: the joint container
  must not be larger than the channels alone.

Columns: bytes of ubpe's container at each level (``ubpe.compress``: one stream, or one per
channel group, ``groups`` of them: ubpe/api/groups.py), of the one-stream container
(``Settings.channel_groups=False``, as before channel groups), of each channel compressed alone
(summed), the ratios, zstd -19 of the raw array for scale; the extra resident memory of
``compress`` and ``decompress`` (peak RSS above the input's, in a fresh process, kernels
compiled before) as a multiple of the input's bytes, and the CPU seconds of each call.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ubpe  # noqa: E402
from ubpe.planner import settings as planner_settings  # noqa: E402

import _data  # noqa: E402
import _measure  # noqa: E402


def electrode_array(frames: int, channels: int, seed: int = 7) -> np.ndarray:
    """``(frames, channels)`` int16: local sources decaying over 30 electrodes, common
    interference, each electrode's own noise (see the module docstring)."""
    rng = np.random.default_rng(seed)
    recordings = [r.astype(np.float64) for r in _data.neural(None)]
    length = min(r.shape[0] for r in recordings)
    frames = min(frames, length)
    sources = np.stack([r[:frames] - r[:frames].mean() for r in recordings[:6]])
    noise_pool = recordings[6:]
    where = np.linspace(0, channels, 6) + rng.uniform(-10, 10, 6)
    gain = np.exp(-np.abs(np.arange(channels)[:, None] - where[None, :]) / 30.0)
    t = np.arange(frames) / 19531.0
    common = 30 * np.sin(2 * np.pi * 50 * t) + np.cumsum(rng.normal(0, 0.5, frames))
    x = np.empty((frames, channels), np.int16)
    for c in range(channels):
        rec = noise_pool[c % len(noise_pool)]
        start = (c // len(noise_pool)) * 977 % max(rec.shape[0] - frames, 1)
        own = rec[start:start + frames]
        x[:, c] = np.clip(np.round(gain[c] @ sources + common + 0.5 * (own - own.mean())), -32768, 32767)
    return x


def independent(frames: int) -> np.ndarray:
    recordings = _data.neural(None)
    frames = min(frames, min(r.shape[0] for r in recordings))
    return np.stack([r[:frames] for r in recordings], axis=1)


def _build(name: str, frames: int, channels: int, level: int) -> np.ndarray:
    """The input, built in the measuring process, the kernels of ``level`` compiled first."""
    x = ARRAYS[name](frames, channels)
    ubpe.decompress(ubpe.compress(np.ascontiguousarray(x[:2000, :3]), level=level))
    return x


def _build_container(name: str, frames: int, channels: int, level: int) -> bytes:
    x = _build(name, frames, channels, level)
    return ubpe.compress(x, level=level)


ARRAYS = {
    "array": lambda frames, channels: electrode_array(frames, channels),
    "array-1024": lambda frames, channels: electrode_array(max(frames // 4, 2000), 1024, seed=8),
    "independent": lambda frames, channels: independent(frames),
}


def _compress(x: np.ndarray, level: int) -> None:
    ubpe.compress(x, level=level)


def _decompress(data: bytes) -> None:
    ubpe.decompress(data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=30000)
    ap.add_argument("--channels", type=int, default=384)
    ap.add_argument("--levels", default="1,2")
    ap.add_argument("--arrays", default=",".join(ARRAYS))
    ap.add_argument("--md", help="also write the table as markdown to this file")
    args = ap.parse_args()
    levels = [int(v) for v in args.levels.split(",")]
    try:
        import zstandard
    except ImportError:
        zstandard = None
        print("zstandard not installed: its column is skipped")
    rows = []
    for name in args.arrays.split(","):
        x = ARRAYS[name](args.frames, args.channels)
        for level in levels:
            t0 = time.process_time()
            joint = ubpe.compress(x, level=level)
            t_joint = time.process_time() - t0
            t0 = time.process_time()
            back = ubpe.decompress(joint)
            t_back = time.process_time() - t0
            assert np.array_equal(back, x), name
            t0 = time.process_time()
            alone = sum(len(ubpe.compress(np.ascontiguousarray(x[:, c]), level=level)) for c in range(x.shape[1]))
            t_alone = time.process_time() - t0
            with planner_settings.configured(channel_groups=False):  # main's container: one stream
                one = ubpe.compress(x, level=level)
            info = ubpe.describe(joint)
            front = [e["stage"] for e in info.front]
            mem_c = _measure.peak_memory(_compress, functools.partial(_build, name, args.frames, args.channels, level),
                                         level, loader=True)
            mem_d = _measure.peak_memory(_decompress, functools.partial(_build_container, name, args.frames,
                                                                        args.channels, level), loader=True)
            rows.append({
                "array": name, "shape": f"{x.shape[0]} x {x.shape[1]}", "level": level,
                "joint B": len(joint), "groups": info.groups, "chain": "+".join(front) or "none",
                "one stream B": len(one), "joint/one stream": round(len(joint) / len(one), 4),
                "alone B": alone, "joint/alone": round(len(joint) / alone, 4),
                "zstd-19 B": len(zstandard.ZstdCompressor(level=19).compress(x.tobytes())) if zstandard else None,
                "compress mem / input": round(mem_c["delta_bytes"] / x.nbytes, 2),
                "decompress mem / input": round(mem_d["delta_bytes"] / x.nbytes, 2),
                "compress CPU s": round(t_joint, 2), "decompress CPU s": round(t_back, 2),
                "alone CPU s": round(t_alone, 2),
            })
            _measure.print_table(rows[-1:])
    _measure.print_table(rows, title="many channels: one container against each channel alone")
    if args.md:
        cols = list(rows[0])
        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
        Path(args.md).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
