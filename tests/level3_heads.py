"""Level-3 bytes taken apart and put back together (the layout of ``ubpe/level3/format.py``'s module
docstring), for structure-aware mutations: a field changed, the rest kept, the CRC-32 of a
front-end record recomputed as a hostile writer would. ``main`` runs the mutations in a child
process (tests/test_hostile_level3.py)."""

from __future__ import annotations

import json
import random
import sys
import zlib

import msgpack
import numpy as np

from ubpe import level3
from ubpe._kernels import mixsignal as k


def leb(v: int) -> bytes:
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def zig(v: int) -> int:
    return 2 * v if v >= 0 else -2 * v - 1


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def byte(self) -> int:
        self.pos += 1
        return self.data[self.pos - 1]

    def uleb(self) -> int:
        v = shift = 0
        while True:
            b = self.byte()
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v

    def zig(self) -> int:
        u = self.uleb()
        return u >> 1 if not u & 1 else -((u + 1) >> 1)


def parse(data: bytes) -> dict:
    """The fields of level-3 bytes ``level3.encode`` wrote (not checked)."""
    r = _Reader(data)
    f = {"version": r.byte(), "dtype": r.byte(), "ndim": r.byte()}
    f["n"] = r.uleb()
    f["C"] = r.uleb() if f["ndim"] == 2 else 1
    f["mode"] = r.byte()
    if f["mode"] == level3.MODE_FRONT:
        size = r.uleb()
        f["record"] = data[r.pos:r.pos + size]
        f["inner"] = data[r.pos + size + 4:]
        return f
    if f["mode"] == level3.MODE_RAW:
        f["body"] = data[r.pos:]
        return f
    f["lo"], f["step"] = r.zig(), r.uleb()
    start = r.pos
    size = r.uleb()
    f["tmode"] = None
    if size > 1:
        r.uleb()
        order = r.byte()
        gaps = np.zeros(size - 1, np.int64)
        r.pos += k.golomb_unpack(np.frombuffer(data, np.uint8), r.pos, size - 1, order, 1 << 40, gaps)
    f["table"] = data[start:r.pos]
    if size:
        f["tmode"] = r.byte()
    f["gs"] = r.byte()
    f["chan"] = [(r.uleb(), r.uleb()) for _ in range(f["C"])]
    if f["version"] == 1:
        f["prm"] = [r.uleb() for _ in range(k.N_PRM_V1)]
    else:
        stored = {2: k.N_PRM_V2, 3: k.N_PRM_V3}.get(f["version"], k.N_PRM)
        mask = r.uleb()
        f["prm"] = list(level3.base_params(f["C"], f["version"])[:stored])
        for i in range(stored):
            if mask >> i & 1:
                f["prm"][i] = r.uleb()
    f["lpc"] = None
    if len(f["prm"]) > k.PRM_LPC and f["prm"][k.PRM_LPC]:
        size = r.uleb()
        f["lpc"] = data[r.pos:r.pos + size]
        r.pos += size
    f["payload"] = data[r.pos:]
    return f


def build(f: dict) -> bytes:
    """The bytes of fields :func:`parse` gives (``build(parse(b)) == b``), a front-end record's
    CRC-32 computed for its head as it now is."""
    head = bytearray([f["version"], f["dtype"], f["ndim"]]) + leb(f["n"]) + (leb(f["C"]) if f["ndim"] == 2 else b"")
    head.append(f["mode"])
    if f["mode"] == level3.MODE_FRONT:
        head += leb(len(f["record"])) + f["record"]
        return bytes(head) + zlib.crc32(head).to_bytes(4, "little") + f["inner"]
    if f["mode"] == level3.MODE_RAW:
        return bytes(head) + f["body"]
    head += leb(zig(f["lo"])) + leb(f["step"]) + f["table"]
    if f["tmode"] is not None:
        head.append(f["tmode"])
    head.append(f["gs"])
    for lo, span in f["chan"]:
        head += leb(lo) + leb(span)
    if f["version"] == 1:
        head += b"".join(leb(p) for p in f["prm"])
    else:
        base = level3.base_params(len(f["chan"]) if f["ndim"] == 2 else 1, f["version"])
        head += leb(sum(1 << i for i, p in enumerate(f["prm"]) if p != base[i]))
        head += b"".join(leb(p) for i, p in enumerate(f["prm"]) if p != base[i])
    if f["lpc"] is not None:
        head += leb(len(f["lpc"])) + f["lpc"]
    return bytes(head) + f["payload"]


def mutate_fields(f: dict, rng: random.Random) -> dict:
    """One field of mode 0 (or the shape of any mode) changed: the frames and channels (up to
    and beyond the default max_values), the version, the dtype, 1 to 4 parameters at their
    bounds or just outside, lo, step, the shift, a channel's range, the LPC params, the payload."""
    c = rng.random()
    if c < 0.15:
        f["n"] = rng.choice([0, 1, f["n"] - 1, f["n"] + 1, 2 * f["n"], 4096, 4097, 1 << 30, (1 << 30) + 1])
    elif c < 0.22 and f["ndim"] == 2:
        f["C"] = rng.choice([0, 1, f["C"] + 1, level3.MAX_CHANNELS, level3.MAX_CHANNELS + 1])
        if "chan" in f:
            f["chan"] = (f["chan"] * f["C"])[:f["C"]]
    elif c < 0.27:
        f["version"] = rng.choice(level3.VERSIONS)
        if "prm" in f:
            count = {1: k.N_PRM_V1, 2: k.N_PRM_V2, 3: k.N_PRM_V3}.get(f["version"], k.N_PRM)
            f["prm"] = (f["prm"] + [k.PRM_BOUNDS[i][0] for i in range(len(f["prm"]), count)])[:count]
    elif c < 0.3:
        f["dtype"] = rng.randrange(len(level3.DTYPES) + 1)
    elif f["mode"] != 0:
        f["n"] = rng.choice([f["n"] + 1, 1 << 30])
    elif c < 0.7:
        for _ in range(rng.choice([1, 1, 2, 4])):
            i = rng.randrange(len(f["prm"]))
            lo, hi = k.PRM_BOUNDS[i]
            f["prm"][i] = rng.choice([lo, hi, hi + 1, max(lo - 1, 0), rng.randint(lo, hi)])
    elif c < 0.76:
        f["lo"] = rng.choice([f["lo"] - 1, f["lo"] + 1, -(1 << 63), (1 << 64) - 1])
    elif c < 0.8:
        f["step"] = rng.choice([0, 2, 3, (1 << 40) - 1, 1 << 40])
    elif c < 0.84:
        f["gs"] = rng.choice([0, 1, 20, 21, 40, 255])
    elif c < 0.9 and f["chan"]:
        j = rng.randrange(len(f["chan"]))
        f["chan"][j] = rng.choice([(1, 0), (0, 0), (0, 1 << 20), (0, 1 << 21), (0, (1 << 40) - 1), (0, 4095), (0, 4096)])
        if rng.random() < 0.7:  # the shift that matches
            f["gs"] = max(0, max(a + b for a, b in f["chan"]).bit_length() - 21)
    elif c < 0.94 and f["lpc"] is not None:
        f["lpc"] = msgpack.packb(rng.choice([[], None, [{}] * len(f["chan"]), [1] * len(f["chan"])]))
    else:
        p = f["payload"]
        f["payload"] = rng.choice([p[:len(p) // 2], p + bytes(20), b"", b"\xff" * len(p), b"\x00" * len(p)])
    return f


def mutate(data: bytes, rng: random.Random) -> bytes:
    f = parse(data)
    if f["mode"] == level3.MODE_FRONT:
        c = rng.random()
        if c < 0.3:  # the record's stages: another value of one
            record = msgpack.unpackb(f["record"], raw=False, strict_map_key=False)
            stage = rng.choice(record) if record else {}
            if stage:
                stage[rng.choice(list(stage))] = rng.choice([None, -1, 0, 1 << 40, b"", [], {}, "lpc", [[]] * 40])
            f["record"] = msgpack.packb(record, use_bin_type=True)
        elif c < 0.8:
            f["inner"] = build(mutate_fields(parse(f["inner"]), rng))
        else:
            f = mutate_fields(f, rng)
        return build(f)
    return build(mutate_fields(f, rng))


def samples() -> list[tuple[str, bytes]]:
    """Level-3 bytes of every mode and of the header's options, small."""
    from ubpe.planner.settings import configured

    rng = np.random.default_rng(29)
    sine = (np.round(300 * np.sin(np.arange(1500) / 37.0) + rng.normal(0, 20, 1500)) // 8 * 8).astype(np.int16)
    pair = np.stack([sine, np.roll(sine, 1)], 1)
    adc = (np.cumsum(rng.integers(-6, 7, 1500)) * 4 + (rng.random(1500) < 0.15) * rng.integers(1, 4, 1500)).astype(
        np.int16)
    sparse = rng.choice(np.array([-7, 3, 100, 1000, 5000]), 1000).astype(np.int32)
    u8 = (128 + 100 * np.sin(np.arange(800) / 9)).astype(np.uint8)

    def params(**named):
        p = level3.default_params(2)
        for name, v in named.items():
            p[getattr(k, "PRM_" + name.upper())] = v
        return p

    out = []
    for version in (1, 4):
        with configured(level3_version=version):
            out.append((f"v{version}", level3.encode(pair, search=False, front=None)))
    out += [("lpc_front", level3.encode(sine, search=False, front=["lpc"])),
            ("mult_front", level3.encode(adc, search=False, front=["mult"])),
            ("table", level3.encode(sparse, search=False, front=None)),
            ("raw", level3.encode(rng.integers(0, 2**50, 100).astype(np.uint64), search=False, front=None)),
            ("lpc_params", level3.encode(pair, params=params(lpc=1), front=None)),
            ("p3_lvl", level3.encode(pair, params=params(p3=16, t4=12, k3=2, lvl=1), front=None)),
            ("vmod", level3.encode(u8, params=params(vmod=1, cross=0), front=None))]
    return out


def main(n_mutations: int, seed: int) -> int:
    """Mutations of :func:`samples`, each decoded by ``level3.decode`` (the default max_values,
    the address space limited to 4 GiB): print a JSON report of those that raised anything but
    ``ubpe.CorruptDataError``."""
    import resource

    import ubpe

    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    data = samples()
    for name, d in data:
        assert build(parse(d)) == d, name
    failures, refused = [], 0
    for i in range(n_mutations):
        rng = random.Random(seed * 1_000_003 + i)
        name, d = data[i % len(data)]
        mutated = mutate(d, rng)
        try:
            level3.decode(mutated)
        except ubpe.CorruptDataError:
            refused += 1
        except Exception as e:  # noqa: BLE001 - what the test looks for
            failures.append({"sample": name, "i": i, "error": f"{type(e).__name__}: {str(e)[:200]}",
                             "data": mutated.hex()[:400]})
    print(json.dumps({"mutations": n_mutations, "refused": refused, "failures": failures}))
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2])))
