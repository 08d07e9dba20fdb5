"""Every sweep remembered: a history store of sweeps, their models and the verdicts of the compares made
with them (issue 56).

- :mod:`perfsweep.history.store`: open a store (a SQLite file, or a PostgreSQL database by URL), check
  it is one (SQLite's application id), migrate an older schema once (Alembic), refuse a newer one.
- :mod:`perfsweep.history.schema`: the tables (SQLAlchemy Core: one definition for both dialects).
- :mod:`perfsweep.history.sweep`: what a results tree is as a record: its identity (the digests of its
  run records), the host's fingerprint, each study's setting digest, models and aggregate.
- :mod:`perfsweep.history.record`: record a sweep, in one transaction, idempotently.
- :mod:`perfsweep.history.baselines`: the last N other sweeps of the same studies on the same host,
  as ``perfsweep compare`` sides.
- :mod:`perfsweep.history.trends`: per study, region and metric the recorded sweeps in order, with the
  change points (ruptures).
"""

ENV = "PERFSWEEP_HISTORY"  # the store, where set: before the config's history: key and the default
