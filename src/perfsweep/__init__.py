"""perfsweep: benchmarking sweeps of MPI applications and empirical performance models."""

__version__ = "0.1.0"
