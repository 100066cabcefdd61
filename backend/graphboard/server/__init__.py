"""graphboard's HTTP service: the read API over .vis.db files, manual matching, the catalog."""
