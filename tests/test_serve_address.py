"""Where graphboard serve listens, as the commands without a server's settings print it
(serve_address), agrees with the server's own settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphboard.errors import GraphboardError
from graphboard.serve_address import configured_url, server_url
from graphboard.server.settings import Settings


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"GRAPHBOARD_HOST": "0.0.0.0", "GRAPHBOARD_PORT": "9123"},
        {"graphboard_host": "graphs.example.com", "Graphboard_Port": "65535"},
        {"GRAPHBOARD_PORT": "1", "GRAPHBOARD_DATA_DIR": "/elsewhere"},
    ],
    ids=["defaults", "both", "any-case", "port-only"],
)
def test_the_address_is_the_servers(
    environ: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GRAPHBOARD_HOST", "GRAPHBOARD_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert configured_url() == configured_url(environ)
    assert configured_url(environ) == server_url(Settings(data_dir=tmp_path))


@pytest.mark.parametrize("port", ["0", "65536", "-1", "80a", ""])
def test_a_port_out_of_range_is_one_line_naming_the_variable(port: str) -> None:
    with pytest.raises(GraphboardError) as raised:
        configured_url({"GRAPHBOARD_PORT": port})
    assert str(raised.value) == f"GRAPHBOARD_PORT={port!r}: expected a port number, 1 to 65535"
