"""Where numba's reference counting (NRT_incref / NRT_decref) costs: statically, the call sites
inside loops of every compiled kernel; with ``--perf``, the share of CPU samples in those two
functions and in each kernel while a level's compress or decompress runs warm.

    UBPE_DATA=/work/shared/data nice -n 5 python benchmarks/nrt_calls.py [--level 2] [--set audio]
        [--files 8] [--decode] [--perf SECONDS]

Both need the kernels compiled in this process (numba's inspection and the functions' addresses
are not available for cached code): the script sets ``NUMBA_CACHE_DIR`` to a new temporary folder
itself (a cold compile first, a minute or two at level 3). Static: for each kernel that ran, per
function of its optimised LLVM (its non-inlined helpers included), the NRT calls and those in a
loop (a block of a cycle of the control-flow graph); kernels with none in loops are not printed.
A site in a loop runs per iteration of it, which may be per block, not per value: read the
source. ``--perf``: ``perf record`` of this process (started disabled, enabled once warm through
a control fifo; ``perf`` on PATH, perf_event_paranoid <= 2), the samples attributed to the
nearest compiled function start below them. An atomic increment is a full barrier: samples on it
include waits for earlier loads, so a share there is an upper bound of what borrowing saves
(benchmarks/results/borrow.md).
"""

from __future__ import annotations

import argparse
import atexit
import bisect
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
_DEF = re.compile(r'^define .*?@"?([^"(\s]+)"?\(')
_LABEL = re.compile(r'^("?[A-Za-z0-9_.$-]+"?):')
_NRT = re.compile(r"call .*@NRT_(incref|decref)")


def _functions(ir: str):
    """(name, body lines) of each function defined in ``ir``."""
    name, body = None, []
    for line in ir.splitlines():
        m = _DEF.match(line)
        if m:
            name, body = m.group(1), []
        elif name is not None and line.startswith("}"):
            yield name, body
            name = None
        elif name is not None:
            body.append(line)


def _blocks(body: list) -> dict:
    blocks, name, cur = {}, "entry", []
    for line in body:
        m = _LABEL.match(line)
        if m:
            blocks[name], name, cur = cur, m.group(1).strip('"'), []
        else:
            cur.append(line)
    blocks[name] = cur
    return blocks


def _loop_blocks(blocks: dict) -> set:
    """The blocks on a cycle of the control-flow graph (Tarjan's strongly connected components)."""
    graph = {b: [x.strip('"') for line in body for x in re.findall(r'label %("?[^\s,\]"]+"?)', line)]
             for b, body in blocks.items()}
    index, low, stack, on, out = {}, {}, [], set(), set()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph) + 1000))

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, []):
                out.update(comp)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def _short(name: str) -> str:
    """The function of a numba-mangled name: ``_ZN4ubpe8_kernels9mixsignal3runB..`` -> ``mixsignal.run``."""
    parts, i = [], 3 if name.startswith("_ZN") else 0
    while i < len(name) and name[i].isdigit():
        j = i
        while name[j].isdigit():
            j += 1
        parts.append(name[j:j + int(name[i:j])])
        i = j + int(name[i:j])
    return ".".join(parts[-2:]) if parts else name


def _kernels():
    """(label, dispatcher) of every ubpe kernel compiled in this process."""
    from numba.core.registry import CPUDispatcher
    for mname, m in sorted(sys.modules.items()):
        if mname.startswith("ubpe._kernels."):
            for attr, obj in vars(m).items():
                if isinstance(obj, CPUDispatcher) and obj.__module__ == mname and obj.signatures:
                    yield f"{mname.rsplit('.', 1)[1]}.{attr}", obj


def static_report() -> None:
    for label, disp in _kernels():
        for sig in disp.signatures:
            for name, body in _functions(disp.inspect_llvm(sig)):
                if not name.startswith("_ZN4ubpe"):
                    continue
                blocks = _blocks(body)
                loops = _loop_blocks(blocks)
                sites = [(b in loops) for b, lines in blocks.items() for line in lines if _NRT.search(line)]
                if any(sites):
                    print(f"{label:40s} {_short(name):40s} NRT calls {len(sites):4d}, in loops {sum(sites):3d}")


def _addresses() -> list:
    from numba.core.runtime.nrt import rtsys
    out = [(rtsys._library.get_pointer_to_function(n), n) for n in ("NRT_incref", "NRT_decref")]
    for label, disp in _kernels():
        for cres in disp.overloads.values():
            for f in cres.library.get_defined_functions():
                if f.name.startswith("_ZN4ubpe") and not f.is_declaration:
                    out.append((cres.library.get_pointer_to_function(f.name), f"{label} > {_short(f.name)}"))
    return sorted(set(out))


def _perf_report(args, argv) -> None:
    """Run this script under perf (``--ctl``), then print the samples' shares by kernel."""
    with tempfile.TemporaryDirectory() as tmp:
        fifo, data = os.path.join(tmp, "ctl"), os.path.join(tmp, "perf.data")
        os.mkfifo(fifo)
        env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(tmp, "numba"))
        subprocess.run(["perf", "record", "-q", "-D", "-1", "--control", f"fifo:{fifo}", "-F", "2000",
                        "-o", data, sys.executable, __file__, *argv, "--ctl", fifo],
                       env=env, check=True)
        ips = subprocess.run(["perf", "script", "-i", data, "-F", "ip"], capture_output=True,
                             text=True).stdout.split()
        syms = json.load(open(os.path.join(tmp, "syms.json")))
        starts = [a for a, _ in syms]
        count = collections.Counter()
        for ip in ips:
            k = bisect.bisect_right(starts, int(ip, 16)) - 1
            near = k >= 0 and int(ip, 16) - starts[k] < (64 if syms[k][1].startswith("NRT") else 1 << 18)
            count[syms[k][1] if near else "(not a kernel: Python, numpy, ...)"] += 1
        print(f"level {args.level} {args.set} {'decompress' if args.decode else 'compress'}: "
              f"{len(ips)} samples")
        for name, c in count.most_common(25):
            print(f"{100 * c / max(len(ips), 1):6.2f} %  {name}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--level", type=int, default=2)
    ap.add_argument("--set", default="audio", choices=["audio", "ecg", "seismic"])
    ap.add_argument("--files", type=int, default=8, help="audio: the first N files")
    ap.add_argument("--decode", action="store_true", help="--perf: time decompress, not compress")
    ap.add_argument("--perf", type=float, default=0.0, help="seconds of the warm loop under perf")
    ap.add_argument("--ctl", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.perf > 0 and not args.ctl:  # this script again, under perf
        _perf_report(args, argv if argv is not None else sys.argv[1:])
        return
    if not args.ctl:  # (under perf, the parent set it)
        tmp = tempfile.mkdtemp()
        atexit.register(shutil.rmtree, tmp, True)
        os.environ["NUMBA_CACHE_DIR"] = tmp  # a cold compile: inspectable code
    sys.path.insert(0, str(HERE))
    import _data
    import numpy as np

    import ubpe
    xs = {"audio": lambda: [x for x, _ in _data.audio()][:args.files], "ecg": lambda: [_data.ecg()],
          "seismic": lambda: [_data.seismic()]}[args.set]()
    ds = [ubpe.compress(x, level=args.level, threads=1) for x in xs]
    for x, d in zip(xs, ds):
        assert np.array_equal(ubpe.decompress(d), x)
    if not args.ctl:
        static_report()
        return
    with open(args.ctl, "w") as f:
        f.write("enable\n")
    t = time.perf_counter()
    while time.perf_counter() - t < args.perf:
        for x, d in zip(xs, ds):
            ubpe.decompress(d) if args.decode else ubpe.compress(x, level=args.level, threads=1)
    with open(args.ctl, "w") as f:
        f.write("disable\n")
    json.dump(_addresses(), open(os.path.join(os.path.dirname(args.ctl), "syms.json"), "w"))


if __name__ == "__main__":
    main()
