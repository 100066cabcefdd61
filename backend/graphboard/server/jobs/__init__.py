"""Builds in the background: job records in the catalog, and the runners that execute them
(worker processes of the server by default, Celery workers when a broker URL is set)."""
