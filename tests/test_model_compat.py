"""Model files written by the previous release (model format 1) still load, bit-exactly.

Version 1 stored the dtype of the fitted data, which may be narrower than an alphabet the user
gave. The two fixtures were written by ubpe at commit 8167a59 (before format 2):

- ``v1_model_range256_int8_data.model``: ``Tokenizer(256, 300, n_candidates=4)`` fitted on
  ``(np.arange(3000) * 7 % 100).astype(np.int8)``: dtype ``|i1``, range alphabet of 256;
- ``v1_model_range4_bool_data.model``: ``Tokenizer(4, 8, n_candidates=1, min_count=1)`` fitted on
  ``np.array([0, 1, 1, 0, 1, 1, 1, 0] * 6, dtype=bool)``: dtype ``|b1``, range alphabet of 4.
"""

import hashlib
import pathlib
import pickle

import numpy as np
import pytest

import ubpe
from common import pack_any, unpack_any, pack_model_file as pack
from ubpe import Tokenizer

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
OLD = {
    "v1_model_range256_int8_data.model": (
        (np.arange(3000) * 7 % 100).astype(np.int8), dict(alphabet=256, n_tokens=300, n_candidates=4)),
    "v1_model_range4_bool_data.model": (
        np.array([0, 1, 1, 0, 1, 1, 1, 0] * 6, dtype=bool), dict(alphabet=4, n_tokens=8, n_candidates=1, min_count=1)),
}


@pytest.mark.parametrize("name", sorted(OLD))
def test_old_model_with_a_narrow_data_dtype_loads_and_reproduces_its_file(name):
    raw = (FIXTURES / name).read_bytes()
    x, params = OLD[name]
    tok = Tokenizer.from_bytes(raw)
    # what version-1 referenced containers name: the SHA-256 of this very file
    assert tok.legacy_digest == hashlib.sha256(raw).hexdigest()
    assert tok.to_bytes(version=1) == raw
    assert pickle.loads(pickle.dumps(tok)).legacy_digest == tok.legacy_digest
    # decoding widens instead of wrapping: every value comes back exactly
    assert tok.dtype == np.dtype(np.int64)
    out = tok.decode(tok.encode(x))
    assert out.tolist() == x.astype(np.int64).tolist()
    assert tok.decode(np.arange(tok.vocab_size)).max() <= 255
    with pytest.raises(ValueError):  # the stored dtype cannot hold every alphabet value
        tok.decode(tok.encode(x), dtype=x.dtype)
    # today's fit of the same data finds the same merges, so the same decoding digest
    alphabet = params.pop("alphabet")
    fresh = Tokenizer(alphabet, **params).fit(x)
    assert fresh.merges.tolist() == tok.merges.tolist() and fresh.digest == tok.digest
    assert fresh.encode(x).tolist() == tok.encode(x).tolist()
    # re-saved as version 2, the model stores the widened dtype and loads again
    again = Tokenizer.from_bytes(tok.to_bytes())
    assert again.dtype == tok.dtype and again.digest == tok.digest and again.to_bytes() == tok.to_bytes()


@pytest.mark.parametrize(
    "alphabet, dtype, decoded",
    [
        ({"kind": "integers", "dtype": "<i8", "values": np.array([1000, 2000, 3000], "<i8").tobytes()}, "|i1",
         [1000, 2000, 3000]),
        ({"kind": "range", "size": 3}, "|b1", [0, 1, 2]),
        ({"kind": "range", "size": 300}, ">u1", [0, 1, 2]),
        ({"kind": "symbols", "values": ["a", "bc", "d"]}, "<U1", ["a", "bc", "d"]),
    ],
)
def test_a_too_narrow_dtype_loads_widened_from_version_1_and_is_refused_in_version_2(alphabet, dtype, decoded):
    fields = unpack_any(Tokenizer(3, 3).fit([0, 1, 2, 0, 1]).to_bytes(version=1))
    fields.update(alphabet=alphabet, dtype=dtype)
    fields["params"]["n_tokens"] = 400
    tok = Tokenizer.from_bytes(pack(fields, 1))
    assert tok.decode([0, 1, 2]).tolist() == decoded  # exact values, never wrapped
    assert tok.dtype.kind in "iO" and tok.to_bytes(version=1) == pack(fields, 1)
    with pytest.raises(ubpe.CorruptDataError, match="dtype"):
        Tokenizer.from_bytes(pack(fields, 2))


@pytest.mark.parametrize("alphabet, dtype", [({"kind": "symbols", "values": ["a", "b", "c"]}, "|u1"),
                                             ({"kind": "range", "size": 3}, "<U1"),
                                             ({"kind": "range", "size": 3}, "<f8")])
def test_a_dtype_of_the_wrong_kind_is_refused_in_version_1_too(alphabet, dtype):
    fields = unpack_any(Tokenizer(3, 3).fit([0, 1, 2, 0, 1]).to_bytes(version=1))
    fields.update(alphabet=alphabet, dtype=dtype)
    with pytest.raises(ubpe.CorruptDataError, match="dtype"):
        Tokenizer.from_bytes(pack(fields, 1))
