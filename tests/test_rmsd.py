import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from perfsweep.apps import rmsd

MPIEXEC = str(Path(sys.executable).with_name("mpiexec"))


def test_kabsch_rmsd_is_zero_for_rotated_translated_copy():
    rng = np.random.default_rng(1)
    p = rng.normal(size=(50, 3))
    q = p @ Rotation.random(random_state=3).as_matrix().T + [1.0, -2.0, 5.0]
    assert rmsd.kabsch_rmsd(q, p) == pytest.approx(0.0, abs=1e-6)  # sqrt of a rounding-level residual


def test_kabsch_rmsd_matches_scipy_optimal_superposition():
    rng = np.random.default_rng(2)
    p = rng.normal(size=(40, 3))
    q = p @ Rotation.random(random_state=4).as_matrix().T + rng.normal(scale=0.3, size=(40, 3))
    pc, qc = p - p.mean(0), q - q.mean(0)
    _, rssd = Rotation.align_vectors(pc, qc)
    assert rmsd.kabsch_rmsd(q, p) == pytest.approx(rssd / np.sqrt(len(p)), rel=1e-9)


def test_trajectory_file_round_trip(tmp_path):
    path = tmp_path / "t.trj"
    rmsd.write_trajectory(path, 30, 4, seed=1)
    with open(path, "rb") as fh:
        assert rmsd.read_header(fh) == (30, 4)
    assert path.stat().st_size == rmsd.HEADER + 4 * 30 * 3 * 4


def test_two_ranks_record(tmp_path):
    report = tmp_path / "r.json"
    traj = tmp_path / "t.trj"
    subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-m", "perfsweep.apps.rmsd", "--atoms", "500",
                    "--frames", "41", "--trajectory", str(traj), "--report", str(report)], check=True, timeout=120)
    r = json.loads(report.read_text())
    assert r["nprocs"] == 2 and r["extra"]["frames"] == 41
    one = subprocess.run([sys.executable, "-m", "perfsweep.apps.rmsd", "--atoms", "500", "--frames", "41",
                          "--trajectory", str(traj)], check=True, capture_output=True, text=True)
    assert json.loads(one.stdout)["extra"]["rmsd_mean"] == pytest.approx(r["extra"]["rmsd_mean"], rel=1e-12)
    for rank in r["ranks"]:
        assert rank["compute"] > 0 and rank["io"] > 0 and rank["init"] > 0
        assert set(rank["comm_ops"]) == {"Gather"}
        regions = rank["regions"]
        assert {"block_rmsd", "block_rmsd/opening", "block_rmsd/frames", "block_rmsd/end_loop"} <= set(regions)
        # t_all_frame covers the I/O and computation of the frames
        assert regions["block_rmsd/frames"]["time"] >= rank["io"] + rank["compute"] - 1e-9
        assert regions["block_rmsd"]["time"] <= rank["total"]
