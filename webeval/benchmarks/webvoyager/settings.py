"""The WebVoyager suite's settings, from its options (and, when re-judging, from the run it re-judges)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from webeval.agent.live import ALL_SITES, LiveSites
from webeval.judges.config import JudgeConfig, JudgeConfigError, parse_kinds, with_members, with_profile
from webeval.judges import protocols
from webeval.judges.protocols.pinned import prompts_folder
from webeval.outcomes.record import JudgeError
from webeval.outcomes.rundir import POPULATION
from webeval.runtime.sites import SiteProxy
from webeval.tasks import Population, Task, TaskFileError
from webeval.benchmarks.webvoyager.tasks import POPULATIONS, load_file, load_population

DATA_DIR_ENV = "WEBEVAL_DATA_DIR"
CACHE_ENV = "WEBEVAL_CACHE"
RUN_CONFIG = "webvoyager.json"  # in the run directory: what `--rejudge` and `webeval reverify` need to judge again
DEFAULT_POPULATION = "original"


def cache_root() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "webeval" / "webvoyager"


def pairs(values: list[str] | None, option: str) -> dict[str, str]:
    """NAME=VALUE options; the name may hold spaces ("Google Flights=http://...")."""
    found: dict[str, str] = {}
    for value in values or []:
        name, sep, rest = value.partition("=")
        if not sep or not name.strip() or not rest.strip():
            raise pytest.UsageError(f"{option} {value!r}: expected NAME=VALUE")
        found[name.strip()] = rest.strip()
    return found


def parse_today(text: str | None) -> date:
    if not text:
        return date.today()
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise pytest.UsageError(f"--today {text!r}: expected a date YYYY-MM-DD") from None


@dataclass
class Source:
    """Where the tasks come from: a pinned population (in a data folder) or a task file of one's own."""

    population: str | None = None
    tasks_file: str | None = None
    data_dir: str | None = None

    def load(self, today: date) -> tuple[Population, list[Task]]:
        try:
            if self.tasks_file:
                return load_file(Path(self.tasks_file), today)
            return load_population(self.population or DEFAULT_POPULATION, Path(self.folder()), today)
        except TaskFileError as exc:
            raise pytest.UsageError(str(exc)) from None

    def folder(self) -> str:
        name = self.population or DEFAULT_POPULATION
        if name not in POPULATIONS:
            raise pytest.UsageError(f"--population {name!r} is unknown: use one of {', '.join(POPULATIONS)}")
        if self.data_dir:
            return self.data_dir
        prepared = cache_root() / name
        if not prepared.is_dir():
            raise pytest.UsageError(f"population {name!r} is not prepared: run `webeval prepare webvoyager "
                                    f"--population {name}`, or pass --data-dir (or set ${DATA_DIR_ENV})")
        return str(prepared)


@dataclass
class Setup:
    source: Source
    today: date
    population: Population
    tasks: list[Task]
    judge: JudgeConfig
    environment: LiveSites
    site_timeout_s: float
    block_budget: int
    rejudge: Path | None = None
    failed_only: bool = False
    stored: dict[str, Any] = field(default_factory=dict)

    def run_config(self) -> dict[str, Any]:
        """What a later re-judge needs; no secret is in it (keys and proxy credentials stay in the environment)."""
        absolute = lambda path: str(Path(path).resolve()) if path else None  # noqa: E731 (re-judged from anywhere)
        return {
            "population": self.source.population, "tasks_file": absolute(self.source.tasks_file),
            "data_dir": absolute(self.source.data_dir), "today": self.today.isoformat(), "judge": self.judge.public(),
            "site_map": self.environment.site_map,
            "date_rendered": [t.id for t in self.tasks if "date-rendered" in t.tags],
        }


def stored_config(run_dir: Path) -> dict[str, Any]:
    if not (run_dir / POPULATION).is_file():
        raise pytest.UsageError(f"--rejudge {run_dir}: not a run directory (no {POPULATION})")
    try:
        stored = json.loads((run_dir / RUN_CONFIG).read_text(encoding="utf-8"))
    except OSError:
        return {}
    except ValueError:
        raise pytest.UsageError(f"{run_dir / RUN_CONFIG}: not valid JSON") from None
    if stored.get("tasks_file") and not Path(stored["tasks_file"]).is_absolute():
        # a task file kept inside the run (an imported run's) travels with it
        stored["tasks_file"] = str(run_dir / stored["tasks_file"])
    return stored


def judge_config(option: Any, stored: dict[str, Any], root: Path) -> JudgeConfig:
    """The judge from the options; when re-judging, the run's own judge fills in whatever the options leave out."""
    before = stored.get("judge") or {}
    temperature = option.judge_temperature
    try:
        config = JudgeConfig(
            kinds=parse_kinds(option.judge or "+".join(before.get("kinds") or ["model"])),
            base_url=option.judge_base_url or (None if option.judge_profile else before.get("base_url")),
            model=option.judge_model or (None if option.judge_profile else before.get("model")),
            api_key_env=option.judge_api_key_env or (None if option.judge_profile else before.get("api_key_env")),
            profile=option.judge_profile or (None if option.judge_base_url else before.get("profile")),
            timeout_s=option.judge_timeout, retries=option.judge_retries,
            temperature=None if temperature == "none" else float(temperature),
            screenshots=option.judge_screenshots,
            protocol=getattr(option, "judge_protocol", None) or before.get("protocol") or "webeval",
            prompts=getattr(option, "judge_prompts", None) or before.get("prompts"),
            cache=not getattr(option, "no_judge_cache", False),
        )
        config = with_profile(config, root)
        if getattr(option, "judge_ensemble", None):
            config = with_members(config, option.judge_ensemble, root)
        if config.uses_model and config.configured:
            for one in config.members or (config,):  # a key variable not set stops the session here
                protocols.build(one.protocol, one.endpoint(), one.screenshots, prompts_folder(one.prompts))
        return config
    except (JudgeConfigError, JudgeError) as exc:
        raise pytest.UsageError(str(exc)) from None
    except ValueError:
        raise pytest.UsageError(f"--judge-temperature {temperature!r}: expected a number or 'none'") from None


def proxies(option: Any) -> dict[str, SiteProxy]:
    urls = pairs(option.site_proxy, "--site-proxy")
    auth = pairs(option.site_proxy_auth, "--site-proxy-auth")
    for name in auth.keys() - urls.keys():
        raise pytest.UsageError(f"--site-proxy-auth {name}=...: no --site-proxy for {name!r}")
    try:
        return {name: SiteProxy.parse(url, auth.get(name)) for name, url in urls.items()}
    except ValueError as exc:
        raise pytest.UsageError(f"--site-proxy: {exc}") from None


def _check_sites(names: set[str], tasks: list[Task], option: str) -> None:
    known = {t.site for t in tasks}
    for name in sorted(names - known - {ALL_SITES}):
        raise pytest.UsageError(f"{option} {name!r}: no task is on that site (sites: {', '.join(sorted(known))})")


def build(config: pytest.Config) -> Setup:
    option = config.option
    rejudge = Path(option.rejudge) if option.rejudge else None
    stored = stored_config(rejudge) if rejudge else {}
    source = Source(
        population=option.population or (None if option.tasks_file else stored.get("population")),
        tasks_file=option.tasks_file or (None if option.population else stored.get("tasks_file")),
        data_dir=option.data_dir or os.environ.get(DATA_DIR_ENV) or stored.get("data_dir"),
    )
    if option.population and option.tasks_file:
        raise pytest.UsageError("--population and --tasks-file are alternatives: pass one")
    worker_input = getattr(config, "workerinput", {})
    today = parse_today(worker_input.get("webvoyager_today") or option.today or stored.get("today"))
    population, tasks = source.load(today)
    site_map = pairs(option.site_map, "--site-map")
    site_proxies = proxies(option)
    _check_sites(set(site_map), tasks, "--site-map")
    _check_sites(set(site_proxies), tasks, "--site-proxy")
    origins = {t.site: t.start_url for t in reversed(tasks)}
    for name in ("site_timeout", "judge_timeout"):
        if getattr(option, name) <= 0:
            raise pytest.UsageError(f"--{name.replace('_', '-')} must be positive")
    if option.block_budget < 1:
        raise pytest.UsageError("--block-budget must be at least 1")
    for name in ("judge_retries", "judge_screenshots"):
        if (getattr(option, name) or 0) < 0:
            raise pytest.UsageError(f"--{name.replace('_', '-')} must not be negative")
    return Setup(
        source=source, today=today, population=population, tasks=tasks,
        judge=judge_config(option, stored, Path(config.rootpath)),
        environment=LiveSites(site_map, site_proxies, origins, option.block_budget), site_timeout_s=option.site_timeout,
        block_budget=option.block_budget, rejudge=rejudge, failed_only=option.judge_failed_only,
        stored=stored,
    )
