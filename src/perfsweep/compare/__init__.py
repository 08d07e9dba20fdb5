"""``perfsweep compare A B``: two sweeps' models side by side, as a performance-regression gate.

One module per role, the arrows pointing down (compare sits above the modeler: it imports
perfsweep.modeling, never the other way; its command line is perfsweep.cli.compare, with the other
subcommands'):

- :mod:`~perfsweep.compare.page`: the HTML page of ``--html``;
- :mod:`~perfsweep.compare.render`: the table as text, md, csv or json;
- :mod:`~perfsweep.compare.judge`: the sides matched, one row per study, region and metric, judged
  against one baseline or several (their spread), the verdicts (Holm over every gating test), the
  minimum detectable effects and the exit code;
- :mod:`~perfsweep.compare.statistics`: each statistic of a row one function, all in ``STATISTICS``
  (the ratio B/A and its interval, share and impact, the scaling class), and the verdict's test;
- :mod:`~perfsweep.compare.setting`: how A's and B's runs differ (their results trees' run records);
- :mod:`~perfsweep.compare.load`: the sides read (results directories, models.json, Extra-P inputs).

    from perfsweep.compare.judge import compare
    from perfsweep.compare.load import load_side
    result = compare(load_side("before/results"), load_side("after/results"), threshold=0.05)
"""
