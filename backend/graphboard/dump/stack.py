"""stack.json: call stacks per node, in msprobe's legacy or grouped format."""

from __future__ import annotations

from pathlib import Path

from graphboard.dump.jsonio import load_json_object

Stack = tuple[str, ...]


def read_stacks(path: Path, warnings: list[str]) -> dict[str, Stack]:
    """Map node name -> frames. Equal stacks share one tuple, so they are stored once."""
    raw = load_json_object(path, "stack.json")
    shared: dict[Stack, Stack] = {}
    stacks: dict[str, Stack] = {}
    skipped = 0

    def intern(frames: object) -> Stack | None:
        if not isinstance(frames, list) or not all(isinstance(frame, str) for frame in frames):
            return None
        key = tuple(frames)
        return shared.setdefault(key, key)

    if "0" in raw:  # grouped: {"0": [[names...], [frames...]], ...}
        for group in raw.values():
            if not (isinstance(group, list) and len(group) == 2 and isinstance(group[0], list)):
                skipped += 1
                continue
            frames = intern(group[1])
            if frames is None:
                skipped += 1
                continue
            for name in group[0]:
                if isinstance(name, str):
                    stacks[name] = frames
    else:  # legacy: {name: [frames...]}
        for name, value in raw.items():
            frames = intern(value)
            if frames is None:
                skipped += 1
                continue
            stacks[name] = frames
    if skipped:
        warnings.append(
            f"{path}: {skipped} malformed stack entr{'y' if skipped == 1 else 'ies'} skipped"
        )
    return stacks
