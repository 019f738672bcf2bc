"""Easier tasks from harder ones, as WebGym makes them: a sub-task keeps a proper subset of its parent's fact groups.

Only a task with at least `min_groups` fact groups is decomposed (WebGym's depth: a task of one or two facts is
already easy). A sub-task's id is `<parent>.parts-<k>-<m>` (the groups it keeps, numbered from 1), its `parent` the
task it came from, its difficulty its number of fact groups; its goal asks for the numbered parts it keeps, so a
task's parts are numbered in its goal as its fact groups are (the generated and the offline rubric tasks are).
"""

from __future__ import annotations

import itertools
from typing import Iterator

from webeval.tasks.model import Task

MIN_GROUPS = 3


def decompose(task: Task, min_groups: int = MIN_GROUPS, sizes: set[int] | None = None) -> Iterator[Task]:
    """Every proper, non-empty subset of the task's fact groups (or those of the given sizes) as a task of its own;
    nothing for a task with fewer than `min_groups` groups."""
    if min_groups < 2:
        raise ValueError(f"--min-facts {min_groups}: a task needs at least 2 fact groups to have a proper part")
    if not task.rubric or len(task.rubric) < min_groups:
        return
    groups = len(task.rubric)
    tags = [tag for tag in task.tags if not tag.startswith("facts-")]  # a tag of the parent's size is not theirs
    for size in range(1, groups):
        if sizes and size not in sizes:
            continue
        for subset in itertools.combinations(range(1, groups + 1), size):
            parts = ", ".join(f"({k})" for k in subset)
            yield Task.model_validate({
                # the parent's solution, answers and verifier are for all of its parts
                **task.model_dump(exclude={"solution", "difficulty", "reference_answers", "verifier"},
                                  exclude_none=True),
                "id": f"{task.id}.parts-{'-'.join(map(str, subset))}",
                "goal": f"{task.goal}\n\nOnly part{'s' if size > 1 else ''} {parts} of this task "
                        f"{'are' if size > 1 else 'is'} asked; leave the others out of your answer.",
                "rubric": [task.rubric[k - 1] for k in subset], "parent": task.id, "tags": tags})
