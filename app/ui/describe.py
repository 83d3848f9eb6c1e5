"""Plain-text descriptions the screens show (no Textual here, so they are tested alone)."""

from __future__ import annotations

import re
from typing import Any

from app.checks.tree import CheckGroup, CheckLeaf, EvalNode
from app.core.triggers import describe_trigger
from app.tasks.model import LaunchStep, SleepStep, Task, UploadStep, WaitWindowStep


def describe_setup_step(step: Any) -> str:
    match step:
        case UploadStep(upload=spec):
            return f"upload {spec.src} → {spec.dest}"
        case LaunchStep(launch=argv):
            return "launch " + " ".join(argv)
        case WaitWindowStep(wait_window=spec):
            what = " ".join(
                part
                for part in (
                    f"class {spec.wm_class}" if spec.wm_class else "",
                    f"title /{spec.name}/" if spec.name else "",
                )
                if part
            )
            return f"wait for a window ({what}, up to {spec.timeout:g} s)"
        case SleepStep(sleep=seconds):
            return f"sleep {seconds:g} s"
    return repr(step)


def describe_check_tree(node: EvalNode, depth: int = 0) -> list[str]:
    pad = "  " * depth
    extra = []
    if node.weight != 1.0:
        extra.append(f"weight {node.weight:g}")
    if not node.required:
        extra.append("optional")
    suffix = f" ({', '.join(extra)})" if extra else ""
    if isinstance(node, CheckLeaf):
        params = node.params.model_dump(exclude_none=True)
        shown = ", ".join(f"{k}={v}" for k, v in params.items())
        return [f"{pad}- {node.spec.name}: {shown}{suffix}"]
    assert isinstance(node, CheckGroup)
    lines = [f"{pad}- {node.op} of:{suffix}"]
    for child in node.children:
        lines.extend(describe_check_tree(child, depth + 1))
    return lines


def task_markdown(task: Task) -> str:
    """The task as the Tasks screen's detail pane shows it."""
    kind = "interactive" if task.interactive else "standard"
    out = [
        f"## {task.title}",
        f"`{task.id}` · {task.app} · {task.level} · {kind} · "
        f"budget {task.budget.steps} steps / {task.budget.seconds:g} s",
        "",
        "### Instruction",
        task.instruction.strip(),
        "",
        "### Phases",
    ]
    if not task.phases:
        out.append("none (a standard task)")
    for i, phase in enumerate(task.phases, 1):
        kind_note = f" as {phase.kind}" if phase.kind else ""
        out.append(f"{i}. *{describe_trigger(phase.trigger)}*{kind_note}: {phase.message.strip()}")
        tree = task.phase_tree(i - 1)
        if tree is not None:
            out.append("   checked when delivered:")
            out += ["   " + line for line in describe_check_tree(tree, 1)]
    out += ["", "### Setup"]
    out += [f"{i}. {describe_setup_step(s)}" for i, s in enumerate(task.setup, 1)] or ["none"]
    out += ["", "### Checks", *describe_check_tree(task.eval_tree), ""]
    out.append(f"Reference solution: {task.reference or 'none'}  ")
    out.append(f"File: {task.source}")
    return "\n".join(out)


def flow(text: str) -> str:
    """Task text with the YAML file's line breaks undone (blank lines kept), for
    panes that wrap text themselves."""
    paragraphs = re.split(r"\n\s*\n", text.strip())
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


END_WORDS = {
    "done": "the agent said DONE",
    "fail": "the agent gave up (FAIL)",
    "step_budget": "the step budget ran out",
    "time_budget": "the time budget ran out",
    "aborted": "aborted",
    "error": "an error",
}


def describe_end(end_reason: str | None, passed: bool | None, score: float | None) -> str:
    """How an episode ended and what the checks said, in words that cannot contradict
    each other: the score is the final state's (app.metrics.summary's policy), however
    the episode ended, so 'FAIL' and 'passed' are said apart."""
    how = END_WORDS.get(end_reason or "", end_reason or "ended")
    if score is None:
        return f"{how} · not scored"
    verdict = "the final state passes the checks" if passed else "the checks fail"
    return f"{how} · {verdict} (score {score:.2f})"
