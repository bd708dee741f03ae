"""Building containers: the fields of a planned candidate or of a given model, and the blocked form.

This is where the planner meets the format: :func:`candidate_fields` packs a planner candidate
into the container's named fields and gives its exact size (the costing function the planner
searches with); :func:`given_model_fields` codes values with a model the caller gave;
:func:`blocked_parts` writes a long input as blocks that share one model.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import msgpack
import numpy as np

from .. import _memo, coders, frontend
from ..alphabet import Alphabet, distinct
from ..format import container
from ..format.fields import alphabet_field, alphabet_values, escape_field, escaped_ids, model_field
from ..frontend.chains import build_chain
from ..frontend.mult import detection_cache
from ..model import Model
from ..planner import Candidate, Cost, ReplayEncoder, Settings, auto_chains, choose_method, level1_chains, plan
from ..planner import settings as planner_settings
from ..planner.candidates import run_threads
from ..planner.fast import applies as fast_applies, fast_stages, with_settings
from ..tokenizer import Tokenizer

#: ``compress(block_size=None)``: values per block. Inputs of more values are cut into blocks of
#: ``max(1, block_size // channels)`` frames, coded independently with one shared model.
DEFAULT_BLOCK_SIZE = 1 << 20
#: The default for inputs of one byte per value (text, bytes): their adaptive coders learn over
#: the whole stream, and blocks of 2**20 bytes cost 5 % on 2.5 MB of English text (level 2) and
#: 15 % at level 1 (benchmarks/bench_text_compress.py), against 0.4 % on signals.
DEFAULT_BYTE_BLOCK_SIZE = 1 << 26
#: Coders that code text through its bytes (they need the symbols' text classes).
_TEXT_CODERS = frozenset(c.name for c in coders.REGISTRY if c.symbols == "text")


def model_argument(tokenizer: Any) -> Model:
    """The :class:`Model` of ``compress``'s / ``decompress``'s ``tokenizer`` argument."""
    if isinstance(tokenizer, Model):
        return tokenizer
    if isinstance(tokenizer, Tokenizer):
        return tokenizer.model  # raises NotFittedError first
    raise TypeError(f"tokenizer must be a ubpe.Tokenizer or a ubpe.Model, got {type(tokenizer).__name__}")


def delta_chain(order: int) -> list[frontend.Stage]:
    """The chain of one delta stage of ``order`` (none for 0)."""
    return [frontend.stage("delta", order=order)] if order else []


def forced_chains(forced: tuple | None, order: int | None) -> list[list[frontend.Stage]] | None:
    """The one chain ``predictor=`` or ``delta=`` forces, or None (the automatic choice)."""
    if forced is not None:
        return [build_chain(forced)]
    return [delta_chain(order)] if order is not None else None


# ============================================================================ one stream


def candidate_fields(base: dict, c: Candidate, memo: dict | None = None,
                     rate_sample_above: int | None = None, planned_whole: bool = True) -> dict[str, Any]:
    """The container fields of a planner candidate (built once, cached on it). With ``memo`` (a
    dict kept for one ``compress`` call), a candidate equal to one built before (the same
    fields besides the stream, coders offered and token stream: the planner's screen and its
    proposals often build the same one) takes that one's fields without coding its stream again
    (``memo`` holds candidates of one ``base``). ``rate_sample_above``: the coders' option
    (:func:`ubpe.coders.encode_stream`; level 1's ``Settings.fast_mag_rate_sample``).
    ``planned_whole``: the values planned are all of the input's, so that a candidate built on
    all of them (:attr:`Candidate.whole`) is a stream coded whole (False: a sample of windows,
    the blocked writer's; the same ``memo`` for one value of it)."""
    if c.packed is None:
        a = len(c.alphabet)
        fields = {**base, "front": base.get("front", []) + c.chain, "alphabet": alphabet_field(c.alphabet),
                  "model": model_field(c.merges, a)}
        if c.method != "replay":
            fields["method"] = c.method
        key = tokens = None
        if memo is not None:  # (``base`` is the same for every candidate of one call: not in the key)
            tokens = np.ascontiguousarray(c.tokens)
            key = _memo_key(c, fields, tokens)
            found = _memo.lookup(memo, key, tokens)
            if found is not None:
                c.packed = found
                return c.packed[0]
        text = _TEXT_CODERS & set(c.coders)
        # (more than 256 symbols are no bytes: not their values copied to learn it)
        classes = coders.text_classes(c.alphabet.values) if text and not len(c.merges) and a <= 256 else None
        stream = coders.encode_stream(c.tokens, max(a + len(c.merges), 1), coders=c.coders, classes=classes,
                                      rate_sample_above=rate_sample_above, mag_stats=c.mag_stats,
                                      whole=c.whole and planned_whole)
        if classes is not None and "cms2" in c.coders and np.dtype(base["dtype"]).itemsize > 1 \
                and planner_settings.current().grid_divided:
            stream = _signal_stream(c, stream, c.whole and planned_whole)
        fields["stream"] = stream
        fields["crc"] = fields.pop("crc")  # the checksum last, as in every container
        # the stream grows with the values, and so do the payloads of stages that code data
        # in their params ("mult"'s digits): the planner scales both when it sizes a sample
        grows = len(msgpack.packb(stream, use_bin_type=True)) + frontend.growing_bytes(c.chain)
        wire = container.pack(fields)  # (kept: the container of the candidate that wins, not packed again)
        c.packed = (fields, Cost(len(wire), grows), wire)
        if key is not None:
            _memo.store(memo, key, tokens, c.packed, MEMO_HELD_BYTES, copy=False)
    return c.packed[0]


#: The token bytes a :func:`candidate_fields` memo holds by reference; beyond, its candidates are
#: kept by digest (:mod:`ubpe._memo`; a BLAKE2b of every token took ~0.9 ms per 108 000)
MEMO_HELD_BYTES = 1 << 26


def _memo_key(c: Candidate, fields: dict, tokens: np.ndarray) -> tuple:
    """A :func:`candidate_fields` memo's key for ``c``: everything but its tokens' content (the
    fields but the stream, the coders offered, the tokens' dtype and shape, whether they are
    coded whole: :attr:`Candidate.whole`); candidates alike in
    all of it are told apart by their tokens (:func:`ubpe._memo.lookup`), by reference (a costed
    candidate's tokens are never changed, its packed fields are theirs) up to
    :data:`MEMO_HELD_BYTES` held, else by digest. One entry a candidate coded."""
    described = msgpack.packb([fields["front"], fields["alphabet"], fields["model"], fields.get("method")],
                              use_bin_type=True)
    return described, tuple(c.coders), tokens.dtype.str, tokens.shape, c.whole


def _signal_stream(c: Candidate, stream: dict, whole: bool) -> dict:
    """``stream`` (a candidate's tokens coded with its alphabet's text classes: its values are
    bytes) or, when smaller, the same tokens coded by "cms2" (defined for any stream, offered
    only without text classes), for values wider than a byte whose chain's output happens to
    be bytes: a grid's indices (12-bit codes left-justified in 16 bits, values * 422 in int16)
    are the signal divided, not text. 1 804 values of a walk times 422 plus 589 in int16,
    level 2: 803 B, "cmt2" on the grid's indices 875 B of stream; "cms2" 729 B, the container
    780 B (the walk itself: 759 B)."""
    signal = coders.encode_stream(c.tokens, max(len(c.alphabet) + len(c.merges), 1), coders=("cms2",), whole=whole)
    return signal if len(msgpack.packb(signal)) < len(msgpack.packb(stream)) else stream


def _rate_sample(level: int, s: Settings) -> int | None:
    """The "mag" coder's ``rate_sample_above`` at ``level``: level 1's ``s.fast_mag_rate_sample``,
    else the coders' own."""
    return s.fast_mag_rate_sample if level == 1 else None


def cost_function(base: dict, memo: dict | None = None, rate_sample_above: int | None = None,
                  planned_whole: bool = True) -> Callable[[Candidate], Cost]:
    """The format's costing function for the planner: exact packed sizes (``memo``,
    ``planned_whole``: see :func:`candidate_fields`)."""

    def cost(c: Candidate) -> Cost:
        candidate_fields(base, c, memo, rate_sample_above, planned_whole)
        return c.packed[1]

    return cost


#: The last :func:`_fast_methods` result, with the settings it was made from.
_FAST_METHODS: tuple[Settings, Settings] | None = None


def _fast_methods(s: Settings) -> Settings:
    """``s`` with ``encode_methods`` set to its ``fast_encode_methods`` (level 1's plan by
    estimates). ``Settings`` are frozen, so the copy made for the same object is kept and given
    again (a ``dataclasses.replace`` of its hundred fields took about 0.1 ms a ``compress``)."""
    global _FAST_METHODS
    kept = _FAST_METHODS
    if kept is not None and kept[0] is s:
        return kept[1]
    methods = dataclasses.replace(s, encode_methods=s.fast_encode_methods)
    _FAST_METHODS = (s, methods)  # (one assignment: another thread sees the old pair or this one)
    return methods


def planned_fields(base: dict, x: np.ndarray, chains: list[list[frontend.Stage]], level: int,
                   n_tokens: int | None, fit_options: dict, s: Settings, threads: int) -> dict[str, Any]:
    """The fields of the smallest container the planner finds for ``x`` (``(channels, frames)``
    integers) over ``chains``."""
    return _planned(base, x, chains, level, n_tokens, fit_options, s, threads).packed[0]


def planned_container(base: dict, x: np.ndarray, chains: list[list[frontend.Stage]], level: int,
                      n_tokens: int | None, fit_options: dict, s: Settings, threads: int) -> bytes:
    """``container.pack(planned_fields(...))``: the container its costing packed already (the
    fields are not changed once costed), not packed again."""
    return _planned(base, x, chains, level, n_tokens, fit_options, s, threads).packed[2]


def _planned(base: dict, x: np.ndarray, chains: list[list[frontend.Stage]], level: int,
             n_tokens: int | None, fit_options: dict, s: Settings, threads: int) -> Candidate:
    """:func:`planned_fields`' candidate, its fields built (``packed``: fields, cost, container)."""
    proposer = ReplayEncoder(n_tokens, fit_options, s)
    # candidates costed in this call, by content; none at level 1's plan by estimates, which codes
    # each candidate once (the memo compares tokens only between candidates alike in all else)
    fast = level == 1 and fast_applies(x, proposer, s)
    memo: dict | None = None if fast else {}
    cost = cost_function(base, memo, _rate_sample(level, s))
    methods = _fast_methods(s) if fast else s
    best = choose_method(plan(x, chains, level, cost, proposer, s, threads=threads), cost, methods)
    # never larger than level 1: level 1's container, kept when smaller (unless the search's
    # estimate of it is more than level1_within times level 2's container)
    if level == 2 and (best.level1_estimate <= s.level1_within * cost(best).size or x.size <= s.level1_always_upto):
        one = choose_method(plan(x, level1_chains(chains), 1, cost, proposer, s, threads=threads), cost, s)
        if cost(one).size < cost(best).size:
            best = one
    candidate_fields(base, best, memo, _rate_sample(level, s))
    return best


def empty_fields(base: dict, x: np.ndarray, chain: list[frontend.Stage], level: int) -> dict[str, Any]:
    """The fields of a container of no values (its chain recorded as it runs on nothing)."""
    record = frontend.forward(x, chain)[1]
    empty = Candidate(record, Alphabet([]), np.zeros((0, 2), np.int32), np.zeros(0, np.int32),
                      coders.coders_for(level))
    return candidate_fields(base, empty)


def given_model_input(x: np.ndarray, model: Model, chain: list, escape: bool = False
                      ) -> tuple[np.ndarray, list, bytes | None]:
    """``x`` (``(channels, frames)``) through ``chain`` as ids of ``model``'s alphabet: (the ids,
    flat int, the chain's front record, the ``esc`` field of the values outside the alphabet or
    None). Values outside it are escaped (``escape``) or refused with ValueError."""
    alphabet = model.alphabet
    alphabet_values(alphabet)  # refuses an alphabet of symbols
    y, record = frontend.forward(x, chain)
    escaped = None
    flat = y.reshape(-1)
    if not flat.size:
        return np.zeros(0, dtype=np.int32), record, None
    if escape and len(alphabet):
        ids, positions = escaped_ids(alphabet, flat)
        if positions.size:
            escaped = escape_field(flat, positions)
    else:
        ids = alphabet.to_ids(flat)
    return ids, record, escaped


def given_model_fields(base: dict, x: np.ndarray, model: Model, chain: list, embed: bool,
                       level: int, escape: bool = False, bare: bool = False,
                       prepared: tuple[np.ndarray, list, bytes | None] | None = None) -> dict[str, Any]:
    """The fields of ``x`` (``(channels, frames)``) encoded with a given model, no choice made
    but the coder: its merges (``bare``: none of them, tokens below the alphabet size decode as
    themselves), values outside its alphabet escaped (``escape``) or refused. ``prepared``:
    :func:`given_model_input` of the same ``x``, ``model``, ``chain`` and ``escape``, when the
    caller codes them twice (with and without the merges)."""
    merges = model.merges
    alphabet = model.alphabet
    a = len(alphabet)
    if a + len(merges) > coders.MAX_VOCAB:
        raise ValueError(f"the model has {a + len(merges)} tokens; a container holds at most {coders.MAX_VOCAB}")
    ids, record, escaped = given_model_input(x, model, chain, escape) if prepared is None else prepared
    tokens = model.encode(ids) if ids.size and len(merges) and not bare else ids  # by the model's method
    fields = {**base, "front": base.get("front", []) + record}
    if escaped is not None:
        fields["esc"] = escaped
    if embed:
        fields["alphabet"] = alphabet_field(alphabet)
        fields["model"] = model_field(merges, a)
    else:
        fields["digest"] = bytes.fromhex(model.digest)
    if len(merges) and model.method != "replay" and not bare:
        fields["method"] = model.method  # bare tokens: nothing written (describe infers it, 12 bytes saved)
    offered = coders.coders_for(level)
    use_merges = len(merges) and not bare
    classes = coders.text_classes(alphabet.values) if _TEXT_CODERS & set(offered) and not use_merges else None
    fields["stream"] = coders.encode_stream(tokens, max(a + len(merges), 1), coders=offered, classes=classes)
    fields["crc"] = fields.pop("crc")
    return fields


def values_coded_fields(base: dict, arr: np.ndarray) -> dict[str, Any] | None:
    """The fields of a container of ``arr`` whose one stream codes the values themselves (the
    level-3 coder "mixsignal": no model, no front end; ``base``: dtype, shape, source, crc), or
    None where it does not apply (:func:`ubpe.coders.mixsignal.applies`)."""
    from ..coders import mixsignal

    if not mixsignal.applies(arr):
        return None
    fields = {k: v for k, v in base.items() if k != "crc"}
    fields.update(front=[], stream=mixsignal.encode_values(arr), crc=base["crc"])
    return fields


def floatpack_fields(base: dict, flat: np.ndarray, float_params: dict) -> dict[str, Any] | None:
    """The fields of a container whose one stream is "floatpack" (:mod:`ubpe.coders.floatpack`)
    of the float values ``flat`` (C order, native), on the base of their "floatdec" stage's params
    ``float_params`` (``base``: dtype, shape, source, crc); None when its channels' bases differ
    or a value is not an integer on the base."""
    from ..coders import floatpack

    bases = float_params["base"]
    if any(b != bases[0] or type(b) is not type(bases[0]) for b in bases):
        return None
    stream = floatpack.encode_values(flat, bases[0])
    if stream is None:
        return None
    fields = {k: base[k] for k in ("dtype", "shape", "source") if k in base}
    fields.update(front=[], stream=stream, crc=base["crc"])
    return fields


# ============================================================================ blocks


def block_frames(block_size: int | None, channels: int, frames: int, itemsize: int) -> int:
    """Frames per block for ``compress(block_size=)`` (0: one stream, no blocks)."""
    size = block_size if block_size is not None else (
        DEFAULT_BYTE_BLOCK_SIZE if itemsize == 1 else DEFAULT_BLOCK_SIZE)
    if size == 0 or channels * frames <= size:
        return 0
    block = max(size // channels, 1)
    return block if frames > block else 0


def distinct_values(flat: np.ndarray) -> np.ndarray:
    """``np.unique(flat)`` (1-D) in ``flat``'s dtype, by :func:`ubpe.alphabet.distinct` (a
    blocked writer's first pass over a block: one compiled pass over a histogram of the span
    where the values span fewer cells than their count, else a sort)."""
    return distinct(flat).astype(flat.dtype, copy=False)


def sample_frames(get: Callable[[int, int], np.ndarray], channels: int, frames: int, total: int,
                  windows: int) -> np.ndarray:
    """The ``(C, F)`` values ``get(0, frames)`` or, when more than ``total``, ``windows`` evenly
    spaced windows of their frames joined in time (``get(f0, f1)``: frames ``[f0, f1)``)."""
    length = max(total // (windows * channels), 1)
    if frames <= windows * length:
        return np.ascontiguousarray(get(0, frames))
    starts = (np.arange(windows, dtype=np.int64) * (frames - length)) // max(windows - 1, 1)
    return np.ascontiguousarray(np.concatenate([get(f0, f0 + length) for f0 in starts.tolist()], axis=1))


def _stages_of(record: list[dict]) -> list[frontend.Stage]:
    """The stages (default options, as the planner builds them) that wrote ``record``."""
    return build_chain(tuple((e["stage"], {"order": e["order"]} if e["stage"] == "delta" else {}) for e in record))


@dataclass(frozen=True)
class Frames:
    """Where a blocked writer reads its values: ``get(f0, f1)`` the frames ``[f0, f1)`` as
    ``(C, f1 - f0)`` integers (after the float stage recorded in ``prefix``), ``rows(f0, f1)``
    the same frames as the CRC covers them (``(f1 - f0, C)``, native little-endian)."""

    channels: int
    frames: int
    get: Callable[[int, int], np.ndarray]
    rows: Callable[[int, int], np.ndarray]
    prefix: list[dict] | Callable[[int, int], list[dict]]  #: a callable: each block's own float stage entry

    def prefix_of(self, f0: int, f1: int) -> list[dict]:
        """The recorded float stage of frames ``[f0, f1)`` (the same for every block but for the
        float stages whose params hold data of each value, ``floatcodes.PER_BLOCK``)."""
        return self.prefix(f0, f1) if callable(self.prefix) else self.prefix


def float_frames(src: Frames, floats: np.ndarray, stage: frontend.Stage) -> Frames:
    """``src`` with ``stage`` (configured on all the values) run on the frames ``[f0, f1)`` of
    ``floats`` (``(C, F)``) that each call asks for: ``get`` gives its integers, ``prefix`` its
    recorded entry (kept from the ``get`` of the same frames, else computed again)."""
    records: dict[tuple[int, int], dict[str, Any]] = {}
    lock = threading.Lock()

    def get(f0: int, f1: int) -> np.ndarray:
        y, params = stage.forward(np.ascontiguousarray(floats[:, f0:f1]))
        with lock:
            records[(f0, f1)] = params
        return y

    def prefix(f0: int, f1: int) -> list[dict[str, Any]]:
        with lock:
            params = records.pop((f0, f1), None)
        if params is None:
            params = stage.forward(np.ascontiguousarray(floats[:, f0:f1]))[1]
        return [{"stage": stage.name, **params}]

    return dataclasses.replace(src, get=get, prefix=prefix)


@dataclass(frozen=True)
class Given:
    """A blocked writer's given model: embedded or referenced by digest, values outside its
    alphabet escaped (or refused), its merges used or left unused (``bare``)."""

    model: Model
    embed: bool
    escape: bool
    bare: bool


def blocked_parts(base: dict, src: Frames, block: int, chains: list[list[frontend.Stage]] | None,
                  level: int, n_tokens: int | None, fit_options: dict, s: Settings, threads: int,
                  keep: bool = True, given: Given | None = None,
                  progress: Callable[[int], None] | None = None) -> Iterator[bytes]:
    """The blocked container as consecutive byte strings: the head, then each block (their
    concatenation is the container).

    One model is planned on a sample of ``s.sample`` values (``s.windows`` windows); every block (``block``
    frames) goes through the chosen chain on its own; the alphabet is extended to every
    block's values (a first pass over the blocks); then the blocks are encoded and coded,
    ``threads`` at a time. ``keep`` holds the first pass's front-end outputs for the second
    (about one byte of memory per input byte); without it each block is read and put through
    the chain again, and memory is bounded by a few blocks per thread. With a ``given`` model
    (and its one chain), nothing is planned and its alphabet is kept (values outside it escaped,
    or refused without ``given.escape``). ``progress(frames)`` is called as each block is coded,
    on the thread that coded it."""
    frames = src.frames
    # coders the first block is coded by as well, the smaller block kept; the later blocks too
    # when the first took them (first_took; block 0 is coded alone, before the others)
    also: tuple[str, ...] = ()
    first_took = False
    if given is None:
        sample = sample_frames(src.get, src.channels, frames, s.sample, s.windows)
        with detection_cache():  # (the "mult" detections of auto_chains and both plans: made once)
            if chains is None:
                chains = [build_chain(spec) for spec in auto_chains(sample, level, s)]
            # the plan is made once for all the blocks: the exhaustive search, whose cost is a small
            # share of coding them (the lean search's 2**13-value context-mixing samples ranked
            # "rank+delta1" above no front end on the 120 neural recordings: 1.8 % larger)
            cost = cost_function(base, {}, _rate_sample(level, s), planned_whole=False)
            proposer = ReplayEncoder(n_tokens, fit_options, s)
            best = plan(sample, chains, level, cost, proposer, s, threads=threads, lean=False)
            if level == 2:  # on the sample, never larger than level 1's plan
                one = plan(sample, level1_chains(chains), 1, cost, proposer, s, threads=threads, lean=False)
                if cost(one).size < cost(best).size:
                    best = one
        stages = with_settings(_stages_of(best.chain), s)
        if level == 1 and s.fast_level1 and s.fast_blocks_lpc:  # as level 1's plan searched (fewer orders)
            stages = fast_stages(stages, s)
        alphabet, merges, offered = best.alphabet, best.merges, best.coders
        if level == 2 and s.blocked_adaptive_offered and not set(offered) & set(coders.coders_for(2, ("adaptive",))):
            # a static coder that won on the sample: the first block is also coded by the
            # adaptive coders, which gain more on a block's length than on the sample, and keeps
            # the smaller block (packed: the stream's own choice compares unpacked maps); the
            # later blocks as well when the first took them (else they cost nothing more)
            also = coders.coders_for(2, ("trivial", "adaptive"))
    else:
        stages = with_settings(chains[0], s)
        alphabet, merges, offered = given.model.alphabet, given.model.merges, coders.coders_for(level)
    dtype, shape = np.dtype(base["dtype"]), base["shape"]
    count = -(-frames // block)
    step = count if keep else 2 * max(threads, 1)  # blocks in flight

    def front(b: int) -> tuple[np.ndarray, list[dict], np.ndarray | None]:
        y, record = frontend.forward(np.ascontiguousarray(src.get(b * block, min((b + 1) * block, frames))), stages)
        flat = np.ascontiguousarray(y).reshape(-1)
        return flat, record, distinct_values(flat) if extend else None

    # a vocabulary of n_tokens stays that size, a given model as it is: other values escape
    extend = given is None and n_tokens is None
    kept: list[Any] = []
    distinct = []
    if extend or keep:
        for first in range(0, count, step):
            done = run_threads(front, list(range(first, min(first + step, count))), threads)
            if extend:
                distinct += [u for _, _, u in done]
            if keep:
                kept = done
    if extend:
        alphabet, merges = covering(alphabet, merges, distinct)
    del distinct
    a, m = len(alphabet), len(merges)
    model = Model(alphabet, merges) if given is None else given.model
    use_merges = m > 0 and (given is None or not given.bare)
    if use_merges and given is None:
        model.encoder_tables()  # built once, before the threads share the model
    vocab = max(a + m, 1)
    # the text coder needs each symbol's class, from the alphabet's byte values
    classes = coders.text_classes(alphabet.values) if _TEXT_CODERS & set(offered) and not use_merges else None

    def encode(b: int) -> bytes:
        nonlocal first_took
        if keep:
            flat, record, _ = kept[b]
            kept[b] = None  # the block's values are no longer needed once coded
        else:
            flat, record, _ = front(b)
        f0, f1 = b * block, min((b + 1) * block, frames)
        if given is not None and not given.escape:
            ids, positions = alphabet.to_ids(flat), np.zeros(0, np.int64)  # ValueError names a value outside
        else:
            ids, positions = escaped_ids(alphabet, flat)
        fields: dict[str, Any] = {"front": src.prefix_of(f0, f1) + record}
        if positions.size:
            fields["esc"] = escape_field(flat, positions)
        tokens = model.encode(ids) if use_merges else ids  # by the model's method
        fields["stream"] = coders.encode_stream(tokens, vocab, coders=offered, classes=classes,
                                                rate_sample_above=_rate_sample(level, s))
        fields["crc"] = container.block_crc(dtype, shape, f0, src.rows(f0, f1))
        packed = container.pack_block(fields, (f1 - f0) * src.channels)
        if also and (b == 0 or first_took):
            fields["stream"] = coders.encode_stream(tokens, vocab, coders=also, classes=classes)
            other = container.pack_block(fields, (f1 - f0) * src.channels)
            if len(other) < len(packed):
                packed = other
                first_took = first_took or b == 0
        if progress is not None:
            progress(f1 - f0)
        return packed

    head: dict[str, Any] = {k: base[k] for k in ("dtype", "shape", "source") if k in base}
    if given is None or given.embed:
        head["alphabet"] = alphabet_field(alphabet)
        head["model"] = model_field(merges, a)
    else:
        head["digest"] = bytes.fromhex(given.model.digest)
    if use_merges and model.method != "replay":
        head["method"] = model.method
    head["block"] = block
    yield container.blocked_head(head, count)
    packer = msgpack.Packer(use_bin_type=True)
    start = 0
    if also and count:  # the first block alone: whether the others try the adaptive coders too
        yield packer.pack(encode(0))
        start = 1
    for first in range(start, count, step):
        for raw in run_threads(encode, list(range(first, min(first + step, count))), threads):
            yield packer.pack(raw)


def covering(alphabet: Alphabet, merges: np.ndarray, distinct: list[np.ndarray]) -> tuple[Alphabet, np.ndarray]:
    """The alphabet extended with every value of ``distinct`` (the blocks' values after the
    front end) and the same merges over it (children renumbered: an alphabet id to its value's
    new id, merged tokens shifted by the ids added), so that no value needs an escape; the
    model unchanged when the extended vocabulary would exceed the format's limit (values then
    escape)."""
    wide = Alphabet.from_data(np.asarray(alphabet.values), *distinct)
    a, added = len(alphabet), len(wide) - len(alphabet)
    if added == 0 or len(wide) + len(merges) > coders.MAX_VOCAB:
        return alphabet, merges
    new_ids = wide.to_ids(np.asarray(alphabet.values)).astype(np.int32)
    renumbered = np.where(merges < a, new_ids[np.minimum(merges, max(a - 1, 0))], merges + added)
    return wide, np.ascontiguousarray(renumbered, dtype=np.int32)
