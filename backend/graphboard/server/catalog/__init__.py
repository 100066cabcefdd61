"""The service's own database: what it knows about (graphs now; uploads, jobs, tokens later).

SQLAlchemy 2 models in :mod:`.models`, migrations (Alembic) in ``migrations/``, applied at
start-up by :meth:`Catalog.migrate`. A new table = a model + ``alembic revision --autogenerate``.
"""

from graphboard.server.catalog.session import Catalog

__all__ = ["Catalog"]
