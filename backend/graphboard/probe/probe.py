"""The user-facing probe: ``Probe(model, out_dir).start() / stop() / step()`` and ``dump(...)``.

One probe records one rank. Each step's records go to ``<out_dir>/step<N>/rank<R>/``; the files
are written at ``stop()`` (again at each stop, if recording resumes within the same step), and
``step()`` moves on to the next step with fresh call counters, as msprobe's debugger does.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import nn

from graphboard.probe.api_calls import install_api_wrappers
from graphboard.probe.config import Level, ProbeError, Task, parse_level, parse_task
from graphboard.probe.distributed import install_distributed_wrappers
from graphboard.probe.leaves import LeafWriter
from graphboard.probe.module_hooks import ModuleHooks, named_modules
from graphboard.probe.optimizer_scope import OptimizerScope
from graphboard.probe.param_grads import ParameterGrads
from graphboard.probe.patching import Patches
from graphboard.probe.session import Session
from graphboard.probe.tensor_files import TENSOR_DIR, TensorFiles
from graphboard.probe.writer import write_rank_dir

Models = nn.Module | Sequence[nn.Module] | None

# Wrapping torch's functions twice would record every call twice: one probe at a time.
_running: Probe | None = None


def default_rank() -> int:
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return int(dist.get_rank())
    return 0


class _StepRecording:
    """A session and the hooks that feed it, installable and removable any number of times."""

    def __init__(self, models: list[nn.Module], level: Level, task: Task, rank_dir: Path) -> None:
        tensor_files = TensorFiles(rank_dir / TENSOR_DIR) if task is Task.TENSOR else None
        self.session = Session(level, task, LeafWriter(task, tensor_files))
        modules = named_modules(models) if level.records_modules else []
        self._module_hooks = ModuleHooks(self.session, modules)
        self._param_grads = ParameterGrads(self.session, modules)
        self._optimizer = OptimizerScope(self.session) if level is Level.MIX else None
        self._patches = Patches()

    def install(self) -> None:
        self._module_hooks.install()
        self._param_grads.install()
        if self.session.level.records_apis:
            install_api_wrappers(self.session, self._patches)
            install_distributed_wrappers(self.session, self._patches)
        if self._optimizer is not None:
            self._optimizer.install()
        self.session.active = True

    def remove(self) -> None:
        self.session.finish_all()
        self.session.active = False
        self._patches.restore()
        self._module_hooks.remove()
        self._param_grads.remove()
        if self._optimizer is not None:
            self._optimizer.remove()
        self.session.remove_handles()


class Probe:
    """Record a model's forward and backward passes in msprobe's dump format.

    ``model`` may be a module, a list of modules (names then start with the list index) or
    None to record API calls only. ``rank`` defaults to the torch.distributed rank when a
    process group is initialised at ``start()``, else 0.
    """

    def __init__(
        self,
        model: Models,
        out_dir: str | Path,
        *,
        step: int = 0,
        rank: int | None = None,
        level: str | Level = Level.MIX,
        task: str | Task = Task.STATISTICS,
    ) -> None:
        if model is None:
            self.models: list[nn.Module] = []
        elif isinstance(model, nn.Module):
            self.models = [model]
        else:
            self.models = list(model)
        self.out_dir = Path(out_dir)
        self.current_step = step
        self.level = parse_level(level)
        self.task = parse_task(task)
        self._fixed_rank = rank
        self.rank: int | None = rank
        self._recording: _StepRecording | None = None
        self._running = False

    @property
    def rank_dir(self) -> Path:
        rank = self.rank if self.rank is not None else default_rank()
        return self.out_dir / f"step{self.current_step}" / f"rank{rank}"

    def start(self) -> None:
        global _running
        if self._running:
            raise ProbeError("probe already started; call stop() first")
        if _running is not None:
            raise ProbeError("another probe is recording; stop it before starting this one")
        if self._recording is None:
            self.rank = self._fixed_rank if self._fixed_rank is not None else default_rank()
            self._recording = _StepRecording(self.models, self.level, self.task, self.rank_dir)
        _running = self
        self._running = True
        try:
            self._recording.install()
        except BaseException:
            self._release()
            raise

    def stop(self) -> Path:
        """Remove every hook and wrapper, and write this step's files; returns the rank folder."""
        if not self._running or self._recording is None:
            raise ProbeError("probe is not started")
        try:
            self._recording.remove()
        finally:
            self._release()
        write_rank_dir(self.rank_dir, self._recording.session)
        return self.rank_dir

    def step(self) -> None:
        """Finish the current step (stopping if needed) and count the next one."""
        if self._running:
            self.stop()
        self._recording = None
        self.current_step += 1

    def _release(self) -> None:
        global _running
        self._running = False
        if _running is self:
            _running = None


@contextmanager
def dump(
    model: Models,
    out_dir: str | Path,
    *,
    step: int = 0,
    rank: int | None = None,
    level: str | Level = Level.MIX,
    task: str | Task = Task.STATISTICS,
) -> Iterator[Probe]:
    """Record everything run inside the ``with`` block; the files are written on exit."""
    probe = Probe(model, out_dir, step=step, rank=rank, level=level, task=task)
    probe.start()
    try:
        yield probe
    finally:
        probe.stop()
