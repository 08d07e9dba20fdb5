import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from perfsweep.apps import ljmd

MPIEXEC = str(__import__("pathlib").Path(sys.executable).with_name("mpiexec"))


def test_mgon_geometry():
    assert ljmd.site_radius(1) == 0.0
    for m in (2, 3, 4, 6):
        off = ljmd.site_offsets(m, edge=0.1)
        edges = np.linalg.norm(off - np.roll(off, 1, axis=0), axis=1)
        assert np.allclose(edges, 0.1) or m == 2  # a 2-gon's "edge" is its diameter
        assert np.allclose(np.linalg.norm(off, axis=1), 0.1 / (2 * math.sin(math.pi / m)))
        assert np.allclose(off.mean(axis=0), 0.0)


def test_box_from_density():
    p = ljmd.Params(n=1000, m=1, d=0.5, c=2.0)
    assert p.box == pytest.approx((1000 / 0.5) ** (1 / 3))


def brute_pairs(x, box, reach):
    n = len(x)
    out = set()
    for i in range(n):
        dr = x - x[i]
        dr -= box * np.round(dr / box)
        for j in np.nonzero(np.einsum("ij,ij->i", dr, dr) < reach * reach)[0]:
            if j != i:
                out.add((min(i, j), max(i, j)))
    return out


@pytest.mark.parametrize("n, d, reach", [(300, 0.5, 2.0), (60, 0.5, 1.5)])  # cell lists / all pairs
def test_neighbour_pairs_match_brute_force_each_pair_once(n, d, reach):
    p = ljmd.Params(n=n, m=1, d=d, c=reach)
    x, _ = ljmd.initial_state(p)
    found = []
    for rank in range(3):  # three blocks together must cover every pair exactly once
        block = np.arange(rank * n // 3, (rank + 1) * n // 3)
        i, j = ljmd.neighbour_pairs(x, block, p.box, reach)
        found += [(min(a, b), max(a, b)) for a, b in zip(i, j)]
    assert len(found) == len(set(found))
    assert set(found) == brute_pairs(x, p.box, reach)


def pairs_over_smooth_law(x, n, d, m):
    """Pairs within the Verlet reach at c = 1.5 ... 2.5 over the smooth law n d (4 pi / 3) reach^3 / 2."""
    box = (n / d) ** (1 / 3)
    out = []
    for c in (1.5, 1.75, 2.0, 2.25, 2.5):
        reach = c + 2 * ljmd.site_radius(m) + ljmd.SKIN
        i, _ = ljmd.neighbour_pairs(x, np.arange(n), box, reach)
        out.append(len(i) / (n * d * 4 / 3 * math.pi * reach ** 3 / 2))
    return np.array(out)


def test_fluid_start_has_no_close_pairs_and_a_smooth_pair_count():
    n, d = 1000, 0.5
    fluid = ljmd.initial_state(ljmd.Params(n=n, m=3, d=d, c=2.0))[0]
    lattice = ljmd.initial_state(ljmd.Params(n=n, m=3, d=d, c=2.0, start="lattice"))[0]
    box = (n / d) ** (1 / 3)
    assert len(ljmd.neighbour_pairs(fluid, np.arange(n), box, 1.0)[0]) == 0  # the hard core: 1 sigma at d = 0.5
    smooth, shells = pairs_over_smooth_law(fluid, n, d, 3), pairs_over_smooth_law(lattice, n, d, 3)
    # the lattice's shells: the pair count jumps by +-20 % over c; the fluid's rises smoothly towards the law
    assert shells.max() - shells.min() > 0.3 and np.any(np.diff(shells) < 0)
    assert np.all((smooth > 0.88) & (smooth < 1.02)) and np.all(np.diff(smooth) > 0), smooth


def test_fluid_start_is_made_once_per_n_d_seed_and_remade_when_damaged(tmp_path):
    first = ljmd.fluid_centres(200, 0.5, 7, tmp_path)
    made = tmp_path / "ljmd-fluid2-n200-d0.5-s7.npy"
    assert np.array_equal(np.load(made), first)
    np.save(made, first[:10])  # a file of another shape (a damaged or foreign one) is made again
    assert np.array_equal(ljmd.fluid_centres(200, 0.5, 7, tmp_path), first)
    assert np.array_equal(ljmd.fluid_centres(200, 0.5, 7), first)  # without a cache: the same centres
    assert not np.array_equal(ljmd.fluid_centres(200, 0.5, 8, tmp_path), first)
    assert sorted(f.name for f in tmp_path.iterdir()) == ["ljmd-fluid2-n200-d0.5-s7.npy", "ljmd-fluid2-n200-d0.5-s8.npy"]


def test_newton_third_law_and_energy_conservation():
    p = ljmd.Params(n=120, m=3, d=0.4, c=2.0, dt=0.001, steps=200)
    x, v = ljmd.initial_state(p)
    offsets = ljmd.site_offsets(p.m)
    reach = p.c + 2 * ljmd.site_radius(p.m)
    i, j = ljmd.neighbour_pairs(x, np.arange(p.n), p.box, reach)
    f, e = ljmd.pair_forces(x, i, j, offsets, p.box, p.c)
    assert np.allclose(f.sum(axis=0), 0.0, atol=1e-8 * np.abs(f).max())
    # force = -grad U, checked by a finite difference on one molecule
    h = 1e-6
    x2 = x.copy()
    x2[5, 0] += h
    i2, j2 = ljmd.neighbour_pairs(x2, np.arange(p.n), p.box, reach)
    _, e2 = ljmd.pair_forces(x2, i2, j2, offsets, p.box, p.c)
    assert -(e2 - e) / h == pytest.approx(f[5, 0], rel=1e-3, abs=1e-4)


def run_ljmd(tmp_path, nprocs, *args):
    report = tmp_path / f"r{nprocs}.json"
    cmd = [MPIEXEC, "-n", str(nprocs), sys.executable, "-m", "perfsweep.apps.ljmd", *map(str, args),
           "--report", str(report)]
    env = {**os.environ, "PERFSWEEP_CACHE": str(tmp_path / "cache")}  # the fluid starts made
    subprocess.run(cmd, check=True, timeout=120, capture_output=True, env=env)
    return json.loads(report.read_text())


@pytest.mark.slow
def test_energy_is_conserved_over_200_steps(tmp_path):
    """One run of its own (1 rank, 200 steps): the shared ljmd sweep's runs take 4 steps, too few to see
    a drift."""
    r = run_ljmd(tmp_path, 1, "--n", 150, "--m", 2, "--d", 0.4, "--c", 2.0, "--steps", 200, "--dt", 0.001)
    assert r["extra"]["energy_drift"] < 1e-3


def test_two_ranks_record_and_same_physics_as_one(tmp_path):
    args = ["--n", 400, "--m", 2, "--d", 0.5, "--c", 2.0, "--steps", 12, "--io-every", 5]
    one = run_ljmd(tmp_path, 1, *args)
    two = run_ljmd(tmp_path, 2, *args)
    assert two["nprocs"] == 2 and [r["rank"] for r in two["ranks"]] == [0, 1]
    assert two["mpi"]["library"] == "MPICH"
    assert two["extra"]["final_energy"] == pytest.approx(one["extra"]["final_energy"], rel=1e-9)
    assert two["extra"]["centre_checksum"] == pytest.approx(one["extra"]["centre_checksum"], rel=1e-12)
    for rank in two["ranks"]:
        phases = [rank[k] for k in ("init", "compute", "io", "comm")]
        assert all(t >= 0 for t in phases) and rank["compute"] > 0 and rank["comm"] > 0
        assert sum(phases) <= rank["total"] + 1e-9
        assert set(rank["comm_ops"]) == {"Bcast", "Allreduce", "Reduce", "Barrier"}
        assert {"setup", "step", "step/forces", "step/neighbours", "step/integrate"} <= set(rank["regions"])
    assert two["ranks"][0]["io"] > 0 and two["ranks"][1]["io"] == pytest.approx(0, abs=1e-4)
    assert two["time"] == max(r["total"] for r in two["ranks"])


def test_threads_give_the_same_forces_and_record_useful_time(tmp_path):
    args = ["--n", 300, "--m", 2, "--d", 0.5, "--c", 2.0, "--steps", 5]
    serial = run_ljmd(tmp_path, 1, *args)
    threaded = run_ljmd(tmp_path, 1, *args, "--threads", 2)
    assert threaded["extra"]["final_energy"] == pytest.approx(serial["extra"]["final_energy"], rel=1e-9)
    threads = threaded["ranks"][0]["threads"]
    assert [t["thread"] for t in threads] == [0, 1] and all(t["useful"] > 0 for t in threads)


@pytest.mark.parametrize("args, message", [
    (["--d", "-0.5"], "ljmd: --d -0.5: density must be > 0"),
    (["--c", "9"], "ljmd: --c 9.0: cut-off plus molecule diameter"),
])
def test_bad_arguments_exit_2_with_one_line(args, message):
    base = {"--n": "100", "--m": "1", "--d": "0.5", "--c": "2"}
    base.update(dict(zip(args[::2], args[1::2])))
    proc = subprocess.run([sys.executable, "-m", "perfsweep.apps.ljmd", *sum(base.items(), ())],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith(message) and "Traceback" not in proc.stderr


def test_warmup_steps_run_untimed_and_are_recorded(tmp_path):
    args = ["--n", 300, "--m", 2, "--d", 0.5, "--c", 2.0, "--steps", 4]
    cold = run_ljmd(tmp_path, 1, *args, "--warmup", 0)
    warm = run_ljmd(tmp_path, 1, *args, "--warmup", 3)
    assert cold["warmup"] == {"steps": 0, "time": 0.0} and "warmup" not in cold["ranks"][0]
    assert warm["warmup"]["steps"] == 3 and warm["warmup"]["time"] == warm["ranks"][0]["warmup"] > 0
    rank = warm["ranks"][0]
    # the warm-up's steps are in no region: the timed run visits its 1 + 4 force evaluations only
    assert rank["regions"]["step/forces"]["visits"] == cold["ranks"][0]["regions"]["step/forces"]["visits"] == 5
    assert rank["other"] >= 0 and sum(rank[k] for k in ("init", "compute", "io", "comm")) <= rank["total"] + 1e-9
    # the warm-up advanced the state: the timed steps start 3 steps later
    assert warm["extra"]["centre_checksum"] != cold["extra"]["centre_checksum"]


FAULTS_PER_FORCE_CALL = """
import resource, sys
import numpy as np
from perfsweep.apps import ljmd
kept = ljmd.keep_freed_memory()
p = ljmd.Params(n=600, m=int(sys.argv[1]), d=0.5, c=2.0)
x, _ = ljmd.initial_state(p)
i, j = ljmd.neighbour_pairs(x, np.arange(p.n), p.box, p.c + 2 * ljmd.site_radius(p.m) + ljmd.SKIN)
faults = []
for _ in range(5):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    ljmd.pair_forces(x, i, j, ljmd.site_offsets(p.m), p.box, p.c)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(kept, *faults)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
@pytest.mark.parametrize("m", [3, 4, 5])
def test_kept_memory_force_calls_fault_no_pages_after_the_first(m):
    # a process of its own: mallopt changes the whole process
    out = subprocess.run([sys.executable, "-c", FAULTS_PER_FORCE_CALL, str(m)], check=True,
                         capture_output=True, text=True, timeout=120).stdout.split()
    assert out[0] == "True" and [int(f) for f in out[2:]] == [0, 0, 0, 0], out


def test_record_says_whether_freed_memory_was_kept(tmp_path):
    args = ["--n", 200, "--m", 2, "--d", 0.5, "--c", 2.0, "--steps", 2]
    record = run_ljmd(tmp_path, 1, *args)
    assert record["extra"]["freed_memory"] == "kept" and record["parameters"]["start"] == "fluid"
    assert [f.name for f in (tmp_path / "cache").iterdir()] == ["ljmd-fluid2-n200-d0.5-s12345.npy"]
    assert run_ljmd(tmp_path, 1, *args, "--release-memory")["extra"]["freed_memory"] == "C library default"
