"""The command-line examples of the docs, run by today's code, so that they cannot go stale.

In docs/cli.md, docs/signals.md, docs/experiments.md and the README's command-line section:

- every ```sh block is a list of commands: each runs, in order, in a scratch folder holding the
  files the examples name (made from the bundled MIT-BIH ECG excerpt, and for signals.md and
  experiments.md from the shared data), and must succeed;
- every ```console block is a session: ``$ ubpe ...`` lines, each followed by what it prints
  (standard output and error, as a terminal shows them); it must print that today, times
  excepted (``1.1 s``, ``0.48s``: any figure of seconds matches any other).

    python benchmarks/cli_examples.py            # run every example, print the sessions
    python benchmarks/cli_examples.py --write    # the same, and rewrite the console blocks
    python benchmarks/cli_examples.py --check    # exit 1 if a command fails or prints otherwise

Sizes are deterministic (the same on every machine and thread count), so a writer change that
moves a byte of an example shows here: regenerate with --write and commit the pages.
``tests/test_docs.py`` runs --check. The pages' ``>>>`` examples are doctests, run there too.
Shared data: $UBPE_DATA, else ../shared/data beside the checkout (pages that need it are
skipped, with a note, when it is missing).
"""

from __future__ import annotations

import contextlib
import io
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = ("cli.md", "signals.md", "experiments.md", "README.md")
#: Figures of seconds, which differ from run to run: compared as equal.
TIMES = re.compile(r"\d+(\.\d+)? ?s\b")
#: Lines that depend on the machine's state, not on the command: left out of sessions.
VOLATILE = ("(first use:", "ubpe: compiling the kernels")


def data_dir() -> pathlib.Path | None:
    path = pathlib.Path(os.environ.get("UBPE_DATA", ROOT.parent / "shared" / "data"))
    return path if path.is_dir() else None


def make_files(folder: pathlib.Path, page: str, data: pathlib.Path | None) -> bool:
    """The files ``page``'s examples name, in ``folder``; False when they need missing shared data."""
    from ubpe import io as uio

    ecg = uio.demo_signal()
    np.save(folder / "signal.npy", ecg)
    uio.write_values(folder / "signal.wav", ecg, rate=uio.DEMO_RATE)
    np.save(folder / "window.npy", ecg[:2000])
    np.save(folder / "day1.npy", ecg[:7200])
    np.save(folder / "day2.npy", ecg[7200:14400])
    uio.write_values(folder / "day3.csv", ecg[14400:].astype(np.int64),
                     source={"format": "csv", "delimiter": ",", "columns": 1, "header": "ecg"})
    (folder / "samples.dat").write_bytes(ecg.astype("<i2").tobytes())
    shutil.copy(ROOT / "ubpe" / "data" / "ATTRIBUTION.md", folder / "notes.md")
    beats = ecg[::36].astype(np.int64)  # one reading a tenth of a second
    rows = "".join(f"{i / 10:.1f},{60 + int(b) % 37},{95 + int(b) % 5}\n" for i, b in enumerate(beats))
    (folder / "vitals.csv").write_text("time,heart_rate,spo2\n" + rows)
    np.save(folder / "sensor.npy", ecg * 0.005)  # millivolts, as floats
    if page == "signals.md":
        if data is None:
            return False
        shutil.copy(data / "float" / "BW_UH4_EHZ.npy", folder / "x.npy")
        shutil.copy(data / "audio" / "xylofon.wav", folder / "a.wav")
    if page == "experiments.md":
        if data is None:
            return False
        for sub, name in (("ecg", "mitbih_208.npy"), ("audio", "xylofon.wav"), ("audio", "pipe.wav")):
            (folder / sub).mkdir(exist_ok=True)
            shutil.copy(data / sub / name, folder / sub / name)
    return True


#: ``cat FILE | ubpe ... [| ubpe ...] [> OUT]`` (no stage naming /dev/stdin, which is the
#: process's own): run in this process, each stage's standard input a pipe fed from memory
PIPELINE = re.compile(r"cat (\S+)((?: \| ubpe [^|<>;&]+?)+)(?: > (\S+))?")


def _main_on_stdin(argv: list[str], data: bytes, folder: pathlib.Path) -> tuple[int, bytes, str]:
    """``ubpe.cli.main(argv)`` in ``folder`` with ``data`` on its standard input (a real pipe:
    the CLI may read it by file descriptor): (exit code, standard output, standard error)."""
    import threading

    from ubpe import cli

    r, w = os.pipe()

    def feed() -> None:
        try:
            with open(w, "wb") as f:
                f.write(data)
        except BrokenPipeError:  # the command stopped reading
            pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    stdin = io.TextIOWrapper(open(r, "rb"))
    out = io.BytesIO()
    stdout, stderr = io.TextIOWrapper(out, write_through=True), io.StringIO()
    saved, here = (sys.stdin, sys.stdout, sys.stderr), os.getcwd()
    os.chdir(folder)
    try:
        sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
        code = cli.main(argv)
        stdout.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
        os.chdir(here)
        stdin.close()
        feeder.join()
    return code, out.getvalue(), stderr.getvalue()


def _pipeline(argv: list[str], folder: pathlib.Path) -> tuple[int, str] | None:
    """A :data:`PIPELINE` line run in this process (as bash runs it: the last stage's exit code,
    an earlier failure reported too), or None for any other line."""
    m = PIPELINE.fullmatch(" ".join(argv))
    if m is None or "/dev/stdin" in argv:
        return None
    data = (folder / m.group(1)).read_bytes()
    printed = []
    for stage in m.group(2).split(" | ")[1:]:
        code, data, err = _main_on_stdin(shlex.split(stage)[1:], data, folder)
        printed.append(err)
        if code != 0:
            return code, "".join(printed)
    if m.group(3):
        (folder / m.group(3)).write_bytes(data)
    else:
        printed.append(data.decode(errors="replace"))
    return 0, "".join(printed)


def run(command: str, folder: pathlib.Path) -> tuple[int, str]:
    """Run one example line in ``folder``: ``ubpe ...`` in this process (stdout and stderr as
    one text, in order), and so ``cat FILE | ubpe ... [> OUT]`` (:data:`PIPELINE`) and ``rm FILE
    && ubpe ...``; any other line with shell syntax (pipes, redirections) by bash, with the
    ``ubpe`` of this Python first on PATH."""
    from ubpe import cli

    argv = shlex.split(command, comments=True)
    if not argv:
        return 0, ""
    piped = _pipeline(argv, folder)
    if piped is not None:
        return piped
    if len(argv) > 3 and argv[0] == "rm" and argv[2] == "&&" and argv[3] == "ubpe" and not any(
            t in ("|", ">", "<", ";", "&&") for t in argv[3:]):
        os.remove(folder / argv[1])
        return run(shlex.join(argv[3:]), folder)
    if any(t in ("|", ">", "<", ";", "&&") for t in argv) or "|" in command:
        env = dict(os.environ, PATH=str(pathlib.Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
        r = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr
    if argv[0] != "ubpe":
        raise ValueError(f"an example runs ubpe, not {argv[0]!r}: {command}")
    out = io.StringIO()
    here = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = cli.main(argv[1:])
    finally:
        os.chdir(here)
    return code, out.getvalue()


def _shown(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines() if not line.startswith(VOLATILE)]


def _same(expected: list[str], got: list[str]) -> bool:
    return [TIMES.sub("<s>", e) for e in expected] == [TIMES.sub("<s>", g) for g in got]


def blocks(text: str) -> list[tuple[int, int, str, list[str]]]:
    """(first line, end line, language, body lines) of each fenced block of a page."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = re.fullmatch(r"```(\w*)", lines[i])
        if m:
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            out.append((i, j, m.group(1), lines[i + 1:j]))
            i = j
        i += 1
    return out


def sessions(body: list[str]) -> list[tuple[str, list[str]]]:
    """The ``$ command`` lines of a console block, each with the lines printed after it."""
    out: list[tuple[str, list[str]]] = []
    for line in body:
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return out


def page_examples(page: str, folder: pathlib.Path, write: bool) -> tuple[list[str], str]:
    """Run every example of ``page``; (problems, the page with its console blocks as printed today)."""
    path = ROOT / page if page == "README.md" else ROOT / "docs" / page
    text = path.read_text()
    lines = text.split("\n")
    problems: list[str] = []
    replaced: dict[int, list[str]] = {}
    for first, end, language, body in blocks(text):
        if language == "sh":
            if page == "README.md" and not any(b.startswith("ubpe ") for b in body):
                continue  # the installation commands
            joined = " ".join(body).replace("\\ ", " ") if any(b.endswith("\\") for b in body) else None
            for command in ([joined] if joined else body):
                code, printed = run(command, folder)
                if code != 0:
                    problems.append(f"{page}:{first + 1}: `{command}` exited {code}: {printed.strip()[-300:]}")
        elif language == "console":
            new: list[str] = []
            for command, expected in sessions(body):
                code, printed = run(command, folder)
                got = _shown(printed)
                new += [f"$ {command}", *got]
                if not _same(expected, got):
                    problems.append(f"{page}:{first + 1}: `{command}` prints today:\n  " + "\n  ".join(got))
            replaced[first] = new
            print(f"--- {page}:{first + 1}\n" + "\n".join(new))
    if replaced:
        out: list[str] = []
        skip_to = -1
        for i, line in enumerate(lines):
            if i < skip_to:
                continue
            if i in replaced:
                end = next(e for f, e, _, _ in blocks(text) if f == i)
                out += [line, *replaced[i], lines[end]]
                skip_to = end + 1
                continue
            out.append(line)
        text = "\n".join(out)
    if write:
        path.write_text(text)
    return problems, text


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    write, check = "--write" in argv, "--check" in argv
    data = data_dir()
    problems: list[str] = []
    for page in PAGES:
        with tempfile.TemporaryDirectory(prefix="ubpe-examples-") as tmp:
            folder = pathlib.Path(tmp)
            if not make_files(folder, page, data):
                print(f"{page}: skipped (its examples need the shared data: set UBPE_DATA)")
                continue
            found, _ = page_examples(page, folder, write)
            problems += found
    for p in problems:
        print("PROBLEM", p)
    print(f"{len(problems)} problem(s)" if problems else "every example ran as the pages show")
    return 1 if problems and check else 0


if __name__ == "__main__":
    sys.exit(main())
