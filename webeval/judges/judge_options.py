"""The judge's options, declared once, and the one function that makes a JudgeConfig of their values.

`JUDGE_FLAGS` choose and reach a model judge (a benchmark whose judge is a model takes them: its pytest plugin and
`webeval reverify` render the same tuple); `REJUDGE_FLAGS` say how a re-judge treats a run (pytest's core plugin and
`webeval reverify`); `CONCURRENCY` is the command's own (under pytest, each test judges its one task).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from webeval.flags import Flag, with_defaults
from webeval.judges import protocols
from webeval.judges.config import JudgeConfig, JudgeConfigError, parse_kinds, with_members, with_profile
from webeval.judges.protocols.pinned import prompts_folder
from webeval.outcomes.record import JudgeError

JUDGE_FLAGS = (
    Flag("--judge", help="model, reference, or model,reference (default model; re-judging: the run's)"),
    Flag("--judge-base-url", metavar="URL", help="the judge's OpenAI-compatible endpoint"),
    Flag("--judge-model", metavar="NAME", help="the judge's (multimodal) model"),
    Flag("--judge-api-key-env", metavar="ENV", help="the environment variable holding the judge's key"),
    Flag("--judge-profile", metavar="NAME|PATH",
         help="a judge profile: a name (built-in, or in judge-profiles.toml) or a .toml / .json path"),
    Flag("--judge-timeout", type=float, default=120.0, metavar="S",
         help="seconds one judge call may take (default 120)"),
    Flag("--judge-retries", type=int, default=2, metavar="N", help="retries of a failed judge call (default 2)"),
    Flag("--judge-temperature", default="0", metavar="T",
         help="the judge's sampling temperature, or 'none' to send none (default 0)"),
    Flag("--judge-screenshots", type=int, metavar="K", help="the judge sees the last K screenshots"),
    Flag("--judge-protocol", choices=protocols.PROTOCOLS,
         help="how the judge is asked: webeval (JSON, the default), webvoyager (the original, word for word), "
              "webjudge (Online-Mind2Web's three stages) or rubric (WebGym's, for rubric tasks); re-judging: the "
              "run's"),
    Flag("--judge-prompts", metavar="DIR",
         help="the folder of pinned upstream prompt files (default $WEBEVAL_JUDGE_PROMPTS, else the prepared "
              "cache)"),
    Flag("--no-judge-cache", action="store_true", help="judge again even evidence this judge has judged before"),
    Flag("--judge-ensemble", metavar="A,B,C",
         help="judge profiles (names or paths) that decide by majority vote; every member's verdict is kept"),
)
UNPARSEABLE = Flag("--judge-unparseable", choices=("mask", "fail"),
                   help="a judge reply with no readable verdict after the re-asks: mask (judge_failed; the default "
                        "of a new run), or fail (NeMo Gym's convention: the task counts as failed); a resumed or "
                        "re-judged run keeps its own unless told")
DEFAULT_UNPARSEABLE = "mask"
FAILED_ONLY = Flag("--judge-failed-only", action="store_true",
                   help="re-judging: only the tasks whose judge failed")
REJUDGE_FLAGS = (UNPARSEABLE, FAILED_ONLY)
CONCURRENCY = Flag("--judge-concurrency", type=int, default=8, metavar="N", help="judge calls at once (default 8)")
CHOSEN_BY = ("judge_base_url", "judge_model", "judge_profile", "judge_ensemble")  # any of them asks for a model


def _checked_numbers(get: Callable[[str], Any]) -> float | None:
    """The temperature, once the numeric options are checked."""
    if get("judge_timeout") <= 0:
        raise JudgeConfigError("--judge-timeout must be positive")
    for name in ("judge_retries", "judge_screenshots"):
        if (get(name) or 0) < 0:
            raise JudgeConfigError(f"--{name.replace('_', '-')} must not be negative")
    temperature = get("judge_temperature") or "0"
    if temperature == "none":
        return None
    try:
        return float(temperature)
    except ValueError:
        raise JudgeConfigError(f"--judge-temperature {temperature!r}: expected a number or 'none'") from None


def judge_config(values: Mapping[str, Any], stored: Mapping[str, Any] | None = None, root: Path | None = None,
                 protocol: str = "webeval") -> JudgeConfig:
    """The judge the options choose (keys of `JUDGE_FLAGS`; a missing one has its default). Re-judging, the run's own
    judge (`stored`, as JudgeConfig.public() wrote it) fills in whatever the options leave out; `protocol` is the
    benchmark's default. Profiles are read from `root` (judge-profiles.toml). A judge asked for that cannot work (a
    key variable not set, a prompt file missing, half an endpoint) is a JudgeConfigError here, before any task."""
    before = stored or {}
    get = with_defaults(JUDGE_FLAGS, values).get
    temperature = _checked_numbers(get)
    config = JudgeConfig(
        kinds=parse_kinds(get("judge") or "+".join(before.get("kinds") or ["model"])),
        base_url=get("judge_base_url") or (None if get("judge_profile") else before.get("base_url")),
        model=get("judge_model") or (None if get("judge_profile") else before.get("model")),
        api_key_env=get("judge_api_key_env") or (None if get("judge_profile") else before.get("api_key_env")),
        profile=get("judge_profile") or (None if get("judge_base_url") else before.get("profile")),
        timeout_s=get("judge_timeout"), retries=get("judge_retries"), temperature=temperature,
        screenshots=get("judge_screenshots"),
        protocol=get("judge_protocol") or before.get("protocol") or protocol,
        prompts=get("judge_prompts") or before.get("prompts"),
        cache=not get("no_judge_cache"),
    )
    config = with_profile(config, root)
    if get("judge_ensemble"):
        config = with_members(config, get("judge_ensemble"), root)
    if config.uses_model and (config.configured or any(get(name) for name in CHOSEN_BY)):
        try:
            for one in config.members or (config,):  # the endpoint says what is missing; the protocol, its prompts
                protocols.build(one.protocol, one.endpoint(), one.screenshots, prompts_folder(one.prompts),
                                one.temperature)
        except JudgeError as exc:
            raise JudgeConfigError(str(exc)) from None
    return config


def unparseable_convention(given: str | None, run_conventions: Mapping[str, str] | None = None) -> str:
    """How a reply with no readable verdict counts: as the option says; else as the run being continued counted it
    (its conventions); else masked."""
    return given or (run_conventions or {}).get("judge_unparseable") or DEFAULT_UNPARSEABLE
