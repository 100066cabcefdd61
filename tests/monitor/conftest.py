from monitor_runs import monitor_runs

__all__ = ["monitor_runs"]
