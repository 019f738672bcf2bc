"""`--ray ADDRESS` for the rollout commands: a suite's rollouts collected by actors on the nodes of a Ray cluster
(docs/training.md, "Across nodes with Ray").

The head reads the suite's population and the policy options (nothing starts there); each node opens the benchmark
with the same options and makes its policies itself, so its sites, judges and API keys are its own.
"""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from webeval.benchmarks import benchmark_setup, open_benchmark
from webeval.cli import CommandError
from webeval.flags import OptionError
from webeval.policy.choice import PolicyChoice, check_policy
from webeval.rollouts import Batch, EngineSettings, EngineStopped, RolloutRecord, RolloutRequest

RAY_MISSING = "--ray needs Ray on every node: pip install 'pytest-webeval[ray]'"


async def collect_suite_on_ray(address: str, suite: str, values: Mapping[str, Any],
                               requests: Iterable[RolloutRequest | dict], out: Path, *,
                               settings: EngineSettings = EngineSettings(), token_ids: bool = True,
                               slots_per_actor: int | None = None, resubmit_lost: bool = False,
                               completion_threshold: float | None = None, grace_s: float = 0.0,
                               on_record: Callable[[RolloutRecord], None] | None = None,
                               interrupted: asyncio.Event | None = None, root: Path | None = None,
                               connect_timeout_s: float | None = None) -> Batch:
    """`webeval rollouts collect --suite SPEC --ray ADDRESS`: the suite's requests collected on the cluster at
    ADDRESS into `out` (resumable: what has a record is not run again). `values` are the benchmark's and the policy's
    option values by destination; profiles are looked up in `root` (default: the current folder), the same path on
    every node. An unreachable cluster, a bad option or actors that cannot start raise CommandError (one line)."""
    try:
        from webeval.rollouts.ray import ChosenPolicies, RayUnreachable, collect_on_ray
    except ImportError:
        raise CommandError(RAY_MISSING) from None
    root = (root or Path.cwd()).resolve()
    try:
        setup = benchmark_setup(suite, values, root)
        chosen = {**values, "policy": values.get("policy") or setup.default_policy}
        choice = PolicyChoice.from_values(chosen, root)
        check_policy(choice.name)
        if choice.record or choice.dump:
            raise OptionError("--record and --dump-observation are evaluation's: a rollout keeps its trajectory and "
                              "token ids in the collection folder")
        policies = ChosenPolicies(choice, settings.screen, token_ids, settings.history or "append-only")
        return await collect_on_ray(
            address, Path(out).resolve(), partial(open_benchmark, suite, chosen, root), policies, requests,
            settings=settings, task_ids={task.id for task in setup.tasks}, slots_per_actor=slots_per_actor,
            resubmit_lost=resubmit_lost, completion_threshold=completion_threshold, grace_s=grace_s,
            on_record=on_record, interrupted=interrupted, connect_timeout_s=connect_timeout_s)
    except (OptionError, RayUnreachable, EngineStopped) as exc:
        raise CommandError(str(exc)) from None
