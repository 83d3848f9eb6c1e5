"""`deskloop batch run|list|show` and `deskloop report`."""

from __future__ import annotations

import argparse
import json
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from app.cli.agent_options import (
    USER_TIMEOUT,
    add_judge_options,
    add_openai_options,
    add_timeout_option,
    judge_config,
    openai_config,
)
from app.cli.common import open_store, print_err, run_async
from app.core.errors import DeskLoopError
from app.metrics.tables import print_table


def cmd_batch_run(args: argparse.Namespace) -> int:
    from app.batch import (
        BatchOptions,
        hosts_from_env,
        load_suite,
        parse_hosts,
        resolve_tasks,
        resume_batch,
        start_batch,
    )

    def log(text: str) -> None:
        print_err(text)

    # The pool is checked before the database is touched: a bad one records nothing.
    hosts = parse_hosts(args.libvirt_uri) if args.libvirt_uri else None
    if not args.resume:
        if hosts is not None and args.backend != "libvirt":
            raise DeskLoopError(f"--libvirt-uri needs --backend libvirt, not {args.backend}")
        if hosts is None and args.backend == "libvirt":
            hosts = hosts_from_env()
        pool = hosts or ()
        # The warm desktops take places of the pool too.
        default = max(1, sum(h.capacity for h in pool) - args.warm) if pool else 1
        options = BatchOptions(
            backend=args.backend,
            concurrency=default if args.concurrency is None else args.concurrency,
            time_limit=args.time_limit,
            retries=args.retries,
            hosts=pool,
            warm=args.warm,
            ray=args.ray,
        )
    # The cluster is joined, and its desktops counted, before anything is recorded: a
    # batch it cannot run is refused without leaving a batch behind.
    cluster = join_cluster(args.ray, log) if args.ray is not None else None
    with open_store(args.db) as store:
        if args.resume:
            if args.suite or args.task or args.agent:
                raise DeskLoopError(
                    "--resume takes no suite, --task or --agent: it reruns "
                    "the recorded suite of that batch"
                )
            if args.agent_timeout is not None or args.user_timeout is not None:
                raise DeskLoopError(
                    "--resume takes no --agent-timeout or --user-timeout: the batch's "
                    "episodes keep the timeouts it was started with"
                )
            if args.judge_model is not None:
                raise DeskLoopError(
                    "--resume takes no --judge-model: the batch's episodes keep the judge "
                    "it was started with"
                )
            runner = resume_batch(
                store, args.resume, concurrency=args.concurrency, hosts=hosts, log=log,
                ray=args.ray,
            )  # fmt: skip
        else:
            tasks_refs: list[str] = []
            agents: list[str] = []
            repeats = args.repeats
            agent_timeout = None
            endpoint: dict[str, Any] | None = None
            if args.suite:
                suite = load_suite(args.suite)
                tasks_refs += suite.tasks
                agents += suite.agents
                repeats = repeats or suite.repeats
                agent_timeout = suite.agent_timeout
                if suite.endpoint is not None:
                    endpoint = suite.endpoint.model_dump(exclude_none=True)
            tasks_refs += args.task or []
            agents += args.agent or []
            if not tasks_refs or not agents:
                raise DeskLoopError(
                    "a batch needs tasks and agents: give a SUITE file, or --task and --agent"
                )
            tasks = resolve_tasks(tasks_refs, args.tasks_dir)
            llm_user = None
            if args.user_phrase_phases and args.user != "llm":
                raise DeskLoopError("--user-phrase-phases needs --user llm")
            if args.user_timeout is not None and args.user != "llm":
                raise DeskLoopError("--user-timeout needs --user llm")
            if args.user == "llm":
                if not args.user_model:
                    raise DeskLoopError("--user llm needs --user-model M")
                llm_user = {
                    "model": args.user_model,
                    "base_url": args.user_base_url or args.base_url,
                    "api_key_env": args.api_key_env,
                    "phrase_phases": args.user_phrase_phases,
                }
                if args.user_timeout is not None:
                    llm_user["deadline"] = args.user_timeout
            options = replace(
                options,
                openai=openai_config(args, agents, agent_timeout, endpoint),
                user=args.user,
                llm_user=llm_user,
                judge=judge_config(args),
            )
            runner = start_batch(
                store, tasks, agents, repeats or 1, options, batch_id=args.batch_id, log=log
            )
        if runner.options.ray is not None:
            if cluster is None:  # resumed on the cluster the batch was started with
                cluster = join_cluster(runner.options.ray, log)
            use_cluster(runner, cluster, args.concurrency)
        print_err(
            f"batch {runner.batch_id}: {len(runner.pending())} episode(s) to run "
            f"(resume with: deskloop batch run --resume {runner.batch_id})"
        )
        if runner.options.hosts:
            print_err(
                f"desktops on {len(runner.options.hosts)} libvirt host(s): "
                + ", ".join(str(h) for h in runner.options.hosts)
                + f"; {runner.options.concurrency} at once"
            )
        rows = run_async(runner.run())
    print_slots(rows)
    for host, errors in runner.host_failures.items():
        print_err(f"host {host}: {len(errors)} desktop(s) failed at start-up; last: {errors[-1]}")
    print(f"\nbatch {runner.batch_id}; see `deskloop report --batch {runner.batch_id}`")
    return 0 if all(row.status == "finished" for row in rows) else 1


def join_cluster(address: str, log: Any) -> tuple[Any, int]:
    """Join the Ray cluster at `address`: its `RayNodes` and how many desktops its
    nodes offer.

    Raises:
        DeskLoopError: nobody answers there, or its nodes offer no desktop.
    """
    from app.batch.ray_nodes import RESOURCE, RayNodes

    nodes = RayNodes(address, log)
    capacity = nodes.capacity()
    if capacity < 1:
        nodes.close()
        raise DeskLoopError(
            f"the Ray cluster at {address} offers no desktops: start its nodes "
            f"with --resources '{{\"{RESOURCE}\": N}}'; nothing was recorded"
        )
    return nodes, capacity


def use_cluster(runner: Any, cluster: tuple[Any, int], concurrency: int | None) -> None:
    """Run the batch's tries on the joined cluster; without --concurrency, as many at
    once as its nodes offer desktops."""
    from dataclasses import replace as replaced

    nodes, capacity = cluster
    runner.remote = nodes
    if concurrency is None:
        runner.options = replaced(runner.options, concurrency=capacity)
    print_err(
        f"episodes on the Ray cluster at {runner.options.ray}: {capacity} desktop(s) "
        f"offered; {runner.options.concurrency} at once"
    )


def print_slots(rows: list[Any]) -> None:
    out = []
    for row in rows:
        e = row.episode
        out.append(
            [
                row.slot.task_id,
                row.slot.agent,
                str(row.slot.repeat),
                "-" if e is None else str(e.id),
                row.status,
                "-" if e is None or e.status != "finished" else ("yes" if e.passed else "no"),
                "-" if e is None or e.score is None else f"{e.score:.2f}",
                "-" if e is None else str(e.steps),
                str(row.attempts),
            ]
        )
    print_table(
        ["task", "agent", "repeat", "episode", "status", "passed", "score", "steps", "tries"],
        out,
    )


def cmd_batch_list(args: argparse.Namespace) -> int:
    from app.metrics.slots import batch_table
    from app.store import Store

    with Store(args.db) as store:
        rows = []
        for batch in store.list_batches():
            slots = batch_table(store, batch.id)
            finished = sum(1 for s in slots if s.status == "finished")
            rows.append(
                [
                    batch.id,
                    batch.created_at.strftime("%Y-%m-%d %H:%M"),
                    str(len(batch.suite["tasks"])),
                    ",".join(batch.suite["agents"]),
                    str(batch.suite["repeats"]),
                    f"{finished}/{len(slots)}",
                ]
            )
    print_table(["batch", "created (UTC)", "tasks", "agents", "repeats", "finished"], rows)
    return 0


def cmd_batch_show(args: argparse.Namespace) -> int:
    from app.metrics.slots import batch_table, table_json
    from app.store import Store

    with Store(args.db) as store:
        rows = batch_table(store, args.batch)
    if args.json:
        print(json.dumps(table_json(rows)))
    else:
        print_slots(rows)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from app.metrics.report import format_report, write_jsonl
    from app.metrics.scores import SCORE_CHOICES, ScoreChoice, scored_report
    from app.store import Store

    with Store(args.db) as store:
        choices: list[ScoreChoice] = list(SCORE_CHOICES) if args.score == "both" else [args.score]
        for choice in choices:
            report = scored_report(store, args.batch, choice)
            print(report.score_note)
            print(format_report(report.summary))
            print(report.integrity_note)

        def html() -> str:
            # Only here: matplotlib and jinja2 cost an import a text report does not need.
            from app.metrics.html_report import write_html

            # The last report printed (with --score both, the latest scores').
            write_html(report, args.html)
            return f"wrote {args.html}"

        def jsonl() -> str:
            count = write_jsonl(store, args.jsonl, batch_id=args.batch)
            return f"wrote {count} episode(s) to {args.jsonl}"

        asked = [
            (o, p, w)
            for o, p, w in (("--html", args.html, html), ("--jsonl", args.jsonl, jsonl))
            if p
        ]
        return _write_outputs(asked)


def _write_outputs(outputs: list[tuple[str, Path, Callable[[], str]]]) -> int:
    """Write every output asked for, one failing not stopping the others; each that
    could not be written is named with why, and the exit status is then 2."""
    failed = 0
    for option, path, write in outputs:
        try:
            print_err(write())
        except Exception as exc:  # named below; the others are still written
            failed += 1
            if not isinstance(exc, OSError | DeskLoopError):
                traceback.print_exc()  # a bug: its traceback, as the command line would
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            print_err(f"not written: {path} ({option}): {type(exc).__name__}: {reason}")
    return 2 if failed else 0


def register(sub: Any) -> None:
    from app.desktops.factory import BACKENDS

    batch = sub.add_parser(
        "batch",
        help="run suites of tasks × agents × repeats; list and show batches",
        description="Unattended batch runs over a pool of desktops, recorded so that a "
        "killed batch can be resumed exactly.",
    )
    batch_sub = batch.add_subparsers(dest="batch_command", metavar="COMMAND")
    run = batch_sub.add_parser(
        "run",
        help="run a suite (or resume a batch)",
        description="Run every (task, agent, repeat) slot of a suite on N desktops at once. "
        "A suite file is YAML: tasks: [ids, files, folders or globs], agents: [...], "
        "repeats: N, agent_timeout: SECONDS. --task and --agent add to it (or replace it); "
        "--agent-timeout overrides its agent_timeout.",
    )
    run.add_argument("suite", nargs="?", type=Path, help="suite YAML file")
    run.add_argument("--task", action="append", help="task id, file, folder or glob (repeatable)")
    run.add_argument(
        "--agent",
        action="append",
        help="reference | null | scripted:FILE | openai[:MODEL] | ADAPTER:MODEL (repeatable)",
    )
    run.add_argument("--repeats", type=int, help="runs of each (task, agent) (default: 1)")
    run.add_argument(
        "--concurrency",
        type=int,
        help="desktops at once (default: the libvirt pool's total capacity, else 1)",
    )
    run.add_argument("--backend", choices=list(BACKENDS), default="local")
    run.add_argument(
        "--libvirt-uri",
        action="append",
        metavar="URI[*N]",
        help="a libvirt host of the desktop pool and how many desktops it runs at once "
        "(N, default 1), e.g. qemu+ssh://user@lab2/system*4 (repeatable; --backend "
        "libvirt; default: $DESKLOOP_LIBVIRT_URIS, comma separated, else one host, "
        "$DESKLOOP_LIBVIRT_URI). With --resume: replaces the batch's recorded pool",
    )
    run.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run the episodes as Ray tasks on the nodes of the Ray cluster at ADDRESS "
        "(host:port, or auto) that offer desktops (the deskloop_desktop resource), each "
        "on its own backend; this machine records them. With --resume: the cluster's "
        "address, if it moved",
    )
    run.add_argument(
        "--warm",
        type=int,
        default=0,
        metavar="N",
        help="desktops brought to the next episodes' start states (reset + setup) while "
        "the current ones run, beyond --concurrency (default: 0)",
    )
    run.add_argument(
        "--time-limit",
        type=float,
        help="wall-clock seconds per episode, setup to score (default: task budget + 300)",
    )
    run.add_argument(
        "--retries",
        type=int,
        default=2,
        help="extra tries of an episode after an infrastructure error (default: 2)",
    )
    run.add_argument("--resume", metavar="BATCH_ID", help="run the unfinished slots of a batch")
    run.add_argument("--batch-id", help="name for a new batch (default: generated)")
    run.add_argument(
        "--user",
        choices=["simulated", "llm"],
        default="simulated",
        help="simulated (the phase script) or llm (free answers from hidden details)",
    )
    run.add_argument("--user-model", help="model of the LLM user")
    run.add_argument("--user-base-url", help="endpoint of the LLM user (default: --base-url)")
    run.add_argument(
        "--user-phrase-phases",
        action="store_true",
        help="the LLM user also words the task's phase messages (when they come is still "
        "up to their triggers); the script's text where the endpoint fails",
    )
    add_timeout_option(run, "--user-timeout", "the LLM user", USER_TIMEOUT)
    add_openai_options(run)
    add_judge_options(run)
    run.set_defaults(func=cmd_batch_run)

    lst = batch_sub.add_parser("list", help="recorded batches and how far each got")
    lst.set_defaults(func=cmd_batch_list)

    show = batch_sub.add_parser("show", help="the table of one batch: a row per slot")
    show.add_argument("batch")
    show.add_argument("--json", action="store_true", help="print the table as JSON")
    show.set_defaults(func=cmd_batch_show)
    batch.set_defaults(func=lambda args: (batch.print_help(), 0)[1])

    report = sub.add_parser(
        "report",
        help="success rate, partial credit, steps and asks by app × level × agent",
        description="Summarize recorded episodes (all, or one batch's final slots) by app, "
        "level, interactive/standard and agent; optionally write an HTML page and a JSONL "
        "export that loads with the `datasets` library.",
    )
    report.add_argument("--batch", help="only this batch (its final episode per slot)")
    report.add_argument("--html", type=Path, help="write a self-contained HTML page here")
    report.add_argument("--jsonl", type=Path, help="export episodes as JSON lines here")
    report.add_argument(
        "--score",
        choices=["original", "latest", "both"],
        default="original",
        help="count each episode's original score (default), its latest rescore where it "
        "has one, or print both reports (the HTML page takes the last)",
    )
    report.set_defaults(func=cmd_report)
