"""What a failed task-library assertion prints: how the episode ended and why.

A reference solution that stops early ends with the scripted agent's FAIL, whose
reason (the guard that timed out and the window it saw instead) is in the last step;
without it a CI failure only says "fail != done".
"""

from __future__ import annotations

from app.episode.events import EpisodeResult
from app.store import Store


def episode_story(store: Store, result: EpisodeResult, last_steps: int = 4) -> str:
    steps = store.steps(result.episode_id)
    lines = [f"status={result.status} end_reason={result.end_reason} score={result.score}"]
    if result.error:
        lines.append(f"error: {result.error}")
    for step in steps[-last_steps:]:
        lines.append(
            f"step {step.idx}: {step.description}" + (f" [{step.error}]" if step.error else "")
        )
    for check in store.checks(result.episode_id):
        lines.append(f"check {check.name}: {'pass' if check.passed else 'FAIL'}: {check.evidence}")
    return "\n".join(lines)
