"""The README's examples and the public docstrings run as written."""

import doctest
import importlib
import pathlib
import subprocess
import sys

import pytest

import ubpe

ROOT = pathlib.Path(__file__).parents[1]


def test_readme_examples_run():
    result = doctest.testfile(str(ROOT / "README.md"), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


@pytest.mark.parametrize("module", ["ubpe.alphabet", "ubpe.tokenizer", "ubpe.container", "ubpe.signal"])
def test_docstring_examples_run(module):
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_import_is_light():
    code = (
        "import sys, ubpe; "
        "heavy = [m for m in ('hypothesis', 'numcodecs', 'constriction', 'tqdm') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_public_api():
    for name in ("Tokenizer", "Alphabet", "compress", "decompress", "inspect", "UBPEError",
                 "CorruptDataError", "FormatVersionError", "NotFittedError", "__version__"):
        assert hasattr(ubpe, name), name
    assert issubclass(ubpe.CorruptDataError, ubpe.UBPEError) and issubclass(ubpe.CorruptDataError, ValueError)
