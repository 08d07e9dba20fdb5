"""The corpus of bad inputs (tests/bad_inputs/, one case per file): each, given to the real
``perfsweep`` command, must fail with a non-zero exit, one line on stderr that contains the case's
expected message, and no traceback.

A case file (YAML) has ``what`` (the mistake), ``args`` (the command's arguments; ``{input}`` stands
for the case's input file), ``expect`` (the message, ``{input}`` substituted), and the input: ``input``
(text), ``input_base64`` (bytes) or ``input_dir: true`` (a directory), written to ``input_name``
(default ``input.yaml``) in a fresh working directory.
"""

import base64
import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest
import yaml

CASES = sorted((Path(__file__).parent / "bad_inputs").glob("*.yaml"))
PERFSWEEP = Path(sys.executable).with_name("perfsweep")
# the first case of each kind runs the installed ``perfsweep`` script itself; the others the same entry
# point, perfsweep.cli.main, in a process forked from one that imported it already: a process of its own
# (its exit code, its stdout and stderr, its working directory), without the 0.3-0.5 s of a new
# interpreter and its imports (139 cases: about a minute of the fast tests)
BY_SCRIPT = {next(c for c in CASES if c.name.split("-")[1] == kind) for kind in ("config", "cli", "record")}


def forked_cli(args: list[str], cwd: Path, out: Path) -> subprocess.CompletedProcess:
    """``perfsweep ARGS`` in ``cwd`` as the console script runs it (``sys.exit(main())``), in a forked
    process whose stdout and stderr go to files in ``out``."""
    from perfsweep.cli import build_parser, main

    build_parser()  # every subcommand's module imported before the fork
    files = [out / "stdout", out / "stderr"]
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.chdir(cwd)
            for fd, path in zip((1, 2), files):
                os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
            sys.stdout, sys.stderr = (open(fd, "w", closefd=False) for fd in (1, 2))
            sys.argv = ["perfsweep", *args]
            code = main(args)
        except SystemExit as exc:  # as the interpreter ends on it: None 0, a text printed and 1
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            os._exit(code if isinstance(code, int) else 1)
    _, status = os.waitpid(pid, 0)
    return subprocess.CompletedProcess(args, os.waitstatus_to_exitcode(status), *(f.read_text() for f in files))


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 40
    kinds = {c.name.split("-")[1] for c in CASES}
    assert {"config", "cli", "record"} <= kinds


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_bad_input_gives_one_clear_line(case, tmp_path_factory):
    spec = yaml.safe_load(case.read_text())
    tmp_path = tmp_path_factory.mktemp("case")
    target = tmp_path / spec.get("input_name", "input.yaml")
    target.parent.mkdir(parents=True, exist_ok=True)
    if spec.get("input_dir"):
        target.mkdir()
    elif "input_base64" in spec:
        target.write_bytes(base64.b64decode(spec["input_base64"]))
    elif "input" in spec:
        target.write_text(spec["input"])
    name = spec.get("input_name", "input.yaml")
    args = [a.replace("{input}", name) for a in spec["args"]]
    if case in BY_SCRIPT:
        proc = subprocess.run([str(PERFSWEEP), *args], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    else:
        proc = forked_cli(args, tmp_path, tmp_path_factory.mktemp("output"))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"{case.name}: accepted (exit 0):\n{out}"
    assert "Traceback" not in out, f"{case.name}: traceback:\n{out}"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, f"{case.name}: {len(lines)} lines on stderr:\n{proc.stderr}"
    expect = spec["expect"].replace("{input}", name)
    assert expect in lines[0], f"{case.name}: expected {expect!r} in\n{lines[0]!r}"
    assert not (tmp_path / ".snakemake").exists()  # refused before Snakemake started
    if not name.startswith("results/"):
        assert not (tmp_path / "results").exists()  # nothing written
