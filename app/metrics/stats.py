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

    At k = 0 the lower bound is exactly 0, and at k = n the upper bound exactly 1: the
    formula's two terms cancel there only up to rounding (0 of 3 gave 5.55e-17, above
    the rate itself, and an error bar below zero).
    """
    if n <= 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"wilson: {k} successes out of {n} trials")
    z2 = Z95 * Z95
    p = k / n
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    low = 0.0 if k == 0 else min(p, max(0.0, centre - half))
    high = 1.0 if k == n else max(p, min(1.0, centre + half))
    return low, high


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


_T95 = (
    12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004,
    2.262157, 2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905,
    2.109816, 2.100922, 2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899,
    2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272,
)  # fmt: skip
"""t's 97.5% quantile for 1 to 30 degrees of freedom (tests/metrics/test_checkpoint_metrics.py
holds them to scipy's)."""


def t95(df: int) -> float:
    """The Student t distribution's 97.5% quantile with `df` degrees of freedom.

    A table up to 30, then the Cornish-Fisher expansion around the normal quantile
    (within 1e-7 of the exact value from 31 on): no statistics library is imported
    for a figure the Results screen draws on the UI's thread.
    """
    if df < 1:
        raise ValueError(f"t95: needs df >= 1, got {df}")
    if df <= len(_T95):
        return _T95[df - 1]
    z, n = Z95, float(df)
    return (
        z
        + (z**3 + z) / (4 * n)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * n**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * n**3)
        + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * n**4)
    )


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
