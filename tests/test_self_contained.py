"""A user's clone carries everything it needs: no tracked file refers to the developers' shared folder,
which sits beside their checkout and is not part of the repository."""

import re
import subprocess

from conftest import REPO

# a path into the developers' shared folder beside the checkout, however it is spelled (the name is
# assembled here so that this file does not itself name the path)
FOLDER = "sha" + "red"
SHARED = re.compile(r"""(\.\./|parent\s*/\s*["'])""" + FOLDER + r"\b")


def tracked_files():
    out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=False)
    if out.returncode == 0 and out.stdout:
        return [REPO / f for f in out.stdout.decode().split("\0") if f]
    skip = {".git", ".venv", ".extrap-venv", "results", ".snakemake"}  # an exported tree, not a clone
    return [f for f in REPO.rglob("*") if f.is_file() and not skip & set(f.relative_to(REPO).parts)]


def test_no_tracked_file_refers_to_shared():
    offenders = []
    for path in tracked_files():
        if not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        offenders += [f"{path.relative_to(REPO)}:{n}" for n, line in enumerate(text.splitlines(), 1)
                      if SHARED.search(line)]
    assert not offenders, f"files that refer to ../{FOLDER}: " + ", ".join(offenders)


def test_pattern_catches_the_spellings_we_used():
    assert SHARED.search(f'REPO.parent / "{FOLDER}" / "reference-data"')
    assert SHARED.search(f"../{FOLDER}/reference-data/hofinger2018/table1.csv")
    assert not SHARED.search("instrumentation shared by the built-in MPI apps")


def test_reference_data_ships_with_its_licences():
    data = REPO / "resources" / "reference-data"
    readme = (data / "README.md").read_text()
    for folder in ("hofinger2018", "mdanalysis-rmsd", "extrap"):
        assert (data / folder).is_dir() and f"## {folder}" in readme
    assert (data / "extrap" / "LICENSE.extrap-BSD-3-Clause").is_file()
    assert "CC BY 4.0" in readme and "CC BY-SA 4.0" in readme
