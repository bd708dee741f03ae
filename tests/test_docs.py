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
    present = len(doctest.DocTestParser().get_examples((ROOT / "README.md").read_text()))
    assert present >= 5 and result.attempted == present
    assert result.failed == 0


DOCTEST_MODULES = ["ubpe.alphabet", "ubpe.tokenizer", "ubpe.api", "ubpe.frontend.delta", "ubpe.planner.settings",
                   "ubpe.text"]


@pytest.mark.parametrize("module", DOCTEST_MODULES)
def test_docstring_examples_run(module):
    mod = importlib.import_module(module)
    finder = doctest.DocTestFinder()
    present = sum(len(t.examples) for t in finder.find(mod))
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert present > 0, f"{module} has no docstring example"
    assert result.attempted == present  # every example present ran
    assert result.failed == 0


def test_every_module_with_examples_is_doctested():
    """Every module of the package and its subpackages (ubpe.api, ubpe.frontend, ...)."""
    import pkgutil

    finder = doctest.DocTestFinder()
    with_examples = set()
    for info in pkgutil.walk_packages(ubpe.__path__, "ubpe."):
        if info.name in ("ubpe.__main__",):
            continue
        mod = importlib.import_module(info.name)
        if any(t.examples for t in finder.find(mod) if t.name.startswith(info.name)):
            with_examples.add(info.name)
    assert with_examples <= set(DOCTEST_MODULES), sorted(with_examples - set(DOCTEST_MODULES))


def test_import_is_light():
    code = (
        "import sys, ubpe; "
        "heavy = [m for m in ('hypothesis', 'numcodecs', 'zarr', 'dask', 'constriction', 'tqdm', 'matplotlib', 'pandas') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_public_api():
    for name in ("Tokenizer", "Alphabet", "compress", "decompress", "inspect", "UBPEError",
                 "CorruptDataError", "FormatVersionError", "NotFittedError", "__version__"):
        assert hasattr(ubpe, name), name
    assert issubclass(ubpe.CorruptDataError, ubpe.UBPEError) and issubclass(ubpe.CorruptDataError, ValueError)


@pytest.mark.parametrize("page,min_examples", [("signals.md", 15), ("experiments.md", 6), ("text.md", 20)])
def test_doc_page_examples_run(shared_data, page, min_examples):
    """The pages' examples run as written, on the shared data their example paths name."""
    path = ROOT / "docs" / page
    text = path.read_text().replace("/work/shared/data", str(shared_data.resolve()))
    test = doctest.DocTestParser().get_doctest(text, {}, page, str(path), 0)
    assert len(test.examples) >= min_examples
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False) == (0, len(test.examples))
