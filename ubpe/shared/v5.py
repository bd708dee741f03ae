"""Window containers of version 5: the fixed fields in 6 bytes (docs/format.md, "Window
containers", version 5), and a window's own code.

A window of 1 000 values codes to 100 to 1 000 bytes, so each fixed byte of its container is 0.1
to 1 % of it. Version 5 keeps of version 4's 15 fixed bytes (a 1-D window of up to 1 023 values)
a lead byte for the magic and the version, one byte ``head``, the count with the dtype (2 bytes)
and 2 bytes of CRC: no model digest (a wrong model fails the primer check, the coder's 16 check
bits or the CRC; the error says so), and no ``below`` when the window's stream shares with
``primer + zeros`` the bytes that every window shares (:func:`implied_skip`) and at most 6 more
(3 bits of ``head``). A window may also
carry its own "cms2" code (mode, center, code lengths: 10 to 25 bytes) in place of its
variant's, coded cold: a window whose residuals are unlike the training windows' (a recording
whose level falls: alsa-Front_Center at 1 000 values, 12 of 20 windows no smaller with the
model's code).
"""

from __future__ import annotations

import dataclasses
import threading

import numpy as np

from ..errors import CorruptDataError
from .coder import _code_of, _digit_coders
from .model import MAX_SIZE, Variant

#: ``head``: bits 0-2 the variant, bit 3 cold, bit 4 an extras byte follows, bits 5-7 ``near``
#: (0 when cold): the skip is :func:`implied_skip` plus ``near`` (0 to 6), or with 7 ``below``
#: follows.
HEAD_COLD, HEAD_EXTRAS, HEAD_NEAR = 0x08, 0x10, 5
#: ``near`` of a window whose ``below`` follows.
NEAR_BELOW = 7
#: The extras byte: a shape, escapes, a source, the window's own predictor, its own code, its
#: first residual (held apart) follow.
X_SHAPE, X_ESC, X_SOURCE, X_OWN, X_CODE, X_FIRST = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
_X_ALL = X_SHAPE | X_ESC | X_SOURCE | X_OWN | X_CODE | X_FIRST
#: Bytes of the values' CRC a version-5 window stores (the low ones of ``values_crc``'s CRC-32).
CRC_BYTES = 2
#: A writer tries a window coded after the primer (primer and window through the coder: a
#: primer of 32 768 tokens costs as much as 30 windows of 1 000 values) with a predictor only
#: when the window coded cold with it (the tokens alone, with the variant's code or the
#: window's own: cheap) was at most this many bytes larger than the best cold one: the cold
#: sizes rank the primed ones. Not normative. Measured offline over every trial of
#: bench_windows.py's test windows (with OWN_PRIMED_WITHIN 0 and CODE_SAVING_MIN): 40 gives the
#: same bytes as every trial at W=1000 (31 recordings, 581 windows: 377 799 B) and W=10000 (7
#: recordings, 140 windows) for 57 % and 45 % of the primed trials; 20: +16 B at W=1000; a
#: margin of 10 % of the best cold size instead: +6 B at W=1000 and 1.4 times the work at
#: W=10000, 1 %: +97 B at W=1000.
PRIMED_WITHIN = 40
#: As :data:`PRIMED_WITHIN` (bytes) for the window's own predictor (version 4), whose primed
#: trials cost three primer codings more (its primer's residuals are the window's own: the
#: primer bytes, the zeros' stream and the implied skip computed afresh). 0: only when its cold
#: size is the best; with PRIMED_WITHIN unbounded the same bytes as every trial at W=1000 and
#: W=10000 (as above) with 24 of 992 and 5 of 297 of these primers.
OWN_PRIMED_WITHIN = 0
#: A writer tries a window's own code only when :func:`code_saving` is above this (not
#: normative): the estimate ignores the coder's contexts, so a code estimated a little worse
#: may still code smaller. Over every trial of bench_windows.py's test windows (with
#: PRIMED_WITHIN a margin of 10 %): -0.015 gives the same bytes as trying it always at W=1000 (31
#: recordings, 581 windows) with 29 % of the own-code trials, and at W=10000 (7 recordings, 140
#: windows) with 73 %; 0: the same at W=1000 with 24 %, +4 B at W=10000 with 28 %.
CODE_SAVING_MIN = -0.015
#: Longest code (as the "cms2" kernel's ``MAX_LEN``).
_MAX_LEN = 30


def own_code(v: Variant, tokens: np.ndarray) -> tuple[int, int, np.ndarray]:
    """``(mode, center, counts)`` of a "cms2" code over every token of the variant ``v``,
    fitted to the window's ``tokens`` (as ``fit_shared`` fits a variant's on the history)."""

    return _code_of(tokens, v.size)


def code_saving(v: Variant, tokens: np.ndarray, code: tuple[int, int, np.ndarray]) -> float:
    """The bits the window's own ``code`` would save on its ``tokens`` against the variant
    ``v``'s code, less its field's bits, as a fraction of the bits with the variant's code: an
    order-0 estimate (each token's rank in the code's mode, the code lengths summed; the
    coder's contexts ignored). A writer tries the own code only when this is above
    :data:`CODE_SAVING_MIN`."""
    from .._kernels.cmsignal2 import _rank_counts

    t = np.ascontiguousarray(tokens, np.int32)

    def bits(mode: int, center: int, counts: np.ndarray) -> float:
        ranks = _rank_counts(t, v.size, center)[mode]
        lengths = np.repeat(np.arange(counts.size), counts)
        return float((ranks * lengths[:ranks.size]).sum())

    with_variant = bits(v.mode, v.center, v.counts)
    return (with_variant - bits(*code) - 8 * len(code_field(*code))) / max(with_variant, 1.0)


def with_code(v: Variant, mode: int, center: int, counts: np.ndarray) -> Variant:
    """The variant ``v`` with the code ``(mode, center, counts)`` in place of its own (a fresh
    cache but for the digit coders)."""
    return dataclasses.replace(v, mode=int(mode), center=int(center), counts=np.asarray(counts, np.int64),
                               _cache=_digit_coders(v),
                               _lock=threading.Lock())


def code_field(mode: int, center: int, counts: np.ndarray) -> bytes:
    """The field of a window's own code: the "cms2" payload header (``cmsignal2.header_bytes``:
    mode, center as LEB128, ``L``, then k_1..k_L as LEB128)."""
    from .._kernels.cmsignal2 import header_bytes

    return header_bytes(int(mode), int(center), np.asarray(counts, np.int64))


def parse_code(take, varint) -> tuple[int, int, np.ndarray]:
    """``(mode, center, counts)`` of a code field read with the parser's ``take(k)`` and
    ``varint()``: mode 0 to 2, ``L`` 1 to 30, each count at most :data:`MAX_SIZE` (the variant's
    size is checked by :func:`check_code`)."""
    mode = take(1)[0]
    center = varint()
    length = take(1)[0]
    if mode > 2 or not 1 <= length <= _MAX_LEN or center >= MAX_SIZE:
        raise CorruptDataError(f"window: its code's mode ({mode}) must be at most 2, its longest length ({length}) "
                               f"1 to {_MAX_LEN}, its center ({center}) below {MAX_SIZE}")
    counts = [0]
    for _ in range(length):
        k = varint()
        if k > MAX_SIZE:
            raise CorruptDataError(f"window: a count of its code ({k}) above {MAX_SIZE}")
        counts.append(k)
    return mode, center, np.array(counts, np.int64)


def check_code(v: Variant, mode: int, center: int, counts: np.ndarray) -> Variant:
    """The variant ``v`` with a window's own code, checked as a model's (a complete prefix code
    covering every one of the variant's tokens, center among them)."""
    from .._kernels.cmsignal2 import header_bytes, parse_header

    if center >= v.size or int(counts.sum()) != v.size or parse_header(header_bytes(mode, center, counts),
                                                                        v.size) is None:
        raise CorruptDataError(f"window: its code is not a complete prefix code for the variant's {v.size} tokens")
    return with_code(v, mode, center, counts)


def implied_skip(v: Variant, n: int) -> int:
    """The skip a version-5 window without ``below`` has: the length of the common prefix of
    the coder bytes of ``primer + n zeros`` and of ``primer + n`` times the code's center token
    (each cut at the skip bound), cached per ``n``. Every byte the coder settles while it codes
    the primer is in it (a carry-less coder never revises a byte it wrote), and seldom more:
    a window's stream shares at least those with ``primer + zeros``."""
    from .chain import _primer
    from .coder import _encode_tokens, _skip_bound, _zeros_stream

    key = ("implied", n)
    p = v._cache.get(key)
    if p is None:
        bound = _skip_bound(v)
        z0 = np.frombuffer(_zeros_stream(v, n), np.uint8)
        tokens = np.concatenate((_primer(v), np.full(n, v.center, np.int32)))
        z1 = np.frombuffer(_encode_tokens(v, tokens)[:bound], np.uint8)
        limit = min(z0.size, z1.size)
        diff = np.flatnonzero(z0[:limit] != z1[:limit])
        p = int(diff[0]) if diff.size else limit
        with v._lock:
            v._cache[key] = p
    return p
