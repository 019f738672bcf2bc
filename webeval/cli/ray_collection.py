"""`--ray ADDRESS` for the rollout commands: a suite's rollouts collected by actors on the nodes of a Ray cluster
(docs/training.md, "Across nodes with Ray").

The head reads the suite's population and the policy options (nothing starts there); each node opens the benchmark
with the same options and makes its policies itself, so its sites, judges and API keys are its own.
"""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Mapping

from webeval.benchmarks import benchmark_setup, open_benchmark
from webeval.cli import CommandError
from webeval.flags import OptionError
from webeval.policy.choice import PolicyChoice, check_policy
from webeval.rollouts import Batch, EngineSettings, EngineStopped, RolloutRecord, RolloutRequest

RAY_MISSING = "--ray needs Ray on every node: pip install 'pytest-webeval[ray]'"



def join_cluster(address: str, timeout_s: float | None = None) -> None:
    """This process a driver of the cluster at `address`, or CommandError: one line, within the connect bound."""
    try:
        from webeval.rollouts.ray import CONNECT_TIMEOUT_S, RayUnreachable, connect
    except ImportError:
        raise CommandError(RAY_MISSING) from None
    try:
        connect(address, timeout_s or CONNECT_TIMEOUT_S)
    except RayUnreachable as exc:
        raise CommandError(str(exc)) from None


async def collect_suite_on_ray(address: str, suite: str, suite_values: Mapping[str, Any], choice: PolicyChoice,
                               requests: Iterable[RolloutRequest | dict], out: Path, *,
                               settings: EngineSettings = EngineSettings(), token_ids: bool = True,
                               task_ids: Collection[str] | None = None, slots_per_actor: int | None = None,
                               resubmit_lost: bool = False, completion_threshold: float | None = None,
                               grace_s: float = 0.0, on_record: Callable[[RolloutRecord], None] | None = None,
                               interrupted: asyncio.Event | None = None, root: Path | None = None,
                               connect_timeout_s: float | None = None) -> Batch:
    """`webeval rollouts collect --suite SPEC --ray ADDRESS`: the requests collected into `out` (resumable: what
    has its record is not run again) by actors that open `suite` with `suite_values` on their nodes and act as
    `choice` says. Profiles and files named by the options are looked up from `root` (default: the current folder),
    the same path on every node. An unreachable cluster, a bad option or actors that cannot start raise
    CommandError (one line)."""
    join_cluster(address, connect_timeout_s)
    from webeval.rollouts.ray import ChosenPolicies, collect_on_ray

    root = (root or Path.cwd()).resolve()
    try:
        check_policy(choice.name)
        if task_ids is None:
            task_ids = set(benchmark_setup(suite, suite_values, root).population.ids)
        policies = ChosenPolicies(choice, settings.screen, token_ids, settings.history or "append-only")
        return await collect_on_ray(
            address, Path(out).resolve(), partial(open_benchmark, suite, dict(suite_values), root), policies,
            requests, settings=settings, task_ids=task_ids, slots_per_actor=slots_per_actor,
            resubmit_lost=resubmit_lost, completion_threshold=completion_threshold, grace_s=grace_s,
            on_record=on_record, interrupted=interrupted)
    except (OptionError, EngineStopped) as exc:
        raise CommandError(str(exc)) from None
