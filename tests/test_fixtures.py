"""The frozen fixtures (tests/fixtures): containers and model files of format version 1 that every
later ubpe must read as they are.

Each container NAME.ubpe decodes to NAME.npy (with NAME.model when it references its model); each
model file NAME.model (without a .ubpe) encodes its probe values to NAME.npy; each window
container NAME.ubpw decodes to NAME.npy with the shared model NAME.shared. They are written once
by tests/fixtures/make_fixtures.py and never modified; ``make_fixtures.py --check`` must still
reproduce them byte for byte (a writer change that moves bytes shows here, and is then a
deliberate choice). Together they hold every coder of :data:`ubpe.coders.REGISTRY` and every
stage of :data:`ubpe.frontend.STAGES`: a new coder or stage needs a new fixture.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import ubpe
from common import assert_same_array, check_truncations, make_fixtures
from ubpe import Tokenizer

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
CONTAINERS = sorted(p.stem for p in FIXTURES.glob("*.ubpe"))
MODEL_FILES = sorted(p.stem for p in FIXTURES.glob("*.model") if not (FIXTURES / f"{p.stem}.ubpe").exists())
WINDOWS = sorted(p.stem for p in FIXTURES.glob("*.ubpw"))


def _model(name: str) -> Tokenizer | None:
    path = FIXTURES / f"{name}.model"
    return Tokenizer.from_bytes(path.read_bytes()) if path.exists() else None


def _probes() -> dict[str, np.ndarray | bytes]:
    """The values each model-file fixture encodes (make_fixtures.model_fixtures' probes)."""
    script = make_fixtures()
    signal_steps = np.diff(script.inputs()["signal"][:2000])[:500]
    text = bytes(script.text_input()[:500])
    return {"v1_model_classic": signal_steps, "v1_model_sequence": signal_steps,
            "v1_model_delta1_front": signal_steps, "v1_model_bytes": text}


def test_every_fixture_is_written_by_the_script_and_named_for_version_1():
    assert set(CONTAINERS) == set(make_fixtures().EXPECT)  # (the script checks EXPECT against what it writes)
    assert set(MODEL_FILES) == set(_probes())
    assert set(WINDOWS) == set(make_fixtures().window_fixtures())
    assert all(name.startswith("v1_") for name in CONTAINERS + MODEL_FILES)
    # window containers carry their own version byte (1 to ubpe.shared.WINDOW_VERSION), named so
    assert all(name[:3] in {f"v{k}_" for k in range(1, ubpe.shared.WINDOW_VERSION + 1)} for name in WINDOWS)
    assert any(name.startswith(f"v{ubpe.shared.WINDOW_VERSION}_") for name in WINDOWS)  # the newest is frozen too


@pytest.mark.parametrize("name", CONTAINERS)
def test_a_frozen_container_decodes_to_its_values(name):
    data = (FIXTURES / f"{name}.ubpe").read_bytes()
    expected = np.load(FIXTURES / f"{name}.npy", allow_pickle=False)
    assert data[:5] == (b"ubpg\x01" if name.startswith("v1_groups_") else b"ubpe\x01")  # (grouped containers)
    tok = _model(name)
    assert_same_array(ubpe.decompress(data, tokenizer=tok), expected)
    info = ubpe.describe(data)
    assert info.version == 1 and info.n_values == expected.size and info.shape == expected.shape
    assert info.embedded == (tok is None)
    if tok is not None:
        assert info.digest == tok.model.digest
        assert_same_array(ubpe.decompress(data, tokenizer=tok.model), expected)
        with pytest.raises(ubpe.CorruptDataError, match="references its model"):
            ubpe.decompress(data)


@pytest.mark.parametrize("name", CONTAINERS)
def test_a_frozen_container_holds_the_coders_and_stages_it_was_written_for(name):
    coders, stages = make_fixtures().EXPECT[name]
    info = ubpe.describe((FIXTURES / f"{name}.ubpe").read_bytes())
    if coders is not None:
        assert set(info.coders) == coders
    if stages is not None:
        assert [e["stage"] for e in info.front] == stages


@pytest.mark.parametrize("name", MODEL_FILES)
def test_a_frozen_model_file_encodes_its_probe_as_before(name):
    tok = Tokenizer.from_bytes((FIXTURES / f"{name}.model").read_bytes())
    expected = np.load(FIXTURES / f"{name}.npy", allow_pickle=False)
    probe = _probes()[name]
    assert_same_array(tok.encode(probe), expected)
    decoded = tok.decode(expected)
    if isinstance(probe, bytes):
        assert bytes(decoded.astype(np.uint8)) == probe
    else:
        assert np.array_equal(decoded, probe)


def test_the_fixtures_cover_every_coder_and_stage():
    """A coder or stage that no fixture holds would have no frozen bytes: add one (a new name)."""
    from ubpe.coders import REGISTRY
    from ubpe.frontend import STAGES

    coders, stages = set(), set()
    for name in CONTAINERS:
        info = ubpe.describe((FIXTURES / f"{name}.ubpe").read_bytes())
        coders |= set(info.coders)
        stages |= {e["stage"] for e in info.front}
    assert coders == {c.name for c in REGISTRY}
    assert stages == set(STAGES)


def test_the_fixtures_cover_both_forms_and_both_model_modes():
    infos = {name: ubpe.describe((FIXTURES / f"{name}.ubpe").read_bytes()) for name in CONTAINERS}
    assert any(i.blocks > 1 for i in infos.values()) and any(i.blocks == 1 for i in infos.values())
    assert any(not i.embedded for i in infos.values()) and any(i.escapes for i in infos.values())
    assert any(i.n_merges for i in infos.values()) and any(i.source for i in infos.values())
    assert any(i.lossy for i in infos.values()) and any(i.n_values == 0 for i in infos.values())
    models = [Tokenizer.from_bytes((FIXTURES / f"{n}.model").read_bytes()).model.mode for n in MODEL_FILES]
    assert set(models) == {"classic", "sequence"}


@pytest.mark.parametrize("name", CONTAINERS)
def test_every_strict_prefix_of_a_frozen_container_is_refused(name):
    data = (FIXTURES / f"{name}.ubpe").read_bytes()
    tok = _model(name)
    assert check_truncations(data, lambda d: ubpe.decompress(d, tokenizer=tok)) == len(data)


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.model")))
def test_every_strict_prefix_of_a_frozen_model_file_is_refused(name):
    data = (FIXTURES / f"{name}.model").read_bytes()
    assert check_truncations(data, Tokenizer.from_bytes) == len(data)


def test_the_script_reproduces_every_fixture_byte_for_byte():
    """``make_fixtures.py --check`` (its check, run in this process): if the writer changes on
    purpose, this fails; the frozen files stay, and new fixtures (new names) record the new writer."""
    assert make_fixtures().check() == []


def _shared(name: str) -> ubpe.SharedModel:
    return ubpe.SharedModel.from_bytes((FIXTURES / f"{name}.shared").read_bytes())


@pytest.mark.parametrize("name", WINDOWS)
def test_a_frozen_window_container_decodes_with_its_shared_model(name):
    data = (FIXTURES / f"{name}.ubpw").read_bytes()
    expected = np.load(FIXTURES / f"{name}.npy", allow_pickle=False)
    model = _shared(name)
    version = int(name[1])
    assert data[:5] == b"ubpw" + bytes([version]) if version < 5 else data[0] == 0xF0 | version  # v1_ to v5_
    assert_same_array(ubpe.decompress(data, tokenizer=model), expected)
    info = ubpe.describe(data)
    assert info.n_values == expected.size and info.dtype == expected.dtype.str and not info.embedded
    assert model.digest.startswith(info.digest)


def test_a_frozen_window_container_refuses_another_shared_model():
    first, second = WINDOWS[:2]
    with pytest.raises(ubpe.CorruptDataError):
        ubpe.decompress((FIXTURES / f"{first}.ubpw").read_bytes(), tokenizer=_shared(second))


def test_the_window_fixtures_cover_range_and_dense_variants():
    kinds = {v.values is None for name in WINDOWS for v in _shared(name).variants}
    assert kinds == {True, False}


def test_a_frozen_version_3_window_restarts_an_lpc_variant():
    data = (FIXTURES / "v3_window_lpc_int16.ubpw").read_bytes()
    model = _shared("v3_window_lpc_int16")
    assert data[:5] == b"ubpw\x03" and len(model.variants[(data[7] >> 1) & 7].coefs) >= 2


def test_a_frozen_version_3_window_uses_a_split_variant_with_primed_digits():
    data = (FIXTURES / "v3_window_split_int16.ubpw").read_bytes()
    model = _shared("v3_window_split_int16")
    assert data[:5] == b"ubpw\x03" and model.variants[(data[7] >> 1) & 7].base > 1


@pytest.mark.parametrize("name", WINDOWS)
def test_every_strict_prefix_of_a_frozen_window_container_and_its_model_is_refused(name):
    data = (FIXTURES / f"{name}.ubpw").read_bytes()
    model = _shared(name)
    assert check_truncations(data, lambda d: ubpe.decompress(d, tokenizer=model)) == len(data)
    blob = (FIXTURES / f"{name}.shared").read_bytes()
    assert check_truncations(blob, ubpe.SharedModel.from_bytes) == len(blob)
