"""Where the compiled kernels are cached, and what a first run tells the user."""

import os
import pathlib
import subprocess
import sys

import numpy as np

import ubpe
from ubpe import cli

PACKAGE = pathlib.Path(ubpe.__file__).parent
FIT = "import ubpe, numpy as np; ubpe.Tokenizer(4, 6).fit(np.tile(np.arange(4), 50))"


def _run(code: str, env: dict) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"} | env
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=300)


def _index_files(root: pathlib.Path) -> set[pathlib.Path]:
    return set(root.rglob("*.nbi"))


def test_kernels_are_cached_per_user_never_in_the_package(tmp_path):
    before = _index_files(PACKAGE)
    proc = _run(FIT + "; import ubpe._kernels as k; print(k.cache_dir())", {"XDG_CACHE_HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(tmp_path / "ubpe" / "numba")
    assert _index_files(tmp_path), "no kernel was cached in the per-user directory"
    assert _index_files(PACKAGE) == before, "numba wrote its cache into the package"


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
    src = tmp_path / "x.npy"
    np.save(src, np.tile(np.arange(8, dtype=np.int16), 100))
    monkeypatch.setattr(cli.kernels, "is_cache_warm", lambda: False)
    assert cli.main(["compress", str(src), "-o", str(tmp_path / "a.ubpe")]) == 0
    assert "compiling the kernels on first use" in capsys.readouterr().err
    monkeypatch.setattr(cli.kernels, "is_cache_warm", lambda: True)
    assert cli.main(["compress", str(src), "-o", str(tmp_path / "b.ubpe")]) == 0
    assert "compiling" not in capsys.readouterr().err


def test_a_bug_is_an_internal_error_not_a_data_error(tmp_path, capsys, monkeypatch):
    src = tmp_path / "x.npy"
    np.save(src, np.arange(10, dtype=np.int16))

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(cli.uio, "read_signal", broken)
    code = cli.main(["compress", str(src), "-o", str(tmp_path / "a.ubpe")])
    err = capsys.readouterr().err
    assert code == cli.EXIT_INTERNAL == 3
    assert "internal error" in err and "KeyError" in err
