/* ljrate: a small Lennard-Jones benchmark in C with MPI, swept as a user's own app
 * (tests/test_metric_kinds_app.py). It prints its loop time and its throughput, LAMMPS-style:
 *
 *     Loop time: 0.123456 s on 2 procs for 50 steps with 4096 atoms
 *     Performance: 405.0 timesteps/s
 *
 * Usage: ljrate -s SIZE -steps STEPS [-clock wall|cpu] [-passes K]
 * SIZE^3 atoms on a simple cubic lattice (spacing A) in a periodic box; forces within the cut-off 2 A,
 * found through cells of side 2 A (SIZE even: SIZE/2 cells per side, 8 atoms each), so that a step
 * costs the same per atom at every size: the work grows like SIZE^3. Each rank computes the forces on
 * and moves its block of the atoms; an MPI_Allreduce (sum) of the positions, zero outside each rank's
 * block, gives every rank the new positions. The cells are rebuilt every step on every rank.
 *
 * The loop time is the slowest rank's: its wall time (-clock wall, the default, as LAMMPS reports it),
 * or with -clock cpu the CPU time its process spent on its own work, outside MPI_Allreduce
 * (clock_gettime(CLOCK_PROCESS_CPUTIME_ID)): on a host whose cores other jobs share, the wall time also
 * counts the time the host gave to them and moves with their load from one minute to the next, and so
 * does the CPU time a rank spends polling in MPI while its partner waits for a core.
 *
 * -passes K computes the forces K times per step (default 1): a slower build of the same program, for
 * a paired measurement of before and after (tests/test_paired.py).
 */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define A 1.12
#define DT 0.001

static double wrap(double d, double box) { return d - box * nearbyint(d / box); }

static int cpu_clock = 0;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    int size = 8, steps = 50, passes = 1, rank, nranks;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-s")) size = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-clock")) cpu_clock = !strcmp(argv[i + 1], "cpu");
        else if (!strcmp(argv[i], "-passes")) passes = atoi(argv[i + 1]);
    }
    if (size < 6 || size % 2 || steps < 1 || passes < 1) {
        if (!rank) fprintf(stderr, "ljrate: -s must be even and >= 6, -steps >= 1, -passes >= 1\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int n = size * size * size, nc = size / 2, ncells = nc * nc * nc;
    double box = size * A, cell = box / nc, cut2 = (2 * A) * (2 * A);
    double *x = malloc(3 * n * sizeof *x), *v = calloc(3 * n, sizeof *v), *f = malloc(3 * n * sizeof *f);
    double *mine = malloc(3 * n * sizeof *mine);
    int *head = malloc(ncells * sizeof *head), *next = malloc(n * sizeof *next);
    srand(1);
    for (int i = 0; i < n; i++) {  /* the lattice, slightly disturbed */
        int c[3] = {i % size, (i / size) % size, i / (size * size)};
        for (int d = 0; d < 3; d++) x[3 * i + d] = (c[d] + 0.5) * A + 0.02 * (rand() / (double)RAND_MAX - 0.5);
    }
    int lo = (int)((long)n * rank / nranks), hi = (int)((long)n * (rank + 1) / nranks);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime(), work = 0.0, energy = 0.0;
    for (int step = 0; step < steps; step++) {
        double begin = now();
        for (int c = 0; c < ncells; c++) head[c] = -1;
        for (int i = 0; i < n; i++) {  /* every rank builds every cell: not divided */
            int c[3];
            for (int d = 0; d < 3; d++) {
                double y = x[3 * i + d] - box * floor(x[3 * i + d] / box);
                c[d] = (int)(y / cell) % nc;
            }
            int k = (c[2] * nc + c[1]) * nc + c[0];
            next[i] = head[k];
            head[k] = i;
        }
        for (int pass = 0; pass < passes; pass++) {
        energy = 0.0;
        for (int i = lo; i < hi; i++) {  /* the forces on this rank's atoms: divided */
            double fi[3] = {0, 0, 0}, y[3];
            int c[3];
            for (int d = 0; d < 3; d++) {
                y[d] = x[3 * i + d] - box * floor(x[3 * i + d] / box);
                c[d] = (int)(y[d] / cell) % nc;
            }
            for (int dz = -1; dz <= 1; dz++)
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++) {
                        int k = ((((c[2] + dz + nc) % nc) * nc + (c[1] + dy + nc) % nc) * nc + (c[0] + dx + nc) % nc);
                        for (int j = head[k]; j >= 0; j = next[j]) {
                            if (j == i) continue;
                            double r[3], r2 = 0;
                            for (int d = 0; d < 3; d++) {
                                r[d] = wrap(x[3 * i + d] - x[3 * j + d], box);
                                r2 += r[d] * r[d];
                            }
                            if (r2 >= cut2) continue;
                            double s6 = 1.0 / (r2 * r2 * r2), fr = 24.0 * s6 * (2.0 * s6 - 1.0) / r2;
                            energy += 2.0 * s6 * (s6 - 1.0);
                            for (int d = 0; d < 3; d++) fi[d] += fr * r[d];
                        }
                    }
            for (int d = 0; d < 3; d++) f[3 * i + d] = fi[d];
        }
        }
        memset(mine, 0, 3 * n * sizeof *mine);
        for (int i = 3 * lo; i < 3 * hi; i++) {  /* move this rank's atoms */
            v[i] += DT * f[i];
            mine[i] = x[i] + DT * v[i];
        }
        work += now() - begin;
        MPI_Allreduce(mine, x, 3 * n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    double loop = cpu_clock ? work : MPI_Wtime() - start, slowest;
    MPI_Allreduce(&loop, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &energy, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (!rank) {
        printf("Energy per atom: %.6f\n", energy / n);
        printf("Loop time: %.6f s on %d procs for %d steps with %d atoms (%s)\n", slowest, nranks, steps, n,
               cpu_clock ? "CPU time outside MPI" : "wall time");
        printf("Performance: %.3f timesteps/s\n", steps / slowest);
    }
    free(x), free(v), free(f), free(mine), free(head), free(next);
    MPI_Finalize();
    return 0;
}
