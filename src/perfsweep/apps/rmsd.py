"""rmsd: the block-parallel RMSD trajectory analysis behind seed 000, as an MPI benchmark.

    mpiexec -n 4 python -m perfsweep.apps.rmsd --atoms 3341 --frames 2000 --report r.json

A synthetic protein-sized trajectory (``atoms`` x ``frames``, float32, binary file with a small header)
is generated once per (atoms, frames, seed) by rank 0 and written atomically; the frames are split
into one contiguous block per rank (the ranks' number is reported as parameter registry.PROCESS_COUNT,
e.g. p); untimed, each rank reads its block once (into the page cache, unless ``--cold-reads``) and
analyses ``--warmup`` frames; then each rank opens the file (t_opening), reads its frames one by one
(t_IO) and computes the RMSD of each to the reference after optimal superposition (Kabsch, from the
singular values of the 3x3 covariance; t_comp); the results are gathered to rank 0 (t_comm). Recorded per rank,
as in the seed's table: phases init = t_opening, io = t_IO, compute = t_comp, comm = t_comm; regions
``block_rmsd`` (t_RMSD), ``block_rmsd/opening`` (t_opening), ``block_rmsd/frames`` (t_all_frame: the
frame loop including its exit) and ``block_rmsd/frames/end_loop`` (t_end_loop: from the end of the last
iteration to leaving the loop, where the reader rewinds as MDAnalysis's does); the report's ``total``
is t_N = t_RMSD + t_comm plus the timer's own set-up. perfsweep.metrics.observables.RMSD_REGIONS maps
these region paths to the seed's names, so t_Overhead1 and t_Overhead2 follow from the record.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from perfsweep.apps.instrument import RankTimer, cache_dir, write_app_report
from perfsweep.apps.registry import PROCESS_COUNT
from perfsweep.atomic import atomic_file

MAGIC = b"PSTRJ001"
HEADER = len(MAGIC) + 8  # magic, atoms (int32), frames (int32)


def kabsch_rmsd(p: np.ndarray, q: np.ndarray) -> float:
    """RMSD between two (atoms x 3) structures after optimal rotation and translation."""
    p = p - p.mean(axis=0)
    q = q - q.mean(axis=0)
    s = np.linalg.svd(p.T @ q, compute_uv=False)
    d = np.sign(np.linalg.det(p.T @ q))
    e = float(np.sum(p * p) + np.sum(q * q) - 2.0 * (s[0] + s[1] + d * s[2]))
    return float(np.sqrt(max(e, 0.0) / len(p)))


def write_trajectory(path: Path, atoms: int, frames: int, seed: int) -> None:
    """A random-coil reference (3.8 A steps), each frame rotated, shifted and perturbed; atomic write."""
    rng = np.random.default_rng(seed)
    steps = rng.normal(size=(atoms, 3))
    ref = np.cumsum(3.8 * steps / np.linalg.norm(steps, axis=1, keepdims=True), axis=0)
    with atomic_file(path) as fh:
        fh.write(MAGIC + np.array([atoms, frames], dtype=np.int32).tobytes())
        for k in range(frames):
            q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
            amp = 0.5 + 2.0 * k / max(1, frames - 1)
            frame = ref @ q.T + rng.normal(size=3) * 10 + rng.normal(scale=amp, size=(atoms, 3))
            fh.write(frame.astype(np.float32).tobytes())


def read_header(fh) -> tuple[int, int]:
    head = fh.read(HEADER)
    if len(head) < HEADER or head[: len(MAGIC)] != MAGIC:
        raise ValueError(f"{fh.name}: not a perfsweep trajectory file (no {MAGIC.decode()} header)")
    atoms, frames = np.frombuffer(head[len(MAGIC):], dtype=np.int32)
    return int(atoms), int(frames)


def block_rmsd(path: Path, start: int, stop: int, timer: RankTimer) -> np.ndarray:
    """RMSD of frames [start, stop) to frame 0, one frame at a time."""
    with timer.region("block_rmsd"):
        with timer.phase("init"), timer.region("opening"):
            fh = open(path, "rb")
            atoms, _ = read_header(fh)
            size = atoms * 3 * 4
            ref = np.frombuffer(fh.read(size), dtype=np.float32).reshape(atoms, 3).astype(np.float64)
        out = np.empty(stop - start)
        with timer.region("frames"):
            for k in range(start, stop):
                with timer.phase("io"):
                    fh.seek(HEADER + k * size)
                    frame = np.frombuffer(fh.read(size), dtype=np.float32).reshape(atoms, 3).astype(np.float64)
                with timer.phase("compute"):
                    out[k - start] = kabsch_rmsd(frame, ref)
            with timer.region("end_loop"):
                fh.seek(HEADER)  # leaving the loop rewinds the reader, as MDAnalysis's iterator does
        fh.close()
    return out


def read_ahead(path: Path, start: int, stop: int) -> int:
    """Read the reference frame and frames [start, stop) once, so that the timed reads find them in the
    page cache; returns the bytes read. Without it a repetition's t_IO depends on how much of the file
    the host has kept cached since the last one (measured: 12 ms for 1,600 frames from the cache, up to
    71 ms after minutes of other runs)."""
    buf, done = memoryview(bytearray(1 << 20)), 0
    with open(path, "rb", buffering=0) as fh:
        atoms, _ = read_header(fh)
        size = atoms * 3 * 4
        for first, count in ((0, 1), (start, stop - start)):  # the reference frame, then the block
            fh.seek(HEADER + first * size)
            left = count * size
            while left > 0 and (got := fh.readinto(buf[:min(left, len(buf))])):
                done += got
                left -= got
    return done


def prepare_trajectory(path: Path, atoms: int, frames: int, seed: int) -> str | None:
    """Write the trajectory unless it exists; an existing file must match atoms and frames.
    Returns a one-line error, or None."""
    if not path.exists():
        write_trajectory(path, atoms, frames, seed)
        return None
    try:
        with open(path, "rb") as fh:
            have = read_header(fh)
    except (OSError, ValueError) as exc:
        return str(exc)
    if have != (atoms, frames):
        return f"{path}: has {have[0]} atoms x {have[1]} frames, not --atoms {atoms} --frames {frames}"
    if path.stat().st_size < HEADER + frames * atoms * 12:
        return f"{path}: truncated ({path.stat().st_size} bytes for {atoms} atoms x {frames} frames)"
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m perfsweep.apps.rmsd", description=__doc__.split("\n\n")[0])
    ap.add_argument("--atoms", type=int, required=True)
    ap.add_argument("--frames", type=int, required=True)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=1, help="frames analysed untimed before the measurement")
    ap.add_argument("--cold-reads", action="store_true",
                    help="time the reads from wherever the host keeps the file (default: each rank reads its "
                         "block once, untimed, so that the timed reads come from the page cache)")
    ap.add_argument("--trajectory", help="trajectory file (default: a cache file per atoms/frames/seed)")
    ap.add_argument("--report", help="JSON timings report (default: stdout)")
    args = ap.parse_args(argv)
    if args.atoms < 3 or args.frames < 1 or args.warmup < 0:
        print(f"rmsd: --atoms {args.atoms} --frames {args.frames} --warmup {args.warmup}: need at least 3 atoms, "
              "1 frame and no negative warm-up",
              file=sys.stderr)
        return 2
    from mpi4py import MPI  # MPI_Init happens here: launch cost, not the app's time

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if args.frames < size:
        if rank == 0:
            print(f"rmsd: --frames {args.frames} is fewer than the {size} ranks", file=sys.stderr)
        return 2
    path = Path(args.trajectory or cache_dir() / f"rmsd-a{args.atoms}-f{args.frames}-s{args.seed}.trj")
    error = None
    if rank == 0:  # preparation, outside the measured time; the others wait for the complete file
        error = prepare_trajectory(path, args.atoms, args.frames, args.seed)
    error = comm.bcast(error, root=0)
    if error:
        if rank == 0:
            print(f"rmsd: {error}", file=sys.stderr)
        return 2

    timer = RankTimer()
    start, stop = rank * args.frames // size, (rank + 1) * args.frames // size
    read = 0
    if args.warmup or not args.cold_reads:  # a warm steady state, untimed: the block in the page cache, numpy warm
        with timer.untimed() as scratch:
            if not args.cold_reads:
                read = read_ahead(path, start, stop)
            if args.warmup:
                block_rmsd(path, start, min(stop, start + args.warmup), scratch)
    values = block_rmsd(path, start, stop, timer)
    with timer.comm("Gather"):
        blocks = comm.gather(values, root=0)
    extra = None
    if rank == 0:
        allv = np.concatenate(blocks)
        extra = {"frames": len(allv), "rmsd_mean": float(allv.mean()), "rmsd_max": float(allv.max()),
                 "trajectory": str(path)}
    write_app_report(comm, timer, args.report, app="rmsd",
                     parameters={"atoms": args.atoms, "frames": args.frames, "seed": args.seed, PROCESS_COUNT: size},
                     extra=extra, warmup={"frames": args.warmup, "read_ahead": comm.allreduce(read)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
