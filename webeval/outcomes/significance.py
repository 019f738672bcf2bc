"""Paired statistics for two runs over the same tasks.

- McNemar's exact test: of the tasks whose outcome changed (the discordant pairs), how many went each way. Under
  "no difference" each is a fair coin, so the two-sided p-value is the exact binomial test of `newly_passing`
  successes in `newly_passing + newly_failing` trials at p = 1/2 (what `scipy.stats.binomtest(b, b + c, 0.5)`
  gives): 2 x P(X <= min(b, c)), at most 1.
- A paired bootstrap interval of the score difference, resampling clusters (sites): tasks of one site share its
  pages, its outages and its judge's quirks, so they are not independent draws. Each resample draws as many
  clusters as there are, with replacement, and takes the mean per-task difference over the tasks drawn; the
  interval is the 2.5th and 97.5th percentiles of `RESAMPLES` resamples drawn with the fixed `SEED` (the same
  runs always give the same interval).
"""

from __future__ import annotations

import random
from fractions import Fraction
from math import ceil, comb, floor

RESAMPLES = 10_000
SEED = 20_250_425


def mcnemar_exact(newly_passing: int, newly_failing: int) -> float:
    """Two-sided exact McNemar p-value; 1.0 when no task changed."""
    n = newly_passing + newly_failing
    if n == 0:
        return 1.0
    tail = sum(comb(n, k) for k in range(min(newly_passing, newly_failing) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2 ** n)))


Cluster = tuple[float, int]  # the sum of its tasks' differences, and how many tasks it has


def cluster_bootstrap(clusters: list[Cluster], resamples: int = RESAMPLES, seed: int = SEED,
                      confidence: float = 0.95) -> tuple[float, float]:
    """The percentile interval of the mean per-task difference, resampling whole clusters."""
    clusters = [cluster for cluster in clusters if cluster[1] > 0]
    if not clusters:
        raise ValueError("no tasks to resample: every cluster is empty")
    rng = random.Random(seed)
    means = []
    for _ in range(resamples):
        drawn = rng.choices(clusters, k=len(clusters))
        means.append(sum(total for total, _ in drawn) / sum(n for _, n in drawn))
    means.sort()
    alpha = (1 - confidence) / 2
    return means[floor(alpha * resamples)], means[ceil((1 - alpha) * resamples) - 1]
