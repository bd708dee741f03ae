"""Decoding: the streams of a checked container back to its values, and the model they share."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .. import coders, encoder, frontend
from .._validate import check_int
from ..coders import floatpack, mag
from ..errors import CorruptDataError
from ..format import container
from ..format.bits import unpack_merges
from ..format.container import Parsed
from ..format.fields import Values, alphabet_values, parse_escapes
from ..frontend import CheckedChain, lpc
from ..frontend.mult import MultStage
from ..frontend._common import SIGNED, UNSIGNED, signed_bits
from ..frontend._stage import SIGNED_OF_WIDTH
from ..model import Model
from ..tokenizer import Tokenizer
from ..planner.candidates import run_threads
from .writer import model_argument

#: Coders that code text through its bytes (they need the symbols' text classes).
_TEXT_CODERS = frozenset(c.name for c in coders.REGISTRY if c.symbols == "text")


def referenced_model(p: Parsed, tokenizer: Tokenizer | Model | None) -> Model:
    """The model a referenced container names, from ``tokenizer``, its digest checked."""
    if tokenizer is None:
        raise CorruptDataError(
            f"this container references its model by digest {p.digest[:16]}...: pass the "
            "saved model with decompress(data, tokenizer=ubpe.Tokenizer.load(path))"
        )
    given = model_argument(tokenizer).digest
    if given != p.digest:
        raise CorruptDataError(
            f"the container was compressed with model {p.digest[:16]}..., but the model given is "
            f"{given[:16]}...: pass the model it was compressed with"
        )
    return model_argument(tokenizer)


def _shared_value_table(model: Model, values: Values, dtype: np.dtype) -> np.ndarray:
    """The model's cached value table in ``dtype``; a model whose values ``dtype`` cannot hold
    maps them modulo 2**bits (as every container does), and the CRC decides."""
    try:
        return model.value_table(dtype)
    except (TypeError, ValueError):
        symbols = values.to_values(np.arange(model.alphabet_size, dtype=np.int32), dtype)
        return encoder.value_table(model.expansion(), symbols)


@dataclass
class Shared:
    """What every stream of a container decodes with: the id -> value map and the model."""

    values: Values
    a: int
    vocab: int  #: alphabet + merges
    expansion: encoder.Expansion | None  #: None without merges
    model: Model | None  #: a referenced model (its value tables are cached on it)
    n: int  #: values of the whole container
    tables: dict = field(default_factory=dict)  #: embedded models' value tables by dtype
    lock: threading.Lock = field(default_factory=threading.Lock)
    classes: list = field(default_factory=list)  #: [text_classes()] once computed
    #: each thread's int64 buffer for the fused decoder's output (:meth:`int64_buffer`)
    scratch: threading.local = field(default_factory=threading.local)

    def int64_buffer(self, n: int) -> np.ndarray:
        """An int64 array of ``n`` cells, this thread's for this container: the fused decoder's
        output (:func:`ubpe.coders.mag.decode_with_lpc`), which its caller copies to the values'
        dtype before the thread decodes another block. One buffer a thread for every block of a
        call, where each block's 8 MB (2**20 values) were fresh pages (about 2 000 faults a block
        on the neural recordings joined); dropped with this object at the end of the call."""
        buf = getattr(self.scratch, "buf", None)
        if buf is None or buf.shape[0] < n:
            buf = self.scratch.buf = np.empty(n, np.int64)
        return buf[:n]

    def text_classes(self) -> np.ndarray | None:
        """The text coder's ("cmt2") class of every symbol (None when the symbols are not bytes), once
        per container: every block of a blocked one shares it."""
        with self.lock:
            if not self.classes:
                byte_sized = self.vocab == self.a and 1 <= self.a <= 256
                ids = np.arange(self.a, dtype=np.int32)
                self.classes.append(coders.text_classes(self.values.to_values(ids, np.dtype(np.int64)))
                                    if byte_sized else None)
            return self.classes[0]

    def value_table(self, coded: np.dtype) -> np.ndarray | None:
        """The value of every token in ``coded`` (None when mapping ids after expanding is cheaper)."""
        if self.model is not None:  # a shared model: its value table is cached across windows
            return _shared_value_table(self.model, self.values, coded)
        if self.expansion.values.shape[0] > self.n:  # the table would cost more than the output
            return None
        with self.lock:
            table = self.tables.get(coded.str)
            if table is None:
                symbols = self.values.to_values(np.arange(self.a, dtype=np.int32), coded)
                table = self.tables[coded.str] = encoder.value_table(self.expansion, symbols)
        return table


_NO_MERGES = np.zeros((0, 2), np.int32)  # (only its length is read)


def shared(p: Parsed, tokenizer: Tokenizer | Model | None) -> Shared:
    """The alphabet and model of a parsed container (a referenced one from ``tokenizer``)."""
    model = None
    if p.digest is not None:
        model = referenced_model(p, tokenizer)
        values = alphabet_values(model.alphabet)
        a = model.alphabet_size
        merges = model.merges
        if a + len(merges) > coders.MAX_VOCAB:
            raise CorruptDataError("the referenced model has more tokens than a container allows")
        expansion = model.expansion() if len(merges) else None
    else:
        values, a = p.values, p.a
        merges = unpack_merges(p.merges_raw, p.m, max(a, 1)) if p.m else _NO_MERGES
        expansion = None
        if p.m:
            try:
                expansion = encoder.build_expansion(
                    merges, a, max_table_values=min(encoder.DEFAULT_MAX_TABLE_VALUES, max(4 * p.n, 1 << 16))
                )
            except ValueError as e:
                raise CorruptDataError(f"model: {e}") from None
    return Shared(values, a, a + len(merges), expansion, model, p.n)


def stream_values(s: Shared, stream: Any, esc: Any, chain: list[dict], n: int, channels: int,
                   native: np.dtype, dst: np.ndarray | None = None) -> np.ndarray | None:
    """The ``(channels, n // channels)`` values (``native``, the chain inverted) of one checked
    stream, its tokens expanding to exactly ``n`` values; None for ``n = 0`` (once checked).
    ``dst``: where a decoder that writes frame-major may put them (``(n // channels,
    channels)``, C-contiguous, ``native``; then the result is its transposed view), or None."""
    fused = _fused_values(s, stream, esc, chain, n, channels, native, dst)
    if fused is not None:
        return fused.reshape(channels, -1)
    coder = stream.get("coder") if isinstance(stream, dict) else None
    # (a str only: a corrupt "coder" may be any msgpack value, unhashable ones included)
    classes = s.text_classes() if isinstance(coder, str) and coder in _TEXT_CODERS else None
    tokens = coders.decode_stream(stream, max(s.vocab, 1), max_count=n, classes=classes)
    if tokens.shape[0] and s.a == 0:
        raise CorruptDataError("stream: tokens over an empty alphabet")
    dtypes = frontend.chain_dtypes(chain, native)
    coded = dtypes[-1]  # the dtype the tokens decode to
    if s.expansion is None:
        total = tokens.shape[0]
    else:
        try:
            total = encoder.expanded_length(tokens, s.expansion)
        except ValueError as e:
            raise CorruptDataError(f"stream: {e}") from None  # 2**61 values or more
    if total != n:
        raise CorruptDataError(f"stream: the tokens expand to {total} values, the shape declares {n}")
    if n == 0:
        return None
    if s.expansion is None:
        out = s.values.to_values(tokens, coded)
    else:
        table = s.value_table(coded)
        if table is not None:
            out = encoder.decode(tokens, s.expansion, values=table)
        else:
            out = s.values.to_values(encoder.decode(tokens, s.expansion), coded)
    if esc is not None:
        positions, escaped = parse_escapes(esc, n, coded)
        if not out.flags.writeable:
            out = out.copy()
        out[positions] = escaped
    out = out.reshape(channels, -1)
    if chain:
        with np.errstate(over="ignore", invalid="ignore"):  # a corrupt quantizer: the CRC decides
            out = frontend.inverse(out, chain, native, dtypes)
    return out


#: Float stages whose inverse reads only the values of its integers (any integer dtype holding
#: them gives the same floats): behind one, the fused path's int64 output goes to it directly.
_FUSED_FLOAT_STAGES = frozenset(("quantize", "floatgrid", "floatdec", "floatbin"))


_ZERO_SHIFT = np.zeros(1, np.int64)


#: The "mult" stage whose inverse the fused path calls (its params carry everything).
_MULT = MultStage()


def _fused_values(s: Shared, stream: Any, esc: Any, chain: list[dict], n: int, channels: int,
                  native: np.dtype, dst: np.ndarray | None = None) -> np.ndarray | None:
    """Level 1's usual signal stream, a "mag" stream of bare alphabet ids behind one LPC stage
    (alone, or after one float stage of :data:`_FUSED_FLOAT_STAGES` or "mult") or one delta stage
    of order 1 or 2 (alone, or after "mult"), decoded and reconstructed in one pass (:func:`ubpe.coders.mag.decode_with_lpc`): the
    ``n`` values (``channels`` rows of ``n // channels`` frames, flattened) in ``native``
    (after the float stage's inverse, when there is one); None for any other stream (then
    decoded stage by stage, as the same values). The chain "rank" then "delta" gives the
    ``(channels, frames)`` transposed view of a frame-major array, ``dst`` when given
    (:func:`_fused_ranks`)."""
    if (esc is not None or s.expansion is not None or s.a == 0 or not chain
            or not isinstance(stream, dict) or stream.get("n") != n or n == 0):
        return None
    if stream.get("coder") != "mag":
        return _fused_lpc_tokens(s, stream, chain, n, channels, native)
    last = chain[-1]
    if last["stage"] == "delta" and len(chain) == 1 and last["order"] in lpc.DELTA_AS_LPC:
        coded = SIGNED_OF_WIDTH[native.itemsize]
        values = mag.decode_with_lpc(stream, s.a, s.values.table, s.values.lo, 8 * coded.itemsize,
                                     _delta_as_lpc(last["order"], n, channels), out=s.int64_buffer(n))
        out = values.astype(coded)  # (a copy: the buffer is free again)
        return out if out.dtype == native else out.view(native)
    if last["stage"] == "delta" and len(chain) == 2 and chain[0]["stage"] == "rank" and last["order"] in lpc.DELTA_AS_LPC:
        return _fused_ranks(s, stream, chain, n, channels, native, dst)
    if last["stage"] == "delta" and len(chain) == 2 and chain[0]["stage"] == "mult" and last["order"] in lpc.DELTA_AS_LPC:
        return _mult_joined(s, stream, chain, _delta_as_lpc(last["order"], n, channels), n, channels, native)
    if last["stage"] != "lpc":
        return None
    fused = lpc.fused_params(last)  # (checked by parse_chain)
    if fused is None:  # channels carried differently (never written): stage by stage
        return None
    parsed, unsigned = fused
    if len(chain) == 1:
        coded = SIGNED_OF_WIDTH[native.itemsize]  # the lpc stage's output: the signed dtype of the width
        values = mag.decode_with_lpc(stream, s.a, s.values.table, s.values.lo, 8 * coded.itemsize, parsed,
                                     out=s.int64_buffer(n))
        out = values.astype(coded)  # exact: every sample is wrapped to the width already (a copy)
        if unsigned == UNSIGNED:
            out = signed_bits(out, UNSIGNED)  # undo the offset of unsigned input
        return out if out.dtype == native else out.view(native)
    if len(chain) == 2 and chain[0]["stage"] == "mult" and unsigned == SIGNED:
        return _mult_joined(s, stream, chain, parsed, n, channels, native)
    if len(chain) != 2 or chain[0]["stage"] not in _FUSED_FLOAT_STAGES or unsigned != SIGNED:
        return None
    # the float stage's output (the lpc stage's input) is the signed integer of its checked
    # "width": the int64 reconstruction holds exactly those values
    values = mag.decode_with_lpc(stream, s.a, s.values.table, s.values.lo, chain[0]["width"], parsed)
    with np.errstate(over="ignore", invalid="ignore"):  # a corrupt quantizer: the CRC decides
        return frontend.inverse(values.reshape(channels, -1), chain[:1], native)


def _mult_joined(s: Shared, stream: dict, chain: list[dict], parsed: list, n: int, channels: int,
                 native: np.dtype) -> np.ndarray | None:
    """:func:`_fused_values` of a "mag" stream behind "mult" then one LPC stage (``parsed``: its
    channels' params as :func:`ubpe.frontend.lpc.fused_params` gives them, or a delta's as an LPC
    of fixed coefficients): the quotients reconstructed in one pass, then joined to their digits
    (decoded when the chain was checked) straight into the values' width (no tokens, no copies
    between the stages: a PLUX recording decoded in about half the time); None when the chain
    was not checked (then stage by stage)."""
    if type(chain) is not CheckedChain:
        return None
    coded = SIGNED_OF_WIDTH[native.itemsize]  # "mult"'s output, and the LPC stage's
    values = mag.decode_with_lpc(stream, s.a, s.values.table, s.values.lo, 8 * coded.itemsize, parsed,
                                 out=s.int64_buffer(n))
    return _joined_to_digits(values.reshape(channels, -1), chain, native)


def _joined_to_digits(rows: np.ndarray, chain: CheckedChain, native: np.dtype) -> np.ndarray:
    """The values of a checked chain "mult" then one LPC stage from the quotients ``rows``
    (int64, ``(channels, frames)``, each wrapped to the values' width): joined to the digits
    the check decoded, straight into the values' width, as ``native``."""
    out = _MULT.inverse_into(rows, chain.params[0], np.empty(rows.shape, SIGNED_OF_WIDTH[native.itemsize]))
    return out if out.dtype == native else out.view(native)


def _delta_as_lpc(order: int, n: int, channels: int) -> list[tuple]:
    """A delta of order 1 or 2 as the fused decoder's LPC params, one block per channel of
    ``n // channels`` frames: an LPC of fixed coefficients (sample 0 as is, sample 1 plus the one
    before for both orders, then the running sums' recurrence)."""
    coefs = lpc.DELTA_AS_LPC[order]
    return [(max(n // channels, 1), np.full(1, coefs.shape[0], np.int64), _ZERO_SHIFT, coefs)] * channels


def _fused_lpc_tokens(s: Shared, stream: dict, chain: list[dict], n: int, channels: int,
                      native: np.dtype) -> np.ndarray | None:
    """:func:`_fused_values` of a stream of another coder than "mag" (not a text coder) behind
    one LPC stage, alone or after one float stage of :data:`_FUSED_FLOAT_STAGES` (level 1's
    short float series, their tokens coded by "rans") or "mult": the tokens decoded, their values
    taken as int64 and the LPC inverted on them in place (:func:`ubpe.frontend.lpc.reconstruct_rows`),
    then the first stage's inverse; the values stage by stage gives, without the narrow
    dtype's copies and casts between the stages. None for any other chain."""
    coder = stream.get("coder")
    last = chain[-1]
    if not isinstance(coder, str) or coder in _TEXT_CODERS or last["stage"] != "lpc" or len(chain) > 2:
        return None
    fused = lpc.fused_params(last)  # (checked by parse_chain)
    if fused is None:
        return None
    parsed, unsigned = fused
    joined = len(chain) == 2 and chain[0]["stage"] == "mult" and type(chain) is CheckedChain
    if len(chain) == 2 and (chain[0]["stage"] not in _FUSED_FLOAT_STAGES and not joined or unsigned != SIGNED):
        return None
    tokens = coders.decode_stream(stream, max(s.vocab, 1), max_count=n)
    if tokens.shape[0] != n:
        raise CorruptDataError(f"stream: the tokens expand to {tokens.shape[0]} values, the shape declares {n}")
    values = s.values.to_values(tokens, _INT64)  # (a fresh array: ids.astype or np.take)
    rows = values.reshape(channels, -1)
    if len(chain) == 1:
        coded = SIGNED_OF_WIDTH[native.itemsize]  # the lpc stage's output: the signed dtype of the width
        lpc.reconstruct_rows(rows, parsed, 8 * coded.itemsize)
        out = values.astype(coded)  # exact: every sample is wrapped to the width already
        if unsigned == UNSIGNED:
            out = signed_bits(out, UNSIGNED)  # undo the offset of unsigned input
        return out if out.dtype == native else out.view(native)
    if joined:  # "mult" then "lpc": the quotients reconstructed, joined to their digits
        lpc.reconstruct_rows(rows, parsed, 8 * native.itemsize)
        return _joined_to_digits(rows, chain, native)
    # the float stage's output (the lpc stage's input) is the signed integer of its checked
    # "width": the int64 reconstruction holds exactly those values
    lpc.reconstruct_rows(rows, parsed, chain[0]["width"])
    dtypes = frontend.chain_dtypes(chain, native)[:2]  # (found by parse_chain)
    with np.errstate(over="ignore", invalid="ignore"):  # a corrupt quantizer: the CRC decides
        return frontend.inverse(rows, chain[:1], native, dtypes)


_INT64 = np.dtype(np.int64)


def _fused_ranks(s: Shared, stream: dict, chain: list[dict], n: int, channels: int,
                 native: np.dtype, dst: np.ndarray | None = None) -> np.ndarray | None:
    """:func:`_fused_values` of the chain "rank" then "delta" of order 1 or 2 (level 1's neural
    recordings): the ranks decoded, their deltas summed and each channel's distinct values looked
    up in one pass (:func:`ubpe.coders.mag.decode_with_ranks`), written frame-major to ``dst``
    (``(n // channels, channels)``, C-contiguous, ``native``: a block's rows of the caller's
    output) or a new array; returned as its ``(channels, frames)`` transposed view. The values
    stage by stage gives, without the int64 signal, its narrowing, the rank lookup and the
    transposition."""
    tables = getattr(chain[0]["channels"], "parsed", None)  # the rank stage's values, checked
    if tables is None or len(tables) != channels:
        return None
    frames = n // channels
    dtypes = frontend.chain_dtypes(chain, native)  # native, the ranks' (unsigned), the deltas' (signed)
    if dst is None:
        dst = np.empty((frames, channels), native)
    tables = [t.view(native) if t.dtype.itemsize == native.itemsize else t.astype(native) for t in tables]
    mag.decode_with_ranks(stream, s.a, s.values.table, s.values.lo, 8 * dtypes[2].itemsize, chain[1]["order"],
                          tables, dst.reshape(-1))
    return dst.T


def decode_stream_form(p: Parsed, tokenizer: Tokenizer | Model | None) -> np.ndarray:
    """The values of a one-stream container, its CRC verified."""
    native = p.native
    coder = p.stream.get("coder")
    if coder == "floatpack":  # the float values themselves, flat in C order, native (checked by parse)
        out = floatpack.decode_values(p.stream, native, p.n)
    else:
        if isinstance(coder, str) and coder in coders.VALUE_CODERS:  # the values themselves (level 3; checked by parse)
            from ..coders import mixsignal

            out = mixsignal.decode_values(p.stream, native, p.shape, p.n)
        else:
            out = stream_values(shared(p, tokenizer), p.stream, p.esc, p.chain, p.n, p.channels, native)
        if out is None:
            out = np.zeros(0, dtype=native)
        else:
            out = np.ascontiguousarray(frontend.from_channels(out, p.shape)).reshape(-1)
        if out.dtype != native:
            out = out.view(native)
    if container.values_crc(p.dtype, p.shape, out) != p.crc:
        raise CorruptDataError("checksum mismatch: the container is corrupt")
    out = out.reshape(p.shape)
    return out.astype(p.dtype) if native != p.dtype else out


def frame_range(start: Any, stop: Any, frames: int) -> tuple[int, int]:
    """``decompress``'s ``start``, ``stop`` as a frame range, with slice semantics."""
    for name, v in (("start", start), ("stop", stop)):
        if v is not None:
            check_int(name, v, -(1 << 63), 1 << 63)
    lo, hi, _ = slice(start, stop).indices(frames)
    return lo, max(hi, lo)


def decode_blocks(p: Parsed, tokenizer: Tokenizer | Model | None, start: int, stop: int,
                  threads: int, progress: Callable[[int], None] | None = None) -> np.ndarray:
    """Frames ``[start, stop)`` of a blocked container read whole, decoding only the blocks they
    touch; ``progress(frames)`` after each block, on the thread that decoded it."""
    native = p.native
    channels = p.channels
    first, last = start // p.block, -(-stop // p.block)
    blocks = [container.parse_block(p, b) for b in range(first, last)]
    s = shared(p, tokenizer)
    out = np.empty((stop - start, channels), dtype=native)

    def decode(blk: container.Block) -> None:
        lo, hi = max(blk.f0, start), min(blk.f1, stop)
        whole = lo == blk.f0 and hi == blk.f1  # a frame-major decoder may write the block in place
        dst = out[lo - start:hi - start] if whole else None
        rows = decode_block(p, s, blk, native, channels, dst)
        if dst is None or not np.may_share_memory(rows, dst):
            out[lo - start:hi - start] = rows[lo - blk.f0:hi - blk.f0]
        if progress is not None:
            progress(hi - lo)

    run_threads(decode, blocks, threads)
    out = out.reshape((stop - start,) + tuple(p.shape[1:]))
    return out.astype(p.dtype) if native != p.dtype else out


def decode_block(p: Parsed, s: Shared, blk: container.Block, native: np.dtype, channels: int,
                 dst: np.ndarray | None = None) -> np.ndarray:
    """A checked block's frames, ``(F_b, C)`` in ``native``, its CRC verified; ``dst``: as
    :func:`stream_values` takes it (``(F_b, C)``), which the frames may then be a view of."""
    try:
        y = stream_values(s, blk.stream, blk.esc, blk.chain, (blk.f1 - blk.f0) * channels, channels, native, dst)
        rows = y.T if y.dtype == native else y.T.view(native)
        if container.block_crc(p.dtype, p.shape, blk.f0, rows) != blk.crc:
            raise CorruptDataError("checksum mismatch")
    except CorruptDataError as e:
        raise CorruptDataError(f"block {blk.number} (frames {blk.f0} to {blk.f1}): {e}") from None
    return rows

