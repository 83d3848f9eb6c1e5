"""Episodes recorded through the Store for the report and results tests."""

from __future__ import annotations

from typing import Any, Literal

from app.core.vocabulary import EndReason, ErrorKind, UserMode
from app.store import Store
from tests.check_outcomes import outcome


def add_episode(
    store: Store,
    *,
    task: str = "gimp-a",
    app: str = "gimp",
    level: str = "L1",
    interactive: bool = False,
    agent: str = "reference",
    user: UserMode = "simulated",
    status: Literal["finished", "error", "running"] = "finished",
    end_reason: EndReason | None = None,
    error: str = "Desktop error: did not start",
    error_kind: ErrorKind | None = None,
    passed: bool = True,
    score: float = 1.0,
    steps: int = 3,
    asks: int = 0,
    batch: str | None = None,
    slot: tuple[str, int, int] | None = None,
) -> int:
    """An episode with its instruction, `steps` steps (one frame), `asks` questions and,
    when finished, two checks. It ends `done` (finished) or `error` (error) unless
    `end_reason` says otherwise; an error records `error` and `error_kind` (by default
    `aborted` for an abort, else `desktop`, as the default words say). `running` leaves
    it running."""
    eid = store.start_episode(
        task_id=task,
        task_path=f"tasks/{app}/{task}.yaml",
        task_sha256="0" * 64,
        app=app,
        level=level,
        interactive=interactive,
        agent=agent,
        user_mode=user,
        backend="local",
        batch_id=batch,
    )
    if slot is not None:
        store.tag_batch_slot(eid, agent=slot[0], repeat=slot[1], attempt=slot[2])
    store.record_message(eid, role="user", kind="instruction", text="Do it.", step=0, source="task")
    png = b"\x89PNG fake frame bytes"  # the store keeps frame bytes as given
    frame = store.save_frame(eid, 0, png)
    actions: list[dict[str, Any]] = [
        {"kind": "click", "x": 1, "y": 2, "button": "left", "count": 1},
        {"kind": "type", "text": "hi"},
        {"kind": "rejected", "raw": {"name": "nope", "arguments": "{"}},
    ]
    for idx in range(steps):
        action = actions[idx % len(actions)]
        store.record_step(
            eid,
            idx=idx,
            action=action,
            kind=action["kind"],
            description=action["kind"],
            started_at=1_764_480_000.0 + idx,
            agent_seconds=0.5,
            act_seconds=0.01,
            settle_seconds=0.2,
            frame=frame,
            phase_index=None,
            active_message_id=None,
            error="unknown tool" if action["kind"] == "rejected" else None,
            agent_info={"prompt_tokens": 100 + idx, "tool_call": {"name": action["kind"]}}
            if agent.startswith("openai")
            else None,
        )
    for n in range(asks):
        store.record_message(
            eid, role="agent", kind="question", text=f"q{n}?", step=n, source="agent"
        )
        store.record_message(
            eid, role="user", kind="answer", text="No idea.", step=n, source="simulated"
        )
    if status == "finished":
        store.record_score(
            eid,
            passed=passed,
            score=score,
            checks=[
                outcome("all/0", passed=passed, score=score),
                outcome(
                    "all/1",
                    "image_size",
                    params={"width": 400},
                    passed=passed,
                    score=score,
                    weight=2.0,
                ),
            ],
        )
    if status == "running":
        return eid
    if status == "error" and error_kind is None:
        error_kind = "aborted" if end_reason == "aborted" else "desktop"
    store.finish_episode(
        eid,
        status=status,
        end_reason=end_reason or ("done" if status == "finished" else "error"),
        steps=steps,
        error=None if status == "finished" else error,
        error_kind=None if status == "finished" else error_kind,
    )
    return eid
