"""95% intervals for a score over a fixed denominator.

A complete run's interval is Wilson's score interval for passed / N (no continuity correction: what
`scipy.stats.binomtest(passed, N).proportion_ci(method="wilson")` gives). An incomplete run does not know how its
masked and missing tasks would have ended, so its interval is widened by them: the lower end is Wilson's lower bound
with every one of them failed (passed / N), the upper end Wilson's upper bound with every one of them passed
((N - failed) / N). For a complete run the two coincide with the plain Wilson interval.
"""

from __future__ import annotations

from math import sqrt
from statistics import NormalDist

CONFIDENCE = 0.95
METHOD = "wilson"


def z_value(confidence: float = CONFIDENCE) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson(successes: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson's score interval for successes / n; (0, 1) when there is nothing to count."""
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= n:
        raise ValueError(f"{successes} successes out of {n}: the count must be between 0 and n")
    z = z_value(confidence)
    p = successes / n
    denominator = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denominator
    half = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    low = 0.0 if successes == 0 else max(0.0, center - half)
    high = 1.0 if successes == n else min(1.0, center + half)
    return low, high


def score_interval(n: int, passed: int, failed: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The score's interval over N tasks, widened by the ones without a valid result (N - passed - failed)."""
    if n <= 0:
        return 0.0, 1.0
    return wilson(passed, n, confidence)[0], wilson(n - failed, n, confidence)[1]


def percent(interval: tuple[float, float]) -> str:
    """`88.4%..99.6%`"""
    return f"{interval[0]:.1%}..{interval[1]:.1%}"
