"""Malformed Extra-P and CUBE input: ``perfsweep models CASE`` gives one line naming the file, exit 2.

Each case is a file or directory in tests/bad_inputs/extrap/ with a sibling ``CASE.expected`` holding a
substring of the one-line error it must give.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

CASES = REPO / "tests" / "bad_inputs" / "extrap"
NAMES = sorted(p.name for p in CASES.iterdir() if not p.name.endswith(".expected"))
PERFSWEEP = Path(sys.executable).with_name("perfsweep")


# One Python process runs the CLI's main() on every case, as the perfsweep command does, and reports
# per case its exit code, stdout and stderr; an exception escaping main() is reported as a traceback.
# (A process per case would pay perfsweep's start-up, numpy/pandas/scipy, 50 times; three cases also
# run through the installed command itself, below.)
DRIVER = r"""
import contextlib, io, json, sys, traceback
from perfsweep.cli import main
out = {}
for name in sys.argv[1:]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            rc = main(["models", name])
        except SystemExit as exc:
            rc = exc.code
        except BaseException:
            traceback.print_exc()
            rc = 1
    out[name] = [rc, stdout.getvalue(), stderr.getvalue()]
print(json.dumps(out))
"""


def run(name):
    return subprocess.run([str(PERFSWEEP), "models", name], cwd=CASES, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def results():
    proc = subprocess.run([sys.executable, "-c", DRIVER, *NAMES], cwd=CASES, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {name: subprocess.CompletedProcess([], rc, out, err)
            for name, (rc, out, err) in json.loads(proc.stdout).items()}


def test_every_case_has_its_expected_message():
    expected = {p.name[:-len(".expected")] for p in CASES.glob("*.expected")}
    assert expected == set(NAMES) and len(NAMES) >= 40
    kinds = {n.split("_")[0] for n in NAMES}
    assert kinds == {"text", "json", "jsonl", "cube"}


@pytest.mark.parametrize("name", NAMES)
def test_bad_input_gives_one_line(results, name):
    proc = results[name]
    want = (CASES / f"{name}.expected").read_text().strip()
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"perfsweep: {name}"), lines[0]  # names the file
    assert want in lines[0], f"expected {want!r} in {lines[0]!r}"


@pytest.mark.parametrize("name", ["text_fewer_data.txt", "jsonl_truncated.jsonl", "cube_truncated"])
def test_the_command_itself(results, name):
    proc = run(name)
    assert (proc.returncode, proc.stdout, proc.stderr) == (results[name].returncode, "", results[name].stderr)


def _damaged(data: bytes, rng) -> bytes:
    kind = rng.randrange(4)
    if kind == 0:  # truncated
        return data[:rng.randrange(len(data))]
    if kind == 1:  # bytes overwritten
        d = bytearray(data)
        for _ in range(rng.randint(1, 5)):
            d[rng.randrange(len(d))] = rng.choice(b'{}[]()":,. x-0eNa\t\n\xff')
        return bytes(d)
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    if kind == 2:  # a line lost or doubled
        lines[i:i + 1] = [] if rng.random() < 0.5 else [lines[i], lines[i]]
    else:  # a token replaced by something of another type
        tokens = lines[i].split(b" ")
        tokens[rng.randrange(len(tokens))] = rng.choice([b"nan", b"-inf", b'"x"', b"true", b"null", b"[]", b"{}",
                                                         b"1e999"])
        lines[i] = b" ".join(tokens)
    return b"\n".join(lines)


def test_damaged_files_are_read_or_refused_in_one_line(tmp_path):
    """Extra-P's own inputs and CUBE profiles, damaged at random (fixed seed): each is read or refused
    with an ExtrapFormatError naming the file, never another exception."""
    import random
    import shutil

    from extrap_reference import DATA, inputs
    from perfsweep.errors import ExtrapFormatError
    from perfsweep.modeling.extrap_io import read_extrap

    rng = random.Random(15)
    files = [DATA / rel for rel, kind in inputs().items() if kind != "cube"]
    cases = []
    for i in range(400):
        source = rng.choice(files)
        path = tmp_path / f"{i}{source.suffix}"
        path.write_bytes(_damaged(source.read_bytes(), rng))
        cases.append(path)
    for i in range(30):
        path = tmp_path / f"cube{i}"
        shutil.copytree(DATA / "cubeset" / "single_parameter", path)
        victim = rng.choice(sorted(path.glob("*/profile.cubex")))
        data = victim.read_bytes()
        victim.write_bytes(data[:rng.randrange(len(data))] if i % 2 else _damaged(data, rng))
        cases.append(path)
    refused = 0
    for path in cases:
        try:
            read_extrap(path)
        except ExtrapFormatError as exc:
            assert str(path) in str(exc) and "\n" not in str(exc), str(exc)
            refused += 1
    print(f"{refused} of {len(cases)} damaged inputs refused")
    assert refused > len(cases) / 2  # most damage is noticed (some leaves a valid file, e.g. a lost comment)
