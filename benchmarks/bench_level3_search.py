"""Level 3's parameter search: size against encode speed (issue 29), one recording at a time.

    UBPE_DATA=/work/shared/data python benchmarks/bench_level3_search.py [--groups audio ...]
        [--configs new exact before ...] [--check]

Every recording of ``bench_level3.recordings`` (the shared data's ECG, seismic file, 32 audio
files, 24 neural files each alone and joined; /work/unseen-data) is encoded by ``ubpe.level3``
under each named configuration of :class:`ubpe.planner.settings.Settings` (CONFIGS), the
configurations alternated within each recording (their order rotated from one recording to the
next), so that a busy minute of the shared machine falls on all of them alike. Encode speed is
values per CPU second (``time.process_time``; the wall time beside it); sizes are exact and
deterministic. Per group (sizes and times summed): the ratio, the size against the first
configuration and against "before" (the writer before the whole-recording search), the encode
speed, and how many recordings each configuration codes larger than "before". ``--check``
decodes every container (round trip).

The configurations: "new" (the defaults: the search on a prefix, 2 codings of a quarter of a
short recording, order 64 from the start where ``search.order_gain_db`` predicts many
resonances); "exact" (the exact whole-recording search of commit 08dcb7d: up to 64 codings of
the whole, 2**19 values at least); "before" (level3_search_floor = 0: no search below 8 192
frames, chunks above); and the points of the trade-off curve named by their changes to the defaults.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import print_table  # noqa: E402
from bench_level3 import UNSEEN, recordings, warm_level3  # noqa: E402

from ubpe import level3  # noqa: E402
from ubpe.planner import settings  # noqa: E402

EXACT = dict(level3_search_work=0, level3_search_floor=1 << 19, level3_search_prefix=1 << 16, level3_search_share=1.0,
             level3_search_evals=1, level3_search_order_db=1e9, level3_search_order_start=1e9,
             level3_search_hold=2.0, level3_search_budget=1.5, level3_front_frames=1 << 13,
             level3_front_share=1.0)
CONFIGS = {
    "new": {},
    "exact": EXACT,
    "before": dict(EXACT, level3_search_floor=0),
    # the curve, each a change to the defaults: the proxy's codings and share, the order prior,
    # the chains' sample, the chunks' budget (longer recordings)
    "evals3": dict(level3_search_evals=3),
    "evals4": dict(level3_search_evals=4),
    "share.5": dict(level3_search_share=0.5),
    "no-order-prior": dict(level3_search_order_db=1e9, level3_search_order_start=1e9),
    "order-first": dict(level3_search_order_start=1e9),
    "no-hold-prior": dict(level3_search_hold=2.0),
    "front-share1": dict(level3_front_share=1.0),
    "front8192": dict(level3_front_frames=1 << 13),
    "front4096": dict(level3_front_frames=1 << 12),
    "budget1.5": dict(level3_search_budget=1.5),
    "budget1.0": dict(level3_search_budget=1.0),
    "budget0.75": dict(level3_search_budget=0.75),
    # the chains compared on a middle sample or coded whole each (before level3_front_on_proxy)
    "chains-sample": dict(level3_front_on_proxy=1 << 30),
    "proxy-margin0": dict(level3_front_proxy_margin=0.0),
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--groups", nargs="*", default=None, help="only these groups (ecg seismic audio ...)")
    p.add_argument("--only", nargs="*", default=None, help="recordings whose name contains one of these")
    p.add_argument("--configs", nargs="+", default=["new", "exact", "before"], help=f"of {', '.join(CONFIGS)}")
    p.add_argument("--set", nargs="*", default=[], metavar="NAME=FIELD:VALUE,...",
                   help="extra configurations: changes to the defaults, e.g. x=level3_search_evals:4")
    p.add_argument("--unseen", type=Path, default=UNSEEN)
    p.add_argument("--check", action="store_true", help="decode every container (round trip)")
    a = p.parse_args(argv)
    configs = {name: CONFIGS[name] for name in a.configs}
    for spec in a.set:
        name, _, changes = spec.partition("=")
        configs[name] = {k: type(getattr(settings.DEFAULT, k))(v)
                         for k, v in (c.split(":") for c in changes.split(","))}
    recs = recordings(a.unseen)
    if a.groups:
        recs = [r for r in recs if r[0] in a.groups]
    if a.only:
        recs = [r for r in recs if any(w in r[1] for w in a.only)]
    warm_level3(level3)  # compile (or load) the kernels outside the timings
    names = list(configs)
    res = []
    for i, (group, name, x, _) in enumerate(recs):
        row = dict(group=group, recording=name, values=int(x.size), raw=int(x.nbytes))
        for k in range(len(names)):
            cfg = names[(i + k) % len(names)]
            with settings.configured(**configs[cfg]):
                c0, t0 = time.process_time(), time.perf_counter()
                data = level3.encode(x)
                row[cfg] = (len(data), time.process_time() - c0, time.perf_counter() - t0)
            if a.check and not np.array_equal(level3.decode(data), x):
                raise AssertionError(f"{name} under {cfg} did not round-trip")
        res.append(row)
        print(f"-- {name} ({x.size}): " + ", ".join(f"{c} {row[c][0]} B {x.size / row[c][1] / 1e6:.3f} M/s"
                                                   for c in names), flush=True)
    rows = []
    for g in dict.fromkeys(r["group"] for r in res):
        rs = [r for r in res if r["group"] == g]
        n, raw = sum(r["values"] for r in rs), sum(r["raw"] for r in rs)
        for cfg in names:
            size = sum(r[cfg][0] for r in rs)
            row = {"group": g, "config": cfg, "recordings": len(rs), "values": n, "ratio": raw / size,
                   f"vs {names[0]} %": (size / sum(r[names[0]][0] for r in rs) - 1) * 100}
            if "before" in names:
                row["vs before %"] = (size / sum(r["before"][0] for r in rs) - 1) * 100
                row["larger than before"] = sum(r[cfg][0] > r["before"][0] for r in rs)
            row["enc M/s (CPU)"] = n / sum(r[cfg][1] for r in rs) / 1e6
            row["enc M/s (wall)"] = n / sum(r[cfg][2] for r in rs) / 1e6
            rows.append(row)
    print_table(rows, title="== level 3 encode: size and speed per group (sizes and times summed)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
