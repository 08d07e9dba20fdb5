"""The sweep core at run time, one module per part of a sweep that runs:

- designs: which configurations of a study's grid are measured (perfsweep.config builds them);
- plan: the state of the rounds (repetitions planned, points added) the workflow reads while it plans;
- order: each repetition round's seeded random order (and a paired measurement's variants);
- spec: a run's spec (RunSpec), built while the workflow plans, read by the run;
- run: launch one run and write its record (``python -m perfsweep.runner``, the run job);
- host: what the host did during a run (its load);
- record: run records: written atomically, read, checked, set aside;
- ended: the failure record of a run whose SLURM job ended without one;
- recover: restart after an interruption and repair of damaged records, before Snakemake plans.

The steps that decide what to measure next from models (estimate, rounds, adapt, decide) are
perfsweep.steps, above the modeler. Imports nothing: a run job loads only what runs a spec
(tests/test_house.py).
"""
