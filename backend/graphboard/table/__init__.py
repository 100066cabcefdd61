"""The compare table: msprobe ``compare``'s result table, one row per target parameter,
from a .vis.db (the ``graphboard table`` command and the server's table API)."""
