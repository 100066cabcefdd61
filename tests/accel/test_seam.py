"""The seam to the compiled parts: GRAPHBOARD_PURE turns all of them, or the parts it names,
off; a part that is not built is None, never an import error."""

from __future__ import annotations

import pytest

from graphboard import accel


def _built() -> dict[str, bool]:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(accel.PURE_ENV, raising=False)
        return accel.active()


@pytest.mark.parametrize("value", ["1", " 1 "])
def test_pure_turns_every_part_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(accel.PURE_ENV, value)
    assert accel.active() == dict.fromkeys(accel.PARTS, False)


@pytest.mark.parametrize("value", ["", "0"])
def test_unset_or_zero_uses_what_is_built(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(accel.PURE_ENV, value)
    assert accel.active() == _built()


def test_named_parts_only_are_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    built = _built()
    first, *others = [name for name, present in built.items() if present] or [None]
    if first is None:
        pytest.skip("no compiled part is built in this install")
    monkeypatch.setenv(accel.PURE_ENV, f"{first}, nothing-of-that-name")
    assert accel.active() == {**built, first: False}
    assert all(accel.compiled(name) is not None for name in others)


def test_a_part_that_is_not_built_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(accel.PURE_ENV, raising=False)
    assert accel.compiled("no_such_part") is None
