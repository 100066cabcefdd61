"""known_graphs: the .vis.db files seen under the data dir

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "known_graphs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("graph_id", sa.String(length=1024), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=True),
        sa.Column("graph_type", sa.String(length=16), nullable=True),
        sa.Column("data_mode", sa.String(length=16), nullable=True),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("modified_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("present", sa.Boolean(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_known_graphs")),
        sa.UniqueConstraint("graph_id", name=op.f("uq_known_graphs_graph_id")),
    )


def downgrade() -> None:
    op.drop_table("known_graphs")
