"""The corpus of bad inputs (tests/bad_inputs/, one case per file): each, given to the real
``perfsweep`` command, must fail with a non-zero exit, one line on stderr that contains the case's
expected message, and no traceback.

A case file (YAML) has ``what`` (the mistake), ``args`` (the command's arguments; ``{input}`` stands
for the case's input file), ``expect`` (the message, ``{input}`` substituted), and the input: ``input``
(text), ``input_base64`` (bytes) or ``input_dir: true`` (a directory), written to ``input_name``
(default ``input.yaml``) in a fresh working directory.
"""

import base64
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

CASES = sorted((Path(__file__).parent / "bad_inputs").glob("*.yaml"))
PERFSWEEP = Path(sys.executable).with_name("perfsweep")


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 40
    kinds = {c.name.split("-")[1] for c in CASES}
    assert {"config", "cli", "record"} <= kinds


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_bad_input_gives_one_clear_line(case, tmp_path):
    spec = yaml.safe_load(case.read_text())
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
    proc = subprocess.run([str(PERFSWEEP), *args], cwd=tmp_path, capture_output=True, text=True, timeout=120)
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
