"""Where the compiled kernels are cached, and what a first run tells the user."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import ubpe
from ubpe import cli

PACKAGE = pathlib.Path(ubpe.__file__).parent
#: compiles (and caches) a kernel: undelta's running sums, one small kernel (1.3 s of CPU in a
#: fresh cache, most of it importing numba; a fit without merges compiled 6 kernels, 2.0 s; each
#: test that runs it pays it in a fresh cache)
FIT = "import ubpe, numpy as np; from ubpe.frontend.delta import undelta; undelta(np.arange(10), 2)"


def _run(code: str, env: dict, cwd: pathlib.Path | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"} | env
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=300,
                          cwd=cwd)


def _index_files(root: pathlib.Path) -> set[pathlib.Path]:
    return set(root.rglob("*.nbi"))


def test_kernels_are_cached_per_user_never_in_the_package(tmp_path):
    """In ``$XDG_CACHE_HOME/ubpe/numba/<key>``, the key a digest of the kernels' sources and the
    versions (the next test)."""
    before = _index_files(PACKAGE)
    proc = _run(FIT + "; import ubpe._kernels as k; print(k.cache_dir()); print(k.cache_key())",
                {"XDG_CACHE_HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    path, key = proc.stdout.split()
    assert len(key) == 16 and path == str(tmp_path / "ubpe" / "numba" / key)
    assert _index_files(tmp_path), "no kernel was cached in the per-user directory"
    assert _index_files(PACKAGE) == before, "numba wrote its cache into the package"


def test_an_edit_to_any_kernel_file_moves_the_cache(tmp_path):
    """numba checks a cached function against its own file only, and kernel files share compiled
    helpers (the context-mixing coders' cmcore): the cache directory is keyed by every kernel
    file's source, so an edited helper is compiled afresh in a directory of its own, never run
    stale. Here a copy of the package whose shared helper file gains one line."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(PACKAGE, copy / "ubpe", ignore=shutil.ignore_patterns("__pycache__"))
    code = "import ubpe, ubpe._kernels as k; print(ubpe.__file__); print(k.cache_dir())"
    env = {"PYTHONPATH": str(copy), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    first = _run(code, env, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split()[0] == str(copy / "ubpe" / "__init__.py")
    with open(copy / "ubpe" / "_kernels" / "cmcore.py", "a") as f:
        f.write("\n# an edit\n")
    second = _run(code, env, cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    a, b = pathlib.Path(first.stdout.split()[1]), pathlib.Path(second.stdout.split()[1])
    assert a != b and a.parent == b.parent == tmp_path / "cache" / "ubpe" / "numba"


@pytest.mark.slow
def test_an_edited_shared_helper_never_runs_stale(tmp_path):
    """The whole story, compiled twice: a copy of the package codes a signal with "cms2" (its
    kernels cached); then one knot of the squash table in the shared cmcore.py moves, and the
    same call (in a new process, same cache home) codes it differently and still decodes it:
    the edited helper ran, not the cached code of the file that inlines it."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(PACKAGE, copy / "ubpe", ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import hashlib, numpy as np, ubpe\n"
            "x = np.cumsum(np.random.default_rng(1).integers(-9, 10, 3000)).astype(np.int16)\n"
            "data = ubpe.compress(x, level=2, predictor='none')\n"
            "assert ubpe.describe(data).coder == 'cms2' and np.array_equal(ubpe.decompress(data), x)\n"
            "print(hashlib.sha256(data).hexdigest())\n")
    env = {"PYTHONPATH": str(copy), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    before = _run(code, env, cwd=tmp_path)
    assert before.returncode == 0, before.stderr
    again = _run(code, env, cwd=tmp_path)  # from the cache: the same bytes
    assert again.returncode == 0 and again.stdout == before.stdout, again.stderr
    helper = copy / "ubpe" / "_kernels" / "cmcore.py"
    source = helper.read_text()
    assert source.count(" 1546, ") == 1
    helper.write_text(source.replace(" 1546, ", " 1540, "))
    after = _run(code, env, cwd=tmp_path)
    assert after.returncode == 0, after.stderr
    assert after.stdout != before.stdout


def test_numba_cache_dir_is_honoured(tmp_path):
    target = tmp_path / "numba-cache"
    proc = _run(FIT, {"NUMBA_CACHE_DIR": str(target), "XDG_CACHE_HOME": str(tmp_path / "unused")})
    assert proc.returncode == 0, proc.stderr
    assert _index_files(target)
    assert not (tmp_path / "unused" / "ubpe").exists()


def test_unwritable_cache_home_falls_back_without_failing(tmp_path):
    blocker = tmp_path / "file-not-dir"
    blocker.write_bytes(b"")
    proc = _run(FIT + "; import ubpe._kernels as k; print(k.cache_dir())", {"XDG_CACHE_HOME": str(blocker)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "None"


def test_importing_ubpe_leaves_numba_settings_alone():
    proc = _run("import numba; before = numba.config.CACHE_DIR; import ubpe; print(numba.config.CACHE_DIR == before)", {})
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stderr


def test_late_imported_kernel_modules_cache_in_the_same_directory(tmp_path):
    # the context-mixing coders and the segmenter are imported on first use, after `import ubpe`
    code = ("import numba; before = numba.config.CACHE_DIR; import ubpe; "
            "from ubpe._kernels import cmsignal2, cmtext, segment; "
            "[print(f.stats.cache_path) for f in (cmsignal2._code, cmtext._code, segment.cheapest_batch)]; "
            "print(numba.config.CACHE_DIR == before)")
    proc = _run(code, {"XDG_CACHE_HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    *paths, same = proc.stdout.split()
    assert len(paths) == 3
    for path in paths:  # not beside the sources (numba's default when the package is writable)
        assert pathlib.Path(path).is_relative_to(tmp_path / "ubpe" / "numba"), path
    assert same == "True"


def test_import_ubpe_leaves_the_text_tokenizer_and_late_kernels_unimported():
    code = ("import sys, ubpe; print(sorted(m for m in ('ubpe.text', 'ubpe._kernels.segment', "
            "'ubpe._kernels.cmsignal2', 'ubpe._kernels.cmtext') if m in sys.modules)); "
            "from ubpe import TextTokenizer; print(TextTokenizer is sys.modules['ubpe.text'].TextTokenizer, "
            "'TextTokenizer' in dir(ubpe))")
    proc = _run(code, {})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["[]", "True True"]
    star = _run("from ubpe import *; print(TextTokenizer.__name__)", {})
    assert star.returncode == 0 and star.stdout.strip() == "TextTokenizer", star.stderr


def test_cli_announces_the_first_compilation_only_when_the_cache_is_cold(tmp_path, capsys, monkeypatch):
    """The CLI looks at the cache directory the environment names (NUMBA_CACHE_DIR): an empty one
    is announced as a first compilation; one holding the kernels is not. (The kernels this
    process already compiled stay where they are: nothing compiles here.)"""
    src = tmp_path / "x.npy"
    np.save(src, np.tile(np.arange(8, dtype=np.int16), 100))
    ubpe.compress(np.load(src))  # the kernels of this job, compiled or loaded (and cached) beforehand
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "empty"))
    assert cli.main(["compress", str(src), "-o", str(tmp_path / "a.ubpe")]) == 0
    err = capsys.readouterr().err
    assert "compiling the kernels on first use" in err and str(tmp_path / "empty") in err
    assert cli.main(["-q", "compress", str(src), "-o", str(tmp_path / "q.ubpe")]) == 0
    assert capsys.readouterr().err == ""  # -q: not even that line
    warm = tmp_path / "warm"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(warm))
    from ubpe._cache import cache_dir, kernels_subdir

    other = pathlib.Path(cache_dir()) / "_kernels_0123456789abcdef0123456789abcdef01234567"
    other.mkdir()
    (other / "kernel.nbi").write_bytes(b"")  # another installation's kernels: numba compiles ours afresh
    assert cli.main(["compress", str(src), "-o", str(tmp_path / "c.ubpe")]) == 0
    assert "compiling the kernels on first use" in capsys.readouterr().err
    mine = pathlib.Path(cache_dir()) / kernels_subdir()
    mine.mkdir()
    (mine / "kernel.nbi").write_bytes(b"")  # an index file of ours: what a compilation leaves
    assert cli.main(["compress", str(src), "-o", str(tmp_path / "b.ubpe")]) == 0
    assert "compiling" not in capsys.readouterr().err


def test_a_bug_is_an_internal_error_not_a_data_error(tmp_path, capsys, monkeypatch):
    src = tmp_path / "x.npy"
    np.save(src, np.arange(10, dtype=np.int16))

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(ubpe.io, "read_signal", broken)
    code = cli.main(["compress", str(src), "-o", str(tmp_path / "a.ubpe")])
    err = capsys.readouterr().err
    assert code == cli.EXIT_INTERNAL == 3
    assert "internal error" in err and "KeyError" in err
