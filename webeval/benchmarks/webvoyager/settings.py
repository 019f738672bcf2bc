"""The WebVoyager benchmark's options, declared once, and the setup they make (when re-judging, with the run it
re-judges filling in what the options leave out). A bad value is an OptionError of one line; nothing here imports
pytest."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any, Mapping

from webeval.agent.live import ALL_SITES, LiveSites
from webeval.benchmarks import BenchmarkSetup
from webeval.benchmarks.webvoyager.preset import PRESETS, Preset, preset_named, preset_values
from webeval.benchmarks.webvoyager.tasks import POPULATIONS, load_file, load_population
from webeval.cache_dir import cache_dir
from webeval.flags import Flag, OptionError
from webeval.judges.config import JudgeConfig, JudgeConfigError
from webeval.judges.judge_options import JUDGE_FLAGS, judge_config
from webeval.outcomes.rundir import POPULATION
from webeval.runtime.sites import SiteProxy
from webeval.tasks import Population, Task, TaskFileError

DATA_DIR_ENV = "WEBEVAL_DATA_DIR"
CACHE_ENV = "WEBEVAL_CACHE"
RUN_CONFIG = "webvoyager.json"  # in the run directory: what `--rejudge` and `webeval reverify` need to judge again
DEFAULT_POPULATION = "original"


WEBVOYAGER_FLAGS = (
    Flag("--preset", choices=tuple(PRESETS),
         help="run on another system's terms: nemo (NeMo Gym's WebVoyager run: population nemo-552, --screen "
              "1920x1080, the tool names computer, navigate, tab, terminate, --judge-unparseable fail); an option "
              "given with another value is an error"),
    Flag("--population", help=f"pinned task population: {', '.join(POPULATIONS)} (default original)"),
    Flag("--tasks-file", metavar="PATH", help="a task file in WebVoyager's format instead"),
    Flag("--data-dir", metavar="DIR",
         help=f"a local copy of the population's files (default ${DATA_DIR_ENV}, else the prepared cache)"),
    Flag("--today", metavar="YYYY-MM-DD", help="the date that date templates are rendered against"),
    Flag("--site-map", action="append", default=(), metavar="NAME=URL", help="start a site's tasks at URL instead"),
    Flag("--site-proxy", action="append", default=(), metavar="NAME=URL",
         help="reach a site (or * for all) via a proxy"),
    Flag("--site-proxy-auth", action="append", default=(), metavar="NAME=ENV",
         help="the environment variable that holds 'user:password' for a site's proxy"),
    Flag("--site-timeout", type=float, default=10.0, metavar="S",
         help="seconds a site's start URL may take to answer (default 10)"),
    Flag("--block-budget", type=int, default=3, metavar="N",
         help="observations in a row of a CAPTCHA / anti-bot page before a task is infra[site_blocked] (default 3)"),
)
FLAGS = (*WEBVOYAGER_FLAGS, *JUDGE_FLAGS)


def cache_root() -> Path:
    """Where `webeval prepare webvoyager` puts the populations: $WEBEVAL_CACHE, else webeval's cache folder."""
    return cache_dir("webvoyager", env=CACHE_ENV)


def pairs(values: list[str] | None, option: str) -> dict[str, str]:
    """NAME=VALUE options; the name may hold spaces ("Google Flights=http://...")."""
    found: dict[str, str] = {}
    for value in values or []:
        name, sep, rest = value.partition("=")
        if not sep or not name.strip() or not rest.strip():
            raise OptionError(f"{option} {value!r}: expected NAME=VALUE")
        found[name.strip()] = rest.strip()
    return found


def parse_today(text: str | None) -> date:
    if not text:
        return date.today()
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise OptionError(f"--today {text!r}: expected a date YYYY-MM-DD") from None


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
            raise OptionError(str(exc)) from None

    def folder(self) -> str:
        name = self.population or DEFAULT_POPULATION
        if name not in POPULATIONS:
            raise OptionError(f"--population {name!r} is unknown: use one of {', '.join(POPULATIONS)}")
        if self.data_dir:
            return self.data_dir
        prepared = cache_root() / name
        tasks = POPULATIONS[name].file("tasks")
        if not (prepared / tasks.name).is_file():
            raise OptionError(f"population {name!r} is not prepared: `webeval prepare webvoyager --population {name}` "
                              f"downloads it ({tasks.describe()}, sha256 {tasks.sha256[:12]}, from {tasks.url}); or "
                              f"pass --data-dir DIR (or set ${DATA_DIR_ENV}) with a copy")
        return str(prepared)


@dataclass(frozen=True)
class Setup(BenchmarkSetup):
    source: Source = field(default_factory=Source)
    today: date = field(default_factory=date.today)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    environment: LiveSites = field(default_factory=LiveSites)
    site_timeout_s: float = 10.0
    block_budget: int = 3
    rejudge: Path | None = None
    failed_only: bool = False
    stored: Mapping[str, Any] = field(default_factory=dict)
    preset: Preset | None = None

    def run_config(self) -> dict[str, Any]:
        """What a later re-judge needs; no secret is in it (keys and proxy credentials stay in the environment)."""
        absolute = lambda path: str(Path(path).resolve()) if path else None  # noqa: E731 (re-judged from anywhere)
        return {
            "population": self.source.population, "tasks_file": absolute(self.source.tasks_file),
            "data_dir": absolute(self.source.data_dir), "today": self.today.isoformat(), "judge": self.judge.public(),
            "site_map": self.environment.site_map,
            "date_rendered": [t.id for t in self.tasks if "date-rendered" in t.tags],
            "preset": self.preset.name if self.preset is not None else None,
        }

    def run_conditions(self) -> dict[str, str]:
        """The benchmark's part of a run's conditions: its judge and a preset."""
        judge = self.judge
        models = ", ".join(m.model or "-" for m in judge.members) if judge.members else (judge.model or "-")
        found = {"judge": f"{'+'.join(judge.kinds)}, protocol {judge.protocol}" + (
            f", model {models}" if judge.uses_model else "")}
        if self.preset is not None:
            found["preset"] = self.preset.terms()
        return found

    def header_lines(self) -> tuple[str, ...]:
        population = self.population
        lines = [f"webvoyager: {population.name}, {population.size} tasks (sha256 {population.sha256[:12]}), dates "
                 f"as of {self.today}", self.judge.describe()]
        if self.preset is not None:
            lines.insert(0, f"preset {self.preset.terms()}")
        lines += [f"site map: {name} -> {url}" for name, url in self.environment.site_map.items()]
        lines += [f"proxy: {name} via {proxy.describe()}" for name, proxy in self.environment.proxies.items()]
        if self.rejudge:
            lines.append(f"re-judging {self.rejudge}" + (" (judge_failed tasks only)" if self.failed_only else ""))
        return tuple(lines)


def stored_config(run_dir: Path) -> dict[str, Any]:
    if not (run_dir / POPULATION).is_file():
        raise OptionError(f"--rejudge {run_dir}: not a run directory (no {POPULATION})")
    try:
        stored = json.loads((run_dir / RUN_CONFIG).read_text(encoding="utf-8"))
    except OSError:
        return {}
    except ValueError:
        raise OptionError(f"{run_dir / RUN_CONFIG}: not valid JSON") from None
    if stored.get("tasks_file") and not Path(stored["tasks_file"]).is_absolute():
        # a task file kept inside the run (an imported run's) travels with it
        stored["tasks_file"] = str(run_dir / stored["tasks_file"])
    return stored


def proxies(values: Mapping[str, Any]) -> dict[str, SiteProxy]:
    urls = pairs(values["site_proxy"], "--site-proxy")
    auth = pairs(values["site_proxy_auth"], "--site-proxy-auth")
    for name in auth.keys() - urls.keys():
        raise OptionError(f"--site-proxy-auth {name}=...: no --site-proxy for {name!r}")
    try:
        return {name: SiteProxy.parse(url, auth.get(name)) for name, url in urls.items()}
    except ValueError as exc:
        raise OptionError(f"--site-proxy: {exc}") from None


def _check_sites(names: set[str], tasks: list[Task], option: str) -> None:
    known = {t.site for t in tasks}
    for name in sorted(names - known - {ALL_SITES}):
        raise OptionError(f"{option} {name!r}: no task is on that site (sites: {', '.join(sorted(known))})")


def _check_numbers(values: Mapping[str, Any]) -> None:
    if values["site_timeout"] <= 0:
        raise OptionError("--site-timeout must be positive")
    if values["block_budget"] < 1:
        raise OptionError("--block-budget must be at least 1")


def _source(values: Mapping[str, Any], stored: Mapping[str, Any]) -> Source:
    if values["population"] and values["tasks_file"]:
        raise OptionError("--population and --tasks-file are alternatives: pass one")
    population = preset_values(values["preset"], values).get("population") or values["population"]
    return Source(
        population=population or (None if values["tasks_file"] else stored.get("population")),
        tasks_file=values["tasks_file"] or (None if values["population"] else stored.get("tasks_file")),
        data_dir=values["data_dir"] or os.environ.get(DATA_DIR_ENV) or stored.get("data_dir"),
    )


def build(values: Mapping[str, Any], root: Path | None = None) -> Setup:
    """The setup of the options' values (keys of FLAGS, and `rejudge`: the run directory being re-judged, whose
    webvoyager.json fills in what the options leave out). A bad value is an OptionError of one line."""
    rejudge = Path(values["rejudge"]) if values.get("rejudge") else None
    stored = stored_config(rejudge) if rejudge else {}
    source = _source(values, stored)
    today = parse_today(values["today"] or stored.get("today") or resumed_today(values.get("resume")))
    population, tasks = source.load(today)
    site_map = pairs(values["site_map"], "--site-map")
    site_proxies = proxies(values)
    _check_sites(set(site_map), tasks, "--site-map")
    _check_sites(set(site_proxies), tasks, "--site-proxy")
    _check_numbers(values)
    try:
        judge = judge_config(values, stored.get("judge") or {}, root)
    except JudgeConfigError as exc:
        raise OptionError(str(exc)) from None
    origins = {t.site: t.start_url for t in reversed(tasks)}
    setup = Setup(
        name="webvoyager", population=population, tasks=tuple(tasks), source=source, today=today, judge=judge,
        environment=LiveSites(site_map, site_proxies, origins, values["block_budget"]),
        site_timeout_s=values["site_timeout"], block_budget=values["block_budget"], rejudge=rejudge,
        failed_only=bool(values.get("judge_failed_only")), stored=stored,
        preset=preset_named(values["preset"] or stored.get("preset")),
    )
    return replace(setup, documents={RUN_CONFIG: setup.run_config()}, header=setup.header_lines(),
                   conditions=setup.run_conditions())


def resumed_today(resume: str | None) -> str | None:
    """The date a resumed run's first session rendered its date templates against: a resume on another day renders
    them as that session did (its webvoyager.json says the date)."""
    if not resume or not (Path(resume) / RUN_CONFIG).is_file():
        return None
    try:
        return json.loads((Path(resume) / RUN_CONFIG).read_text(encoding="utf-8")).get("today")
    except (OSError, ValueError):
        raise OptionError(f"--resume {resume}: its {RUN_CONFIG} cannot be read") from None
