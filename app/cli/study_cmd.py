"""`deskloop study validate|plan|status|run|pilot|export|report|withdraw`: studies of
people working with agents."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.cli.common import print_err
from app.core.errors import DeskLoopError

if TYPE_CHECKING:
    from app.studies.design import Plan
    from app.studies.model import Study

DEFAULT_STUDIES = Path("studies")

EPILOG = """\
examples:
  deskloop study validate                         check every study in studies/
  deskloop study validate studies/ask-or-not.yaml
  deskloop study plan ask-or-not --participants 12
                                                  give P01..P12 their conditions and task
                                                  orders, record them, show the balance
  deskloop study status ask-or-not                who is done, who is mid-way, what is left
  deskloop study run ask-or-not --participant P07 seat P07: serve their view in the browser
                                                  and run their session to its end
  deskloop study report ask-or-not --html results/ask-or-not.html
                                                  measures per condition, paired differences,
                                                  questionnaires, order effects; and a page
"""


def _library_ids(tasks_dir: Path) -> set[str]:
    from app.tasks.loader import load_tasks

    tasks, _ = load_tasks(tasks_dir)
    return {task.id for task in tasks}


def cmd_validate(args: argparse.Namespace) -> int:
    from app.studies.loader import load_study, study_files

    paths: list[Path] = []
    for target in args.paths or [args.studies_dir]:
        paths += study_files(target) if Path(target).is_dir() else [Path(target)]
    if not paths:
        where = ", ".join(str(t) for t in args.paths or [args.studies_dir])
        print_err(f"no study files in {where} (a study is studies/<id>.yaml)")
        return 1
    ids = _library_ids(args.tasks_dir)
    bad = 0
    for path in paths:
        try:
            study = load_study(path, ids)
        except DeskLoopError as exc:
            bad += 1
            print_err(str(exc))
            continue
        trials = sum(len(block) for block in study.tasks.blocks)
        print(
            f"ok  {path}: {len(study.conditions)} conditions, {trials} tasks, "
            f"{study.design.participants} participants"
        )
    if bad:
        print_err(f"{bad} of {len(paths)} study files are invalid")
    return 1 if bad else 0


def _print_plan(study: Study, plan: Plan) -> None:
    from app.metrics.tables import print_table, render_table
    from app.studies.design import balance

    rows = [
        [
            a.code,
            " → ".join(a.conditions),
            ", ".join(t.task for t in a.trials if not t.practice),
        ]
        for a in plan.assignments
    ]
    print(f"{study.id}: plan of seed {plan.seed}")
    print_table(["participant", "conditions", "tasks"], rows)
    conditions = tuple(c.id for c in study.conditions)
    table = balance([a.conditions for a in plan.assignments], conditions)
    header, *counts = table.table()
    print("\nconditions by position (each cell: participants)")
    print(render_table(header, counts))
    if study.design.participants == "within" and len(conditions) > 1:
        position = "yes" if table.by_position else "no (add participants to fill the design)"
        carry = "yes" if table.by_carry_over else "no"
        print(f"balanced by position: {position}; by carry-over: {carry}")


def cmd_plan(args: argparse.Namespace) -> int:
    from app.cli.common import open_store
    from app.studies.design import draw_seed, participant_codes, plan_study
    from app.studies.loader import find_study
    from app.studies.plans import plan_in_store

    study = find_study(args.study, args.studies_dir)
    if args.participants < 1:
        raise DeskLoopError("--participants: at least 1")
    if args.dry_run:
        seed = args.seed if args.seed is not None else study.design.seed
        plan = plan_study(study, participant_codes(args.participants), seed or draw_seed())
        _print_plan(study, plan)
        print("(a dry run: nothing was recorded)")
        return 0
    with open_store(args.db) as store:
        plan, added = plan_in_store(store, study, args.participants, args.seed)
    _print_plan(study, plan)
    if added:
        print(f"recorded {len(added)} participants in {args.db}: {', '.join(added)}")
    else:
        print(f"the plan in {args.db} has these participants already; nothing was added")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from app.cli.common import open_store
    from app.metrics.tables import print_table, render_table
    from app.studies.loader import find_study
    from app.studies.plans import ROW_HEADER, balance_so_far, progress

    study = find_study(args.study, args.studies_dir)
    with open_store(args.db) as store:
        people = progress(store, study)
    rows = [person.row() for person in people]
    print(f"{study.id}: {len(people)} participants")
    print_table(list(ROW_HEADER), rows)
    states = [p.state for p in people]
    counts = ", ".join(f"{states.count(s)} {s}" for s in dict.fromkeys(states))
    left = sum(len(p.trials) - p.done for p in people if p.state != "withdrawn")
    print(f"\n{counts}; {left} trials left")
    table = balance_so_far(study, people)
    header, *cells = table.table()
    if cells and len(header) > 1:
        print("\nconditions by position among those done (each cell: participants)")
        print(render_table(header, cells))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from app.cli.common import open_store, run_async
    from app.core.opener import open_in_browser
    from app.core.settings import read_settings
    from app.seat.participant import novnc_problem, run_participant
    from app.studies.loader import find_study
    from app.tasks.loader import find_task

    study = find_study(args.study, args.studies_dir)
    missing = novnc_problem(read_settings().novnc_dir)
    if missing is not None:
        raise DeskLoopError(f"the participant view cannot show a desktop: {missing}")
    tasks = {ref: find_task(ref, [args.tasks_dir]) for ref in study.task_ids()}
    code = args.participant

    def announce(url: str) -> None:
        print(
            f"{code}'s view of {study.id}: {url}\n"
            "Open it in the participant's browser on this machine; it opens this session, "
            "so show it to no one else. Ctrl-C stops the session; run this again to resume.",
            flush=True,
        )
        if not args.no_browser and open_in_browser(url):
            print("(opened in the browser)", flush=True)

    with open_store(args.db) as store:
        plan = store.studies.plan(study.id)
        if plan is None:
            raise DeskLoopError(
                f"study {study.id} has no plan in {args.db}: record one first "
                f"(deskloop study plan {study.id} --participants N)"
            )
        report = run_async(
            run_participant(
                store,
                study,
                code,
                tasks=tasks,
                backend=args.backend,
                seed=plan.seed,
                announce=announce,
                progress=lambda line: print(line, file=sys.stderr, flush=True),
            )
        )
    if not report.consented:
        print(f"{code} did not consent: nothing was recorded")
        return 0
    resumed = f" ({len(report.resumed_after)} resumed)" if report.resumed_after else ""
    print(
        f"{code}: session over; {len(report.trials_run)} trials run{resumed}, "
        f"{report.questionnaires} questionnaires answered"
    )
    return 0


def cmd_pilot(args: argparse.Namespace) -> int:
    from app.cli.common import open_store, run_async
    from app.studies.loader import find_study
    from app.studies.pilot import run_pilot
    from app.tasks.loader import find_task

    study = find_study(args.study, args.studies_dir)
    tasks = {ref: find_task(ref, [args.tasks_dir]) for ref in study.task_ids()}
    participants = args.participants or _filled_design(study)
    with open_store(args.db) as store:
        report = run_async(
            run_pilot(
                store,
                study,
                participants,
                tasks,
                backend=args.backend,
                progress=lambda line: print(line, file=sys.stderr, flush=True),
            )
        )
    for session in report.sessions:
        print(
            f"{session.code}: {len(session.trials_run)} trials run"
            + (f" ({len(session.resumed_after)} resumed)" if session.resumed_after else "")
            + f", {session.questionnaires} questionnaires reached (left empty)"
        )
    for code, why in report.failed.items():
        print_err(f"{code}: stopped: {why}")
    print(f"pilot recorded as study {report.study} in {args.db}")
    return 1 if report.failed else 0


def cmd_export(args: argparse.Namespace) -> int:
    from app.cli.common import open_store
    from app.studies.export import export_study
    from app.studies.loader import find_study
    from app.studies.pilot import pilot_id

    study = find_study(args.study, args.studies_dir)
    sid = pilot_id(study) if args.pilot else study.id
    with open_store(args.db) as store:
        if store.studies.plan(sid) is None:
            raise DeskLoopError(f"study {sid} has no plan in {args.db}: nothing to export")
        written = export_study(store, study, args.folder, sid)
    for path in written:
        print(path)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from app.cli.common import open_store
    from app.studies.loader import find_study
    from app.studies.pilot import pilot_id
    from app.studies.report import format_study_report, study_report

    study = find_study(args.study, args.studies_dir)
    sid = pilot_id(study) if args.pilot else study.id
    with open_store(args.db) as store:
        if store.studies.plan(sid) is None:
            raise DeskLoopError(
                f"study {sid} has no plan in {args.db}: nothing to report "
                f"(deskloop study plan records one)"
            )
        report = study_report(store, study, sid)
    print(format_study_report(report))
    if args.html is None:
        return 0
    # Only here: jinja2 and matplotlib cost an import the text report does not need.
    from app.metrics.html_report import write_page
    from app.studies.report import render_study_page

    sys.stdout.flush()
    try:
        write_page(args.html, render_study_page(report))
    except OSError as exc:
        reason = exc.strerror or str(exc)
        print_err(f"not written: {args.html} (--html): {type(exc).__name__}: {reason}")
        return 2
    print_err(f"wrote {args.html}")
    return 0


def cmd_withdraw(args: argparse.Namespace) -> int:
    from app.cli.common import open_store
    from app.studies.loader import find_study

    study = find_study(args.study, args.studies_dir)
    if not args.yes:
        if not sys.stdin.isatty():
            raise DeskLoopError(
                f"withdrawing {args.code} erases their episodes, frames and answers for "
                "good; pass --yes to confirm"
            )
        typed = input(f"Erase everything of {args.code} in {study.id}? Type the code to confirm: ")
        if typed.strip() != args.code:
            print_err("not confirmed: nothing was erased")
            return 1
    with open_store(args.db) as store:
        erased = store.studies.withdraw(study.id, args.code)
    said = ", ".join(f"{count} {what}" for what, count in erased.items() if count)
    print(f"{args.code} withdrew from {study.id}; erased: {said or 'nothing (no data yet)'}")
    print("the code is kept as withdrawn, so the plan's balance shows the gap")
    return 0


def _filled_design(study: Study) -> int:
    """Enough participants to fill the design once: a Williams square's rows (within),
    one per condition (between)."""
    from app.studies.design import williams_rows

    n = len(study.conditions)
    if study.design.participants == "between" or study.design.counterbalance == "none":
        return n
    return len(williams_rows(n))


def register(sub: Any) -> None:
    study = sub.add_parser(
        "study",
        help="plan and check studies of people working with agents",
        description="A study is studies/<id>.yaml: conditions (the agent beside the "
        "participant, the participant's role, what each side may do), tasks in blocks, a "
        "counterbalanced design and questionnaires. See docs/studies.md.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    study.add_argument(
        "--studies-dir",
        type=Path,
        default=DEFAULT_STUDIES,
        help="the folder of study files, for study ids (default: studies)",
    )
    ssub = study.add_subparsers(dest="study_command", metavar="ACTION", required=True)
    validate = ssub.add_parser(
        "validate",
        help="check study files; exit 1 if any is invalid",
        description="Check each study file: its fields, its design, its consent file and "
        "that every task it names is in the library (--tasks-dir). Each problem is one "
        "line, FILE:LINE: field: reason.",
    )
    validate.add_argument(
        "paths", nargs="*", type=Path, help="study files or folders (default: studies)"
    )
    validate.set_defaults(func=cmd_validate)
    plan = ssub.add_parser(
        "plan",
        help="assign conditions and task orders to participant codes",
        description="Give participants P01..PN their condition order (a Williams design "
        "within participants, conditions in turn between them) and their task order "
        "(shuffled from the study's seed), record it in the database (--db), and print "
        "how balanced the plan is. The plan's seed is fixed once; a larger N later adds "
        "participants on the next rows of the same design.",
    )
    plan.add_argument("study", help="a study id (in --studies-dir) or a study file")
    plan.add_argument(
        "--participants", type=int, required=True, metavar="N", help="participants P01..PN"
    )
    plan.add_argument(
        "--seed", type=int, help="the plan's seed (default: the study's, else a fresh one)"
    )
    plan.add_argument("--dry-run", action="store_true", help="print the plan without recording it")
    plan.set_defaults(func=cmd_plan)
    status = ssub.add_parser(
        "status",
        help="who is done, who is mid-way, trials left, balance so far",
        description="Where each participant of the study's plan stands: consent, trials "
        "done and interrupted, the next trial, and the balance of the condition orders "
        "of those who finished.",
    )
    status.add_argument("study", help="a study id (in --studies-dir) or a study file")
    status.set_defaults(func=cmd_status)
    run = ssub.add_parser(
        "run",
        help="seat a participant: their session in the browser, from consent to the end",
        description="""\
Serve the participant view on 127.0.0.1 (a free port) and print its address, which
carries this session's key once (the page then keeps it in a cookie); with a display,
open it in the browser. The participant works there: consent, each trial's brief, the
live desktop and the conversation with the agent, the questionnaires and breaks; the
page shows nothing of the evaluator.

The session runs the participant's plan (deskloop study plan) from wherever it stopped:
Ctrl-C or a closed terminal leaves it resumable; the trial cut off is recorded as
interrupted and tried again on the next run. deskloop study status shows where each
participant stands.""",
        epilog="example:\n  deskloop study run ask-or-not --participant P07",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("study", help="a study id (in --studies-dir) or a study file")
    run.add_argument(
        "--participant", required=True, metavar="CODE", help="the participant's code, e.g. P07"
    )
    run.add_argument("--backend", choices=["local", "libvirt"], default="local")
    run.add_argument(
        "--no-browser", action="store_true", help="only print the address; open no browser"
    )
    run.set_defaults(func=cmd_run)
    pilot = ssub.add_parser(
        "pilot",
        help="run the whole plan with simulated participants",
        description="Run every participant's session with a stand-in before any person "
        "sits down: it consents, plays the user as each condition's stand_in says (the "
        "phase script, or the LLM user) or the agent (the task's reference), and leaves "
        "the questionnaires empty. Recorded as the study pilot:<id> (never mixed with the "
        "participants' data); running it again resumes it. Exit 1 if a session stopped.",
    )
    pilot.add_argument("study", help="a study id (in --studies-dir) or a study file")
    pilot.add_argument(
        "--participants",
        type=int,
        metavar="N",
        help="stand-ins P01..PN (default: enough to fill the design once)",
    )
    pilot.add_argument("--backend", choices=["local", "libvirt"], default="local")
    pilot.set_defaults(func=cmd_pilot)
    export = ssub.add_parser(
        "export",
        help="write the study's tidy tables (CSV and Parquet) and a codebook",
        description="Write trials (one row per participant × trial with every measure), "
        "responses (one row per answered item), scores (per questionnaire), messages and "
        "steps (without the words typed) as CSV and Parquet into FOLDER, and codebook.md "
        "naming every column, its unit and how it was computed. Participants are codes.",
    )
    export.add_argument("study", help="a study id (in --studies-dir) or a study file")
    export.add_argument("folder", type=Path, help="where the files go (made if missing)")
    export.add_argument("--pilot", action="store_true", help="export the study's pilot")
    export.set_defaults(func=cmd_export)
    report = ssub.add_parser(
        "report",
        help="the study's figures per condition, as text and an HTML page",
        description="Print, per condition, every collaboration measure's mean with its "
        "95%% interval (success as a rate with its Wilson interval); within participants, "
        "the paired difference of every two conditions over the participants; the "
        "questionnaires' scores per instrument and subscale; and success and time on "
        "task by the condition's place in the order. Finished trials only, never the "
        "practice. --html also writes them as one page with plots; exit 2 if it cannot "
        "be written (the text is printed first).",
    )
    report.add_argument("study", help="a study id (in --studies-dir) or a study file")
    report.add_argument("--pilot", action="store_true", help="report the study's pilot")
    report.add_argument("--html", type=Path, metavar="FILE", help="also write an HTML page here")
    report.set_defaults(func=cmd_report)
    withdraw = ssub.add_parser(
        "withdraw",
        help="erase everything of a participant who withdrew",
        description="Erase the participant's episodes (every step, message, check and "
        "score), their frames and archived files, their tries and their answers, and say "
        "what was erased. The code is kept, marked withdrawn, so the plan's balance shows "
        "the gap. Asks to type the code unless --yes.",
    )
    withdraw.add_argument("study", help="a study id (in --studies-dir) or a study file")
    withdraw.add_argument("code", help="the participant's code, e.g. P07")
    withdraw.add_argument("--yes", action="store_true", help="do not ask to confirm")
    withdraw.set_defaults(func=cmd_withdraw)
