"""What each planner setting is worth: container sizes and compress CPU time with a setting's
rule removed, against the defaults, on every input of sizes.py.

    python benchmarks/settings_cost.py trace --out /tmp/sc/trace.json
    python benchmarks/settings_cost.py run --trace /tmp/sc/trace.json --out /tmp/sc/keep1.json \\
        --name screen_keep-1 --settings '{"screen_keep": 1}'

``trace`` compresses every input of sizes.py (``--unseen``, the texts) at levels 2 and 1 with the
default settings and records, per call, its size, its CPU time (the least of two calls after
a first) and which fields of
:class:`ubpe.planner.settings.Settings` the planner read. ``run`` applies ``--settings`` (as
sizes.py's) to the calls that read one of the changed fields; a call that read none of them
runs the same code with the same values, so its size and time are the trace's. Each of those
calls is timed against a default call run beside it (the order alternated), CPU time
(``time.process_time``, one thread), ``--repeat`` pairs; the time change is the sum of the
differences over the calls run, against the whole run's CPU time (``--repeat 0``: no default
calls, the time against the trace's: indicative only). Sizes are exact.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import sizes  # noqa: E402

import ubpe  # noqa: E402
from ubpe.planner import settings as planner_settings  # noqa: E402

FIELDS = {f.name for f in dataclasses.fields(planner_settings.Settings)}


class _Reading(planner_settings.Settings):
    """Settings that note which fields are read (in ``self.read``, shared by its copies)."""

    def __getattribute__(self, name: str):
        if name in FIELDS:
            object.__getattribute__(self, "__dict__").setdefault("_read", set()).add(name)
        return object.__getattribute__(self, name)


def _call(x: np.ndarray, level: int, opts: dict, changes: dict, note: bool = False) -> tuple[int, float, set]:
    """(container bytes, CPU seconds, fields read) of one compress call under ``changes``."""
    base = _Reading() if note else planner_settings.DEFAULT
    token = planner_settings._CURRENT.set(base)  # noqa: SLF001 (a measuring script)
    try:
        with planner_settings.configured(**changes) as s:
            c0 = time.process_time()
            blob = ubpe.compress(x, level=level, threads=1, **opts)
            cpu = time.process_time() - c0
    finally:
        planner_settings._CURRENT.reset(token)  # noqa: SLF001
    read = set(s.__dict__.get("_read", ())) if note else set()
    return len(blob), cpu, read


def _inputs(a: argparse.Namespace) -> list[tuple[str, np.ndarray, dict]]:
    return sizes.inputs(a.unseen if Path(a.unseen).is_dir() else None, True, True, False)


def trace(a: argparse.Namespace) -> None:
    out: dict = {}
    for name, x, opts in _inputs(a):
        out[name] = {}
        for level in (2, 1):
            size, _, read = _call(x, level, opts, {}, note=True)  # (the first call may compile)
            cpu = min(_call(x, level, opts, {})[1] for _ in range(2))
            out[name][str(level)] = {"size": size, "cpu": cpu, "read": sorted(read)}
        print(name, {k: (v["size"], round(v["cpu"], 2), len(v["read"])) for k, v in out[name].items()}, flush=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")


def run(a: argparse.Namespace) -> None:
    base = json.loads(Path(a.trace).read_text())
    changes = sizes.settings_argument(a.settings)
    groups = {"signals": lambda k: not k.startswith(("unseen/", "text/")), "unseen": lambda k: k.startswith("unseen/"),
              "text": lambda k: k.startswith("text/")}
    rows: dict = {}
    flip = False
    for name, x, opts in _inputs(a):
        for level in map(str, (2, 1)):
            b = base[name][level]
            if not set(changes) & set(b["read"]):
                continue
            sizes_seen, diffs = [], []
            if a.repeat == 0:  # sizes only: the time against the trace's (another session: indicative)
                size, cpu, _ = _call(x, int(level), opts, changes)
                sizes_seen.append(size)
                diffs.append(cpu - b["cpu"])
            for _ in range(a.repeat):
                pair = [None, None]
                for which in ((1, 0) if flip else (0, 1)):
                    size, cpu, _ = _call(x, int(level), opts, changes if which else {})
                    pair[which] = (size, cpu)
                flip = not flip
                if pair[0][0] != b["size"]:
                    raise AssertionError(f"{name} L{level}: default size {pair[0][0]} != trace {b['size']}")
                sizes_seen.append(pair[1][0])
                diffs.append(pair[1][1] - pair[0][1])
            rows.setdefault(name, {})[level] = {"size": sizes_seen[0], "base": b["size"],
                                                "dcpu": float(np.mean(diffs)), "base_cpu": b["cpu"]}
            r = rows[name][level]
            if r["size"] != r["base"] or a.verbose:
                print(f"  {name} L{level}: {r['base']} -> {r['size']} ({r['size'] - r['base']:+d} B), "
                      f"CPU {r['dcpu']:+.2f} s", flush=True)
    summary: dict = {"name": a.name, "settings": a.settings, "calls": sum(len(v) for v in rows.values())}
    for level in ("2", "1"):
        total = sum(v[level]["size"] for v in base.values())
        delta = sum(r[level]["size"] - r[level]["base"] for r in rows.values() if level in r)
        cpu = sum(v[level]["cpu"] for v in base.values())
        dcpu = sum(r[level]["dcpu"] for r in rows.values() if level in r)
        per = {}
        for g, test in groups.items():
            gt = sum(v[level]["size"] for k, v in base.items() if test(k))
            gd = sum(r[level]["size"] - r[level]["base"] for k, r in rows.items() if level in r and test(k))
            per[g] = [gd, 100.0 * gd / gt]
        grown = sorted(((r[level]["size"] - r[level]["base"], k) for k, r in rows.items() if level in r),
                       reverse=True)
        summary[level] = {"bytes": delta, "pct": 100.0 * delta / total, "groups": per,
                          "cpu_base": cpu, "dcpu": dcpu, "cpu_pct": 100.0 * dcpu / cpu,
                          "grew": [(k, d, round(100.0 * d / base[k][level]["size"], 3)) for d, k in grown[:4] if d > 0],
                          "shrank": [(k, d, round(100.0 * d / base[k][level]["size"], 3)) for d, k in grown[::-1][:2]
                                     if d < 0]}
        print(f"{a.name} L{level}: {delta:+d} B ({summary[level]['pct']:+.3f} %) "
              + " ".join(f"{g} {v[0]:+d} B ({v[1]:+.3f} %)" for g, v in per.items())
              + f"; CPU {dcpu:+.1f} s of {cpu:.0f} ({summary[level]['cpu_pct']:+.1f} %); grew {summary[level]['grew']}",
              flush=True)
    summary["rows"] = rows
    Path(a.out).write_text(json.dumps(summary, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for cmd in ("trace", "run"):
        p = sub.add_parser(cmd)
        p.add_argument("--out", required=True)
        p.add_argument("--unseen", default="/work/unseen-data")
        if cmd == "run":
            p.add_argument("--trace", required=True)
            p.add_argument("--settings", required=True)
            p.add_argument("--name", default="")
            p.add_argument("--repeat", type=int, default=1)
            p.add_argument("--verbose", action="store_true")
    a = ap.parse_args(argv)
    (trace if a.cmd == "trace" else run)(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
