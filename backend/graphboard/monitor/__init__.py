"""Training-state trends: msprobe monitor output of a target run and a golden run, compared
step by step (issue 33). Reads the monitor's CSV folders or msprobe's ``.trend.db``, writes a
``.trend.db`` that msprobe's trend tooling opens, with graphboard's comparison in gb_* tables."""
