"""scripts/apt.sh, which scripts/setup sources: a package counts as installed only when dpkg
says "install ok installed", and apt-get waits, bounded, for a lock another apt holds.

Real dpkg-query and apt-get run on scratch state: dpkg-query on an admin dir of its own
(DPKG_ADMINDIR), apt-get update on a lists folder of its own with no sources, so no test
touches the machine's packages or the network.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Two packages as dpkg records them after an interrupted install and after a complete one.
STATUS = """\
Package: half-done
Status: install ok unpacked
Maintainer: nobody <nobody@example.org>
Architecture: all
Version: 1.0
Description: unpacked, never configured

Package: all-done
Status: install ok installed
Maintainer: nobody <nobody@example.org>
Architecture: all
Version: 1.0
Description: installed and configured

"""


def sourced(
    call: str, env: dict[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``call`` in bash after sourcing scripts/apt.sh, as setup does."""
    return subprocess.run(
        ["bash", "-c", f". scripts/apt.sh && {call}"],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="needs Debian's dpkg-query")
def test_an_unpacked_package_is_not_installed(tmp_path: Path) -> None:
    """setup counted "unpacked" as installed: `dpkg -s` succeeds for it."""
    (tmp_path / "status").write_text(STATUS)
    (tmp_path / "info").mkdir()
    env = {"DPKG_ADMINDIR": str(tmp_path)}
    old_check = subprocess.run(
        ["dpkg", "-s", "half-done"], env={**os.environ, **env}, capture_output=True, check=False
    )
    assert old_check.returncode == 0  # what setup used to ask
    for package, installed in (("half-done", False), ("all-done", True), ("absent", False)):
        assert (sourced(f"deb_installed {package}", env).returncode == 0) is installed, package


@pytest.fixture
def apt_state(tmp_path: Path) -> tuple[list[str], Path]:
    """apt-get options for an update of no sources into scratch folders, and its lists lock."""
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        pytest.skip("needs apt-get, run as root (setup would call sudo)")
    for folder in ("lists/partial", "cache/archives/partial", "sources.list.d"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "sources.list").write_text("")
    options = [
        f"-o Dir::State::Lists={tmp_path / 'lists'}",
        f"-o Dir::Cache={tmp_path / 'cache'}",
        f"-o Dir::Etc::sourcelist={tmp_path / 'sources.list'}",
        f"-o Dir::Etc::sourceparts={tmp_path / 'sources.list.d'}",
    ]
    return options, tmp_path / "lists" / "lock"


def _held(lock: Path) -> int:
    """A descriptor holding ``lock`` as apt holds it (fcntl), as another apt would."""
    descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o640)
    fcntl.lockf(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return descriptor


def test_apt_get_waits_for_a_lock_another_apt_holds(apt_state: tuple[list[str], Path]) -> None:
    """setup died at once: `apt-get update` gives up on a held lists lock even with
    DPkg::Lock::Timeout. It now waits, saying so, and goes on once the lock is free."""
    options, lock = apt_state
    held = _held(lock)
    threading.Timer(3.0, os.close, (held,)).start()  # the other apt finishes after 3 s
    run = sourced(
        f"apt_get {' '.join(options)} -qq update",
        {"GRAPHBOARD_APT_LOCK_SECONDS": "60", "GRAPHBOARD_APT_LOCK_POLL": "1"},
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("setup: another apt holds its lock"), run.stdout


def test_the_wait_is_bounded(apt_state: tuple[list[str], Path]) -> None:
    options, lock = apt_state
    held = _held(lock)
    try:
        run = sourced(
            f"apt_get {' '.join(options)} -qq update",
            {"GRAPHBOARD_APT_LOCK_SECONDS": "2", "GRAPHBOARD_APT_LOCK_POLL": "1"},
        )
    finally:
        os.close(held)
    assert run.returncode == 100, (run.stdout, run.stderr)
    assert "Could not get lock" in run.stderr
    assert run.stderr.endswith("setup: apt's lock was still held after 2s\n")
