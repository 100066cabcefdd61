"""Real runs for the diagnose tests, made once per test session (tests/diagnose/diagnose_cases.py);
a test module imports ``runs`` (the fixture) and ``Runs``."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose import diagnose_cases


class Runs:
    def __init__(self, root: Path) -> None:
        self.root = root

    def single(self, case: str, task: str = "statistics", perturb: bool = False) -> Path:
        out = self.root / f"{case}-{task}-{'perturbed' if perturb else 'plain'}"
        if not (out / "step0").is_dir() and not (out / "step1").is_dir():
            diagnose_cases.make(case, out, "probe", task, perturb)
        return out

    def ranks(self, world: int, parallel: str, bad_rank: int) -> Path:
        out = self.root / f"ranks-{parallel}{world}-bad{bad_rank}"
        if not (out / "step0").is_dir():
            diagnose_cases.make_ranks(out, world, parallel, bad_rank)
        return out


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return Runs(tmp_path_factory.getbasetemp() / "diagnose-runs")
