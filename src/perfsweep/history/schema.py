"""The history store's tables, in SQLAlchemy Core (one definition for SQLite and PostgreSQL).

    sweeps      one recorded sweep: its digest (of its run records' digests: recording the same runs
                again adds nothing), where it was recorded from, when it ran and was recorded, the app's
                version and perfsweep's, the user's labels, the host's fingerprint (and the host itself)
    sweep_runs  the digest of every run record of a sweep: two sweeps that share one are not
                independent baselines
    studies     a sweep's studies: the setting digest that ``perfsweep compare`` matches baselines by,
                the setting itself (its differences are listed), the models.json and the aggregate
                table as the results tree had them (zlib), so that a side read from the store is the
                side read from the tree
    entries     per study, region and metric the summary the trends read: the model's form and lead
                orders, its lead share, the prediction at the study's target with its interval, the
                median measured there
    verdicts    the compares made against the store: the judged sweep, its baselines, the exit code and
                the rows (zlib JSON)

Migrations are under perfsweep/history/migrations (Alembic); the revision of this schema is
``store.HEAD``.
"""

from __future__ import annotations

from sqlalchemy import (Boolean, Column, Float, ForeignKey, Index, Integer, LargeBinary, MetaData, String, Table,
                        Text, func)

metadata = MetaData()

sweeps = Table(
    "sweeps", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("digest", String(64), nullable=False, unique=True),
    Column("results", Text, nullable=False),
    Column("recorded_at", String(40), nullable=False),
    Column("measured_from", String(40)),
    Column("measured_to", String(40)),
    Column("app_version", Text),
    Column("perfsweep_version", Text),
    Column("labels", Text, nullable=False),  # JSON {name: value}
    Column("fingerprint", String(64), nullable=False),
    Column("host", Text, nullable=False),  # JSON: what the fingerprint is of
    Column("repetitions", Boolean, nullable=False),  # False: a tree without repetitions (medians only)
    Column("runs", Integer, nullable=False),
)
Index("sweeps_fingerprint", sweeps.c.fingerprint)  # revision 0002

sweep_runs = Table(
    "sweep_runs", metadata,
    Column("sweep_id", Integer, ForeignKey("sweeps.id", ondelete="CASCADE"), primary_key=True),
    Column("digest", String(64), primary_key=True),
)
Index("sweep_runs_digest", sweep_runs.c.digest)

# a sweep's place in the order of measurement: its last run's end, else (a tree without records) its recording
WHEN = func.coalesce(sweeps.c.measured_to, sweeps.c.recorded_at)


def has_labels(own: dict[str, str], wanted: dict[str, str]) -> bool:
    """Whether a sweep's labels ``own`` carry every label asked for."""
    return all(own.get(k) == v for k, v in wanted.items())


studies = Table(
    "studies", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("sweep_id", Integer, ForeignKey("sweeps.id", ondelete="CASCADE"), nullable=False),
    Column("name", Text, nullable=False),
    Column("digest", String(64), nullable=False),
    Column("params", Text, nullable=False),  # JSON list: the varied parameters
    Column("setting", Text, nullable=False),  # JSON: compare.setting's fields, params and commands
    Column("target", Text, nullable=False),  # JSON {parameter: value}: where the entries' predictions are
    Column("models_json", LargeBinary, nullable=False),  # zlib
    Column("aggregate_csv", LargeBinary),  # zlib; None: the tree had none
)
Index("studies_digest", studies.c.digest)
Index("studies_sweep", studies.c.sweep_id)

entries = Table(
    "entries", metadata,
    Column("study_id", Integer, ForeignKey("studies.id", ondelete="CASCADE"), primary_key=True),
    Column("region", Text, primary_key=True),
    Column("metric", Text, primary_key=True),
    Column("form", Text, nullable=False),
    Column("orders", Text, nullable=False),
    Column("lead_share", Float),
    Column("prediction", Float),
    Column("low", Float),
    Column("high", Float),
    Column("median", Float),
    Column("unit", Text),
    Column("direction", String(8)),
)

verdicts = Table(
    "verdicts", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("sweep_id", Integer, ForeignKey("sweeps.id", ondelete="CASCADE")),
    Column("judged", Text, nullable=False),  # the judged side's path
    Column("baselines", Text, nullable=False),  # JSON list of sweep ids, oldest first
    Column("made_at", String(40), nullable=False),
    Column("exit_code", Integer, nullable=False),
    Column("rows", LargeBinary, nullable=False),  # zlib JSON
)
