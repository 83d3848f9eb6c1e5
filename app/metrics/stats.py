"""The statistics behind the figures: proportions with their Wilson interval, pass@k and
pass^k over repeats, and the mean of paired differences with its t interval.

Pure arithmetic, no store: `app.metrics.summary` and `app.metrics.checkpoints` decide
what is counted, this module only how a count becomes a rate and an interval. Every
interval is 95%.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054
"""The standard normal's 97.5% quantile."""


def wilson(k: int, n: int) -> tuple[float, float] | None:
    """The 95% Wilson score interval of k successes in n trials; None when n = 0.

    Wilson rather than the normal approximation: it stays sound at small n and at 0%
    or 100%, where p ± z·sqrt(p(1-p)/n) collapses to a point.
    """
    if n <= 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"wilson: {k} successes out of {n} trials")
    z2 = Z95 * Z95
    p = k / n
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Rate:
    """k of n, as a rate with its 95% Wilson interval."""

    k: int
    n: int

    @property
    def value(self) -> float | None:
        """k / n; None when n = 0 (no rate, never 0%)."""
        return self.k / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.k, self.n)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator of pass@k (Chen et al. 2021) for one task: the chance
    that at least one of k attempts drawn without replacement from the n made (c of
    which succeeded) succeeds, 1 - C(n-c, k) / C(n, k)."""
    _check_nck(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k as tau-bench reports it, for one task: the chance that all k attempts
    drawn without replacement from the n made succeed, C(c, k) / C(n, k)."""
    _check_nck(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check_nck(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")


def t95(df: int) -> float:
    """The Student t distribution's 97.5% quantile with `df` degrees of freedom."""
    if df < 1:
        raise ValueError(f"t95: needs df >= 1, got {df}")
    # Imported here: scipy.stats takes a while to import, and only means over tasks
    # (pass@k over repeats, paired differences) need it.
    from scipy.stats import t

    return float(t.ppf(0.975, df))


@dataclass(frozen=True)
class Mean:
    """A mean over n units (tasks) with its 95% t interval (None below two units)."""

    value: float | None
    n: int
    interval: tuple[float, float] | None


def mean_with_interval(values: Sequence[float], bounds: tuple[float, float] | None = None) -> Mean:
    """The mean of `values` and its 95% t interval, clipped to `bounds` when given.

    The units (tasks) are taken as independent draws; their spread is the sample
    standard deviation. One value has a mean and no interval.
    """
    n = len(values)
    if n == 0:
        return Mean(None, 0, None)
    mean = sum(values) / n
    if n < 2:
        return Mean(mean, n, None)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t95(n - 1) * sd / math.sqrt(n)
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(bounds[0], low), min(bounds[1], high)
    return Mean(mean, n, (low, high))
