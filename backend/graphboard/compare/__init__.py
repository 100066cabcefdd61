"""Pairing target and golden nodes, scoring each pair, and colouring the graph."""
