"""The benchmark's cases: which dump is a case's target, golden and noise reference, and for a
fault the module that must be named.

A dump is (family, precision, attention kernel, fault, faulty module); the golden of every
case is its family in fp32 with eager attention and no fault; the noise reference of a case is
the same model as its target without the fault (the golden's configuration run in the
target's precision and kernels). A noise-only case is a target with no fault at all.
"""

from __future__ import annotations

from dataclasses import dataclass

GROUPS = ("fp32", "bf16", "fp16", "autocast")


@dataclass(frozen=True)
class Dump:
    family: str
    precision: str = "fp32"
    attn: str = "eager"
    fault: str | None = None  # a model_script.FAULTS key
    module: str | None = None  # the faulty module's path

    @property
    def name(self) -> str:
        parts = [self.family, self.precision, self.attn]
        if self.fault:
            parts.append(self.fault)
        if self.module:
            parts.append(self.module)
        return "-".join(parts)

    def script_arguments(self) -> list[str]:
        arguments = ["--family", self.family, "--precision", self.precision, "--attn", self.attn]
        if self.fault:
            arguments += ["--fault", self.fault]
        if self.module:
            arguments += ["--module", self.module]
        return arguments


@dataclass(frozen=True)
class Case:
    target: Dump
    backward_only: bool = False

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def group(self) -> str:
        return self.target.precision

    @property
    def is_fault(self) -> bool:
        return self.target.module is not None

    @property
    def golden(self) -> Dump:
        return Dump(self.target.family)

    @property
    def reference(self) -> Dump:
        """The target's precision and kernels, without the fault. On one CPU this run is the
        target itself for a noise-only case, bit for bit: see ``noisy_reference``."""
        return Dump(self.target.family, self.target.precision, self.target.attn)

    @property
    def noisy_reference(self) -> Dump:
        """The target's precision without the fault, with the other attention kernel: a
        reference that differs from the target by kernel noise, as another device's run
        would (the project's own models have one attention: theirs is ``reference``)."""
        if self.target.family.startswith("own-"):
            return self.reference
        other = "sdpa" if self.target.attn == "eager" else "eager"
        return Dump(self.target.family, self.target.precision, other)


# Each family's modules by role, ``{L}`` standing for the layer index.
ROLES: dict[str, dict[str, str]] = {
    "llama": {
        "norm": "model.layers.{L}.post_attention_layernorm",
        "attn": "model.layers.{L}.self_attn",
        "act": "model.layers.{L}.mlp.act_fn",
        "mlp": "model.layers.{L}.mlp",
        "down": "model.layers.{L}.mlp.down_proj",
        "up": "model.layers.{L}.mlp.up_proj",
        "o": "model.layers.{L}.self_attn.o_proj",
        "rotary": "model.rotary_emb",
    },
    "gpt2": {
        "norm": "transformer.h.{L}.ln_2",
        "attn": "transformer.h.{L}.attn",
        "act": "transformer.h.{L}.mlp.act",
        "mlp": "transformer.h.{L}.mlp",
        "down": "transformer.h.{L}.mlp.c_proj",
        "up": "transformer.h.{L}.mlp.c_fc",
        "o": "transformer.h.{L}.attn.c_proj",
    },
    "own-gpt": {
        "norm": "blocks.{L}.norm2",
        "act": "blocks.{L}.mlp",  # the GELU is the MLP's attribute, not a module
        "mlp": "blocks.{L}.mlp",
        "down": "blocks.{L}.mlp.out",
        "up": "blocks.{L}.mlp.fc",
        "o": "blocks.{L}.attn.proj",
    },
    "own-llama": {
        "mlp": "blocks.{L}.mlp",
        "down": "blocks.{L}.mlp.down",
        "up": "blocks.{L}.mlp.up",
        "o": "blocks.{L}.attn.proj",
    },
}
ROLES["qwen2"] = ROLES["llama"]

# Which role each fault kind changes.
FAULT_ROLE = {
    "eps": "norm",
    "scaling": "attn",
    "activation": "act",
    "rope": "rotary",
    "weight": "down",
    "overflow": "up",
    "residual": "mlp",
    "drop": "o",
    "softmax": "attn",
    "grad": "mlp",
}
BACKWARD_ONLY = frozenset({"grad"})

# (family, fault kind, layer) per precision group: every kind in fp32, and in each narrower
# group the kinds a migration meets there, spread over the families and layers.
FAULTS: dict[str, list[tuple[str, str, int]]] = {
    "fp32": [
        ("llama", "eps", 1),
        ("llama", "scaling", 2),
        ("llama", "activation", 1),
        ("llama", "rope", 0),
        ("llama", "weight", 2),
        ("llama", "residual", 1),
        ("llama", "drop", 3),
        ("llama", "softmax", 1),
        ("llama", "grad", 2),
        ("qwen2", "rope", 0),
        ("gpt2", "activation", 2),
        ("gpt2", "drop", 2),
        ("gpt2", "grad", 1),
        ("own-gpt", "activation", 1),
    ],
    "bf16": [
        ("llama", "eps", 2),
        ("llama", "activation", 2),
        ("llama", "weight", 1),
        ("llama", "softmax", 2),
        ("qwen2", "scaling", 1),
        ("qwen2", "rope", 0),
        ("qwen2", "grad", 2),
        ("gpt2", "residual", 2),
    ],
    "fp16": [
        ("llama", "overflow", 2),
        ("llama", "scaling", 1),
        ("llama", "drop", 2),
        ("qwen2", "eps", 1),
        ("gpt2", "overflow", 1),
        ("gpt2", "grad", 2),
    ],
    "autocast": [
        ("llama", "activation", 2),
        ("llama", "weight", 1),
        ("llama", "grad", 1),
        ("qwen2", "softmax", 1),
        ("gpt2", "scaling", 2),
        ("gpt2", "eps", 2),
    ],
}

# Noise-only targets: (family, precision, attention, None). No "numerically equivalent
# reordering" here: one that keeps every API call (a Linear's weight stored transposed) gave
# bit-identical results on CPU, and one that reassociates a product changes the intermediates
# that the dump pairs by call name, which is then a real difference of those calls.
NOISE: list[tuple[str, str, str, str | None]] = [
    ("llama", "fp32", "sdpa", None),
    ("qwen2", "fp32", "sdpa", None),
    ("gpt2", "fp32", "sdpa", None),
    ("llama", "bf16", "eager", None),
    ("qwen2", "bf16", "eager", None),
    ("gpt2", "bf16", "eager", None),
    ("own-gpt", "bf16", "eager", None),
    ("llama", "fp16", "eager", None),
    ("qwen2", "fp16", "eager", None),
    ("gpt2", "fp16", "eager", None),
    ("llama", "autocast", "eager", None),
    ("qwen2", "autocast", "eager", None),
    ("gpt2", "autocast", "eager", None),
    ("llama", "bf16", "sdpa", None),
]


def fault_case(family: str, precision: str, kind: str, layer: int) -> Case:
    module = ROLES[family][FAULT_ROLE[kind]].format(L=layer)
    return Case(Dump(family, precision, "eager", kind, module), kind in BACKWARD_ONLY)


def all_cases() -> list[Case]:
    found = [
        fault_case(family, group, kind, layer)
        for group in GROUPS
        for family, kind, layer in FAULTS[group]
    ]
    found += [
        Case(Dump(family, precision, attn, fault)) for family, precision, attn, fault in NOISE
    ]
    return found
