"""graphboard's compiled tb_nodes writer, built and installed apart from graphboard.

``graphboard_btree._btree.TableFile`` writes one table and its indexes straight into SQLite's
file format (_btree.c says how). graphboard reaches it only through ``accel.compiled("btree")``,
which takes it when its ``LAYOUT_VERSION`` is graphboard's accel.BTREE_LAYOUT_VERSION
and writes tb_nodes through SQLite otherwise (or when it is not installed).
"""
