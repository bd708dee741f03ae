""""mixsignal": the level-3 signal coder (:mod:`ubpe.level3`, issue 29) as a container's stream.

Unlike every other coder it codes **the values themselves**, not tokens: a container holding it
has no model, no front end and no escapes, and its one stream's ``payload`` is
``ubpe.level3.encode`` of the values (``(frames,)`` for one axis, ``(frames, channels)``
otherwise, native byte order). Its :data:`CODER` is registered (kind ``"values"``, level 3, never
offered to a token stream: ``encode`` declines) so that it has its number in the format's coder table and its
fields checked as every stream's; the token interface refuses it (``encode`` returns None,
``decode`` raises): :func:`encode_values` and :func:`decode_values` are its interface, which
``compress(level=3)`` and the reader call.
"""

from __future__ import annotations

import numpy as np

from ..errors import CorruptDataError
from ._base import Coder, Tokens

#: Name of the coder (the stream's ``coder`` field).
NAME = "mixsignal"


def applies(values: np.ndarray) -> bool:
    """Whether ``values`` (any shape) can be a "mixsignal" stream: integers (not bool), at least
    one axis and one value, at most ``ubpe.level3.MAX_CHANNELS`` channels (axes after the first)."""
    from .. import level3

    if values.dtype.kind not in "iu" or values.ndim == 0 or values.size == 0:
        return False
    channels = values.size // values.shape[0]
    return channels <= level3.MAX_CHANNELS


def _layout(shape: tuple[int, ...], n: int) -> tuple[int, ...]:
    """The (frames,) or (frames, channels) shape the payload holds for values of ``shape``."""
    return (n,) if len(shape) == 1 else (shape[0], n // shape[0])


def encode_values(values: np.ndarray) -> dict:
    """The stream map of ``values`` (integers, at least one axis and one value: :func:`applies`)."""
    from .. import level3

    native = values.dtype.newbyteorder("=") if values.dtype.byteorder == ">" else values.dtype
    flat = np.ascontiguousarray(values, dtype=native).reshape(_layout(values.shape, values.size))
    return {"coder": NAME, "n": int(values.size), "payload": level3.encode(flat)}


def decode_values(stream: dict, native: np.dtype, shape: tuple[int, ...], n: int) -> np.ndarray:
    """The ``n`` flat values (``native``) of a checked "mixsignal" stream of a container of
    ``shape``; the payload's dtype and shape (its first bytes) are compared with the container's
    before the kernel runs. CorruptDataError for anything else (the CRC is the caller's)."""
    from .. import level3

    payload = stream["payload"]
    want = _layout(shape, n)
    dtype, held = level3.describe_head(payload, max_values=n)
    if dtype != native or tuple(held) != want:
        raise CorruptDataError(f"stream: the 'mixsignal' payload holds {dtype} {tuple(held)}, "
                               f"the container declares {native} {want}")
    return level3.decode(payload, max_values=n).reshape(-1)


def encode(tokens: Tokens, budget: int) -> dict | None:
    """None: "mixsignal" codes values, never a token stream."""
    return None


def decode(fields: dict, n: int, vocab_size: int, classes: np.ndarray | None) -> np.ndarray:
    raise CorruptDataError("a 'mixsignal' stream codes values, not tokens: it is only a container's one stream, "
                           "without a model or front end")


CODER = Coder(NAME, 6, ("coder", "n", "payload"), (3,), "values", "signal", encode, decode)
