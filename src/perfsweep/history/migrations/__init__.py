"""Alembic's migrations of the history store (perfsweep.history.store runs them; no alembic.ini)."""
