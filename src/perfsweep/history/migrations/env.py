"""Alembic's environment: perfsweep.history.store passes the open connection (in its transaction, under
its lock) as ``config.attributes["connection"]`` and the version table's name; there is no offline mode."""

from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, transactional_ddl=True,
                  version_table=context.config.get_main_option("version_table"),
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
