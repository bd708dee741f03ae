"""Model files stay readable: the frozen model files (format version 1) load, re-serialise to
their own bytes and encode as they did; a body whose dtype cannot hold its alphabet is refused.

The frozen files are tests/fixtures/v1_model_*.model (written by tests/fixtures/make_fixtures.py,
``model_fixtures``) and the models that referenced containers name (v1_*.model beside a .ubpe);
tests/test_fixtures.py checks each one's encode of its probe values.
"""

import pathlib
import pickle

import numpy as np
import pytest

import ubpe
from common import model_body, pack_model_file as pack
from ubpe import Tokenizer

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
MODEL_FILES = sorted(p.name for p in FIXTURES.glob("v1_*.model"))


def test_the_frozen_model_files_exist():
    assert {"v1_model_classic.model", "v1_model_sequence.model", "v1_model_delta1_front.model",
            "v1_model_bytes.model"} <= set(MODEL_FILES)


@pytest.mark.parametrize("name", MODEL_FILES)
def test_a_frozen_model_file_loads_and_reserialises_to_its_bytes(name):
    raw = (FIXTURES / name).read_bytes()
    tok = Tokenizer.from_bytes(raw)
    assert tok.to_bytes() == raw
    assert Tokenizer.from_bytes(tok.to_bytes()).digest == tok.digest == tok.model.digest
    back = pickle.loads(pickle.dumps(tok))
    assert back.to_bytes() == raw and back.digest == tok.digest
    values = tok.decode(np.arange(min(tok.vocab_size, 50)))
    assert np.array_equal(tok.decode(tok.encode(values)), values)


def test_the_frozen_model_files_keep_their_mode_and_front_end():
    modes = {name: Tokenizer.from_bytes((FIXTURES / name).read_bytes()) for name in
             ("v1_model_classic.model", "v1_model_sequence.model", "v1_model_delta1_front.model")}
    assert modes["v1_model_classic.model"].model.mode == "classic"
    assert modes["v1_model_sequence.model"].model.mode == "sequence"
    assert modes["v1_model_delta1_front.model"].predictor == "delta1"
    assert "mode" not in model_body((FIXTURES / "v1_model_classic.model").read_bytes())


@pytest.mark.parametrize(
    "alphabet, dtype",
    [
        ({"kind": "integers", "dtype": "<i8", "values": np.array([1000, 2000, 3000], "<i8").tobytes()}, "|i1"),
        ({"kind": "range", "size": 3}, "|b1"),
        ({"kind": "range", "size": 300}, ">u1"),
        ({"kind": "symbols", "values": ["a", "bc", "d"]}, "<U1"),
    ],
)
def test_a_dtype_too_narrow_for_the_alphabet_is_refused(alphabet, dtype):
    fields = model_body(Tokenizer(3, 3).fit([0, 1, 2, 0, 1]).to_bytes())
    fields.update(alphabet=alphabet, dtype=dtype)
    fields["params"]["n_tokens"] = 400
    with pytest.raises(ubpe.CorruptDataError, match="dtype"):
        Tokenizer.from_bytes(pack(fields))
    fields["dtype"] = "<i8" if alphabet["kind"] != "symbols" else "<U2"  # wide enough: loads
    assert Tokenizer.from_bytes(pack(fields)).decode([0, 1, 2]).size == 3


@pytest.mark.parametrize("alphabet, dtype", [({"kind": "symbols", "values": ["a", "b", "c"]}, "|u1"),
                                             ({"kind": "range", "size": 3}, "<U1"),
                                             ({"kind": "range", "size": 3}, "<f8")])
def test_a_dtype_of_the_wrong_kind_is_refused(alphabet, dtype):
    fields = model_body(Tokenizer(3, 3).fit([0, 1, 2, 0, 1]).to_bytes())
    fields.update(alphabet=alphabet, dtype=dtype)
    with pytest.raises(ubpe.CorruptDataError, match="dtype"):
        Tokenizer.from_bytes(pack(fields))
