"""Trends: one statistic of a model's modules across steps, ranks and passes (heatmaps),
computed from a .vis.db's stored rows without a rebuild."""
