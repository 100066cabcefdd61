"""Per-tensor summaries as msprobe writes them: Max, Min, Mean, Norm and a CRC-32.

Statistics are reduced on the tensor's own device and dtype (msprobe's fp16 dumps show fp16
means), and only the four resulting scalars travel to Python, so the cost does not depend on
copying the data out.
"""

from __future__ import annotations

import zlib

import torch

Stat = bool | int | float | None
Summary = tuple[Stat, Stat, Stat, Stat]

_NOTHING: Summary = (None, None, None, None)


def _unsupported(tensor: torch.Tensor) -> bool:
    return (
        tensor.numel() == 0
        or tensor.is_complex()
        or tensor.layout is not torch.strided
        or tensor.device.type == "meta"
    )


def summarize(tensor: torch.Tensor) -> Summary:
    """(Max, Min, Mean, Norm); Mean and Norm are None for non-float dtypes, as in msprobe."""
    data = tensor.detach()
    if _unsupported(data):
        return _NOTHING
    if data.dim() == 0:
        # msprobe writes a 0-d tensor's value for all four fields, whatever its dtype.
        value = data.item()
        if not isinstance(value, bool | int | float):
            return _NOTHING
        return value, value, value, value
    if data.is_floating_point():
        values = torch.stack((data.max(), data.min(), data.mean(), torch.linalg.vector_norm(data)))
        maximum, minimum, mean, norm = values.tolist()
        return maximum, minimum, mean, norm
    maximum, minimum = torch.stack((data.max(), data.min())).tolist()
    return maximum, minimum, None, None


def crc32_hex(tensor: torch.Tensor) -> str:
    """CRC-32 of the tensor's bytes in memory order, as 8 lowercase hex digits (msprobe's md5 field)."""
    data = tensor.detach()
    if data.layout is not torch.strided or data.device.type == "meta":
        return f"{zlib.crc32(b''):08x}"
    data = data.cpu().contiguous()
    # Viewing as bytes avoids numpy's missing bfloat16 and copies nothing.
    raw = data.reshape(-1).view(torch.uint8).numpy()
    return f"{zlib.crc32(raw.data):08x}"
