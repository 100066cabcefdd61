"""The node view gives each parameter's statistics as numbers (``stats``), beside the display
text it shows: typed from gb_params for graphboard's files, without parsing any display string
back, and parsed once in Python for msprobe's files; NaN and infinities as "nan" / "inf"."""

from __future__ import annotations

import math
from typing import Any

import pytest
from fastapi.testclient import TestClient
from served_files import Q

from graphboard.server.param_stats import stat_number
from graphboard.store import param_parse

NODE = "Functional.gelu.0.forward"


def _node(client: TestClient, graph: str, name: str = NODE) -> Any:
    response = client.get(f"/api/graphs/{graph}/node", params={**Q, "name": name})
    assert response.status_code == 200, response.text
    return response.json()


def _as_number(text: str) -> float:
    return float(text)


@pytest.mark.parametrize("graph", ["ours/convnet-stats", "msprobe/convnet-stats"])
def test_every_tensor_statistic_comes_as_the_number_its_text_shows(
    client: TestClient, graph: str
) -> None:
    checked = 0
    for row in _node(client, graph)["rows"]:
        for side in (row["target"], row["golden"]):
            assert side is not None and side["stats"] is not None, row["key"]
            if side["fields"].get("type") != "torch.Tensor":
                continue  # a scalar argument: its statistics are copies of its value
            for field in ("Max", "Min", "Mean", "Norm"):
                number = side["stats"][field.lower()]
                assert isinstance(number, int | float) and not isinstance(number, bool)
                assert number == _as_number(side["fields"][field])
                checked += 1
    assert checked >= 16


def test_a_graphboard_files_node_view_parses_no_display_string(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*args: Any) -> Any:
        raise AssertionError(f"display strings parsed back: {args[:2]}")

    monkeypatch.setattr(param_parse, "param_from_display", refused)
    assert _node(client, "ours/convnet-stats")["rows"]
    with pytest.raises(AssertionError, match="parsed back"):
        _node(client, "msprobe/convnet-stats")


def test_numbers_json_cannot_hold_travel_as_strings() -> None:
    assert [stat_number(v) for v in (math.nan, math.inf, -math.inf)] == ["nan", "inf", "-inf"]
    assert [stat_number(v) for v in (0, -0.0, 1.5, True, "N/A", None)] == [
        0,
        -0.0,
        1.5,
        None,
        None,
        None,
    ]
    assert isinstance(stat_number(0), int) and math.copysign(1, stat_number(-0.0)) == -1  # type: ignore[arg-type]
