import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.transform import Rotation

from perfsweep.apps import rmsd
from perfsweep.metrics.observables import RMSD_REGIONS, from_pipeline_ranks

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
    one = json.loads(one.stdout)
    assert one["extra"]["rmsd_mean"] == pytest.approx(r["extra"]["rmsd_mean"], rel=1e-12)
    # untimed, each rank read the reference frame and its block of frames once: 2 + 41 frames of 500 atoms
    assert r["warmup"]["read_ahead"] == one["warmup"]["read_ahead"] + 6000 == 43 * 500 * 12
    for rank in r["ranks"]:
        assert rank["compute"] > 0 and rank["io"] > 0 and rank["init"] > 0
        assert set(rank["comm_ops"]) == {"Gather"}
        regions = rank["regions"]
        assert set(RMSD_REGIONS) <= set(regions)
        # t_all_frame covers the I/O and computation of the frames and the loop exit
        assert regions["block_rmsd/frames"]["time"] >= rank["io"] + rank["compute"] + regions[
            "block_rmsd/frames/end_loop"]["time"]
        assert regions["block_rmsd"]["time"] <= rank["total"]
    # the seed's observables from the record: both overheads are small and not negative
    ranks = pd.DataFrame([{k: v for k, v in x.items() if not isinstance(v, dict)} for x in r["ranks"]])
    ranks["run_id"] = "r"
    regions = pd.DataFrame([{"run_id": "r", "rank": x["rank"], "region": name, "time": v["time"]}
                            for x in r["ranks"] for name, v in x["regions"].items()])
    obs = from_pipeline_ranks(ranks, regions)
    for col in ("t_Overhead1", "t_Overhead2"):
        assert (obs[col] >= 0).all() and (obs[col] < 0.2 * obs["t_RMSD"]).all(), obs[col]
    assert (obs["t_RMSD"] + obs["t_comm"] <= obs["t_N"]).all()  # t_N = t_RMSD + t_comm (+ timer set-up)


@pytest.mark.parametrize("atoms", [30, 30_000])  # frames within and beyond read_ahead's 1 MiB buffer
def test_read_ahead_reads_the_reference_and_the_block_once(tmp_path, atoms):
    traj = tmp_path / "t.trj"
    rmsd.write_trajectory(traj, atoms, 7, seed=1)
    assert rmsd.read_ahead(traj, 2, 7) == 6 * atoms * 12
    assert rmsd.read_ahead(traj, 0, 0) == atoms * 12


def test_cold_reads_read_nothing_ahead(tmp_path):
    out = subprocess.run([sys.executable, "-m", "perfsweep.apps.rmsd", "--atoms", "40", "--frames", "5",
                          "--cold-reads", "--trajectory", str(tmp_path / "t.trj")],
                         check=True, capture_output=True, text=True)
    assert json.loads(out.stdout)["warmup"]["read_ahead"] == 0


def test_kabsch_rmsd_is_the_minimum_over_brute_force_rotations():
    rng = np.random.default_rng(5)
    p = rng.normal(size=(30, 3))
    q = p @ Rotation.random(random_state=6).as_matrix().T + rng.normal(scale=0.2, size=(30, 3))
    pc, qc = p - p.mean(0), q - q.mean(0)

    def rmsd_of(rotations):
        return np.sqrt((((qc @ rotations.transpose(0, 2, 1)) - pc) ** 2).sum(axis=(1, 2)) / len(p))

    # brute force, no SVD: random rotations over SO(3), then random search in shrinking neighbourhoods
    rotations = Rotation.random(50_000, random_state=7).as_matrix()
    values = rmsd_of(rotations)
    best_r, best_v = rotations[values.argmin()], values.min()
    for step in (0.05, 0.01, 0.002, 4e-4, 8e-5):
        near = Rotation.from_rotvec(rng.normal(scale=step, size=(20_000, 3))).as_matrix() @ best_r
        v = rmsd_of(near)
        if v.min() < best_v:
            best_r, best_v = near[v.argmin()], v.min()
    kabsch = rmsd.kabsch_rmsd(q, p)
    assert kabsch <= values.min() and kabsch <= best_v + 1e-12  # no rotation found beats Kabsch
    assert best_v - kabsch < 1e-6 * kabsch  # and the brute-force optimum agrees with it


def test_mismatched_trajectory_is_one_clear_error(tmp_path):
    traj = tmp_path / "t.trj"
    rmsd.write_trajectory(traj, 30, 4, seed=1)
    bad = subprocess.run([sys.executable, "-m", "perfsweep.apps.rmsd", "--atoms", "31", "--frames", "4",
                          "--trajectory", str(traj)], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip() == f"rmsd: {traj}: has 30 atoms x 4 frames, not --atoms 31 --frames 4"
    junk = tmp_path / "junk.trj"
    junk.write_bytes(b"hello")
    bad = subprocess.run([sys.executable, "-m", "perfsweep.apps.rmsd", "--atoms", "30", "--frames", "4",
                          "--trajectory", str(junk)], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "not a perfsweep trajectory" in bad.stderr
