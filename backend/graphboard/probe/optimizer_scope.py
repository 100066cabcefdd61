"""The ``optimizer`` scope: API calls made by ``optimizer.step()`` hang under it, as in msprobe."""

from __future__ import annotations

from typing import Any

from torch.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)
from torch.utils.hooks import RemovableHandle

from graphboard.probe.session import Session

OPTIMIZER_SCOPE = "optimizer"


class OptimizerScope:
    """Global step hooks, so every optimizer is covered without being passed to the probe."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._handles: list[RemovableHandle] = []

    def install(self) -> None:
        self._handles = [
            register_optimizer_step_pre_hook(self._enter),
            register_optimizer_step_post_hook(self._exit),
        ]

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def _enter(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self._session.accepts_call():
            self._session.enter_root_scope(OPTIMIZER_SCOPE)

    def _exit(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self._session.exit_scope(OPTIMIZER_SCOPE)
