"""graphboard's own PyTorch dumper, writing the stepN/rankN/{construct,dump,stack}.json that msprobe writes.

    from graphboard import probe

    with probe.dump(model, "dumps", step=0, level="mix", task="statistics"):
        loss = model(x).sum()
        loss.backward()
        optimizer.step()

or ``p = probe.Probe(model, "dumps"); p.start(); ...; p.stop(); p.step()`` across steps.
"""

from graphboard.probe.config import Level, ProbeError, Task
from graphboard.probe.probe import Probe, default_rank, dump

__all__ = ["Level", "Probe", "ProbeError", "Task", "default_rank", "dump"]
