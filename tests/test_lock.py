"""The lock (constraints.txt) is current: it pins exactly what pyproject.toml's dependencies need, at versions their
ranges accept, and they are the versions installed here; `make setup` installs from it."""

from __future__ import annotations

import subprocess

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests import lock
from tests.conftest import ROOT


def test_the_lock_pins_exactly_what_pyproject_needs_as_installed():
    pinned = lock.read()
    needed = lock.closure(lock.declared())
    stale = {name: (pinned.get(name), version) for name, version in needed.items() if pinned.get(name) != version}
    extra = sorted(set(pinned) - set(needed))
    assert not stale and not extra, (
        f"constraints.txt is not current: (locked, installed) {stale}, locked but not needed {extra}: run `make lock`")
    for requirement in lock.declared():
        assert requirement.specifier.contains(pinned[canonicalize_name(requirement.name)], prereleases=True)
    assert {"playwright", "pytest", "pytest-xdist", "openai", "allure-pytest", "pyyaml", "greenlet"} <= set(pinned)


def test_a_version_outside_a_range_or_a_missing_package_is_named(tmp_path):
    out_of_range = r"^pytest \S+ is installed, pyproject.toml needs pytest<2: run `make lock`$"
    with pytest.raises(lock.LockError, match=out_of_range):
        lock.closure([Requirement("pytest<2")])
    with pytest.raises(lock.LockError, match=r"^no-such-package-webeval \(needed by pyproject.toml\) is not installed"):
        lock.closure([Requirement("no-such-package-webeval")])
    broken = tmp_path / "constraints.txt"
    broken.write_text("# header\npytest==9.2.0\nopenai>=1\n")
    with pytest.raises(lock.LockError, match=r"^constraints.txt:3: expected NAME==VERSION, got 'openai>=1'$"):
        lock.read(broken)


def test_make_setup_installs_from_the_lock_and_reinstalls_when_it_changes():
    # make's dry run of the install step, forced: the commands it would run, run nowhere.
    done = subprocess.run(["make", "-n", "-B", ".venv/.installed"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "pip install -q -c constraints.txt -e '.[test]'" in done.stdout
    database = subprocess.run(["make", "-p", "-n", "-q", ".venv/.installed"], cwd=ROOT, capture_output=True,
                              text=True, timeout=60).stdout
    assert ".venv/.installed: pyproject.toml constraints.txt" in database
