"""What a container holds, without decoding it: :func:`describe` and its :class:`ContainerInfo`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import msgpack

from .. import frontend
from ..coders import VALUE_CODERS, check_stream
from ..errors import CorruptDataError
from ..frontend.floats import Quantizer
from .container import FORMAT_VERSION, compact, parse, parse_block
from .fields import parse_escapes

__all__ = ["ContainerInfo", "describe"]

_NO_CAP = 1 << 256


@dataclass(frozen=True)
class ContainerInfo:
    """What :func:`describe` reports. Sizes are in bytes; ``header + model + freq + payload == size``."""

    version: int
    dtype: str
    shape: tuple[int, ...]
    n_values: int
    original_size: int  #: bytes of the values (n_values x itemsize)
    size: int  #: bytes of the container
    header: int  #: everything but the three parts below (magic, dtype, shape, front, crc, ...)
    model: int  #: the embedded alphabet and merge table (0 when referenced by digest)
    freq: int  #: the entropy coder's frequency table
    payload: int  #: the coded tokens
    #: the compression ratio: ``file_size`` (else ``original_size``) / ``size``, the ratio the
    #: command line prints for the same container
    ratio: float
    embedded: bool
    digest: str | None  #: the referenced model's digest, when not embedded
    alphabet_size: int | None
    n_merges: int | None
    coder: str
    n_tokens: int  #: tokens in the stream
    delta: int = 0  #: order of the front end when it is one delta stage, else 0
    front: tuple[dict[str, Any], ...] = ()  #: the front-end chain, stages in the order applied
    channels: int = 1  #: channels the front end ran on
    source: dict[str, Any] | None = None  #: the source metadata given to compress
    #: whether decompress returns approximations (the chain starts with "quantize"): floats
    #: within the quantizer's bound of the values given to compress, not those values
    lossy: bool = False
    #: the lossy chain's ``Quantizer.to_dict()`` (step, offset, dtype), else None
    quantizer: dict[str, Any] | None = None
    #: values outside a shared model's alphabet, stored beside the stream (``compress(escape=)``)
    escapes: int = 0
    #: bytes of the escaped values and their positions (part of ``header``)
    escape_bytes: int = 0
    #: how the writer encoded the tokens: "replay" (also for no merges), "optimal" or "bits"
    #: (the informational ``method`` field; decoding does not depend on it)
    method: str = "replay"
    #: streams: 1, or the blocks of a blocked container
    blocks: int = 1
    #: frames per block of a blocked container (the last may hold fewer), else 0
    block_frames: int = 0
    #: each stream's coder, in block order (``coder`` is the most frequent of them); for a
    #: blocked container ``front`` is block 0's chain (every block has its own parameters)
    coders: tuple[str, ...] = ()
    #: bytes of the file the values were read from (the source map's ``"size"``, which the
    #: command line records: the file ``ubpe decompress`` gives back), else None
    file_size: int | None = None
    #: streams of channel groups of a grouped container (``ubpe/api/groups.py``), else 1
    groups: int = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def describe(data: bytes | bytearray | memoryview) -> ContainerInfo:
    """Describe an ordinary container (``ubpe.describe`` also reads window containers) without decoding it: sizes of its parts, ratio, front end, source.

    The fields are validated as by :func:`decompress` (except the model's merge table, the
    token stream and the checksum, which only decoding checks); malformed input raises
    ``CorruptDataError``. No output-size cap applies.
    """
    p = parse(data, _NO_CAP)
    d = p.fields
    native = p.native
    channels = p.channels

    def entry(mapping: dict, key: str) -> int:
        """Bytes of the field ``key`` of ``mapping`` as written (key and value; 0 when absent or
        left out): the one-entry map's size less its one-byte header."""
        if key not in mapping:
            return 0
        return len(msgpack.packb(compact({key: mapping[key]}, None), use_bin_type=True)) - 1

    if not p.block:
        streams = [(p.stream, p.fields, p.chain, p.n)]
    else:
        blocks = [parse_block(p, b) for b in range(p.n_blocks)]
        streams = [(blk.stream, {} if blk.esc is None else {"esc": blk.esc}, blk.chain,
                    (blk.f1 - blk.f0) * channels) for blk in blocks]
    names: list[str] = []
    n_tokens = freq = payload = escapes = escape_bytes = 0
    for b, (s, fields, chain, n) in enumerate(streams):
        try:
            coder = check_stream(s)[0].name
        except CorruptDataError as e:
            raise CorruptDataError(f"{f'block {b}: ' if p.block else ''}stream: {e}") from None
        names.append(coder)
        n_tokens += s["n"]
        freq += entry(s, "freq") + entry(s, "table")  # "mag" keeps its tables in "table"
        payload += entry(s, "payload") + entry(s, "raw")  # and its raw low bits in "raw"
        if "esc" in fields:
            positions, _ = parse_escapes(fields["esc"], n, frontend.chain_dtypes(chain, native)[-1])
            escapes += int(positions.shape[0])
            escape_bytes += entry(fields, "esc")
    coder = max(names, key=names.count)  # the most blocks' (ties: the earliest)
    model = entry(d, "alphabet") + entry(d, "model")
    size = len(data)
    original = p.n * p.dtype.itemsize
    recorded = p.source.get("size") if isinstance(p.source, dict) else None
    file_size = recorded if type(recorded) is int and recorded >= 0 else None
    chain = streams[0][2]
    delta = chain[0]["order"] if len(chain) == 1 and chain[0]["stage"] == "delta" else 0
    lossy = bool(chain) and chain[0]["stage"] == "quantize"
    quantizer = None
    if lossy:
        quantizer = Quantizer(chain[0]["step"], chain[0]["offset"], p.dtype.str).to_dict()
    return ContainerInfo(
        version=FORMAT_VERSION, dtype=p.dtype.str, shape=p.shape, n_values=p.n, original_size=original,
        size=size, header=size - model - freq - payload, model=model, freq=freq, payload=payload,
        ratio=(original if file_size is None else file_size) / size if size else 0.0, embedded=p.digest is None, digest=p.digest,
        alphabet_size=p.a, n_merges=p.m, coder=coder, n_tokens=n_tokens, delta=delta,
        front=tuple(dict(e) for e in chain), channels=channels, source=p.source,
        lossy=lossy, quantizer=quantizer, escapes=escapes, escape_bytes=escape_bytes,
        # a model with merges, one token per value and no method recorded: the merges left unused
        method="bare" if p.method == "replay" and (p.m is None or p.m > 0) and n_tokens == p.n and p.n > 0
        and coder not in VALUE_CODERS else p.method,
        blocks=len(streams), block_frames=p.block, coders=tuple(names), file_size=file_size,
    )

