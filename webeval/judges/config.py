"""Choosing and building a WebVoyager judge: `model`, `reference`, or both; endpoints, profiles and keys.

Keys come only from the environment (a profile or option names the variable, never the key), and nothing here
puts a key into text: `public()` is what may be shown or stored.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from webeval.judges.reference import reference_verdict
from webeval.judges import cache, protocols
from webeval.judges.ensemble import vote
from webeval.judges.protocols.pinned import prompts_folder
from webeval.models import Endpoint, PreflightError, preflight, read_key
from webeval.outcomes.cost import Prices
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import JudgeError
from webeval.outcomes.verdict import Verdict
from webeval.profiles import ProfileError, catalogue_path, find, is_path, read_catalogue, validate
from webeval.tasks import Task

KINDS = ("model", "reference")
PROFILES_ENV = "WEBEVAL_JUDGE_PROFILES"
PROFILE_FILE = "judge-profiles.toml"
DEADLINE_MARGIN_S = 5.0
BUILTIN_PROFILES: dict[str, dict[str, Any]] = {
    "openai-gpt-4o": {"base_url": "https://api.openai.com/v1", "model": "gpt-4o", "api_key_env": "OPENAI_API_KEY"},
}


class JudgeProfile(BaseModel):
    """The fields a judge profile may set (by name in judge-profiles.toml, or as a file of its own)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str | None = None
    model: str | None = Field(default=None, min_length=1)
    api_key_env: str | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    timeout: float | None = Field(default=None, gt=0)
    retries: int | None = Field(default=None, ge=0, le=20)
    prices: Prices | None = None  # US dollars per million input, cached input and output tokens

    @field_validator("base_url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"base_url {value!r} is not an http(s) URL")
        return value


class JudgeConfigError(ValueError):
    """A judge misconfiguration: one line for the user, before any task runs."""


@dataclass(frozen=True)
class JudgeConfig:
    kinds: tuple[str, ...] = ("model",)
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    profile: str | None = None
    timeout_s: float = 120.0
    retries: int = 2
    temperature: float | None = 0.0
    screenshots: int | None = None  # the last K; None means all (bounded), or the protocol's own default
    protocol: str = "webeval"
    prompts: str | None = None  # the folder of pinned upstream prompt files (see judges.protocols.pinned)
    cache: bool = False  # verdicts kept next to the evidence; the options turn it on, --no-judge-cache off
    members: tuple["JudgeConfig", ...] = ()  # an ensemble's judges (--judge-ensemble), each from its profile
    prices: Prices | None = None  # from the profile: what the judge's calls cost

    @property
    def uses_model(self) -> bool:
        return "model" in self.kinds

    @property
    def configured(self) -> bool:
        if self.members:
            return all(member.configured for member in self.members)
        return not self.uses_model or bool(self.base_url and self.model)

    def public(self) -> dict[str, Any]:
        """What may be printed or stored: the variable that holds the key, never the key."""
        return json.loads(json.dumps(asdict(self), default=lambda value: value.model_dump()))

    def describe(self) -> str:
        kinds = "+".join(self.kinds)
        if not self.uses_model:
            return f"judge: {kinds}"
        if not self.configured:
            return (f"judge: {kinds}, NOT CONFIGURED (pass --judge-base-url and --judge-model, or --judge-profile): "
                    "finished tasks will be judge_failed until re-judged with --rejudge")
        if self.members:
            return f"judge: ensemble of {len(self.members)} by majority, protocol {self.protocol}: " + ", ".join(
                f"{m.model} at {m.base_url}" for m in self.members)
        key = f", key from ${self.api_key_env}" if self.api_key_env else ""
        return f"judge: {kinds}, protocol {self.protocol}, model {self.model} at {self.base_url}{key}"

    def endpoint(self, environ: dict[str, str] | None = None) -> Endpoint:
        environ = os.environ if environ is None else environ
        if not (self.base_url and self.model):
            raise JudgeConfigError("the model judge needs --judge-base-url and --judge-model (or --judge-profile)")
        key = read_key(environ, self.api_key_env)
        if self.api_key_env and not key:
            raise JudgeConfigError(f"the judge's API key variable ${self.api_key_env} is not set")
        return Endpoint(base_url=self.base_url, model=self.model, api_key=key, api_key_env=self.api_key_env,
                        timeout_s=self.timeout_s, retries=self.retries, prices=self.prices)


def parse_kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(dict.fromkeys(k.strip() for k in text.replace("+", ",").split(",") if k.strip()))
    unknown = [k for k in kinds if k not in KINDS]
    if not kinds or unknown:
        raise JudgeConfigError(f"--judge {text!r}: use model, reference, or both (model,reference)")
    return kinds


def profiles(root: Path | None = None) -> tuple[dict[str, dict[str, Any]], Path | None]:
    """Built-in profiles, then those of $WEBEVAL_JUDGE_PROFILES or <root>/judge-profiles.toml (tables by name),
    each checked by the profile schema."""
    found = dict(BUILTIN_PROFILES)
    try:
        path = catalogue_path(PROFILES_ENV, PROFILE_FILE, root)
        for name, table in (read_catalogue(path) if path is not None else {}).items():
            validate(JudgeProfile, table, f"{path}: profile {name!r}")
            found[name] = table
    except ProfileError as exc:
        raise JudgeConfigError(str(exc)) from None
    return found, path


def with_profile(config: JudgeConfig, root: Path | None = None) -> JudgeConfig:
    """The config with its profile's values filled in wherever no option gave one. The profile is a name (built in,
    or in the profiles file) or the path of a TOML or JSON file; a path is kept absolute, for re-judging later."""
    if not config.profile:
        return config
    try:
        if not is_path(config.profile):
            profiles(root)  # every named profile is checked, not only the one chosen
        found = find(config.profile, option="--judge-profile", builtins=BUILTIN_PROFILES,
                     catalogue=catalogue_path(PROFILES_ENV, PROFILE_FILE, root))
        checked = validate(JudgeProfile, found.fields, found.source)
        table = {**checked.model_dump(exclude_none=True), "prices": checked.prices}
    except ProfileError as exc:
        raise JudgeConfigError(str(exc)) from None
    defaults = JudgeConfig()
    filled: dict[str, Any] = {}
    if is_path(config.profile) and found.path is not None:
        filled["profile"] = str(found.path.resolve())
    for key, field in (("base_url", "base_url"), ("model", "model"), ("api_key_env", "api_key_env"),
                       ("temperature", "temperature"), ("timeout", "timeout_s"), ("retries", "retries"),
                       ("prices", "prices")):
        if key in table and getattr(config, field) == getattr(defaults, field):
            filled[field] = table[key]
    return replace(config, **filled)


def with_members(config: JudgeConfig, names: str, root: Path | None = None) -> JudgeConfig:
    """An ensemble: each name (a profile name or path) a member judge of the same protocol, filled from its
    profile alone."""
    chosen = [name.strip() for name in names.split(",") if name.strip()]
    if len(chosen) < 2:
        raise JudgeConfigError(f"--judge-ensemble {names!r}: name two or more judge profiles (A,B,C)")
    bare = replace(config, base_url=None, model=None, api_key_env=None, temperature=JudgeConfig().temperature,
                   members=())
    return replace(config, members=tuple(with_profile(replace(bare, profile=name), root) for name in chosen))


def check_judge_endpoint(config: JudgeConfig, environ: dict[str, str] | None = None) -> None:
    """Stop before any task when the judge cannot work at all: its key unset or refused, its endpoint unreachable,
    its model not served (the one preflight of webeval.models)."""
    try:
        preflight(config.endpoint(environ), "judge")
    except PreflightError as exc:
        raise JudgeConfigError(str(exc)) from None


class Judging:
    """The chosen judge(s) as one: `await judging.judge(task, evidence, folder)`.

    Both kinds together: a task with golden answers passes only when the answer meets one and the model agrees;
    a task without them is the model's alone.
    """

    def __init__(self, config: JudgeConfig, environ: dict[str, str] | None = None) -> None:
        self.config = config
        self.model = None
        self.members = [Judging(member, environ) for member in config.members]
        if config.uses_model and not self.members:
            try:
                self.model = protocols.build(config.protocol, config.endpoint(environ), config.screenshots,
                                             prompts_folder(config.prompts), config.temperature)
            except JudgeError as exc:  # the pinned prompt file is missing or not the pin's
                raise JudgeConfigError(str(exc)) from None

    def deadline_s(self) -> float:
        """The longest a whole judgement may take: every ask, each with its retries and the waits between them,
        and a margin."""
        if self.members:  # they judge at once
            return max(member.deadline_s() for member in self.members)
        if self.model is None:
            return self.config.timeout_s + DEADLINE_MARGIN_S
        endpoint = self.model.endpoint
        ask = endpoint.timeout_s * (endpoint.retries + 1) + endpoint.retrying.longest_waits_s()
        return ask * (self.model.reasks + 1) + DEADLINE_MARGIN_S

    async def judge(self, task: Task, evidence: Evidence) -> Verdict:
        where = f"judge {self.config.model}"
        try:
            async with asyncio.timeout(self.deadline_s()):
                return await self._judge(task, evidence)
        except TimeoutError:
            raise JudgeError(f"{where}: no verdict within {self.deadline_s():g} s", kind="timeout") from None

    async def _judge(self, task: Task, evidence: Evidence) -> Verdict:
        if self.members:
            results = await asyncio.gather(*(m._judge(task, evidence) for m in self.members), return_exceptions=True)
            names = [Path(m.config.profile).stem if m.config.profile and is_path(m.config.profile)
                     else m.config.profile or m.config.model or "?" for m in self.members]
            return vote(names, list(results)).model_copy(update={"protocol": self.config.protocol})
        if self.model is None:
            return reference_verdict(task, evidence.answer)
        if "reference" in self.config.kinds and task.reference_answers:
            reference = reference_verdict(task, evidence.answer)
            if not reference.success:
                return reference
            verdict = await self._model_verdict(task, evidence)
            return verdict.model_copy(update={
                "judge": f"{verdict.judge}+reference",
                "reason": f"{verdict.reason} (reference: {reference.reason})",
                "details": {**verdict.details, "reference": reference.details},
            })
        return await self._model_verdict(task, evidence)

    async def _model_verdict(self, task: Task, evidence: Evidence) -> Verdict:
        if not self.config.cache or not cache.usable(evidence):
            return await self.model.judge(task, evidence)
        key = cache.cache_key(evidence, self.config.protocol, f"{self.config.model} at {self.config.base_url}",
                              self.model.prompt_version)
        verdict = cache.cached(evidence, key)
        if verdict is None:
            verdict = await self.model.judge(task, evidence)
            cache.store(evidence, key, verdict)
        return verdict

    async def close(self) -> None:
        for member in self.members:
            await member.close()
        if self.model is not None:
            await self.model.close()
