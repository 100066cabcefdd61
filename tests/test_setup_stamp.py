"""scripts/setup installs only when .venv is new or the build inputs changed (its stamp).

The real script runs in a copy of the build inputs with a real venv that has no pip: a run
that reaches pip fails with "No module named pip", so a skipped install is one that passes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from importlib.util import find_spec
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUNTIME_STAMP = ".venv/.graphboard-install"
DEV_STAMP = ".venv/.graphboard-install-dev"
BTREE = "packages/graphboard-btree"
BTREE_SOURCE = f"{BTREE}/src/graphboard_btree/_btree.c"


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("venv") / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return venv


@pytest.fixture
def checkout(tmp_path: Path, bare_venv: Path) -> Path:
    """What setup reads: its scripts, the build files, the C sources, one .py, the built
    extensions and the package built apart; .venv a copy of the pip-less venv, holding that
    package's compiled module as an install would."""
    for name in (
        "scripts/setup",
        "scripts/install_stamp.sh",
        "scripts/apt.sh",
        "pyproject.toml",
        "setup.py",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, tmp_path / name)
    backend = REPO / "backend"
    for pattern in ("*.c", "*.cpp", "*.h", "_*.so", "__init__.py"):
        for source in backend.rglob(pattern):
            copy = tmp_path / source.relative_to(REPO)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy)
    ignored = shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "*.so")
    shutil.copytree(REPO / BTREE, tmp_path / BTREE, ignore=ignored)
    shutil.copytree(bare_venv, tmp_path / ".venv", symlinks=True)
    installed = find_spec("graphboard_btree._btree")
    if installed is None or installed.origin is None:
        pytest.skip("graphboard-btree is not installed here (no C compiler): setup never skips")
    site_packages = Path(sysconfig.get_path("purelib", vars={"base": str(tmp_path / ".venv")}))
    (site_packages / "graphboard_btree").mkdir(parents=True)
    shutil.copy2(installed.origin, site_packages / "graphboard_btree")
    return tmp_path


def setup(checkout: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "scripts/setup"], cwd=checkout, capture_output=True, text=True, check=False
    )


def record_install(checkout: Path, stamp: str) -> None:
    """What a successful install writes, by the script's own functions."""
    subprocess.run(
        [
            "bash",
            "-c",
            f'. scripts/install_stamp.sh && write_install_stamp {stamp} "$(install_inputs_hash)"',
        ],
        cwd=checkout,
        check=True,
    )


def assert_installs(checkout: Path) -> None:
    completed = setup(checkout)
    assert completed.returncode != 0 and "No module named pip" in completed.stderr, completed


def assert_skips(checkout: Path) -> None:
    completed = setup(checkout)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "setup: .venv is up to date"


def test_installs_when_nothing_was_recorded(checkout: Path) -> None:
    assert_installs(checkout)


def test_a_recorded_install_is_skipped_while_only_python_files_change(checkout: Path) -> None:
    record_install(checkout, RUNTIME_STAMP)
    assert_skips(checkout)
    init = checkout / "backend/graphboard/__init__.py"
    init.write_text(init.read_text() + "\n# edited\n")
    assert_skips(checkout)  # editable: .py files are served from backend/ as they are
    fuzz = checkout / BTREE / "tests/test_edited.py"  # the package's tests are not installed
    fuzz.parent.mkdir(exist_ok=True)
    fuzz.write_text("# edited\n")
    assert_skips(checkout)


def test_the_dev_install_holds_the_runtime_one(checkout: Path) -> None:
    record_install(checkout, DEV_STAMP)
    assert_skips(checkout)


def _edit(path: str) -> Callable[[Path], None]:
    def edit(checkout: Path) -> None:
        with (checkout / path).open("a") as handle:
            handle.write("\n")

    return edit


def _remove_a_built_extension(checkout: Path) -> None:
    next((checkout / "backend").rglob("_render.*.so")).unlink()


def _uninstall_the_btree_package(checkout: Path) -> None:
    next((checkout / ".venv").rglob("graphboard_btree/_btree.*.so")).unlink()


@pytest.mark.parametrize(
    "change",
    [
        _edit("pyproject.toml"),
        _edit("setup.py"),
        _edit("backend/graphboard/accel/_render.c"),
        _edit("backend/graphboard/accel/_floats.cpp"),
        _edit("scripts/setup"),
        _remove_a_built_extension,
        _edit(BTREE_SOURCE),
        _edit(f"{BTREE}/pyproject.toml"),
        _edit(f"{BTREE}/setup.py"),
        _edit(f"{BTREE}/src/graphboard_btree/__init__.py"),
        _uninstall_the_btree_package,
    ],
    ids=[
        "pyproject",
        "setup.py",
        "C source",
        "C++ source",
        "setup script",
        "extension gone",
        "btree C source",
        "btree pyproject",
        "btree setup.py",
        "btree .py",
        "btree package gone",
    ],
)
def test_a_changed_build_input_reinstalls(checkout: Path, change: Callable[[Path], None]) -> None:
    record_install(checkout, RUNTIME_STAMP)
    change(checkout)
    assert_installs(checkout)
    assert not (checkout / RUNTIME_STAMP).exists()  # a failed install leaves no stamp behind
