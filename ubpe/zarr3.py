"""ubpe as a zarr format 3 codec, through zarr's numcodecs bridge (zarr >= 3.1.3).

Zarr format 3 names codecs ``numcodecs.<id>``; this module defines ``numcodecs.ubpe``, an
array-to-bytes codec (the chunk's values in, one ubpe container out) whose configuration is
that of :class:`ubpe.codec.UBPECodec` (``level``, optionally ``model``: a shared tokenizer as
base64). It is registered with zarr through the ``zarr.codecs`` entry point, so a stored array
reopens without importing ubpe first. Importing this module imports zarr.

    import zarr, ubpe.zarr3
    z = zarr.create_array("x.zarr", shape=(100_000,), chunks=(20_000,), dtype="<i2",
                          serializer=ubpe.zarr3.codec(level=1), compressors=None)
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import numpy as np
from zarr.codecs.numcodecs import _NumcodecsArrayBytesCodec

from . import api
from .codec import UBPECodec
from .errors import CorruptDataError

__all__ = ["UBPE", "codec"]


class UBPE(_NumcodecsArrayBytesCodec, codec_name="ubpe"):
    """The ``numcodecs.ubpe`` zarr format 3 codec; ``UBPE(level=1)`` or ``UBPE(level=2, model=base64)``."""

    def __init__(self, **codec_config: Any) -> None:
        UBPECodec(**{k: v for k, v in codec_config.items() if k != "id"})  # a bad config fails here, named
        super().__init__(**codec_config)

    async def _decode_single(self, chunk_data: Any, chunk_spec: Any) -> Any:
        """The chunk's values, checked against the chunk's shape and dtype: a chunk holding
        other values is ``CorruptDataError`` (one declaring more bytes, before decoding)."""
        out = await asyncio.to_thread(_checked_chunk, self._codec, chunk_data.to_bytes(), chunk_spec)
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(out)


def _checked_chunk(codec: UBPECodec, raw: bytes, chunk_spec: Any) -> np.ndarray:
    dtype = chunk_spec.dtype
    want = dtype.to_native_dtype() if hasattr(dtype, "to_native_dtype") else np.dtype(dtype)
    n = math.prod(chunk_spec.shape)
    got = np.dtype(api.describe(raw).dtype)
    if got.kind != want.kind or got.itemsize != want.itemsize:
        raise CorruptDataError(f"the chunk holds {got} values, the array {want}")
    out = np.empty(n * want.itemsize, np.uint8)
    codec.decode(raw, out=out)  # (its size checked, before decoding too)
    return out.view(got).astype(want, copy=False).reshape(chunk_spec.shape)


def codec(level: int = 1, model: Any = None) -> UBPE:
    """:class:`UBPE` from the same arguments as :class:`ubpe.codec.UBPECodec` (``model``: a
    Tokenizer, its bytes or base64): the model travels in the array's metadata."""
    config = UBPECodec(level=level, model=model).get_config()
    config.pop("id")
    return UBPE(**config)
