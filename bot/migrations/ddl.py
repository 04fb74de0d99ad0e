"""DDL that creates only what is missing, for the migrations of the schema made before Alembic.

Up to revision ``0004``, each start created the missing tables itself and added the missing
``deliveries`` columns, so a database without ``alembic_version`` may hold any part of those
migrations' work; these helpers let them skip what is already there. Later migrations use ``op``
directly. Every helper runs on the migration's connection (``op.get_bind()``).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op


def has_table(name: str) -> bool:
    return sa.inspect(op.get_bind()).has_table(name)


def create_table_if_missing(name: str, *columns: Any) -> bool:
    """``op.create_table(name, *columns)`` unless the table exists; True when it was created."""
    if has_table(name):
        return False
    op.create_table(name, *columns)
    return True


def create_index_if_missing(name: str, table: str, columns: list[str], **kwargs: Any) -> None:
    """``op.create_index`` unless ``table`` has an index called ``name``."""
    if name in {index["name"] for index in sa.inspect(op.get_bind()).get_indexes(table)}:
        return
    op.create_index(name, table, columns, **kwargs)


def add_column_if_missing(table: str, column: sa.Column[Any]) -> None:
    """``op.add_column`` unless ``table`` has a column of that name (nullable columns only)."""
    assert column.nullable, f"{table}.{column.name} must be nullable to be added to a table with rows"
    if column.name in {c["name"] for c in sa.inspect(op.get_bind()).get_columns(table)}:
        return
    op.add_column(table, column)
