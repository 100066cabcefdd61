# The compiled renderer of msprobe's display strings (_render.c); see display.py.
from collections.abc import Callable, Sequence
from typing import Any

def configure(
    output_role: object,
    clean_string: Callable[[str], str],
    scalar_md5: Callable[[Any], str | None],
    messages_json: Callable[[list[str]], str],
    summary_names: tuple[str, ...],
    relative_names: frozenset[str],
    tensor_names: tuple[str, ...],
) -> None: ...
def render_node(
    params: Sequence[Any] | None, node_name: str, mode: int, rows: Sequence[Any] | None
) -> tuple[str, str]: ...
