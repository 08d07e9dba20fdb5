"""envs/perfsweep.yaml (for cluster users' conda) must ask for what pyproject.toml asks for."""

import re
import tomllib

import yaml

from conftest import REPO

CONDA_NAMES = {"matplotlib": "matplotlib-base", "pyyaml": "pyyaml"}
PIP_ONLY = {"pycubexr"}  # not packaged for conda: the env installs them with pip


def _split(spec: str) -> tuple[str, str]:
    name, rest = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$", spec).groups()
    return name.lower(), rest.replace(" ", "")


def test_conda_env_matches_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = {CONDA_NAMES.get(n, n): s for n, s in map(_split, project["dependencies"]) if n not in PIP_ONLY}
    wanted["python"] = project["requires-python"]
    env = yaml.safe_load((REPO / "envs" / "perfsweep.yaml").read_text())
    have = dict(_split(d) for d in env["dependencies"] if isinstance(d, str) and d != "pip")
    assert have == wanted
    pip = [d for d in env["dependencies"] if isinstance(d, dict)][0]["pip"]
    assert pip[-1] == "--editable .."
    pip_wanted = {n: s for n, s in map(_split, project["dependencies"]) if n in PIP_ONLY}
    assert dict(_split(d.split("#")[0]) for d in pip[:-1]) == pip_wanted
