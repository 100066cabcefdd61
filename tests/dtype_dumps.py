"""Dumps for the dtype-aware tests, made once per test session from
tests/integration/dtype_model_script.py: graphboard's probe (this Python) or msprobe's
dumper (msprobe's Python), GPT- or Llama-style, fp32 golden and bf16 / fp16 targets.

Every test module asking for the same dump shares it: dumps live under the session's base
temporary folder, by name, so a second module finds the first one's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from graphboard.pipeline import BuildOptions, run_build
from msprobe_runner import run_msprobe_script

SCRIPT = Path(__file__).with_name("integration") / "dtype_model_script.py"
VARIANTS = {
    "fp32": ["--dtype", "fp32"],
    "bf16": ["--dtype", "bf16"],
    "fp16": ["--dtype", "fp16"],
    "tanh": ["--dtype", "bf16", "--gelu", "tanh"],
    # layer 1's MLP output past fp16's 65504 (inf and -inf, then NaN downstream), and the same
    # model in fp32 (finite): the overflow compare of issue 30
    "overflow": ["--dtype", "fp16", "--scale-mlp", "1", "--mlp-factor", "2e5"],
    "overflow-fp32": ["--dtype", "fp32", "--scale-mlp", "1", "--mlp-factor", "2e5"],
    # transformers' two attentions: eager's additive mask of torch.finfo(dtype).min, sdpa's None
    "finfo-fp32": ["--dtype", "fp32", "--attention", "finfo"],
    "finfo-bf16": ["--dtype", "bf16", "--attention", "finfo"],
    "sdpa-fp32": ["--dtype", "fp32", "--attention", "sdpa"],
    # Llama's rotary embedding at positions 2000.. (a long context), and bf16 autocast
    "rotary-fp32": ["--dtype", "fp32", "--rotary", "2000"],
    "rotary-autocast": ["--dtype", "fp32", "--autocast", "--rotary", "2000"],
}


def scaled_layer(layers: int) -> int:
    """The layer whose MLP output the "scaled" target multiplies by 1.05."""
    return 30 if layers >= 48 else 1


class Dumps:
    """Dumps by name, ``{dumper}-{arch}{layers}-{variant}``, and compares of them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def dump(self, dumper: str, arch: str, layers: int, variant: str) -> Path:
        out = self.root / f"{dumper}-{arch}{layers}-{variant}"
        if (out / "step0").is_dir():
            return out
        options = ["--arch", arch, "--layers", str(layers), "--dumper", dumper]
        if variant == "scaled":
            options += ["--dtype", "bf16", "--scale-mlp", str(scaled_layer(layers))]
        else:
            options += VARIANTS[variant]
        if dumper == "msprobe":
            run_msprobe_script(SCRIPT, str(out), *options, cwd=self.root)
        else:
            subprocess.run(
                [sys.executable, str(SCRIPT), str(out), *options],
                check=True,
                capture_output=True,
                cwd=self.root,
            )
        return out

    def compare(
        self,
        dumper: str,
        arch: str,
        layers: int,
        variant: str,
        output_dir: Path | None = None,
        golden_variant: str = "fp32",
    ) -> Path:
        """A compare of the variant against the same model in fp32 (or ``golden_variant``),
        built once (per folder)."""
        name = f"{dumper}-{arch}{layers}-{variant}"
        if golden_variant != "fp32":
            name += f"-vs-{golden_variant}"
        out = output_dir or self.root / "builds" / name
        built = sorted(out.glob("*.vis.db")) if out.is_dir() else []
        if built:
            return built[0]
        target = self.dump(dumper, arch, layers, variant)
        golden = self.dump(dumper, arch, layers, golden_variant)
        return run_build(BuildOptions(target=target, golden=golden, output_dir=out)).path


@pytest.fixture(scope="session")
def dtype_dumps(tmp_path_factory: pytest.TempPathFactory) -> Dumps:
    return Dumps(tmp_path_factory.getbasetemp() / "dtype-aware-dumps")
