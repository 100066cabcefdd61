"""Parallel merge: the ranks of a TP/PP/VPP run merged into one graph per data-parallel replica,
a stage between reading a replica's ranks and matching. flags.py: the command-line flags;
layout.py: which ranks merge into which graph; plan.py: the flags against the folders, one task
per replica; stats.py: merged statistics; tp.py, pp.py, vpp.py, apis.py: the merges (vpp.py:
a virtual pipeline's model chunks, after pp.py); stage.py: the
stage the build core calls (merged_sides); export.py: --file_type json, a merged build
written as msprobe's dump folders."""
