"""A numcodecs codec: ubpe as the compressor of zarr arrays (needs ``pip install ubpe[zarr]``).

``import ubpe`` never imports this module, nor numcodecs. Registered under the id ``"ubpe"``
through the ``numcodecs.codecs`` entry point, so ``numcodecs.get_codec({"id": "ubpe"})`` finds
it once ubpe is installed; :func:`register` does the same by hand.

Each chunk becomes one self-describing container (dtype and shape included). A shared model
travels in the codec's configuration (``model``: its bytes in base64, JSON-safe), so every
chunk stores only the model's digest and its stream; without one, each chunk fits and embeds
its own.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
from numcodecs.abc import Codec
from numcodecs.compat import ensure_bytes, ensure_contiguous_ndarray_like, ndarray_copy

from . import api as container
from ._validate import check_int
from .errors import CorruptDataError
from .tokenizer import Tokenizer

__all__ = ["UBPECodec", "register"]


class UBPECodec(Codec):
    """ubpe as a numcodecs codec.

    Parameters
    ----------
    level : {1, 2}, default 1
        ``ubpe.compress``'s level: 1 decodes fast (static model, rANS); 2 is smaller and slower.
    model : str or bytes or Tokenizer, optional
        A shared model: a :class:`ubpe.Tokenizer`, its ``to_bytes()``, or those bytes in base64
        (what :meth:`get_config` writes). Chunks then reference it by digest; values outside its
        alphabet are escaped, so any chunk of the same signal compresses with it.
    """

    codec_id = "ubpe"

    def __init__(self, level: int = 1, model: str | bytes | Tokenizer | None = None):
        self.level = check_int("level", level, 1, 2)
        if model is None:
            self._tok = None
        elif isinstance(model, Tokenizer):
            self._tok = model
        elif isinstance(model, (bytes, bytearray, memoryview)):
            self._tok = Tokenizer.from_bytes(bytes(model))
        elif isinstance(model, str):
            self._tok = Tokenizer.from_bytes(base64.b64decode(model.encode("ascii"), validate=True))
        else:
            raise TypeError(f"model must be a Tokenizer, its bytes or base64 str, got {type(model).__name__}")

    def encode(self, buf: Any) -> bytes:
        arr = np.asarray(ensure_contiguous_ndarray_like(buf, flatten=False))
        if arr.dtype == object:
            raise TypeError("ubpe compresses numeric arrays, not objects")
        if arr.ndim > 2 or (arr.ndim == 2 and arr.shape[1] > arr.shape[0]):
            arr = arr.reshape(-1)  # the values in C order (zarr keeps the chunk's shape)
        # a (frames, channels) chunk stays 2-D: each channel is predicted on its own
        if self._tok is not None:
            return container.compress(arr, tokenizer=self._tok, embed=False, level=self.level)
        return container.compress(arr, level=self.level)

    def decode(self, buf: Any, out: Any = None) -> Any:
        """The chunk's values; with ``out``, written into it: a chunk holding another number of
        bytes than ``out`` is ``CorruptDataError`` (one declaring more is refused before decoding)."""
        if out is None:
            return container.decompress(ensure_bytes(buf), tokenizer=self._tok)
        size = ensure_contiguous_ndarray_like(out).nbytes
        values = container.decompress(ensure_bytes(buf), tokenizer=self._tok, max_output_size=size)
        if values.nbytes != size:
            raise CorruptDataError(f"the chunk holds {values.nbytes} bytes, its destination {size}")
        return ndarray_copy(values, out)

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"id": self.codec_id, "level": self.level}
        if self._tok is not None:
            config["model"] = base64.b64encode(self._tok.to_bytes()).decode("ascii")
        return config

    def __repr__(self) -> str:
        model = "" if self._tok is None else f", model=<{self._tok.vocab_size} tokens, {self._tok.digest[:12]}>"
        return f"UBPECodec(level={self.level}{model})"


def register() -> None:
    """Register :class:`UBPECodec` with numcodecs (the entry point does it when installed)."""
    from numcodecs.registry import register_codec

    register_codec(UBPECodec)
