"""One training step of a small real model, with at most one injected fault, dumped at mix
level with statistics: the localisation benchmark's dumps (bench/localisation/README.md).

    python model_script.py OUT --family llama --precision bf16 [--attn sdpa]
        [--fault KIND --module PATH] [--dumper msprobe|graphboard]

Run by msprobe's Python for ``--dumper msprobe`` (``msprobe.pytorch.PrecisionDebugger``; the
project never imports msprobe) and by the project's Python for ``--dumper graphboard``
(``graphboard.probe.dump``). Families: ``llama``, ``qwen2``, ``gpt2`` (``transformers`` models
built from a config, random weights, nothing downloaded) and ``own-gpt`` / ``own-llama`` (the
project's own test model, tests/integration/dtype_model_script.py).

The weights are made in fp32 from one seed, the fault (if any) is applied, and only then is
the model cast to the target's precision; ``autocast`` keeps fp32 weights and runs the forward
under CPU autocast to bfloat16. So a target and its golden differ by precision, attention
kernel and the fault, nothing else. Every fault is injected into one module instance, by
changing an attribute, a weight, its ``forward`` or a backward hook: transformers itself is
never edited.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional

PRECISIONS = {
    "fp32": torch.float32,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "autocast": torch.float32,
}
TOKENS, BATCH, VOCAB = 16, 2, 128
OWN_SCRIPT = Path(__file__).resolve().parents[2] / "tests" / "integration" / "dtype_model_script.py"


def hf_model(family: str, attn: str) -> nn.Module:
    """A 4-layer model of the family from a config, every dropout 0 (a training step that is
    still deterministic)."""
    import transformers

    common: dict[str, Any] = {"vocab_size": VOCAB, "attn_implementation": attn}
    config: Any
    if family == "gpt2":
        config = transformers.GPT2Config(
            n_embd=64,
            n_layer=4,
            n_head=4,
            n_positions=64,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            **common,
        )
        return transformers.GPT2LMHeadModel(config)
    arguments = {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 64,
        "attention_dropout": 0.0,
        **common,
    }
    if family == "llama":
        return transformers.LlamaForCausalLM(transformers.LlamaConfig(**arguments))
    if family == "qwen2":
        return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**arguments))
    raise SystemExit(f"unknown family {family!r}")


def own_model(family: str) -> nn.Module:
    """The project's own test model (GPT- or Llama-style, 4 layers)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("dtype_model_script", OWN_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    arch = family.removeprefix("own-")
    model: nn.Module = module.Model(arch, 4, "none")
    return model


# --- faults: each changes one module instance ------------------------------------------------


def _eps(module: nn.Module) -> None:
    """A norm's epsilon far larger than the golden's (a config read with the wrong key)."""
    for name in ("variance_epsilon", "eps"):
        if hasattr(module, name):
            setattr(module, name, 1e-2)
            return
    raise SystemExit(f"{type(module).__name__} has no epsilon")


def _scaling(module: nn.Module) -> None:
    """Attention scores scaled by 1/sqrt(hidden size) instead of 1/sqrt(head size)."""
    if not hasattr(module, "scaling"):
        raise SystemExit(f"{type(module).__name__} has no scaling")
    module.scaling = float(module.scaling) / 2.0


def _activation(module: nn.Module) -> None:
    """The activation swapped: exact GELU where the model has SiLU or tanh-GELU."""
    if hasattr(module, "gelu"):  # the project's own GPT MLP: its GELU is an attribute
        module.gelu = "tanh"
        return
    module.forward = types.MethodType(lambda _self, x: functional.gelu(x), module)  # type: ignore[method-assign]


def _weight(module: nn.Module, factor: float) -> None:
    with torch.no_grad():
        module.weight.mul_(factor)


def _residual(module: nn.Module) -> None:
    """The residual taken after the norm: the module returns its output plus its input."""
    original = module.forward

    def forward(x: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        return original(x, *args, **kwargs) + x

    module.forward = forward  # type: ignore[method-assign]


def _drop(module: nn.Module) -> None:
    """The module's op left out: it hands its input on unchanged."""
    module.forward = types.MethodType(lambda _self, x, *_a, **_k: x, module)  # type: ignore[method-assign]


def _rope(module: nn.Module) -> None:
    """Rotary frequencies from base 1e6 where the golden has the config's (10000)."""
    count = module.inv_freq.shape[0]
    inv_freq = 1.0 / (1e6 ** (torch.arange(0, 2 * count, 2, dtype=torch.float32) / (2 * count)))
    module.inv_freq.copy_(inv_freq)
    if hasattr(module, "original_inv_freq"):
        module.original_inv_freq.copy_(inv_freq)


def _grad(module: nn.Module) -> None:
    """Backward only: the gradient the module hands back to its input scaled by 1.05 (a
    wrong loss-scale or averaging factor in one custom backward)."""

    def hook(_module: nn.Module, grad_input: Any, _grad_output: Any) -> Any:
        return tuple(None if g is None else g * 1.05 for g in grad_input)

    module.register_full_backward_hook(hook)


def _softmax(module: nn.Module) -> None:
    """This attention's softmax in half precision (fp16 when the weights are fp32, the
    weights' own dtype otherwise) where the golden computes it in fp32."""
    import copy

    from transformers import AttentionInterface

    def attention(
        owner: nn.Module,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attention_mask: torch.Tensor | None,
        scaling: float | None = None,
        dropout: float = 0.0,
        **_kwargs: Any,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        groups = query.shape[1] // key.shape[1]
        if groups > 1:
            key = key.repeat_interleave(groups, dim=1)
            value = value.repeat_interleave(groups, dim=1)
        scale = query.shape[-1] ** -0.5 if scaling is None else scaling
        scores = torch.matmul(query, key.transpose(2, 3)) * scale
        if attention_mask is not None:
            scores = scores + attention_mask
        low = torch.float16 if query.dtype == torch.float32 else query.dtype
        weights = functional.softmax(scores.to(low), dim=-1).to(value.dtype)
        weights = functional.dropout(weights, p=dropout, training=owner.training)
        return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights

    AttentionInterface.register("lowp_softmax", attention)
    config = copy.copy(module.config)
    config._attn_implementation = "lowp_softmax"
    module.config = config


FAULTS: dict[str, Callable[[nn.Module], None]] = {
    "eps": _eps,
    "scaling": _scaling,
    "activation": _activation,
    "weight": lambda module: _weight(module, 1.01),
    "overflow": lambda module: _weight(module, 2.0**14),
    "residual": _residual,
    "drop": _drop,
    "rope": _rope,
    "grad": _grad,
    "softmax": _softmax,
}


def _module(model: nn.Module, path: str) -> nn.Module:
    try:
        return model.get_submodule(path)
    except AttributeError:
        raise SystemExit(f"no module {path!r} in {type(model).__name__}") from None


def _config(out: Path) -> Path:
    path = out.parent / f"{out.name}.config.json"
    config = {
        "task": "statistics",
        "dump_path": str(out),
        "rank": [],
        "step": [],
        "level": "mix",
        "statistics": {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": "statistics"},
    }
    path.write_text(json.dumps(config))
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--family", required=True, choices=("llama", "qwen2", "gpt2", "own-gpt", "own-llama")
    )
    parser.add_argument("--precision", choices=sorted(PRECISIONS), default="fp32")
    parser.add_argument("--attn", choices=("eager", "sdpa"), default="eager")
    parser.add_argument("--fault", choices=sorted(FAULTS))
    parser.add_argument("--module", help="the faulty module's path (model.get_submodule)")
    parser.add_argument("--dumper", choices=("graphboard", "msprobe"), default="msprobe")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    if args.family.startswith("own-"):
        model = own_model(args.family)
        vocab = int(model.head.out_features)
    else:
        model = hf_model(args.family, args.attn)
        vocab = VOCAB
    tokens = torch.randint(0, vocab, (BATCH, TOKENS))
    labels = torch.randint(0, vocab, (BATCH, TOKENS))
    if args.fault is not None:
        if not args.module:
            raise SystemExit("--fault needs --module")
        FAULTS[args.fault](_module(model, args.module))
    model = model.to(PRECISIONS[args.precision])
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def step() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "autocast"):
            output = model(tokens)
        logits = output if isinstance(output, torch.Tensor) else output.logits
        loss = functional.cross_entropy(logits.float().reshape(-1, vocab), labels.reshape(-1))
        loss.backward()
        optimizer.step()

    args.out.mkdir(parents=True, exist_ok=True)
    if args.dumper == "graphboard":
        from graphboard import probe

        with probe.dump(model, args.out, step=0, level="mix", task="statistics"):
            step()
    else:
        from msprobe.pytorch import PrecisionDebugger  # msprobe's Python only

        debugger = PrecisionDebugger(config_path=str(_config(args.out)))
        debugger.start(model)
        step()
        debugger.stop()
        debugger.step()


if __name__ == "__main__":
    main(sys.argv[1:])
