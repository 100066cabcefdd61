"""Tasks md5 and tensor, NaN/inf statistics, and byte-identical repeat dumps."""

from __future__ import annotations

import filecmp
import zlib
from pathlib import Path

import torch
from probe_models import dump_one_step, load, make_run, train_step
from torch import nn

from graphboard import probe


def crc32_of(tensor: torch.Tensor) -> str:
    raw = tensor.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    return f"{zlib.crc32(raw):08x}"


def test_md5_task_adds_crc32_of_tensor_bytes(tmp_path: Path) -> None:
    rank_dir = dump_one_step(tmp_path, task="md5")
    document = load(rank_dir, "dump.json")
    assert document["task"] == "statistics"  # msprobe writes md5 dumps as statistics
    data = document["data"]
    model, _, images, labels = make_run()  # the same weights and inputs, untouched
    conv = data["Functional.conv2d.0.forward"]["input_args"]
    assert conv[0]["md5"] == crc32_of(images)
    assert conv[1]["md5"] == crc32_of(model.state_dict()["stem.0.weight"])
    assert data["Functional.cross_entropy.0.forward"]["input_args"][1]["md5"] == crc32_of(labels)
    counter = data["Tensor.add_.0.forward"]  # BatchNorm's num_batches_tracked, 0 then 1
    assert counter["input_args"][0]["md5"] == crc32_of(torch.tensor(0)) == "6522df69"
    assert counter["output"][0]["md5"] == crc32_of(torch.tensor(1))
    weight_grad = data["Module.head.0.Linear.parameters_grad.0"]["weight"]
    assert len(weight_grad) == 1 and len(weight_grad[0]["md5"]) == 8


def test_tensor_task_saves_every_tensor(tmp_path: Path) -> None:
    rank_dir = dump_one_step(tmp_path, task="tensor")
    document = load(rank_dir, "dump.json")
    assert document["task"] == "tensor" and document["dump_data_dir"] == "dump_tensor_data"
    data = document["data"]
    names: list[str] = []

    def collect(value: object) -> None:
        if isinstance(value, dict):
            if "data_name" in value:
                names.append(value["data_name"])
            for item in value.values():
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)

    collect(data)
    files = sorted(path.name for path in (rank_dir / "dump_tensor_data").iterdir())
    assert sorted(names) == files
    model, _, images, _ = make_run()
    stem_weight = model.state_dict()["stem.0.weight"]
    conv = data["Functional.conv2d.0.forward"]["input_args"]
    assert conv[0]["data_name"] == "Functional.conv2d.0.forward.input.0.pt"
    saved = torch.load(rank_dir / "dump_tensor_data" / conv[0]["data_name"])
    assert torch.equal(saved, images)
    tensors = rank_dir / "dump_tensor_data"
    weight = torch.load(tensors / "Module.stem.0.Conv2d.forward.0.parameters.weight.pt")
    assert torch.equal(weight, stem_weight)
    grad = data["Module.head.0.Linear.parameters_grad.0"]["bias"][0]
    assert grad["data_name"] == "Module.head.0.Linear.parameters_grad.0.bias.pt"
    backward = data["Functional.conv2d.0.backward"]["output"]
    assert backward[0] is None  # the images need no gradient
    assert backward[1]["data_name"] == "Functional.conv2d.0.backward.output.1.pt"
    loaded = torch.load(rank_dir / "dump_tensor_data" / backward[1]["data_name"])
    assert loaded.shape == stem_weight.shape and loaded.max().item() == backward[1]["Max"]


def test_same_run_twice_gives_identical_files(tmp_path: Path) -> None:
    # One call site, so that the stacks (which name the caller's line) are the same too.
    first, second = (dump_one_step(tmp_path / side, task="tensor") for side in ("a", "b"))
    comparison = filecmp.dircmp(first, second)
    assert comparison.left_list == comparison.right_list
    for name in ("construct.json", "dump.json", "stack.json"):
        assert (first / name).read_bytes() == (second / name).read_bytes()
    tensor_files = sorted((first / "dump_tensor_data").iterdir())
    assert tensor_files
    for path in tensor_files:
        assert path.read_bytes() == (second / "dump_tensor_data" / path.name).read_bytes()


def test_nan_and_inf_are_bare_json_tokens(tmp_path: Path) -> None:
    layer = nn.Sequential(nn.Linear(2, 2))
    with probe.dump(layer, tmp_path) as recording:
        layer(torch.tensor([[float("inf"), 1.0], [2.0, -float("inf")]]))  # mean: inf - inf = nan
    text = (recording.rank_dir / "dump.json").read_text()
    assert '"Max": Infinity' in text and '"Min": -Infinity' in text and '"Mean": NaN' in text
    data = load(recording.rank_dir, "dump.json")["data"]
    leaf = data["Functional.linear.0.forward"]["input_args"][0]
    assert leaf["Max"] == float("inf") and leaf["Min"] == -float("inf")


def test_start_stop_step_numbers_steps_and_resets_counters(tmp_path: Path) -> None:
    model, optimizer, images, labels = make_run()
    recorder = probe.Probe(model, tmp_path, step=5, level="L0")
    for _ in range(2):
        recorder.start()
        train_step(model, optimizer, images, labels)
        recorder.stop()
        recorder.step()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["step5", "step6"]
    for step in ("step5", "step6"):
        construct = load(tmp_path / step / "rank0", "construct.json")
        assert "Module.blocks.0.relu.ReLU.forward.1" in construct
        assert "Module.blocks.0.relu.ReLU.forward.2" not in construct


def test_recording_resumes_within_a_step(tmp_path: Path) -> None:
    # The model object itself is not recorded, only what it holds (as in msprobe).
    model = nn.Sequential(nn.Linear(2, 2))
    recorder = probe.Probe(model, tmp_path, level="L0")
    for _ in range(2):
        recorder.start()
        model(torch.ones(1, 2))
        rank_dir = recorder.stop()
    model(torch.ones(1, 2))  # not recorded
    calls = ["Module.0.Linear.forward.0", "Module.0.Linear.forward.1"]
    assert list(load(rank_dir, "construct.json")) == calls
    assert list(load(rank_dir, "dump.json")["data"]) == calls
