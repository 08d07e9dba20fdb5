"""The sweep core, one module per step of a sweep:

- designs: which configurations of a study's grid are measured (perfsweep.config builds them);
- plan: the state of the rounds (repetitions planned, points added) the workflow reads while it plans;
- estimate: what a sweep's designs will cost before anything runs (``perfsweep plan``);
- spec: a run's spec (RunSpec), built while the workflow plans, read by the run;
- run: launch one run and write its record (``python -m perfsweep.runner``, the run job);
- record: run records: written atomically, read, checked, set aside;
- recover: restart after an interruption and repair of damaged records, before Snakemake plans;
- rounds: measure, plan more, measure again (``perfsweep run``);
- adapt: adaptive designs' rounds: the points where the models disagree most.

Imports nothing: a run job loads only what runs a spec (tests/test_house.py).
"""
