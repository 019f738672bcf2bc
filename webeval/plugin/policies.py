"""Choosing the policy that acts: `--policy oracle | openai | replay`, its options, the preflight of a model
endpoint, and stopping the session when the endpoint refuses the credentials.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from webeval.agent.environment import Prepared
from webeval.outcomes.record import NotRun
from webeval.models import PreflightError
from webeval.plugin.keys import ATTEMPT
from webeval.policy.base import Policy
from webeval.policy.openai import (
    ADAPTERS, APIS, DUMP_FOLDER, HttpTransport, Mark, OpenAIPolicy, PolicyAuthError, Profile, ProfileError, Recorder,
    RecordingTransport, ReplayMissing, ReplayTransport, api_key_from, check_policy_endpoint, find_recording,
    load_profile, make_adapter, read_recording,
)
from webeval.policy.oracle import OraclePolicy
from webeval.runtime.marks import interactive_elements
from webeval.runtime.session import TaskSession

POLICIES = ("oracle", "openai", "replay")
STOP_EXIT_CODE = 3  # the session stopped for a misconfiguration: nothing (more) can run
STOPPED = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("webeval")
    group.addoption("--policy-profile", default=None, metavar="NAME|PATH",
                    help="model profile: a TOML or JSON file, or a name in policy-profiles.toml "
                         "($WEBEVAL_POLICY_PROFILES): endpoint, API, adapter, image, sampling, history, recipe")
    group.addoption("--policy-api", default=None, choices=APIS,
                    help="chat (/chat/completions, the default) or responses (/responses) (overrides the profile)")
    group.addoption("--dump-observation", action="store_true", default=False,
                    help="write what the model received each step (image as sent, text) to <attempt>/model-input/")
    group.addoption("--policy-base-url", default=None, metavar="URL",
                    help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (overrides the profile)")
    group.addoption("--policy-model", default=None, help="the served model's name (overrides the profile)")
    group.addoption("--policy-api-key-env", default=None, metavar="NAME",
                    help="environment variable holding the API key (default OPENAI_API_KEY)")
    group.addoption("--policy-adapter", default=None, choices=ADAPTERS,
                    help=f"how the model acts: {', '.join(ADAPTERS)} (default tools; see docs/models.md)")
    group.addoption("--policy-screenshots", type=int, default=None, metavar="K",
                    help="screenshots kept in the prompt (default 3)")
    group.addoption("--policy-timeout", type=float, default=None, metavar="S",
                    help="seconds one model call may take (default 60)")
    group.addoption("--policy-retries", type=int, default=None, metavar="N",
                    help="retries of a failed model call (default 3)")
    group.addoption("--record", action="store_true", default=False,
                    help="keep each task's exact model requests and replies under its attempt folder")
    group.addoption("--replay-from", default=None, metavar="DIR",
                    help="with --policy replay: the run directory whose recordings to play back offline")


@dataclass(frozen=True)
class PolicyOptions:
    profile: Profile | None = None
    record: bool = False
    replay_from: Path | None = None
    dump: bool = False


# make_policy is handed the harness's settings, not the pytest config: the options of this process live here.
_OPTIONS = PolicyOptions()


def _overrides(option) -> dict:
    return {"base_url": option.policy_base_url, "model": option.policy_model,
            "api_key_env": option.policy_api_key_env, "adapter": option.policy_adapter, "api": option.policy_api,
            "screenshots": option.policy_screenshots, "timeout_s": option.policy_timeout,
            "retries": option.policy_retries}


def policy_options(option, root: Path | None = None) -> PolicyOptions:
    """The policy's options (pytest's parsed `config.option`), checked; a bad one is a UsageError with one line."""
    name = option.policy
    dump = option.dump_observation
    if dump and name not in ("openai", "replay"):
        raise pytest.UsageError("--dump-observation writes what a model received: use it with --policy openai or "
                                "replay")
    if option.record and name != "openai":
        raise pytest.UsageError("--record keeps a model's requests and replies: use it with --policy openai")
    if option.replay_from and name != "replay":
        raise pytest.UsageError("--replay-from goes with --policy replay")
    if name == "replay":
        if not option.replay_from:
            raise pytest.UsageError("--policy replay needs --replay-from DIR (a run directory recorded with --record)")
        replay_from = Path(option.replay_from)
        if not replay_from.is_dir():
            raise pytest.UsageError(f"--replay-from {replay_from}: no such directory")
        return PolicyOptions(replay_from=replay_from, dump=dump)
    if name != "openai":
        return PolicyOptions()
    try:
        profile = load_profile(option.policy_profile, _overrides(option), root)
    except ProfileError as exc:
        raise pytest.UsageError(str(exc)) from None
    return PolicyOptions(profile=profile, record=option.record, dump=dump)


def model_name() -> str | None:
    """The model this process's policy calls, as its profile resolved it."""
    return _OPTIONS.profile.model if _OPTIONS.profile is not None else None


def recipe() -> dict[str, str]:
    """The serving recipe of this process's model profile (none: empty), for the run's environment."""
    profile = _OPTIONS.profile
    return profile.recipe.values() if profile is not None and profile.recipe is not None else {}


def describe(name: str | None) -> str:
    if name == "oracle":
        return "policy: oracle -- the tasks' built-in solutions are acting, not a model"
    if name is None:
        return "policy: none chosen (pass --policy)"
    profile = _OPTIONS.profile
    if name == "openai" and profile is not None:
        record = ", recording" if _OPTIONS.record else ""
        served = f"\nserving recipe: {profile.recipe.describe()}" if profile.recipe is not None else ""
        return (f"policy: openai -- model {profile.model} at {profile.base_url}, api {profile.api}, adapter "
                f"{profile.adapter}, image {profile.image.describe()}, {profile.screenshots} screenshots in the "
                f"prompt{record}{served}")
    if name == "replay" and _OPTIONS.replay_from is not None:
        return f"policy: replay -- recorded model replies from {_OPTIONS.replay_from}, offline"
    return f"policy: {name}"


def check_policy(name: str | None) -> None:
    if name is None:
        raise pytest.UsageError(f"no policy: pass --policy, one of {', '.join(POLICIES)}")
    if name not in POLICIES:
        raise pytest.UsageError(f"--policy {name!r} is unknown: use one of {', '.join(POLICIES)}")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Options first, then (once, on the xdist controller, before any worker starts) the endpoint's preflight."""
    global _OPTIONS
    config = session.config
    if config.option.help or config.option.policy is None:
        return
    check_policy(config.option.policy)
    _OPTIONS = policy_options(config.option, Path(config.rootpath))
    if _OPTIONS.profile is not None and not hasattr(config, "workerinput") and not config.option.collectonly:
        try:
            check_policy_endpoint(_OPTIONS.profile, os.environ)
        except PreflightError as exc:
            pytest.exit(f"webeval: {exc}", returncode=STOP_EXIT_CODE)


def _marks(session: TaskSession):
    async def marks() -> list[Mark]:
        elements = await interactive_elements(session)
        return [Mark(i, element) for i, element in enumerate(elements)]

    return marks


def make_policy(settings, session: TaskSession, prepared: Prepared) -> Policy:
    if settings.policy == "oracle":
        return OraclePolicy(session.locate, prepared.rewrite_url)
    if settings.policy == "openai" and _OPTIONS.profile is not None:
        return _live_policy(_OPTIONS.profile, settings.screen, session, prepared)
    if settings.policy == "replay" and _OPTIONS.replay_from is not None:
        return _replay_policy(_OPTIONS.replay_from, settings.screen, session, prepared)
    check_policy(settings.policy)
    raise AssertionError(f"policy {settings.policy} was not set up at session start")


def _live_policy(profile: Profile, screen: tuple[int, int], session: TaskSession, prepared: Prepared) -> Policy:
    key = api_key_from(os.environ, profile)
    recorder = None
    if _OPTIONS.record:
        recorder = Recorder(session.folder, (key,))
        recorder.header(prepared.task.id, prepared.task.start_url, screen, profile.model_dump(mode="json"))

    def transport():
        live = HttpTransport(profile, key)
        return RecordingTransport(live, recorder) if recorder is not None else live

    return OpenAIPolicy(profile, make_adapter(profile, screen, _marks(session)), transport, dump=_dump(session))


def _dump(session: TaskSession) -> Path | None:
    return session.folder / DUMP_FOLDER if _OPTIONS.dump else None


def _replay_policy(replay_from: Path, screen: tuple[int, int], session: TaskSession, prepared: Prepared) -> Policy:
    try:
        path = find_recording(replay_from, prepared.task.id)
        header, _ = read_recording(path)
    except ReplayMissing as exc:
        raise NotRun("replay_missing", str(exc)) from None
    recorded_screen = tuple(header.get("screen") or ())
    if recorded_screen != tuple(screen):
        raise NotRun("replay_screen", f"recorded at {recorded_screen[0]}x{recorded_screen[1]}, this run's "
                                      f"screen is {screen[0]}x{screen[1]}")
    profile = Profile.model_validate(header["profile"])
    return OpenAIPolicy(profile, make_adapter(profile, screen, _marks(session)),
                        lambda: ReplayTransport(path, prepared.task.start_url), name="replay", dump=_dump(session))


# -- a refused API key mid-run stops the session (the task itself is masked as infra[policy_auth]) -----------------
def stop_session(item: pytest.Item, message: str) -> None:
    """Stop the whole session (every xdist worker too) after this test: nothing more can run. It exits 3."""
    config = item.config
    text = f"webeval: stopping the session: {message}"
    if not config.stash.get(STOPPED, None):
        config.stash[STOPPED] = text
    item.session.shouldstop = text
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["webeval_stop"] = text


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    attempt = item.stash.get(ATTEMPT, None)
    episode = attempt.episode if attempt is not None else None
    if report.when == "call" and episode is not None and isinstance(episode.infra, PolicyAuthError):
        stop_session(item, episode.infra.message)  # the client's messages never carry the key
    return report


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """xdist controller: a worker that stopped for a refused key stops the whole run with its message."""
    message = getattr(node, "workeroutput", {}).get("webeval_stop")
    if message and not node.config.stash.get(STOPPED, None):
        node.config.stash[STOPPED] = message


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    if session.config.stash.get(STOPPED, None):
        session.exitstatus = STOP_EXIT_CODE
