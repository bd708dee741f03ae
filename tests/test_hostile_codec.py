"""The numcodecs codec's ``decode`` of a hostile chunk into a destination (``out``, as zarr
decodes): a chunk of another size than its destination is ``ubpe.CorruptDataError``, and one
declaring more bytes than the destination is refused before its values are decoded."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numcodecs", reason="numcodecs is the optional extra ubpe[zarr]")

import ubpe  # noqa: E402
from ubpe.codec import UBPECodec  # noqa: E402
from ubpe.format import container  # noqa: E402


@pytest.fixture(scope="module")
def chunk() -> bytes:
    return UBPECodec().encode(np.arange(100, dtype=np.int16))


@pytest.mark.parametrize("out", [np.zeros(50, np.int16), np.zeros(200, np.int16), np.zeros(20, np.int64),
                                 bytearray(3)])
def test_a_chunk_of_another_size_than_its_destination_is_corrupt_data(chunk, out):
    with pytest.raises(ubpe.CorruptDataError):
        UBPECodec().decode(chunk, out=out)


def test_a_chunk_declaring_more_than_its_destination_is_refused_before_decoding(chunk):
    fields = container.fields_of(chunk)
    fields["shape"] = [2**20]
    with pytest.raises(ubpe.CorruptDataError, match="max_output_size"):
        UBPECodec().decode(container.pack(fields), out=np.zeros(100, np.int16))


def test_a_chunk_of_the_destination_size_is_written_into_it(chunk):
    out = np.zeros((10, 10), np.int16)
    assert UBPECodec().decode(chunk, out=out) is out and np.array_equal(out.ravel(), np.arange(100))
