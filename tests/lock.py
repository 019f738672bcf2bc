"""The lock file `constraints.txt`: the exact version of every Python package webeval installs, for `make setup`.

It is a pip constraints file (`pip install -c constraints.txt -e '.[test]'`): pyproject.toml keeps the ranges a
release accepts, the lock the versions this tree is tested with. It pins the closure of pyproject.toml's
dependencies (the `test` extra included) as resolved for this interpreter and platform (CPython 3.11 on Linux):
`make lock` upgrades the virtual environment to the newest versions the ranges allow and writes it again
(`python -m tests.lock write`); tests/test_lock.py checks that it is current.
"""

from __future__ import annotations

import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "constraints.txt"
EXTRAS = ("test",)
HEADER = [
    "# The exact versions `make setup` installs (a pip constraints file), for CPython 3.11 on Linux.",
    "# pyproject.toml holds the ranges; `make lock` re-resolves them and writes this file again.",
]


class LockError(Exception):
    """The lock and the dependencies disagree; the message says which package and what to run."""


def declared(pyproject: Path = ROOT / "pyproject.toml") -> list[Requirement]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    optional = project.get("optional-dependencies", {})
    return [Requirement(text) for text in [*project["dependencies"], *(r for e in EXTRAS for r in optional[e])]]


def _applies(requirement: Requirement, extras: frozenset[str]) -> bool:
    """Whether a requirement holds here: its marker evaluated without an extra, then with each extra asked for."""
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": extra}) for extra in ("", *sorted(extras)))


def closure(roots: list[Requirement]) -> dict[str, str]:
    """Every installed package the roots need here, name -> version; a missing or out-of-range one is a LockError."""
    pinned: dict[str, str] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    pending = [(requirement, "pyproject.toml") for requirement in roots]
    while pending:
        requirement, needed_by = pending.pop()
        name, extras = canonicalize_name(requirement.name), frozenset(requirement.extras)
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise LockError(f"{name} (needed by {needed_by}) is not installed: run `make setup`") from None
        if not requirement.specifier.contains(dist.version, prereleases=True):
            raise LockError(f"{name} {dist.version} is installed, {needed_by} needs {requirement}: run `make lock`")
        pinned[name] = dist.version
        for text in dist.requires or []:
            child = Requirement(text)
            if _applies(child, extras):
                pending.append((child, f"{name} {dist.version}"))
    return dict(sorted(pinned.items()))


def render(pins: dict[str, str]) -> str:
    return "\n".join([*HEADER, *(f"{name}=={version}" for name, version in pins.items())]) + "\n"


def read(path: Path = LOCK) -> dict[str, str]:
    pins = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep or not version.strip():
            raise LockError(f"{path.name}:{number}: expected NAME==VERSION, got {line!r}")
        pins[canonicalize_name(name.strip())] = version.strip()
    return pins


def main(argv: list[str]) -> int:
    if argv != ["write"]:
        print("usage: python -m tests.lock write", file=sys.stderr)
        return 2
    try:
        pins = closure(declared())
    except LockError as exc:
        print(f"lock: {exc}", file=sys.stderr)
        return 1
    LOCK.write_text(render(pins), encoding="utf-8")
    print(f"lock: {len(pins)} packages pinned in {LOCK.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
