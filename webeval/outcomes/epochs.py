"""Epochs: every task run K times, each attempt a test of its own, over a denominator of N x K attempts.

Attempt k of task T has the id `T.e<k>` (its own test, attempt folder and record), so a run of K epochs reconciles
exactly as any run does, over N x K ids. From the final outcome of each, per task: the mean pass@1, pass@k (at
least one of k samples passes, the unbiased estimator over the K samples), pass^k (all k pass), the tasks whose
epochs disagree (flaky), and the standard error of the score across epochs. A masked or missing attempt counts as
not passed, as the score's lower bound does.
"""

from __future__ import annotations

import statistics
from math import comb
from typing import Any

from webeval.tasks import Population, Task

SEPARATOR = ".e"
CONVENTION = "epochs"  # in the run directory's conventions: how many epochs its ids hold


def epoch_id(task_id: str, epoch: int) -> str:
    return f"{task_id}{SEPARATOR}{epoch}"


def base_id(epoch_task_id: str) -> tuple[str, int]:
    base, _, epoch = epoch_task_id.rpartition(SEPARATOR)
    return (base, int(epoch)) if base and epoch.isdigit() else (epoch_task_id, 1)


def expand(population: Population, tasks: list[Task], epochs: int) -> tuple[Population, list[Task]]:
    """The population and tasks of a K-epoch run: every task K times, epoch by epoch."""
    if epochs <= 1:
        return population, tasks
    copies = [task.model_copy(update={"id": epoch_id(task.id, k)}) for k in range(1, epochs + 1) for task in tasks]
    ids = tuple(epoch_id(tid, k) for k in range(1, epochs + 1) for tid in population.ids)
    expanded = population.model_copy(update={
        "name": f"{population.name} x{epochs} epochs", "ids": ids,
        "sites": {epoch_id(tid, k): site for k in range(1, epochs + 1) for tid, site in population.sites.items()}})
    return expanded, copies


def pass_at(n: int, c: int, k: int) -> float:
    """At least one of k samples drawn from n (c of them passing) passes."""
    return 1.0 - comb(n - c, k) / comb(n, k) if n - c >= k else 1.0


def pass_hat(n: int, c: int, k: int) -> float:
    """All k samples drawn from n (c of them passing) pass."""
    return comb(c, k) / comb(n, k)


def figures(final: dict[str, str], epochs: int) -> dict[str, Any]:
    """Epoch figures from each id's final outcome ("passed", "failed", a masked one, or "missing")."""
    passes: dict[str, list[bool]] = {}
    for task_id, outcome in final.items():
        base, epoch = base_id(task_id)
        passes.setdefault(base, [False] * epochs)[epoch - 1] = outcome == "passed"
    if not passes:
        return {}
    counts = {base: sum(flags) for base, flags in passes.items()}
    mean = lambda values: sum(values) / len(values)  # noqa: E731
    per_epoch = [mean([flags[k] for flags in passes.values()]) for k in range(epochs)]
    return {
        "epochs": epochs, "tasks": len(passes), "attempts": len(passes) * epochs,
        "mean_pass@1": mean([c / epochs for c in counts.values()]),
        "pass@k": {str(k): mean([pass_at(epochs, c, k) for c in counts.values()]) for k in range(1, epochs + 1)},
        "pass^k": {str(k): mean([pass_hat(epochs, c, k) for c in counts.values()]) for k in range(1, epochs + 1)},
        "per_epoch": per_epoch,
        "stderr": statistics.stdev(per_epoch) / epochs ** 0.5 if epochs > 1 else 0.0,
        "flaky": {base: f"{c}/{epochs}" for base, c in sorted(counts.items()) if 0 < c < epochs},
    }


def lines(epoch_figures: dict[str, Any]) -> list[str]:
    if not epoch_figures:
        return []
    k = epoch_figures["epochs"]
    flaky = epoch_figures["flaky"]
    return [f"  epochs {k} over {epoch_figures['tasks']} tasks: mean pass@1 {epoch_figures['mean_pass@1']:.1%}"
            f" (± {epoch_figures['stderr']:.1%} run to run)  pass@{k} {epoch_figures['pass@k'][str(k)]:.1%}"
            f"  pass^{k} {epoch_figures['pass^k'][str(k)]:.1%}",
            f"  flaky tasks {len(flaky)}" + (": " + ", ".join(f"{t} {v}" for t, v in list(flaky.items())[:10])
                                             if flaky else "")]


def environment(epoch_figures: dict[str, Any]) -> dict[str, str]:
    """The figures as Allure environment entries (text), for a K-epoch run; nothing for any other."""
    if not epoch_figures:
        return {}
    k = str(epoch_figures["epochs"])
    return {"epochs": k, "mean pass@1": f"{epoch_figures['mean_pass@1']:.1%}",
            f"pass@{k}": f"{epoch_figures['pass@k'][k]:.1%}", f"pass^{k}": f"{epoch_figures['pass^k'][k]:.1%}",
            "run-to-run stderr": f"{epoch_figures['stderr']:.1%}",
            "flaky tasks": ", ".join(f"{t} {v}" for t, v in epoch_figures["flaky"].items()) or "none"}
