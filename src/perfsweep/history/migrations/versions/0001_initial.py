"""The first schema: sweeps, sweep_runs, studies, entries, verdicts (perfsweep.history.schema).

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sweeps",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("digest", sa.String(64), nullable=False, unique=True),
        sa.Column("results", sa.Text, nullable=False),
        sa.Column("recorded_at", sa.String(40), nullable=False),
        sa.Column("measured_from", sa.String(40)),
        sa.Column("measured_to", sa.String(40)),
        sa.Column("app_version", sa.Text),
        sa.Column("perfsweep_version", sa.Text),
        sa.Column("labels", sa.Text, nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("host", sa.Text, nullable=False),
        sa.Column("repetitions", sa.Boolean, nullable=False),
        sa.Column("runs", sa.Integer, nullable=False),
    )
    op.create_table(
        "sweep_runs",
        sa.Column("sweep_id", sa.Integer, sa.ForeignKey("sweeps.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("digest", sa.String(64), primary_key=True),
    )
    op.create_index("sweep_runs_digest", "sweep_runs", ["digest"])
    op.create_table(
        "studies",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("sweep_id", sa.Integer, sa.ForeignKey("sweeps.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("params", sa.Text, nullable=False),
        sa.Column("setting", sa.Text, nullable=False),
        sa.Column("target", sa.Text, nullable=False),
        sa.Column("models_json", sa.LargeBinary, nullable=False),
        sa.Column("aggregate_csv", sa.LargeBinary),
    )
    op.create_index("studies_digest", "studies", ["digest"])
    op.create_index("studies_sweep", "studies", ["sweep_id"])
    op.create_table(
        "entries",
        sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("region", sa.Text, primary_key=True),
        sa.Column("metric", sa.Text, primary_key=True),
        sa.Column("form", sa.Text, nullable=False),
        sa.Column("orders", sa.Text, nullable=False),
        sa.Column("lead_share", sa.Float),
        sa.Column("prediction", sa.Float),
        sa.Column("low", sa.Float),
        sa.Column("high", sa.Float),
        sa.Column("median", sa.Float),
        sa.Column("unit", sa.Text),
        sa.Column("direction", sa.String(8)),
    )
    op.create_table(
        "verdicts",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("sweep_id", sa.Integer, sa.ForeignKey("sweeps.id", ondelete="CASCADE")),
        sa.Column("judged", sa.Text, nullable=False),
        sa.Column("baselines", sa.Text, nullable=False),
        sa.Column("made_at", sa.String(40), nullable=False),
        sa.Column("exit_code", sa.Integer, nullable=False),
        sa.Column("rows", sa.LargeBinary, nullable=False),
    )


def downgrade() -> None:
    for table in ("verdicts", "entries", "studies", "sweep_runs", "sweeps"):
        op.drop_table(table)
