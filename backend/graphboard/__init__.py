"""graphboard: rebuild, compare and browse msprobe dump graphs."""

__version__ = "0.1.0"
