"""Task ``tensor``: every recorded tensor saved as ``dump_tensor_data/<data_name>``."""

from __future__ import annotations

from pathlib import Path

import torch

TENSOR_DIR = "dump_tensor_data"
SUFFIX = ".pt"


class TensorFiles:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        # Files left by an earlier run of the same step would be listed beside ours.
        for stale in directory.glob(f"*{SUFFIX}"):
            stale.unlink()

    def save(self, tensor: torch.Tensor, record_path: str) -> str:
        """Save a compact copy (a view would drag its whole base storage along); return data_name."""
        data_name = record_path + SUFFIX
        compact = tensor.detach().cpu().clone(memory_format=torch.contiguous_format)
        torch.save(compact, self.directory / data_name)
        return data_name
