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


@pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr version 3")
@pytest.mark.parametrize("stored", [np.arange(50, dtype=np.int16), np.arange(100, dtype=np.int32)])
def test_a_zarr_format_3_chunk_of_other_values_is_corrupt_data(tmp_path, stored):
    """A stored chunk replaced by a valid container of another size was numpy's ValueError
    ("cannot reshape"); of another dtype of that size, values read silently as the array's."""
    pytest.importorskip("zarr.codecs.numcodecs", reason="zarr >= 3.1.3 has the numcodecs bridge")
    import zarr

    import ubpe.zarr3

    path = tmp_path / "a.zarr"
    z = zarr.create_array(str(path), shape=(400,), chunks=(100,), dtype="<i2", serializer=ubpe.zarr3.codec(level=1),
                          compressors=None)
    z[:] = np.arange(400, dtype=np.int16)
    chunk = next(p for p in path.rglob("1") if p.is_file())
    chunk.write_bytes(UBPECodec().encode(stored))
    reopened = zarr.open_array(str(path))
    assert np.array_equal(reopened[:100], np.arange(100))
    with pytest.raises(ubpe.CorruptDataError):
        reopened[:]
