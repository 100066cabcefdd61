"""The .vis.db file: msprobe's tables (tb_*) plus graphboard's own (gb_*)."""
