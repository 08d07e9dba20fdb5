"""ljmd: an ms2-like Lennard-Jones molecular-dynamics proxy app, parallelised by force decomposition.

    mpiexec -n 2 python -m perfsweep.apps.ljmd --n 1000 --m 2 --d 0.5 --c 2.0 --steps 20 --report r.json

The model (seed 001, §2-3.1): n rigid molecules, each with m Lennard-Jones sites on a regular m-gon of
edge ``s`` (circumradius r = s / (2 sin(pi/m)); m = 1 is one site at the centre), in a cubic periodic
box of side L = (n/d)^(1/3) at reduced density d. Sites of different molecules interact through the
truncated and shifted LJ potential 4(r^-12 - r^-6) with cut-off c (reduced units: sigma = epsilon =
site mass = 1). All molecules keep one fixed orientation and move by translation (velocity Verlet on
the centres); the potential then depends on the centres only, so energy is conserved and no torques
arise. This keeps the cost structure of ms2 (m^2 site pairs per molecule pair, d c^3 neighbours) with
a small, checkable code.

The start is a fluid, as ms2 simulates one: the centres of a simple cubic lattice, melted by hard-sphere
Monte Carlo sweeps (no two centres closer than ``HARD_CORE`` of the mean spacing, at most 1 sigma), made
once per (n, d, seed) outside the measured time and kept in the cache (``PERFSWEEP_CACHE``). On the
lattice itself (``--start lattice``) the molecules stay on their shells for the few hundred steps of a
run, so the pairs within the cut-off jump as it crosses a shell: at n = 1000, m = 3 they were 1.22, 0.98,
0.88, 0.81, 1.07x the smooth law n d (4 pi / 3) reach^3 / 2 over c = 1.5 ... 2.5, a step in the work that
no model of n, m and c has; in the fluid 0.92-0.99x, rising smoothly with c (the hard core excludes the
closest pairs).

Parallelisation as in ms2 (Plimpton's force decomposition): every rank holds all coordinates; rank k
builds the neighbour pairs of its contiguous block of molecules with cell lists (each unordered pair is
owned by one of its two molecules, chosen by the parity of i + j, which balances the work; Verlet lists
with a skin are rebuilt only when a molecule has moved half the skin), computes
their site-site forces, and the contributions are summed with Allreduce. Every rank then integrates
all molecules (replicated data). Rank 0 writes a small trajectory and energy file every ``io_every``
steps after a Barrier, as ms2 writes its results. Work per rank grows like n d c^3 m^2 / p: exactly, the
force time is pairs x (alpha + beta m^2) / p with the pairs within the Verlet reach growing like
n d (c + SKIN + 2 r_m)^3 (measured: alpha about 30 ns per molecule pair, beta about 29 ns per site pair).

Memory: each step's numpy temporaries (about 1 MB per array, see PAIR_CHUNK) are freed and allocated
again. With glibc's default, whose mmap and trim thresholds adapt to the sizes freed, part of them goes
back to the kernel and is faulted in again every step, and how much depends on the array sizes: on a
2-core VM, 1850 page faults per force call at n = 600, m = 4 and none at m = 3, and 1.5-2x the cost per
site pair at some configurations and not at their neighbours (a step in the work law that no model of n,
m, c has). Like an MD code that allocates its buffers once, ljmd keeps freed memory in the process
(:func:`keep_freed_memory`, on glibc; ``--release-memory`` restores the default): after the first step no
force call faults.

Timed per rank (perfsweep.apps.instrument): phases init, compute, io, comm (per collective), and the
regions setup, step/neighbours, step/forces, step/integrate, step/output. Before the timed steps,
``--warmup`` steps (default 1) run untimed (first calls, neighbour lists, caches: the timed steps see a
warm steady state); their time is reported as the report's ``warmup``, outside ``time``.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import math
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from perfsweep.apps.instrument import RankTimer, cache_dir, write_app_report
from perfsweep.apps.registry import LJMD_STARTS as STARTS
from perfsweep.apps.registry import PROCESS_COUNT
from perfsweep.atomic import atomic_file
from perfsweep.errors import ParamError

SITE_EDGE = 0.1  # edge of the site polygon in sigma (ms2's 0.1 Angstrom is ~0.03 sigma; 0.1 is visible)
SKIN = 0.3  # Verlet-list skin in sigma: neighbour lists are rebuilt only when a molecule moved skin/2
# Site pairs evaluated per numpy batch: the batch's temporaries (~0.8 MB each) stay in a core's L2 cache,
# as an MD code tiles its loops. With batches of 400,000 (10 MB temporaries) the cost per site pair grew
# with the problem as the batches outgrew the cache (30.8 -> 40.0 ns from n = 400 to 5000 at m = 3, best
# of 7 calls here), a bend in n that no model of n, m and c has; with 32,000: 31.2 -> 33.4 ns.
PAIR_CHUNK = 32_000
HARD_CORE = 0.85  # the fluid start's smallest centre distance, in mean spacings (1/d)^(1/3), at most 1 sigma
MELT_SWEEPS = 40  # hard-sphere Monte Carlo sweeps that melt the lattice
MELT_STEP = 0.2  # largest trial displacement per coordinate and sweep, in lattice spacings


@dataclass(frozen=True)
class Params:
    n: int
    m: int
    d: float
    c: float
    steps: int = 20
    dt: float = 0.002
    temperature: float = 1.0
    io_every: int = 10
    warmup: int = 1  # steps run before the measurement, not timed (a warm steady state)
    threads: int = 1
    seed: int = 12345
    start: str = "fluid"  # or "lattice" (STARTS)
    # a known change, to measure a sweep "after" against one "before" (perfsweep compare): the timed
    # region slowed by a factor ("forces=1.2"), and a region given an extra all-pairs pass ("neighbours")
    slow_region: str = ""
    all_pairs: str = ""

    @property
    def box(self) -> float:
        return (self.n / self.d) ** (1.0 / 3.0)


# glibc's mallopt parameters (malloc.h) and the largest mmap threshold it accepts on 64-bit systems
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD_MAX = 32 << 20


def keep_freed_memory() -> bool:
    """Keep freed heap memory in the process (glibc): allocations up to 32 MiB come from the heap, which
    is never trimmed, so numpy temporaries of a step reuse the pages of the step before instead of
    faulting in fresh ones. False (nothing changed) where the C library has no mallopt or refuses."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX)) and bool(mallopt(M_TRIM_THRESHOLD, 2**31 - 1))


CHANGEABLE = ("neighbours", "forces", "integrate")  # the per-step regions a known change may touch
ALL_PAIRS_CHUNK = 256  # rows of the extra all-pairs pass per numpy batch
ALL_PAIRS_EVERY = 10  # the pass runs in every 10th call of its region (at n = 1200: +0.16 s per pass here)
SLEEP_AT_LEAST = 0.002


@functools.lru_cache(maxsize=None)  # asked at every call of every timed region: parsed once
def parse_slow_region(spec: str) -> tuple[str, float]:
    """``--slow-region forces=1.2`` as (region, factor); ("", 1.0) without one. Raises ParamError (also
    the config's check of the option, apps.registry)."""
    if not spec:
        return "", 1.0
    name, _, factor = spec.partition("=")
    try:
        value = float(factor)
    except ValueError:
        value = math.nan
    if name not in CHANGEABLE or not (math.isfinite(value) and value >= 1):
        raise ParamError(f"--slow-region {spec}: give REGION=FACTOR with REGION one of "
                         f"{', '.join(CHANGEABLE)} and FACTOR a number >= 1 (e.g. forces=1.2)")
    return name, value


class KnownChange:
    """The known change of a run (``--slow-region``, ``--all-pairs``) and its state over the run: the calls
    of each changed region and the time a slowed region still owes. One per run (ljmd.run makes it and
    hands it to the force field)."""

    def __init__(self, p: Params) -> None:
        self.p = p
        self.slowed, self.factor = parse_slow_region(p.slow_region)
        self.calls: dict[str, int] = {}  # calls of each region with the all-pairs pass
        self.owed: dict[str, float] = {}  # the time a slowed region still owes (s): slept once it is SLEEP_AT_LEAST

    @contextlib.contextmanager
    def region(self, timer: RankTimer, name: str, x: np.ndarray | None = None, block: np.ndarray | None = None):
        """``timer.region(name)`` with the known change applied inside it: the region's own time
        stretched by the factor of ``--slow-region`` (a sleep of what the calls owe once it is 2 ms, the
        oversleep counted against the next: the region's total is the factor times its own time, whatever
        else runs on the host; a busy wait, on this shared host, came out 1.1-2.5x for 1.2, the spinning
        run losing more of the cores than the run beside it), and the extra all-pairs
        pass of ``--all-pairs`` in every ALL_PAIRS_EVERY-th call (each molecule of ``block`` against every
        molecule of ``x``: a cost growing like n^2 / p where the region's own grows like n / p)."""
        p = self.p
        with timer.region(name):
            start = time.perf_counter()
            yield
            if p.all_pairs == name and x is not None and block is not None:
                self.calls[name] = self.calls.get(name, 0) + 1
                if self.calls[name] % ALL_PAIRS_EVERY == 1:
                    all_pairs_pass(x, block, p.box, p.c)
            if self.slowed == name and self.factor > 1:  # owed: (factor - 1) x the region's time, less what was slept
                self.owed[name] = self.owed.get(name, 0.0) + (self.factor - 1) * (time.perf_counter() - start)
                if self.owed[name] >= SLEEP_AT_LEAST:
                    before = time.perf_counter()
                    time.sleep(self.owed[name])
                    self.owed[name] -= time.perf_counter() - before


def all_pairs_pass(x: np.ndarray, block: np.ndarray, box: float, cutoff: float) -> int:
    """The pairs of a block's molecules with every molecule within ``cutoff`` (minimum image), counted
    the naive way: every pair's distance (the extra work of ``--all-pairs``)."""
    count = 0
    for lo in range(0, len(block), ALL_PAIRS_CHUNK):
        d = x[block[lo:lo + ALL_PAIRS_CHUNK], None, :] - x[None, :, :]
        d -= box * np.round(d / box)
        count += int(np.count_nonzero(np.einsum("ijk,ijk->ij", d, d) < cutoff * cutoff))
    return count


def validate(p: Params) -> None:
    if p.n < 2:
        raise ParamError(f"--n {p.n}: need at least 2 molecules")
    if p.m < 1:
        raise ParamError(f"--m {p.m}: need at least 1 site per molecule")
    if not p.d > 0:
        raise ParamError(f"--d {p.d}: density must be > 0")
    if not p.c > 0:
        raise ParamError(f"--c {p.c}: cut-off must be > 0")
    reach = p.c + 2 * site_radius(p.m) + SKIN
    if reach >= p.box / 2:
        raise ParamError(
            f"--c {p.c}: cut-off plus molecule diameter {reach:.3g} must be < half the box "
            f"{p.box / 2:.3g} (box of n={p.n} at d={p.d}); raise n or d, or lower c"
        )
    if p.start not in STARTS:
        raise ParamError(f"--start {p.start}: one of {', '.join(STARTS)}")
    parse_slow_region(p.slow_region)
    if p.all_pairs and p.all_pairs not in CHANGEABLE:
        raise ParamError(f"--all-pairs {p.all_pairs}: one of {', '.join(CHANGEABLE)}")
    if p.steps < 1 or p.dt <= 0 or p.threads < 1 or p.io_every < 1 or p.warmup < 0:
        raise ParamError("--steps, --dt, --threads and --io-every must be positive, --warmup >= 0")


def check_params(params: dict) -> None:
    """Config-time check of one configuration (n, m, d, c): raises ParamError like the app would."""
    validate(Params(n=int(params["n"]), m=int(params["m"]), d=float(params["d"]), c=float(params["c"])))


def site_radius(m: int, edge: float = SITE_EDGE) -> float:
    """Circumradius of the regular m-gon with the given edge (0 for a single site)."""
    return 0.0 if m == 1 else edge / (2.0 * math.sin(math.pi / m))


def site_offsets(m: int, edge: float = SITE_EDGE) -> np.ndarray:
    """Site positions relative to the centre: the vertices of a regular m-gon in the xy plane."""
    r = site_radius(m, edge)
    k = np.arange(m)
    return np.stack([r * np.cos(2 * np.pi * k / m), r * np.sin(2 * np.pi * k / m), np.zeros(m)], axis=1)


def lattice_centres(n: int, box: float) -> tuple[np.ndarray, float]:
    """n cell centres of a simple cubic lattice filling the box, spread evenly over its side^3 cells, and
    its spacing. Taking the first n cells instead left the last layers empty and the rest denser than d
    (by up to side^3 / n: 1.28x at n = 400), which the melt does not even out: the pairs within the
    cut-off per molecule then varied with n by 3-6 %, up and down (14.5-15.4 at c = 2, m = 3, d = 0.5
    for n = 400-5000), a step in the work no model of n has; spread evenly, 14.29-14.34."""
    side = math.ceil(n ** (1.0 / 3.0))
    a = box / side
    grid = np.stack(np.meshgrid(*(np.arange(side),) * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    return (grid[np.arange(n) * side ** 3 // n] + 0.5) * a, a


def melt(x: np.ndarray, box: float, core: float, step: float, sweeps: int, rng) -> np.ndarray:
    """Hard-sphere Monte Carlo sweeps: every centre tries a displacement of up to ``step`` per coordinate
    at once; where two centres come closer than ``core``, a moved one of them goes back, until no moved
    centre is in such a pair (a pair closer before the sweep, as on a lattice of fewer than 217 centres
    tighter than the core, can only move apart)."""
    everyone = np.arange(len(x))
    for _ in range(sweeps):
        trial = (x + rng.uniform(-step, step, x.shape)) % box
        moved = np.ones(len(x), dtype=bool)
        while True:
            i, j = neighbour_pairs(trial, everyone, box, core)
            back = np.where(moved[j], j, i)
            back = np.unique(back[moved[back]])
            if not len(back):
                break
            trial[back] = x[back]
            moved[back] = False
        x = trial
    return x


def fluid_centres(n: int, d: float, seed: int, cache: Path | None = None) -> np.ndarray:
    """Centres of a fluid start (the lattice melted, see the module doc); with ``cache``, made once per
    (n, d, seed) and read from there (written atomically; an unreadable file is made again)."""
    path = cache / f"ljmd-fluid2-n{n}-d{d:g}-s{seed}.npy" if cache is not None else None
    if path is not None and path.exists():
        try:
            x = np.load(path)
            if x.shape == (n, 3):
                return x
        except (OSError, ValueError):
            pass
    box = (n / d) ** (1.0 / 3.0)
    x, a = lattice_centres(n, box)
    core = min(1.0, HARD_CORE * (1.0 / d) ** (1.0 / 3.0))
    x = melt(x, box, core, MELT_STEP * a, MELT_SWEEPS, np.random.default_rng([seed, 1]))
    if path is not None:
        with atomic_file(path) as fh:
            np.save(fh, x)
    return x


def initial_state(p: Params, centres: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Centres of the fluid start (``centres`` made by fluid_centres, else made here) or on the lattice
    with small jitter (``start: lattice``); Maxwell velocities at the temperature."""
    rng = np.random.default_rng(p.seed)
    if p.start == "lattice":
        x, a = lattice_centres(p.n, p.box)
        x = x + rng.uniform(-0.05, 0.05, (p.n, 3)) * a
    else:
        x = fluid_centres(p.n, p.d, p.seed) if centres is None else centres
    mass = float(p.m)
    v = rng.normal(0.0, math.sqrt(p.temperature / mass), (p.n, 3))
    v -= v.mean(axis=0)
    return x % p.box, v


def _owned(i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Each unordered pair once: i owns (i, j) if j > i and i + j is even, or j < i and i + j is odd."""
    odd = ((i + j) & 1).astype(bool)
    return np.where(odd, j < i, j > i)


def neighbour_pairs(x: np.ndarray, block: np.ndarray, box: float, reach: float) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i in block, j) of molecule centres closer than ``reach``, each unordered pair owned once.

    Cell lists with cells of side >= reach; all pairs when fewer than 3 cells fit per side.
    """
    n = len(x)
    ncell = int(box // reach)
    if ncell < 3:
        i = np.repeat(block, n)
        j = np.tile(np.arange(n), len(block))
    else:
        cell3 = np.floor(x / (box / ncell)).astype(np.int64) % ncell
        cell = (cell3[:, 0] * ncell + cell3[:, 1]) * ncell + cell3[:, 2]
        order = np.argsort(cell, kind="stable")
        counts = np.bincount(cell, minlength=ncell ** 3)
        starts = np.cumsum(counts) - counts
        home = cell3[block]
        i_parts, j_parts = [], []
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                for dz in (-1, 0, 1):
                    nb3 = (home + (dx, dy, dz)) % ncell
                    nb = (nb3[:, 0] * ncell + nb3[:, 1]) * ncell + nb3[:, 2]
                    cnt = counts[nb]
                    total = int(cnt.sum())
                    if total == 0:
                        continue
                    first = np.repeat(starts[nb], cnt)
                    within = np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
                    i_parts.append(np.repeat(block, cnt))
                    j_parts.append(order[first + within])
        i = np.concatenate(i_parts)
        j = np.concatenate(j_parts)
    keep = (i != j) & _owned(i, j)
    i, j = i[keep], j[keep]
    dr = x[j] - x[i]
    dr -= box * np.round(dr / box)
    close = np.einsum("ij,ij->i", dr, dr) < reach * reach
    return i[close], j[close]


def pair_forces(x: np.ndarray, i: np.ndarray, j: np.ndarray, offsets: np.ndarray, box: float,
                cutoff: float) -> tuple[np.ndarray, float]:
    """Total force on each molecule from the given pairs (n x 3) and their potential energy."""
    n = len(x)
    m = len(offsets)
    site_shift = (offsets[None, :, :] - offsets[:, None, :]).reshape(-1, 3)  # o_b - o_a for (a, b)
    c2 = cutoff * cutoff
    shift = 4.0 * (cutoff ** -12 - cutoff ** -6)
    f_pair = np.empty((len(i), 3))  # force on j from i, per molecule pair; summed per molecule at the end
    energy = 0.0
    step = max(1, PAIR_CHUNK // (m * m))
    for lo in range(0, len(i), step):
        ii, jj = i[lo:lo + step], j[lo:lo + step]
        dr = x[jj] - x[ii]
        dr -= box * np.round(dr / box)
        d = dr[:, None, :] + site_shift[None, :, :]  # (pairs, m*m, 3): site of j minus site of i
        r2 = np.einsum("pkc,pkc->pk", d, d)
        inside = r2 < c2
        inv2 = np.where(inside, 1.0 / np.where(inside, r2, 1.0), 0.0)
        inv6 = inv2 * inv2 * inv2
        energy += float(np.sum(np.where(inside, 4.0 * inv6 * (inv6 - 1.0) - shift, 0.0)))
        fmag = 24.0 * inv6 * (2.0 * inv6 - 1.0) * inv2  # -dU/dr / r
        np.einsum("pk,pkc->pc", fmag, d, out=f_pair[lo:lo + step])
    # One sum over all pairs (a sum per batch would cost O(n) per batch: O(n^2 / batch) per step)
    force = np.empty((n, 3))
    for axis in range(3):
        force[:, axis] = (np.bincount(j, weights=f_pair[:, axis], minlength=n)
                          - np.bincount(i, weights=f_pair[:, axis], minlength=n))
    return force, energy


class ForceField:
    """This rank's share of the forces, optionally split over threads (numpy releases the GIL)."""

    def __init__(self, p: Params, rank: int, size: int, timer: RankTimer, change: KnownChange | None = None) -> None:
        self.p = p
        self.change = change or KnownChange(p)
        self.offsets = site_offsets(p.m)
        self.reach = p.c + 2 * site_radius(p.m) + SKIN
        self.pairs_ij: tuple[np.ndarray, np.ndarray] | None = None
        self.x_built: np.ndarray | None = None
        self.rebuilds = 0
        lo, hi = rank * p.n // size, (rank + 1) * p.n // size
        self.block = np.arange(lo, hi)
        self.timer = timer
        self.pool = ThreadPoolExecutor(p.threads) if p.threads > 1 else None
        self.useful = np.zeros(p.threads)
        self.pairs = 0

    def _stale(self, x: np.ndarray) -> bool:
        """Verlet list: rebuild once any molecule may have moved half the skin since the last build."""
        if self.x_built is None:
            return True
        dx = x - self.x_built
        dx -= self.p.box * np.round(dx / self.p.box)
        return float(np.max(np.einsum("ij,ij->i", dx, dx))) > (0.5 * SKIN) ** 2

    def _work(self, k: int, x: np.ndarray, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, float]:
        t0 = time.perf_counter()
        out = pair_forces(x, i, j, self.offsets, self.p.box, self.p.c)
        self.useful[k] += time.perf_counter() - t0
        return out

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, float]:
        with self.change.region(self.timer, "neighbours", x, self.block):
            if self._stale(x):
                self.pairs_ij = neighbour_pairs(x, self.block, self.p.box, self.reach)
                self.x_built = x.copy()
                self.rebuilds += 1
            i, j = self.pairs_ij
        self.pairs = len(i)
        with self.change.region(self.timer, "forces", x, self.block):
            if self.pool is None:
                return self._work(0, x, i, j)
            parts = np.array_split(np.arange(len(i)), self.p.threads)
            futures = [self.pool.submit(self._work, k, x, i[s], j[s]) for k, s in enumerate(parts)]
            results = [f.result() for f in futures]
            return sum(r[0] for r in results), sum(r[1] for r in results)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


def run(p: Params, comm, timer: RankTimer, out_dir: str, centres: np.ndarray | None = None) -> dict[str, float]:
    """Integrate ``p.steps`` velocity-Verlet steps from ``centres`` (rank 0; see initial_state); returns
    energies (on every rank)."""
    from mpi4py import MPI  # MPI_Init on first import: main imports it first, after its arguments are checked

    rank, size = comm.Get_rank(), comm.Get_size()
    mass = float(p.m)
    with timer.phase("init"), timer.region("setup"):
        if rank == 0:
            x, v = initial_state(p, centres)
        else:
            x, v = np.empty((p.n, 3)), np.empty((p.n, 3))
        change = KnownChange(p)
        field = ForceField(p, rank, size, timer, change)
        total_f = np.empty((p.n, 3))
        buf = np.empty(1)
    with timer.comm("Bcast"):
        comm.Bcast(x, root=0)
        comm.Bcast(v, root=0)

    def forces(pos: np.ndarray, timer: RankTimer) -> float:
        field.timer = timer
        with timer.phase("compute"):
            f_local, e_local = field(pos)
        with timer.comm("Allreduce"):
            comm.Allreduce(f_local, total_f, op=MPI.SUM)
        with timer.comm("Reduce"):
            buf[0] = e_local
            e = np.empty(1) if rank == 0 else None
            comm.Reduce(buf, e, op=MPI.SUM, root=0)
        return float(e[0]) if rank == 0 else float("nan")

    def verlet(timer: RankTimer) -> tuple[float, float]:
        """One velocity-Verlet step (x, v and total_f in place): (potential, kinetic) energy."""
        with timer.phase("compute"), change.region(timer, "integrate", x, field.block):
            v[:] += 0.5 * p.dt * total_f / mass
            x[:] += p.dt * v
            x[:] %= p.box
        potential = forces(x, timer)
        with timer.phase("compute"), change.region(timer, "integrate"):
            v[:] += 0.5 * p.dt * total_f / mass
            return potential, 0.5 * mass * float(np.sum(v * v))

    if p.warmup:  # a warm steady state: first calls, neighbour lists, caches; untimed (RankTimer.untimed)
        with timer.untimed() as scratch:
            forces(x, scratch)
            for _ in range(p.warmup):
                verlet(scratch)
    trajectory = None
    with timer.region("step"):
        potential = forces(x, timer)
    e0 = potential + 0.5 * mass * float(np.sum(v * v))
    energy = e0
    for step in range(1, p.steps + 1):
        with timer.region("step"):
            potential, kinetic = verlet(timer)
            energy = potential + kinetic
            if step % p.io_every == 0 or step == p.steps:
                with timer.comm("Barrier"):
                    comm.Barrier()
                with timer.phase("io"), timer.region("output"):
                    if rank == 0:
                        if trajectory is None:
                            trajectory = open(os.path.join(out_dir, "trajectory.bin"), "ab")
                            log = open(os.path.join(out_dir, "energy.dat"), "a")
                        x.astype(np.float32).tofile(trajectory)
                        log.write(f"{step} {potential:.10g} {kinetic:.10g} {energy:.10g}\n")
                        trajectory.flush()
                        log.flush()
    if trajectory is not None:
        trajectory.close()
        log.close()
    field.close()
    timer.threads = [{"thread": k, "useful": float(t)} for k, t in enumerate(field.useful)] if p.threads > 1 else None
    drift = abs(energy - e0) / max(abs(e0), 0.5 * mass * p.n * 3 * p.temperature) if rank == 0 else float("nan")
    return {"initial_energy": e0, "final_energy": energy, "energy_drift": drift, "pairs_last_step_rank": field.pairs,
            "neighbour_rebuilds": field.rebuilds,
            # squares: the sum of the centres is conserved with the momentum (but for wrap-arounds)
            "centre_checksum": float(np.sum(x * x))}


def parse_args(argv: list[str] | None) -> tuple[Params, argparse.Namespace]:
    ap = argparse.ArgumentParser(prog="python -m perfsweep.apps.ljmd", description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, required=True, help="molecules")
    ap.add_argument("--m", type=int, required=True, help="LJ sites per molecule")
    ap.add_argument("--d", type=float, required=True, help="reduced density")
    ap.add_argument("--c", type=float, required=True, help="reduced cut-off radius")
    ap.add_argument("--steps", type=int, default=Params.steps)
    ap.add_argument("--dt", type=float, default=Params.dt)
    ap.add_argument("--temperature", type=float, default=Params.temperature)
    ap.add_argument("--io-every", dest="io_every", type=int, default=Params.io_every)
    ap.add_argument("--warmup", type=int, default=Params.warmup, help="untimed steps before the measured ones")
    ap.add_argument("--threads", type=int, default=Params.threads, help="threads per rank")
    ap.add_argument("--seed", type=int, default=Params.seed)
    ap.add_argument("--start", choices=STARTS, default=Params.start,
                    help="fluid (the lattice melted once per n, d, seed and cached; default) or lattice")
    ap.add_argument("--slow-region", dest="slow_region", default="",
                    help="a known change: REGION=FACTOR stretches a per-step region's time (e.g. forces=1.2)")
    ap.add_argument("--all-pairs", dest="all_pairs", default="", choices=("", *CHANGEABLE),
                    help="a known change: an extra all-pairs distance pass in this region (cost like n^2 / p)")
    ap.add_argument("--release-memory", action="store_true",
                    help="leave glibc's malloc thresholds at their defaults (freed memory may return to the kernel)")
    ap.add_argument("--out-dir", help="where rank 0 writes trajectory/energy (default: a temp dir, removed)")
    ap.add_argument("--report", help="JSON timings report (default: print to stdout)")
    ns = ap.parse_args(argv)
    fields = {k: getattr(ns, k) for k in Params.__dataclass_fields__}
    return Params(**fields), ns


def main(argv: list[str] | None = None) -> int:
    try:
        p, ns = parse_args(argv)
        validate(p)
    except ParamError as exc:
        print(f"ljmd: {exc}", file=sys.stderr)
        return 2
    memory = "kept" if not ns.release_memory and keep_freed_memory() else "C library default"
    from mpi4py import MPI  # MPI_Init happens here: launch cost, not the app's time

    comm = MPI.COMM_WORLD
    centres = None
    if p.start == "fluid" and comm.Get_rank() == 0:  # made once per (n, d, seed), outside the measured time
        centres = fluid_centres(p.n, p.d, p.seed, cache_dir())
    comm.Barrier()
    timer = RankTimer()
    with tempfile.TemporaryDirectory(prefix="ljmd-") as tmp:
        out_dir = ns.out_dir or tmp
        if ns.out_dir and comm.Get_rank() == 0:
            os.makedirs(out_dir, exist_ok=True)
        result = run(p, comm, timer, out_dir, centres)
        params = asdict(p)
        params.update({PROCESS_COUNT: comm.Get_size(), "box": p.box, "site_edge": SITE_EDGE})
        result["freed_memory"] = memory
        write_app_report(comm, timer, ns.report, app="ljmd", parameters=params, extra=result,
                         warmup={"steps": p.warmup})
    return 0


if __name__ == "__main__":
    sys.exit(main())
