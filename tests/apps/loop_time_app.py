"""A stand-in for a user's MPI application (README, "Your own application"): real MPI ranks through
mpi4py, a loop whose work grows with the atoms and shrinks with the ranks, and an output line in
LAMMPS's style: ``Loop time of 1.23 on 4 procs for 100 steps with 4000 atoms``.

    mpiexec -n 2 python loop_time_app.py -atoms 4000 -steps 100
"""

import argparse
import time

import numpy as np
from mpi4py import MPI


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-atoms", type=int, required=True)
    ap.add_argument("-steps", type=int, required=True)
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    local = max(1, args.atoms // comm.size)
    x = np.random.default_rng(comm.rank).random(local)
    comm.Barrier()
    t0 = MPI.Wtime()
    energy = 0.0
    for _ in range(args.steps):
        x = 0.5 * (x + np.sqrt(x * x + 1.0))        # the atoms' share of a step
        energy = comm.allreduce(float(x.sum()), op=MPI.SUM)
    elapsed = comm.allreduce(MPI.Wtime() - t0, op=MPI.MAX)
    if comm.rank == 0:
        print(f"Step {args.steps} energy {energy:.6e}")
        print(f"Loop time of {elapsed:.6g} on {comm.size} procs for {args.steps} steps with {args.atoms} atoms")
        print(f"Performance: {args.steps / elapsed:.4g} steps/s")
        print(f"Total wall time: {time.strftime('%H:%M:%S', time.gmtime(elapsed))}")


if __name__ == "__main__":
    main()
