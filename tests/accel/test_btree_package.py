"""The compiled tb_nodes writer is a package of its own (packages/graphboard-btree): the seam
takes it when it is installed and built for the tb_nodes layout this graphboard hands over,
refuses it with one line on stderr when built for another, and without it (not installed, or
refused) answers as GRAPHBOARD_PURE=btree does. (Whole builds: tests/test_pure_path.py.)"""

from __future__ import annotations

import dataclasses
import sys
import types
from collections.abc import Iterator

import pytest

from graphboard import accel
from graphboard.store import node_rows
from graphboard.store.node_rows import LAYOUT_VERSION

MODULE = accel.MODULES["btree"]


@pytest.fixture(autouse=True)
def _fresh_seam(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test imports the part anew: the seam keeps what it found for the process."""
    monkeypatch.delenv(accel.PURE_ENV, raising=False)
    accel._usable.cache_clear()
    yield
    accel._usable.cache_clear()


def _stand_in(monkeypatch: pytest.MonkeyPatch, **attributes: object) -> None:
    """A module in the package's place, as if installed, with ``attributes``."""
    package, _, _ = MODULE.partition(".")
    module = types.ModuleType(MODULE)
    vars(module).update(attributes)
    monkeypatch.setitem(sys.modules, package, types.ModuleType(package))
    monkeypatch.setitem(sys.modules, MODULE, module)


def test_the_installed_package_states_the_layout_graphboard_writes() -> None:
    btree = pytest.importorskip(MODULE, reason="graphboard-btree is not installed")
    assert btree.LAYOUT_VERSION == LAYOUT_VERSION
    assert accel.compiled("btree") is btree
    assert accel.active()["btree"]


def test_the_layout_version_is_bumped_with_what_it_covers() -> None:
    """A tripwire: NodesLayout's form as of LAYOUT_VERSION 2. Changing it needs a writer built
    for the new form: bump node_rows.LAYOUT_VERSION and _btree.c's together, then this."""
    fields = {field.name: str(field.type) for field in dataclasses.fields(node_rows.NodesLayout)}
    assert (LAYOUT_VERSION, fields) == (
        2,
        {
            "affinities": "str",
            "indexes": "list[tuple[bool, tuple[int, ...]]]",
            "schema_rows": "list[tuple[str, str, str, str | None]]",
        },
    )


@pytest.mark.parametrize(
    ("attributes", "stated"),
    [
        ({"LAYOUT_VERSION": LAYOUT_VERSION + 1}, f"tb_nodes layout {LAYOUT_VERSION + 1}"),
        ({}, "no stated layout"),  # built before the layout was stated
    ],
    ids=["another layout", "none stated"],
)
def test_a_package_built_for_another_layout_is_refused_once_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    attributes: dict[str, object],
    stated: str,
) -> None:
    _stand_in(monkeypatch, **attributes)
    assert accel.compiled("btree") is None
    assert accel.active() == {**_pure_btree(monkeypatch), "btree": False}
    assert capsys.readouterr().err == (
        f"graphboard: warning: {MODULE} was built for {stated}, this graphboard writes layout"
        f" {LAYOUT_VERSION}: SQLite writes tb_nodes instead (reinstall packages/graphboard-btree)\n"
    )
    assert accel.compiled("btree") is None
    assert capsys.readouterr().err == ""  # told once a process


def test_a_package_built_for_this_layout_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    _stand_in(monkeypatch, LAYOUT_VERSION=LAYOUT_VERSION)
    assert accel.compiled("btree") is sys.modules[MODULE]


def test_without_the_package_the_seam_answers_as_graphboard_pure_btree(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pure_btree = _pure_btree(monkeypatch)
    for name in (MODULE.partition(".")[0], MODULE):  # importing them fails, as if not installed
        monkeypatch.setitem(sys.modules, name, None)
    assert accel.compiled("btree") is None
    assert accel.active() == pure_btree
    assert capsys.readouterr().err == ""  # nothing to tell: it is optional


def _pure_btree(monkeypatch: pytest.MonkeyPatch) -> dict[str, bool]:
    """What the seam answers under GRAPHBOARD_PURE=btree."""
    with monkeypatch.context() as patch:
        patch.setenv(accel.PURE_ENV, "btree")
        return accel.active()
