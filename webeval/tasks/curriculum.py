"""A curriculum sampler for training: batches of tasks by difficulty band, balanced by site, the test split left out.

    curriculum = Curriculum(tasks, bands=[Band(1, 2), Band(3, 4), Band(5)], max_site_share=0.1,
                            exclude=Exclusion.from_split("splits/v1"), seed=7)
    choices = curriculum.batch(64)          # batch 0; the next call gives batch 1, `batch(64, number=0)` it again

Each band gets its weight's share of a batch (largest remainder, band order breaking ties; WebGym samples its
difficulty levels uniformly, the default); within a band tasks are drawn uniformly, no task twice in a batch and no
site more than `max_site_share` of the batch (a task of a site at its cap is drawn again). Batch k depends only on the
task set, the options, the seed and k, so any batch is made again exactly. A Choice is what a rollout's record keeps
of how its task was chosen.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from pydantic import BaseModel, ConfigDict

from webeval.tasks.taskset import TaskSet

REDRAWS = 20  # draws per wanted task before the band's eligible tasks are listed outright


class CurriculumError(ValueError):
    """A curriculum that cannot give what it is asked for; one line that says what to change."""


@dataclass(frozen=True)
class Band:
    """Difficulties from `low` to `high` (None: no upper end), and the band's weight in a batch."""

    low: int
    high: int | None = None
    weight: float = 1.0

    def __post_init__(self) -> None:
        if self.low < 1 or (self.high is not None and self.high < self.low) or not self.weight > 0:
            raise CurriculumError(f"band {self.name}: a band is LOW-HIGH or LOW+ with 1 <= LOW <= HIGH and a weight "
                                  "above 0")

    @property
    def name(self) -> str:
        return f"{self.low}+" if self.high is None else str(self.low) if self.high == self.low else \
            f"{self.low}-{self.high}"

    def holds(self, difficulty: int | None) -> bool:
        return difficulty is not None and self.low <= difficulty and (self.high is None or difficulty <= self.high)

    @classmethod
    def parse(cls, text: str) -> "Band":
        """`3`, `1-2`, `5+`, each optionally `:WEIGHT` (`1-2:2`)."""
        spec, _, weight = text.strip().partition(":")
        low, _, high = spec.removesuffix("+").partition("-")
        try:
            numbers = int(low), None if spec.endswith("+") else int(high or low), float(weight or 1)
        except ValueError:
            raise CurriculumError(f"band {text!r}: write a band as 3, 1-2 or 5+ (with :WEIGHT if you like)") from None
        return cls(*numbers)

    @classmethod
    def parse_many(cls, text: str) -> list["Band"]:
        bands = [cls.parse(part) for part in text.split(",") if part.strip()]
        if not bands:
            raise CurriculumError("--bands: name at least one band, such as 1-2,3-4,5+")
        for a, b in zip(bands, bands[1:]):
            if a.high is None or b.low <= a.high:
                raise CurriculumError(f"bands {a.name} and {b.name} overlap or are out of order: list them from the "
                                      "easiest, without overlap")
        return bands


@dataclass(frozen=True)
class Exclusion:
    """The test split, left out of training: its sites, registered domains and task ids."""

    sites: frozenset[str] = frozenset()
    domains: frozenset[str] = frozenset()
    ids: frozenset[str] = frozenset()

    @classmethod
    def from_split(cls, path: Path | str) -> "Exclusion":
        """From `webeval split`'s folder (or its split.json): the test side's sites and registered domains."""
        path = Path(path)
        path = path / "split.json" if path.is_dir() else path
        try:
            described = json.loads(path.read_text(encoding="utf-8"))
            return cls(frozenset(described["test_sites"]), frozenset(described["test_domains"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CurriculumError(f"{path}: not a split written by `webeval split` ({exc})") from None

    @classmethod
    def from_tasks(cls, tasks: TaskSet) -> "Exclusion":
        """From the test task set itself (its sites, registered domains and ids)."""
        return cls(frozenset(tasks.sites), frozenset(tasks.registered_domain(n) for n in range(len(tasks))),
                   frozenset(tasks.ids))

    def excludes(self, tasks: TaskSet, position: int) -> bool:
        return (tasks.site(position) in self.sites or tasks.ids[position] in self.ids
                or bool(self.domains) and tasks.registered_domain(position) in self.domains)


class Choice(BaseModel):
    """How one task of a batch was chosen: kept in its rollout's record."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    band: str
    difficulty: int
    site: str
    site_share: float  # the share of the batch on this task's site
    seed: int
    batch: int
    position: int  # in the batch, from 0


@dataclass
class _Pool:
    band: Band
    positions: list[int] = field(default_factory=list)
    per_site: Counter = field(default_factory=Counter)


class Curriculum:
    def __init__(self, tasks: TaskSet, bands: Sequence[Band], max_site_share: float = 0.25,
                 exclude: Exclusion | None = None, seed: int = 0) -> None:
        if not 0 < max_site_share <= 1:
            raise CurriculumError(f"--max-site-share {max_site_share:g}: give a share above 0 and at most 1")
        if not bands:
            raise CurriculumError("a curriculum needs at least one difficulty band")
        self.tasks, self.bands, self.max_site_share, self.exclude, self.seed = tasks, list(bands), max_site_share, \
            exclude, seed
        self.excluded = 0
        self._pools = [_Pool(band) for band in self.bands]
        for position in range(len(tasks)):
            difficulty = tasks.difficulty(position)
            pool = next((p for p in self._pools if p.band.holds(difficulty)), None)
            if pool is None:
                continue
            if exclude is not None and exclude.excludes(tasks, position):
                self.excluded += 1
                continue
            pool.positions.append(position)
            pool.per_site[tasks.site(position)] += 1
        for pool in self._pools:
            if not pool.positions:
                left_out = f" once the test split's {self.excluded:,} tasks are left out" if self.excluded else ""
                raise CurriculumError(f"band {pool.band.name}: no task has a difficulty in it{left_out}: widen or "
                                      "drop the band")
        self._next_batch = 0

    def quotas(self, n: int) -> list[int]:
        """How many of a batch of n each band gets: its weight's share, by largest remainder."""
        total = sum(band.weight for band in self.bands)
        exact = [n * band.weight / total for band in self.bands]
        quotas = [math.floor(share) for share in exact]
        order = sorted(range(len(exact)), key=lambda i: (-(exact[i] - quotas[i]), i))
        for i in order[:n - sum(quotas)]:
            quotas[i] += 1
        return quotas

    def site_cap(self, n: int) -> int:
        cap = math.floor(self.max_site_share * n + 1e-9)
        if cap < 1:
            raise CurriculumError(f"--max-site-share {self.max_site_share:g} of a batch of {n} lets no site have a "
                                  f"task: use at least {1 / n:.3g}, or a larger batch")
        return cap

    def batch(self, n: int, number: int | None = None) -> list[Choice]:
        """Batch `number` (default: the one after the last made) of n tasks."""
        if n < 1:
            raise CurriculumError(f"a batch of {n} tasks: ask for at least 1")
        number = self._next_batch if number is None else number
        self._next_batch = number + 1
        cap = self.site_cap(n)
        rng = random.Random(f"webeval-curriculum:{self.seed}:{number}")
        taken: Counter = Counter()
        drawn: list[tuple[int, _Pool]] = []
        for pool, quota in zip(self._pools, self.quotas(n)):
            if len(pool.positions) < quota:
                raise CurriculumError(f"band {pool.band.name}: {len(pool.positions):,} tasks, fewer than the {quota} a "
                                      f"batch of {n} takes from it: lower the batch, or widen or reweigh the band")
            reach = sum(min(count, cap) for count in pool.per_site.values())
            if reach < quota:
                raise CurriculumError(
                    f"band {pool.band.name}: its {len(pool.positions):,} tasks on {len(pool.per_site):,} sites give at "
                    f"most {reach} of the {quota} it needs with no site above {self.max_site_share:g} of a batch of "
                    f"{n} ({cap} a site): raise --max-site-share, lower the batch, or widen the band")
            drawn += [(position, pool) for position in self._draw(pool, quota, cap, taken, rng, n)]
        shares = Counter(self.tasks.site(position) for position, _ in drawn)
        return [Choice(task_id=self.tasks.ids[position], band=pool.band.name,
                       difficulty=self.tasks.difficulty(position) or 0, site=self.tasks.site(position),
                       site_share=shares[self.tasks.site(position)] / n, seed=self.seed, batch=number, position=k)
                for k, (position, pool) in enumerate(drawn)]

    def _draw(self, pool: _Pool, quota: int, cap: int, taken: Counter, rng: random.Random, n: int) -> list[int]:
        chosen: list[int] = []
        seen: set[int] = set()
        for _ in range(REDRAWS * quota):
            if len(chosen) == quota:
                return chosen
            position = pool.positions[rng.randrange(len(pool.positions))]
            site = self.tasks.site(position)
            if position in seen or taken[site] >= cap:
                continue
            seen.add(position)
            taken[site] += 1
            chosen.append(position)
        # many draws fell on sites at their cap: list what is left and draw from it
        eligible = [p for p in pool.positions if p not in seen and taken[self.tasks.site(p)] < cap]
        rng.shuffle(eligible)
        for position in eligible:
            if len(chosen) == quota:
                break
            site = self.tasks.site(position)
            if taken[site] < cap:
                taken[site] += 1
                chosen.append(position)
        if len(chosen) < quota:
            raise CurriculumError(f"band {pool.band.name}: the sites of the bands before it took their cap of a batch "
                                  f"of {n}; only {len(chosen)} of its {quota} tasks could be drawn: lower the batch or "
                                  "raise --max-site-share")
        return chosen

