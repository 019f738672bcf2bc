"""Prompt texts that a judge protocol reproduces word for word, read at run time from pinned upstream files.

The project carries only the pin (repository, commit, path, sha256); `webeval prepare judge-prompts` downloads the
file, and the judge reads its string constants without running it. A file whose sha256 is not the pin's is refused.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path

from webeval.cache_dir import cache_dir
from webeval.outcomes.record import JudgeError
from webeval.repository_files import RepositoryFile

PROMPTS_ENV = "WEBEVAL_JUDGE_PROMPTS"


@dataclass(frozen=True)
class PromptPin(RepositoryFile):
    @property
    def version(self) -> str:
        """What a verdict records as its prompt version: the file's pin, short."""
        return f"{self.repo}@{self.commit[:12]}:{self.path}#{self.sha256[:12]}"

    def describe(self) -> str:
        return f"{self.repo} @ {self.commit}, {self.path}"


def prompts_folder(folder: str | Path | None = None) -> Path:
    if folder:
        return Path(folder)
    return cache_dir("judge-prompts", env=PROMPTS_ENV)


def locate(pin: PromptPin, folder: Path) -> Path:
    """The pinned file in a folder: by its name, or by its upstream path (a checkout, a data copy)."""
    for candidate in (folder / pin.name, folder / pin.path, folder / pin.path.split("/", 1)[-1]):
        if candidate.is_file():
            return candidate
    raise JudgeError(f"{folder}: no {pin.name} ({pin.describe()}); run `webeval prepare judge-prompts` or pass "
                     f"--judge-prompts DIR (or set ${PROMPTS_ENV})", kind="config")


def read_constants(pin: PromptPin, folder: Path, names: tuple[str, ...]) -> dict[str, str]:
    """The named module-level string constants of the pinned file, after its sha256 is checked."""
    path = locate(pin, folder)
    data = path.read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if actual != pin.sha256:
        raise JudgeError(f"{path}: sha256 {actual[:12]}... is not the pin {pin.sha256[:12]}... of "
                         f"{pin.describe()}; prepare it again", kind="config")
    found: dict[str, str] = {}
    for node in ast.parse(data).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in names:
                    found[target.id] = node.value.value
    missing = [name for name in names if name not in found]
    if missing:
        raise JudgeError(f"{path}: no string constant {', '.join(missing)}", kind="config")
    return found
