"""An index on the sweeps' host fingerprint: compare --history selects the baselines by it.

Revision ID: 0002
Revises: 0001
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("sweeps_fingerprint", "sweeps", ["fingerprint"])


def downgrade() -> None:
    op.drop_index("sweeps_fingerprint", "sweeps")
