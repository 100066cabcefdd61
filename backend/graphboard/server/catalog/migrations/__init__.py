"""Alembic migrations of the catalog (a package, so installs ship them)."""
