"""``CC=false CXX=false pip install .`` works: every compiled part is skipped, the wheel holds
only Python, and the installed ``graph_build`` builds what the compiled path builds. The
compiled tb_nodes writer, a package of its own (packages/graphboard-btree), cannot be built
there at all: graphboard then writes tb_nodes through SQLite (tests/test_pure_path.py).

The wheel is built from a copy of the build inputs (the checkout's build/ may hold extensions
built earlier, which setuptools would reuse), without the network and without build isolation
(setuptools comes from this venv). It goes into a throwaway venv made without pip, whose
dependencies come from this venv's site-packages by a .pth line: .pth files inside that folder
are not run there, so this venv's editable graphboard stays out.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import pytest

from build_runs import build_side_by_side, environment
from fixture_cases import fixture_path
from graphboard.accel import MODULES
from test_cli import COMMAND
from vis_db_support import assert_same_vis_db

REPO = Path(__file__).resolve().parents[1]
BUILD_INPUTS = ("pyproject.toml", "setup.py", "README.md", "backend")
COMPILED_SUFFIXES = (".so", ".pyd", ".dylib")
# pip touches neither the network nor a cache outside the test's folders
PIP_ENV = {"PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1"}
# the venv's processes see no PYTHONPATH, which could name the checkout's graphboard
INSTALLED_ENV = environment(pure=False, dropped=("PYTHONPATH",))
# the compiled parts graphboard's own setup.py builds; the others are packages of their own
OWN_PARTS = [name for name, module in MODULES.items() if module.startswith("graphboard.")]


def _run(command: list[str | Path], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        env={**INSTALLED_ENV, **PIP_ENV, **env},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _site_packages(venv: Path) -> Path:
    run = _run(
        [venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]
    )
    assert run.returncode == 0, run.stderr
    return Path(run.stdout.strip())


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("without-compiler")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def wheel_build(workdir: Path) -> tuple[Path, str]:
    """(the wheel, pip's log) of a copy of the checkout built with CC=false CXX=false."""
    source = workdir / "source"
    source.mkdir()
    for name in BUILD_INPUTS:
        if (REPO / name).is_dir():
            ignored = shutil.ignore_patterns(
                "__pycache__", "*.egg-info", "*.so", "*.pyd", "*.dylib"
            )
            shutil.copytree(REPO / name, source / name, ignore=ignored)
        else:
            shutil.copy2(REPO / name, source / name)
    wheels = workdir / "wheels"
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation"]
    run = _run([*pip_wheel, "-w", wheels, source], CC="false", CXX="false")
    assert run.returncode == 0, f"pip wheel failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    (wheel,) = wheels.glob("graphboard-*.whl")
    return wheel, run.stdout + run.stderr


@pytest.fixture(scope="module")
def venv(workdir: Path, wheel_build: tuple[Path, str]) -> Path:
    """A venv without pip holding only the wheel; its dependencies through a .pth line."""
    venv = workdir / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (_site_packages(venv) / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    # pip itself comes from the dependencies; --ignore-installed: this venv's editable
    # graphboard, which pip sees there, is neither uninstalled nor taken as the install
    pip_install: list[str | Path] = [
        venv / "bin" / "python",
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--ignore-installed",
    ]
    run = _run([*pip_install, wheel_build[0]])
    assert run.returncode == 0, f"pip install failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return venv


def test_the_wheel_builds_without_a_compiler_and_holds_no_compiled_module(
    wheel_build: tuple[Path, str],
) -> None:
    wheel, log = wheel_build
    for name in OWN_PARTS:  # each one tried and skipped, not taken from an earlier build
        assert f'building extension "{MODULES[name]}" failed' in log, name
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert "graphboard/accel/__init__.py" in names
    assert [name for name in names if name.endswith(COMPILED_SUFFIXES)] == []


def test_the_venv_imports_the_wheels_graphboard_with_no_compiled_part(venv: Path) -> None:
    run = _run(
        [
            venv / "bin" / "python",
            "-c",
            "import graphboard, graphboard.accel as accel; "
            "print(graphboard.__file__); print(sorted(accel.active().items()))",
        ]
    )
    assert run.returncode == 0, run.stderr
    where, parts = run.stdout.splitlines()
    assert Path(where) == _site_packages(venv) / "graphboard" / "__init__.py"
    # graphboard_btree, where this venv's dependencies have it, is not the wheel's: a machine
    # without a compiler has none (below)
    own = {name: False for name in OWN_PARTS}
    assert parts == str(sorted({**own, "btree": find_spec("graphboard_btree") is not None}.items()))


def test_the_btree_package_does_not_install_without_a_compiler(workdir: Path) -> None:
    source = workdir / "btree-source"
    ignored = shutil.ignore_patterns("build", "tests", "*.egg-info", "__pycache__", "*.so")
    shutil.copytree(REPO / "packages" / "graphboard-btree", source, ignore=ignored)
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation"]
    run = _run([*pip_wheel, "-w", workdir / "btree-wheels", source], CC="false", CXX="false")
    assert run.returncode != 0  # not optional: no wheel without its module
    assert "building 'graphboard_btree._btree' extension" in run.stdout + run.stderr
    assert not list((workdir / "btree-wheels").glob("*.whl"))


def test_the_installed_graph_build_makes_the_compiled_paths_file(
    venv: Path, tmp_path: Path
) -> None:
    case = fixture_path("convnet-stats")
    args = ["-tp", str(case / "target"), "-gp", str(case / "golden"), "-oc"]
    paths = build_side_by_side(
        {
            "installed": ([str(venv / "bin" / "graph_build")], INSTALLED_ENV),
            "compiled": (COMMAND, environment(pure=False)),
        },
        args,
        tmp_path,
    )
    assert_same_vis_db(paths["installed"], paths["compiled"], ("installed", "compiled"))
