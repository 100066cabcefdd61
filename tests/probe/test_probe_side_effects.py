"""The probe must not change what the model computes, and must leave torch as it found it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from probe_models import load, make_run, train_step
from torch import nn

from graphboard import probe
from graphboard.probe.stats import summarize


def _snapshot() -> dict[str, object]:
    return {
        "Tensor.__add__": torch.Tensor.__dict__.get("__add__"),
        "Tensor.add_": torch.Tensor.__dict__.get("add_"),
        "Tensor.__rsub__": torch.Tensor.__dict__.get("__rsub__"),
        "torch.flatten": torch.flatten,
        "F.relu": F.relu,
        "F.conv2d": F.conv2d,
        "dist.all_reduce": dist.all_reduce,
        "dist.isend": dist.isend,
    }


def test_results_are_bit_identical_with_and_without_probe(tmp_path: Path) -> None:
    model, optimizer, images, labels = make_run(seed=3)
    plain = [train_step(model, optimizer, images, labels) for _ in range(2)]
    plain_params = [param.detach().clone() for param in model.parameters()]

    model, optimizer, images, labels = make_run(seed=3)
    probed = []
    recorder = probe.Probe(model, tmp_path, task="md5")
    for _ in range(2):
        recorder.start()
        probed.append(train_step(model, optimizer, images, labels))
        recorder.stop()
        recorder.step()
    assert all(torch.equal(a, b) for a, b in zip(plain, probed, strict=True))
    assert all(torch.equal(a, b) for a, b in zip(plain_params, model.parameters(), strict=True))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["step0", "step1"]


def test_everything_is_removed_on_exit(tmp_path: Path) -> None:
    before = _snapshot()
    model, optimizer, images, labels = make_run()
    with probe.dump(model, tmp_path / "dump"):
        assert torch.flatten is not before["torch.flatten"]
        assert torch.Tensor.__dict__.get("__add__") is not None  # wrapped on the class itself
        train_step(model, optimizer, images, labels)
    assert _snapshot() == before
    assert "__add__" not in torch.Tensor.__dict__  # inherited from TensorBase again
    for module in model.modules():
        assert not module._forward_hooks and not module._forward_pre_hooks
    for param in model.parameters():
        assert not param._backward_hooks
    written = sorted(path for path in (tmp_path / "dump").rglob("*") if path.is_file())
    train_step(model, optimizer, images, labels)  # runs as usual and writes nothing more
    assert sorted(path for path in (tmp_path / "dump").rglob("*") if path.is_file()) == written


def test_backward_outside_the_window_is_not_recorded(tmp_path: Path) -> None:
    model, _, images, labels = make_run()
    with probe.dump(model, tmp_path) as recording:
        loss = model(images, labels)
    loss.backward()  # hooks on this graph were removed at exit
    data = load(recording.rank_dir, "dump.json")["data"]
    assert data and not any("backward" in name or "parameters_grad" in name for name in data)


def test_module_backward_records_the_module_own_gradients(tmp_path: Path) -> None:
    """An input used by two modules (the residual skip) gets each module's own share."""

    class Skip(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = nn.Linear(4, 4)
            self.act = nn.ReLU(inplace=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.act(self.inner(x)) + x

    torch.manual_seed(0)
    first, skip = nn.Linear(4, 4), Skip()
    model = nn.Sequential(first, skip)
    x = torch.randn(3, 4)

    # Reference gradients from autograd, on the intermediate tensors (ReLU not in place here)
    hidden = first(x)
    hidden.retain_grad()
    inner_out = skip.inner(hidden)
    inner_out.retain_grad()
    out = torch.relu(inner_out) + hidden
    (out**2).sum().backward()
    model.zero_grad()

    with probe.dump(model, tmp_path) as recording:
        (model(x) ** 2).sum().backward()
    data = load(recording.rank_dir, "dump.json")["data"]

    skip_record = data["Module.1.Skip.backward.0"]
    assert skip_record["input"][0]["Max"] == pytest.approx(summarize(2 * out.detach())[0])
    # the skip module's input gradient sums both paths
    assert skip_record["output"][0]["Norm"] == pytest.approx(summarize(hidden.grad)[3])
    inner = data["Module.1.inner.Linear.backward.0"]
    assert inner["input"][0]["Norm"] == pytest.approx(summarize(inner_out.grad)[3])
    # The inner Linear's input gradient excludes the skip path's share.
    inner_share = inner_out.grad @ skip.inner.weight
    assert inner["output"][0]["Norm"] == pytest.approx(summarize(inner_share)[3])
    assert inner["output"][0]["Norm"] != pytest.approx(summarize(hidden.grad)[3])
    # ReLU(inplace=True): its input gradient is the gradient before the ReLU
    relu = data["Module.1.act.ReLU.backward.0"]
    assert relu["output"][0]["Norm"] == pytest.approx(summarize(inner_out.grad)[3])


def test_misuse_is_reported(tmp_path: Path) -> None:
    with pytest.raises(probe.ProbeError, match="unknown dump level"):
        probe.Probe(None, tmp_path, level="L2")
    with pytest.raises(probe.ProbeError, match="unknown dump task"):
        probe.Probe(None, tmp_path, task="overflow")
    first = probe.Probe(None, tmp_path)
    with pytest.raises(probe.ProbeError, match="not started"):
        first.stop()
    first.start()
    try:
        with pytest.raises(probe.ProbeError, match="another probe"):
            probe.Probe(None, tmp_path / "other").start()
        with pytest.raises(probe.ProbeError, match="already started"):
            first.start()
    finally:
        first.stop()
