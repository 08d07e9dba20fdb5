"""Diagnostics from per-rank timings: seed 000's observables and scaling, seed 004's POP metrics.

All functions take and return plain pandas frames (one row per run and rank in, one row per run or
per configuration out), so they serve the pipeline's own runs and timings measured elsewhere.
"""
