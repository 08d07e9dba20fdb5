"""envs/perfsweep.yaml (for cluster users' conda) must ask for what pyproject.toml asks for."""

import re
import tomllib

import yaml

from conftest import REPO

CONDA_NAMES = {"matplotlib": "matplotlib-base", "pyyaml": "pyyaml"}
PIP_ONLY = {"pycubexr"}  # not packaged for conda: the env installs them with pip


def _split(spec: str) -> tuple[str, str]:
    """(name, version spec) of a requirement; a pip extra (``psycopg[binary]``) is dropped: conda has none."""
    name, rest = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(?:\[[^\]]*\])?\s*(.*)$", spec).groups()
    return name.lower(), rest.replace(" ", "")


def test_conda_env_matches_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = {CONDA_NAMES.get(n, n): s for n, s in map(_split, project["dependencies"]) if n not in PIP_ONLY}
    wanted["python"] = project["requires-python"]
    env = yaml.safe_load((REPO / "envs" / "perfsweep.yaml").read_text())
    have = dict(_split(d) for d in env["dependencies"] if isinstance(d, str) and d != "pip")
    assert have == wanted
    pip = [d for d in env["dependencies"] if isinstance(d, dict)][0]["pip"]
    pip_wanted = {n: s for n, s in map(_split, project["dependencies"]) if n in PIP_ONLY}
    assert dict(_split(d.split("#")[0]) for d in pip) == pip_wanted


def test_conda_env_takes_mpi_from_conda_forge():
    """Under --sdm conda the MPI is conda-forge's MPICH with the mpi4py built against it; a PyPI wheel of
    either (or pip installing perfsweep with its dependencies) would put a second MPI beside it."""
    env = yaml.safe_load((REPO / "envs" / "perfsweep.yaml").read_text())
    assert env["channels"][0] == "conda-forge" and "nodefaults" in env["channels"]
    conda = {_split(d)[0] for d in env["dependencies"] if isinstance(d, str)}
    assert {"mpich", "mpi4py"} <= conda
    pip = [d for d in env["dependencies"] if isinstance(d, dict)][0]["pip"]
    assert not [d for d in pip if _split(d.split("#")[0])[0] in {"mpich", "mpi4py", "perfsweep"} or d.startswith("-")]


def test_rules_name_this_env():
    """The rules' conda: ENV (common.smk) is envs/perfsweep.yaml seen from workflow/rules/ (snakemake --lint,
    tests/test_lint.py, checks that every rule has a conda: directive)."""
    rules = REPO / "workflow" / "rules"
    env = re.search(r'^ENV = "([^"]+)"', (rules / "common.smk").read_text(), re.MULTILINE).group(1)
    assert (rules / env).resolve() == (REPO / "envs" / "perfsweep.yaml").resolve()
