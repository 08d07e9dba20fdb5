"""The steps of a sweep that decide what to measure, from what was measured (above the modeler and
the config, below the front end):

- estimate: what a sweep's designs will cost before anything runs (``perfsweep plan``);
- rounds: measure, plan more, measure again (``perfsweep run``);
- adapt: adaptive designs' rounds: the points where the models disagree most;
- decide: measure until decided: more runs for a study whose form is undecided, within a budget.

Imports nothing: the modules are imported by name.
"""
