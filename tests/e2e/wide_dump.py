"""Write a msprobe dump (level mix, statistics) of one module calling N APIs: a node with N
children, to check that the viewer expands a very wide level without freezing.

    python tests/e2e/wide_dump.py --children 100000 --out /tmp/wide
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

MODULE = "Module.wide.Sequential.forward.0"


def _tensor(value: float) -> dict[str, Any]:
    return {
        "type": "torch.Tensor",
        "dtype": "torch.float32",
        "shape": [4],
        "Max": value,
        "Min": -value,
        "Mean": 0.0,
        "Norm": 2 * value,
        "requires_grad": False,
    }


def write_wide_dump(out: Path, children: int) -> Path:
    """The dump root (``out``) holding ``step0/rank0/{construct,dump,stack}.json``."""
    folder = out / "step0" / "rank0"
    folder.mkdir(parents=True, exist_ok=True)
    construct: dict[str, str | None] = {MODULE: None}
    data: dict[str, Any] = {
        MODULE: {"input_args": [_tensor(1.0)], "input_kwargs": {}, "output": [_tensor(1.0)]}
    }
    for index in range(children):
        name = f"Torch.add.{index}.forward"
        construct[name] = MODULE
        value = 1.0 + index % 7
        data[name] = {
            "input_args": [_tensor(value)],
            "input_kwargs": {},
            "output": [_tensor(value)],
        }
    (folder / "construct.json").write_text(json.dumps(construct))
    dump = {"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": None}
    (folder / "dump.json").write_text(json.dumps({**dump, "data": data}))
    stack = {"0": [list(construct), ["File wide.py, line 1, in forward, \n x = x + 1"]]}
    (folder / "stack.json").write_text(json.dumps(stack))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--children", type=int, default=100_000)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    print(write_wide_dump(args.out, args.children))


if __name__ == "__main__":
    main()
