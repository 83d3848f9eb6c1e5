"""The figures over recorded episodes, and the one policy they follow.

The TUI's Results screen, `deskloop report` (text and HTML) and anything else that
shows a success rate take it from here, so one database gives one set of figures.

**What is counted.** Ended episodes only; a running episode is left out. Each batch
slot counts once, by the episode `app.metrics.slots` picks for it (its first finished
try, else its latest try); the tries it replaced are shown as *retries* and count
nowhere else. Episodes outside a batch count one each.

**Outcomes.** Every counted episode has exactly one:

- *passed*: finished and scored R = 1 (every required check passed);
- *failed*: finished and scored R = 0. This is the agent's failure, whatever ended the
  episode: DONE on a wrong result, FAIL, the step or the time budget. An episode that
  ended in an error of the agent's own (its kind `agent` or `action`: the agent could
  not run, answered with nothing usable, or asked for an action that cannot be
  carried out) is a failure too, with no credit: it was the agent's attempt, and
  leaving it out would reward an agent for breaking instead of failing;
- *error*: ended in any other error (status `error`, end reason `error`), told by the
  error kind the episode recorded (app.core.errors): the infrastructure (the desktop,
  VNC, the guest channel or an endpoint failed, the batch's time limit struck, the
  runner died), or something that says nothing about the agent either (a broken task
  file, a refused endpoint request, the LLM user, a bug, an error of unknown kind
  recorded before kinds were). None was the agent's attempt;
- *aborted*: a person or a signal stopped it (end reason `aborted`). Not an attempt
  either.

**Rates.** The success rate is passed / (passed + failed): over the attempts, the
finished episodes and the agent's own errors. Other errors and aborts are given as
their own counts and are left out of every rate and mean. Mean partial credit, mean
steps, the ask rate (share of attempts in which the agent asked at least once) and
asks per episode are over the attempts too. A group with no attempt has no rates
(None, shown as "-"), never 0%.

**Groups.** app × level × kind (interactive: the task has phases; standard) × agent ×
user (simulated or person); then the same figures per agent over every app, level,
kind and user; then everything together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from app.core.errors import is_agents_own
from app.core.outcomes import CheckOutcome
from app.metrics.checkpoints import (
    CheckRate,
    PairedRow,
    PhaseRate,
    RepeatRow,
    check_rates,
    paired_rows,
    phase_rates,
    repeat_rows,
)
from app.metrics.slots import counted_episodes
from app.metrics.stats import Mean, Rate, wilson
from app.store import EpisodeRecord, PhaseRecord, Store

Outcome = Literal["passed", "failed", "error", "aborted"]

LEVEL_ORDER = {"L1": 0, "L2": 1, "L3": 2}
KIND_ORDER = {"standard": 0, "interactive": 1}
ALL = "all"
"""The key of a group that spans every value of that field."""
THRESHOLDS = (0.5, 0.75, 1.0)
"""The partial-credit levels k of "success at k" (root success at k: the share of
attempts whose partial credit is at least k)."""
_EPS = 1e-9
"""Slack for a weighted mean that lands a hair under a threshold it meets."""


def outcome(record: EpisodeRecord) -> Outcome | None:
    """The policy's outcome of an episode; None while it runs."""
    if record.status == "running":
        return None
    if record.status == "finished":
        return "passed" if record.passed else "failed"
    if record.end_reason == "aborted":
        return "aborted"
    return "failed" if is_agents_own(record.error_kind) else "error"


def is_attempt(record: EpisodeRecord) -> bool:
    """Whether an episode counts in the rates: it passed or failed."""
    return outcome(record) in ("passed", "failed")


def kind(record: EpisodeRecord) -> str:
    return "interactive" if record.interactive else "standard"


@dataclass(frozen=True)
class GroupStats:
    app: str
    level: str
    kind: str
    """interactive | standard (or "all")"""
    agent: str
    user: str
    """simulated | person (or "all")"""
    passed: int
    failed: int
    errors: int
    aborted: int
    retries: int
    """Batch tries replaced by their slot's episode (not in `episodes`)."""
    mean_score: float | None
    """Mean partial credit in [0, 1] over the attempts (an agent's error gets none)."""
    mean_steps: float | None
    asked: int
    """Attempts in which the agent asked at least once."""
    asks: int
    """Questions the agent asked over the attempts."""
    at_thresholds: tuple[int, ...] = ()
    """Attempts whose partial credit is at least each of `THRESHOLDS` (an agent's own
    error has none, so it reaches no threshold)."""
    token_attempts: int = 0
    """Attempts whose agent reported token usage (model agents)."""
    tokens: int = 0
    """Total tokens (prompt + completion) those attempts' model calls used."""

    @property
    def tokens_per_episode(self) -> float | None:
        """Mean tokens per attempt, over the attempts that reported any."""
        return self.tokens / self.token_attempts if self.token_attempts else None

    @property
    def episodes(self) -> int:
        return self.passed + self.failed + self.errors + self.aborted

    @property
    def finished(self) -> int:
        """The attempts the rates are over: passed + failed (the failed include the
        agent's own errors, which did not finish)."""
        return self.passed + self.failed

    @property
    def success_rate(self) -> float | None:
        return self.passed / self.finished if self.finished else None

    @property
    def success_interval(self) -> tuple[float, float] | None:
        """The 95% Wilson score interval of the success rate (sound at small n and at
        0% or 100%, where the normal approximation collapses to a point)."""
        return wilson(self.passed, self.finished)

    @property
    def success(self) -> Rate:
        return Rate(self.passed, self.finished)

    def success_at(self, threshold: float) -> Rate:
        """Success at partial credit `threshold` (one of `THRESHOLDS`)."""
        return Rate(self.at_thresholds[THRESHOLDS.index(threshold)], self.finished)

    @property
    def asked_rate(self) -> Rate:
        """The ask rate as a count: attempts with a question, of the attempts."""
        return Rate(self.asked, self.finished)

    @property
    def ask_rate(self) -> float | None:
        return self.asked / self.finished if self.finished else None

    @property
    def asks_per_episode(self) -> float | None:
        return self.asks / self.finished if self.finished else None

    @property
    def label(self) -> str:
        return f"{self.app} {self.level} {self.kind} · {self.agent} · {self.user}"


@dataclass(frozen=True)
class Summary:
    batch_id: str | None
    generated_at: datetime
    groups: list[GroupStats]
    """app × level × kind × agent × user, in a stable order."""
    by_agent: list[GroupStats]
    """The same figures over every app, level, kind and user, one per agent."""
    overall: GroupStats | None
    """Everything together; None when nothing was counted."""
    unscored: list[EpisodeRecord]
    """The counted episodes that ended in an error or were aborted, by id: what the
    rates leave out, for a report to say why."""
    checks: list[CheckRate] = field(default_factory=list)
    """Leaf success: each task's final checks over the attempts that recorded them."""
    phases: list[PhaseRate] = field(default_factory=list)
    """Each task phase with checks: reached, and passed of reached."""
    repeats: list[RepeatRow] = field(default_factory=list)
    """pass@k and pass^k per group, then per agent, then over everything."""
    paired: list[PairedRow] = field(default_factory=list)
    """Every two agents on the tasks both attempted."""

    @property
    def totals(self) -> list[GroupStats]:
        """The rows under the groups: one per agent, then everything together."""
        return [*self.by_agent, *([self.overall] if self.overall else [])]


GroupKey = tuple[str, str, str, str, str]


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _stats(
    key: GroupKey,
    episodes: Sequence[EpisodeRecord],
    retries: int,
    asks: Mapping[int, int],
    tokens: Mapping[int, TokenUsage] | None = None,
) -> GroupStats:
    outcomes = [outcome(e) for e in episodes]
    attempts = [e for e in episodes if is_attempt(e)]
    counts = [asks.get(e.id, 0) for e in attempts]
    credit = [e.score or 0.0 for e in attempts]
    used = [tokens[e.id] for e in attempts if tokens and e.id in tokens]
    return GroupStats(
        *key,
        passed=outcomes.count("passed"),
        failed=outcomes.count("failed"),
        errors=outcomes.count("error"),
        aborted=outcomes.count("aborted"),
        retries=retries,
        mean_score=_mean(credit),
        mean_steps=_mean([float(e.steps) for e in attempts]),
        asked=sum(1 for n in counts if n > 0),
        asks=sum(counts),
        at_thresholds=tuple(sum(1 for c in credit if c >= k - _EPS) for k in THRESHOLDS),
        token_attempts=len(used),
        tokens=sum(u.total for u in used),
    )


def _sort_key(key: GroupKey) -> tuple[object, ...]:
    app, level, kind_, agent, user = key
    return (app, LEVEL_ORDER.get(level, 9), level, KIND_ORDER.get(kind_, 9), agent, user)


def _grouped(
    episodes: Sequence[EpisodeRecord],
    retries: Sequence[EpisodeRecord],
    asks: Mapping[int, int],
    key: Callable[[EpisodeRecord], GroupKey],
    tokens: Mapping[int, TokenUsage] | None = None,
) -> list[GroupStats]:
    members: dict[GroupKey, list[EpisodeRecord]] = {}
    replaced: dict[GroupKey, int] = {}
    for e in episodes:
        members.setdefault(key(e), []).append(e)
    for e in retries:
        members.setdefault(key(e), [])
        replaced[key(e)] = replaced.get(key(e), 0) + 1
    return [
        _stats(k, members[k], replaced.get(k, 0), asks, tokens)
        for k in sorted(members, key=_sort_key)
    ]


def ask_counts(store: Store, episodes: Iterable[EpisodeRecord]) -> dict[int, int]:
    """How many questions the agent asked in each episode (from its messages)."""
    return {
        e.id: sum(1 for m in store.messages(e.id) if m.role == "agent" and m.kind == "question")
        for e in episodes
    }


@dataclass(frozen=True)
class TokenUsage:
    """The tokens an episode's model calls used, summed over its steps' `agent_info`."""

    prompt: int
    completion: int
    total: int


def token_usage(store: Store, episode_id: int) -> TokenUsage | None:
    """What a model agent's steps report (`prompt_tokens`, `completion_tokens`,
    `total_tokens`; a total missing is their sum); None when no step reports any, as
    for agents that call no model."""
    prompt = completion = total = 0
    reported = False
    for step in store.steps(episode_id):
        info = step.agent_info or {}
        values = [info.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens")]
        if not any(isinstance(v, int) for v in values):
            continue
        reported = True
        p, c, t = (v if isinstance(v, int) else 0 for v in values)
        prompt, completion = prompt + p, completion + c
        total += t if isinstance(values[2], int) else p + c
    return TokenUsage(prompt, completion, total) if reported else None


def token_counts(store: Store, episodes: Iterable[EpisodeRecord]) -> dict[int, TokenUsage]:
    """Each episode's token usage, for those that report any."""
    found = {e.id: token_usage(store, e.id) for e in episodes}
    return {k: v for k, v in found.items() if v is not None}


Results = Callable[[EpisodeRecord], tuple[Sequence[CheckOutcome], Sequence[PhaseRecord]]]
"""An episode's checks and phases as a report counts them (`recorded_results`: as
recorded at its end; app.metrics.scores: by its latest rescore)."""


def recorded_results(store: Store) -> Results:
    """Each episode's checks and phases as its original score recorded them."""
    return lambda e: (store.checks(e.id), store.phases(e.id))


def summarize(
    store: Store,
    batch_id: str | None = None,
    adjust: Callable[[list[EpisodeRecord]], list[EpisodeRecord]] | None = None,
    results: Results | None = None,
) -> Summary:
    """The figures over every ended episode in `store`, or over one batch's slots.

    `adjust` changes the counted episodes first (app.metrics.scores: the latest rescore
    instead of the original score, the integrity-flagged episodes left out), and
    `results` gives the checks and phases that go with the score it chose (default:
    as recorded), so that every table counts the same score."""
    counted = counted_episodes(store, batch_id)
    episodes, retries = counted.episodes, counted.retries
    if adjust is not None:
        episodes = adjust(list(episodes))
    results = results or recorded_results(store)
    asks = ask_counts(store, episodes)
    tokens = token_counts(store, episodes)
    overall = _grouped(episodes, retries, asks, lambda e: (ALL, ALL, ALL, ALL, ALL), tokens)
    attempts = [e for e in episodes if is_attempt(e)]
    found = {e.id: results(e) for e in attempts}
    checks = {e.id: found[e.id][0] for e in attempts}
    phases = {e.id: found[e.id][1] for e in attempts if e.interactive}
    return Summary(
        batch_id=batch_id,
        generated_at=datetime.now(UTC),
        groups=_grouped(episodes, retries, asks, _group_key, tokens),
        by_agent=_grouped(episodes, retries, asks, lambda e: (ALL, ALL, ALL, e.agent, ALL), tokens),
        overall=overall[0] if overall else None,
        unscored=[e for e in episodes if outcome(e) in ("error", "aborted")],
        checks=check_rates(attempts, checks),
        phases=phase_rates(attempts, phases, checks),
        repeats=[
            *sorted(repeat_rows(attempts, _group_key), key=lambda r: (_sort_key(r.key), r.k)),
            *sorted(
                repeat_rows(attempts, lambda e: (ALL, ALL, ALL, e.agent, ALL)),
                key=lambda r: (r.key, r.k),
            ),
            *repeat_rows(attempts, lambda e: (ALL, ALL, ALL, ALL, ALL)),
        ],
        paired=paired_rows(attempts),
    )


def _group_key(e: EpisodeRecord) -> GroupKey:
    return (e.app, e.level, kind(e), e.agent, e.user_mode)


# -- one way to write the figures, for every consumer ---------------------------------

COLUMNS = [
    "app",
    "level",
    "kind",
    "agent",
    "user",
    "episodes",
    "passed",
    "failed",
    "errors",
    "aborted",
    "retries",
    "success",
    "credit",
    "steps",
    "asked",
    "asks/ep",
]


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def cells(g: GroupStats) -> list[str]:
    """A group's figures as text, one per `COLUMNS` entry."""
    return [
        g.app,
        g.level,
        g.kind,
        g.agent,
        g.user,
        str(g.episodes),
        str(g.passed),
        str(g.failed),
        str(g.errors),
        str(g.aborted),
        str(g.retries),
        pct(g.success_rate),
        num(g.mean_score),
        num(g.mean_steps, 1),
        pct(g.ask_rate),
        num(g.asks_per_episode, 1),
    ]


POLICY_NOTE = (
    "success = passed / attempts (passed + failed); credit, steps and asks are over "
    "the attempts; an error of the agent's own is a failure, other errors "
    "(infrastructure and the like) and aborted episodes are counted apart and left out "
    "of every rate; a batch slot counts once, its other tries are retries."
)
"""The policy in one line, under every table of figures."""


# -- the checkpoint and reliability tables (app.metrics.checkpoints) -----------------


def interval(bounds: tuple[float, float] | None, signed: bool = False) -> str:
    """A 95% interval as `[lo–hi%]`; "-" where there is none."""
    if bounds is None:
        return "-"
    low, high = bounds
    if signed:
        return f"[{low * 100:+.0f}–{high * 100:+.0f}%]"
    return f"[{low * 100:.0f}–{high * 100:.0f}%]"


def rate_cell(rate: Rate) -> str:
    """A rate with its interval: `67% [21–94%]`; "-" with no trials."""
    return "-" if rate.value is None else f"{pct(rate.value)} {interval(rate.interval)}"


def mean_cell(mean: Mean, signed: bool = False) -> str:
    if mean.value is None:
        return "-"
    shown = f"{mean.value * 100:+.0f}%" if signed else pct(mean.value)
    return f"{shown} {interval(mean.interval, signed)}"


def number_cell(mean: Mean, digits: int = 2, signed: bool = False) -> str:
    """A mean that is not a share, with its interval: `12.50 [8.10–16.90]`; "-" with no
    values, the mean alone below two."""
    if mean.value is None:
        return "-"
    sign = "+" if signed else ""
    shown = f"{mean.value:{sign}.{digits}f}"
    if mean.interval is None:
        return shown
    low, high = mean.interval
    return f"{shown} [{low:{sign}.{digits}f}–{high:{sign}.{digits}f}]"


RELIABILITY_COLUMNS = [
    "app",
    "level",
    "kind",
    "agent",
    "user",
    "n",
    "success",
    *(f"credit≥{k:g}" for k in THRESHOLDS),
    "asked",
    "steps",
]
"""Every rate over the group's attempts (n), with its 95% Wilson interval."""


def reliability_cells(g: GroupStats) -> list[str]:
    return [
        g.app,
        g.level,
        g.kind,
        g.agent,
        g.user,
        str(g.finished),
        rate_cell(g.success),
        *(rate_cell(g.success_at(k)) for k in THRESHOLDS),
        rate_cell(g.asked_rate),
        num(g.mean_steps, 1),
    ]


CHECK_COLUMNS = ["task", "agent", "user", "check", "name", "decides", "passed", "rate"]


def check_cells(c: CheckRate) -> list[str]:
    return [
        c.task_id,
        c.agent,
        c.user,
        c.path,
        c.name,
        "yes" if c.counts else "no (beside)",
        f"{c.rate.k}/{c.rate.n}",
        rate_cell(c.rate),
    ]


PHASE_COLUMNS = ["task", "agent", "user", "phase", "attempts", "reached", "passed", "rate"]


def phase_cells(p: PhaseRate) -> list[str]:
    return [
        p.task_id,
        p.agent,
        p.user,
        f"phases[{p.phase}]",
        str(p.attempts),
        str(p.reached),
        f"{p.rate.k}/{p.rate.n}",
        rate_cell(p.rate),
    ]


REPEAT_COLUMNS = ["app", "level", "kind", "agent", "user", "k", "units", "pass@k", "pass^k"]


def repeat_cells(r: RepeatRow) -> list[str]:
    return [*r.key, str(r.k), str(r.units), mean_cell(r.pass_at), mean_cell(r.pass_hat)]


PAIRED_COLUMNS = ["first", "second", "tasks", "first success", "second success", "difference"]


def paired_cells(p: PairedRow) -> list[str]:
    return [
        p.first,
        p.second,
        str(p.difference.n),
        pct(p.first_rate),
        pct(p.second_rate),
        mean_cell(p.difference, signed=True),
    ]


RELIABILITY_NOTE = (
    "rates are over the attempts (n) with their 95% Wilson interval; credit≥k = share "
    "of attempts with partial credit at least k; checks: leaf success over the scored "
    "attempts (an agent's own error recorded none); phases: passed of the attempts "
    "that reached the phase; pass@k (unbiased) and pass^k (all k succeed) per task × "
    "agent × user with at least k attempts, with a 95% t interval over those units; "
    "paired: first minus second success rate over the tasks both attempted, 95% t "
    "interval."
)
