"""Parallel merge: the ranks of a TP/PP/VPP run merged into one graph per data-parallel
replica, a stage between reading a replica's ranks and matching (flags.py: the command-line
flags; layout.py: which ranks merge into which graph; plan.py: the flags against the folders)."""
