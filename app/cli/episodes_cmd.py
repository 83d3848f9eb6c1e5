"""`deskloop episodes list|show|note|tag|export`."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.cli.common import indent_block
from app.core.conversation import describe_origin, message_step
from app.core.integrity import IntegrityFlag
from app.core.judgements import Judgement
from app.core.outcomes import CheckOutcome
from app.core.triggers import trigger_to_raw
from app.metrics.tables import print_table

if TYPE_CHECKING:
    # The store is imported where it is opened: the command line starts without it.
    from app.store import EpisodeRecord


def cmd_list(args: argparse.Namespace) -> int:
    from app.store import Store

    with Store(args.db) as store:
        episodes = store.list_episodes(
            task_id=args.task, status=args.status, agent=args.agent, limit=args.limit
        )
    if args.tag:
        from app.store import normalize_tag

        wanted = normalize_tag(args.tag)
        episodes = [e for e in episodes if wanted in e.tags]
    rows = [
        [
            str(e.id),
            e.task_id,
            e.agent,
            e.user_mode,
            e.status,
            e.end_reason or "",
            str(e.steps),
            "" if e.passed is None else ("yes" if e.passed else "no"),
            "" if e.score is None else f"{e.score:.2f}",
            e.started_at.strftime("%Y-%m-%d %H:%M:%S"),
            " ".join(e.tags),
        ]
        for e in episodes
    ]
    headers = ["id", "task", "agent", "user", "status", "end", "steps", "passed", "score"]
    print_table([*headers, "started (UTC)", "tags"], rows)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from app.store import Store

    with Store(args.db) as store:
        e = store.get_episode(args.id)
        steps = store.steps(args.id)
        messages = store.messages(args.id)
        phases = store.phases(args.id)
        checks = store.checks(args.id)
        judgements = store.judgements(args.id)
        flags, checked = store.flags(args.id)
        final_frame = store.frame_path(e.final_frame) if e.final_frame else None
    print(
        f"episode {e.id} · task {e.task_id} ({e.app} {e.level}) · agent {e.agent} · "
        f"user {e.user_mode} · backend {e.backend}"
    )
    ended = e.ended_at.isoformat(timespec="seconds") if e.ended_at else "-"
    print(
        f"status {e.status} · end {e.end_reason} · steps {e.steps} · "
        f"started {e.started_at.isoformat(timespec='seconds')} · ended {ended}"
    )
    if e.setup is not None:
        ahead = " ahead, on a warm desktop" if e.setup.get("warm") else ""
        print(f"setup {e.setup['seconds']:.1f} s{ahead} · from {e.setup['started_at']}")
        for at, text in e.setup.get("lines", []):
            print(f"  +{at:6.1f} s  {text}")
    if e.tags:
        print(f"tags: {' '.join(e.tags)}")
    if e.note:
        print("note: " + indent_block(e.note, "      "))
    if e.person_wait_seconds:
        print(f"waited for the person {e.person_wait_seconds:.1f} s (off the time budget)")
    if e.paused_seconds:
        print(f"paused {e.paused_seconds:.1f} s (off the time budget)")
    if e.error:
        print(f"error: {e.error}")
    if final_frame is not None:
        print(f"final frame: {final_frame}")
    if e.final_windows is not None:
        print("\n" + "\n".join(e.final_windows.describe()))
    print("\nconversation:")
    for m in messages:
        # Labelled as the steps below are numbered (the ASK of row 12 is 'step 12').
        where = f"[{message_step(m.step, m.role)}]"
        head = f"  {where:<16} {m.role:<5} {m.kind:<12} "
        print(head + indent_block(m.text, " " * len(head)))
        if m.origin is not None:  # person mode: how the person's message came about
            origin = describe_origin(m.origin, m.scripted, m.wait_seconds)
            print(" " * len(head) + f"({origin})")
    if phases:
        print("\nphases:")
        for p in phases:
            where = f" at step {p.delivered_step}" if p.delivered_step is not None else ""
            print(f"  {p.idx + 1}. {p.status}{where}  {json.dumps(trigger_to_raw(p.trigger))}")
    print("\nsteps:")
    for s in steps:
        timing = (
            f"agent {s.agent_seconds * 1000:.0f} ms, act {s.act_seconds * 1000:.0f} ms, "
            f"settle {s.settle_seconds * 1000:.0f} ms"
        )
        err = f"  REJECTED: {s.error}" if s.error else ""
        # Steps the person took over the desktop for are marked; the agent's are not.
        who = "person " if s.actor == "person" else ""
        what = f"{who}{s.description}"
        print(f"  {s.idx:>3}  {what:<40} {timing}{_agent_note(s.agent_info)}{err}")
    print_checks(checks, e)
    print_judgements(judgements)
    print_flags(flags, checked)
    return 0


def print_judgements(judgements: Sequence[Judgement]) -> None:
    """What the model judge was asked and answered: model, sampling, images, verdict."""
    if not judgements:
        return
    print("\njudge (the model's verdicts, as recorded):")
    for j in judgements:
        when = "" if j.phase is None else f" (phase {j.phase + 1})"
        decides = "decides" if j.counts else "beside the checks"
        print(
            f"  {j.path}{when}: {j.model} at {j.base_url}, temperature {j.temperature:g}, "
            f"seed {j.seed}, {decides}{', cached answer' if j.cached else ''}"
        )
        for image in j.images:
            print(f"    image {image.what}: sha256 {image.sha256} ({image.size} bytes)")
        if j.verdict is not None:
            verdict = "pass" if j.verdict.passed else "fail"
            print(f"    {verdict} {j.verdict.score:.2f}: {j.verdict.reasons}")
        else:
            print(f"    no verdict: {j.error}")


def _agent_note(info: dict[str, Any] | None) -> str:
    """Token counts and endpoint latency a model agent reported for the step; a
    replay's divergence from the recording."""
    if not info:
        return ""
    parts = []
    if info.get("prompt_tokens") is not None or info.get("completion_tokens") is not None:
        parts.append(f"tokens {info.get('prompt_tokens')}+{info.get('completion_tokens')}")
    if info.get("latency_s") is not None:
        parts.append(f"model {float(info['latency_s']) * 1000:.0f} ms")
    if info.get("retries"):
        parts.append(f"retries {info['retries']}")
    if info.get("diverged"):
        parts.append(
            f"screen diverged from recorded step {info.get('recorded_step')} "
            f"({float(info.get('screen_difference') or 0):.0%} of pixels)"
        )
    return f", {', '.join(parts)}" if parts else ""


def _print_check_rows(title: str, rows: Sequence[CheckOutcome]) -> None:
    print(f"\n{title}:")
    for c in rows:
        mark = "PASS" if c.passed else "FAIL"
        if c.name == "judge" and c.params.get("counts") is False:
            opt = " (beside: does not decide)"
        else:
            opt = "" if c.required else " (optional)"
        print(
            f"  {mark} {c.path:<16} {c.name}{opt} w={c.weight:g} score {c.score:.2f}: {c.evidence}"
        )


def print_checks(checks: Sequence[CheckOutcome], e: EpisodeRecord) -> None:
    # Phase checks describe the state when a phase arrived; they never count towards
    # the final score, so they are listed apart from it.
    for phase in sorted({c.phase for c in checks if c.phase is not None}):
        rows = [c for c in checks if c.phase == phase]
        _print_check_rows(f"checks when phase {phase + 1} arrived (not scored)", rows)
    final = [c for c in checks if c.phase is None]
    if final:
        _print_check_rows("checks of the final state", final)
    if e.score is not None:
        print(f"\nscore {e.score:.2f} · passed {'yes' if e.passed else 'no'}")
    else:
        print("\nnot scored" + (" (the episode ended in error)" if e.status == "error" else ""))


def print_flags(flags: Sequence[IntegrityFlag], checked: Sequence[str] | None) -> None:
    """An episode's integrity flags with their evidence, and what was looked at."""
    if checked is None:
        print("\nintegrity: not checked (recorded before integrity flags, or not scored)")
        return
    looked = ", ".join(checked) or "nothing"
    if not flags:
        print(f"\nintegrity: no flags (looked at: {looked})")
        return
    print(f"\nintegrity flags (looked at: {looked}); the score above is unchanged by them:")
    for flag in flags:
        print(f"  FLAG {flag.kind}: {flag.summary}")
        for line in flag.evidence:
            print(f"       {line}")


def cmd_note(args: argparse.Namespace) -> int:
    from app.store import Store

    with Store(args.db) as store:
        e = store.annotate_episode(args.id, note=args.text)
    print(f"episode {e.id}: " + (f"note: {e.note}" if e.note else "no note"))
    return 0


def cmd_tag(args: argparse.Namespace) -> int:
    from app.store import Store

    with Store(args.db) as store:
        e = store.annotate_episode(args.id, add_tags=args.tags, remove_tags=args.remove)
    print(f"episode {e.id}: tags: {' '.join(e.tags) or '(none)'}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from app.metrics.export import (
        ExportError,
        choose_episodes,
        write_dataset,
        write_episodes_jsonl,
        write_mp4,
    )
    from app.store import Store

    if args.jsonl is None and args.dataset is None and args.mp4 is None:
        raise ExportError("say what to write: --jsonl PATH, --dataset DIR or --mp4 PATH")
    if args.mp4 is not None and len(args.ids) != 1:
        raise ExportError("--mp4 exports one episode: give exactly one id")
    with Store(args.db) as store:
        if args.mp4 is not None:
            count = write_mp4(store, args.ids[0], args.mp4, fps=args.fps)
            print(f"wrote {count} frame(s) of episode {args.ids[0]} to {args.mp4}")
            return 0
        records = choose_episodes(store, args.ids, args.tag)
        if args.jsonl is not None:
            count = write_episodes_jsonl(store, records, args.jsonl)
            print(f"wrote {count} episode(s) to {args.jsonl}")
        if args.dataset is not None:
            count = write_dataset(store, records, args.dataset)
            print(f"wrote {count} episode(s) as a dataset to {args.dataset}")
    return 0


def register(sub: Any) -> None:
    episodes = sub.add_parser("episodes", help="list and show recorded episodes")
    esub = episodes.add_subparsers(dest="episodes_command", metavar="ACTION", required=True)
    el = esub.add_parser("list", help="list episodes, newest first")
    el.add_argument("--task", help="only this task id")
    el.add_argument("--status", choices=["running", "finished", "error"])
    el.add_argument("--agent", help="only this agent")
    el.add_argument("--tag", help="only episodes with this tag")
    el.add_argument("--limit", type=int, default=50)
    el.set_defaults(func=cmd_list)
    es = esub.add_parser("show", help="one episode: conversation, phases, steps, checks")
    es.add_argument("id", type=int)
    es.set_defaults(func=cmd_show)
    en = esub.add_parser("note", help='set (or, with "", clear) an episode\'s note')
    en.add_argument("id", type=int)
    en.add_argument("text", help='the note; "" clears it')
    en.set_defaults(func=cmd_note)
    et = esub.add_parser("tag", help="add tags to an episode (and remove others with --remove)")
    et.add_argument("id", type=int)
    et.add_argument("tags", nargs="*", metavar="TAG", help="tags to add (one word each)")
    et.add_argument("--remove", nargs="+", default=[], metavar="TAG", help="tags to remove")
    et.set_defaults(func=cmd_tag)

    ex = esub.add_parser(
        "export",
        help="episodes as JSON lines or a Hugging Face dataset; one episode as an MP4",
    )
    ex.add_argument("ids", type=int, nargs="*", metavar="ID", help="default: every ended one")
    ex.add_argument("--tag", help="only episodes with this tag")
    out = ex.add_argument_group("what to write (at least one)")
    out.add_argument("--jsonl", type=Path, help="one episode per line (report --jsonl's rows)")
    out.add_argument(
        "--dataset", type=Path, metavar="DIR", help="a `datasets` dataset (load_from_disk)"
    )
    out.add_argument("--mp4", type=Path, help="one episode's screens as a video (ffmpeg)")
    ex.add_argument("--fps", type=float, default=2.0, help="MP4 frames a second (default 2)")
    ex.set_defaults(func=cmd_export)
