"""What the Live screen says about the running episode, as text: its status lines, its
phases, and the chat box's prompt. Pure functions of the session, so the screen only
places them."""

from __future__ import annotations

from rich.text import Text

from app.ui.describe import flow
from app.ui.services.episode import EpisodeSession


def status_lines(session: EpisodeSession, passthrough: bool, zoom: int) -> list[Text]:
    """The status lines of a running (or ended) episode: what runs and how, its state
    and budget, and where the person drives when they are the agent."""
    steps_left, seconds_left = session.budget_left()
    episode = f" #{session.episode_id}" if session.episode_id else ""
    first = Text.from_markup(
        f"[b]{session.task.id}[/b]{episode} · {session.agent_spec} · {session.user_mode}"
    )
    if session.control.paused:
        first.append(" PAUSED ", "reverse")
    if passthrough:
        first.append(" KEYS→DESKTOP (F6) ", "reverse bold")
    if zoom > 1:
        first.append(f" zoom {zoom}×")
    second = Text(session.status)
    if not session.ended:
        second.append(f" · budget {steps_left} steps, {seconds_left:.0f} s")
    lines = [first, second]
    human = session.human
    if human is not None and human.address is not None and not session.ended:
        # A line of its own: the address must not be cut off by the budget.
        proxy = human.address
        lines.append(
            Text(
                f"you drive (here, or VNC {proxy.host}:{proxy.port} pw {proxy.password})"
                " · chat: done [ANSWER] | ask Q | fail R"
            )
        )
    elif session.result is not None and session.result.error:
        second.append(f" · {session.result.error}", "red")
    # One line each, cut with an ellipsis: the frame below keeps its rows.
    for line in lines:
        line.no_wrap, line.overflow = True, "ellipsis"
    return lines


def phase_lines(session: EpisodeSession) -> list[Text]:
    """One line per phase: delivered, due (waiting for the person), pending, later."""
    pending = session.pending_phase
    waiting = session.waiting
    due = waiting.phase if waiting is not None and session.person is not None else None
    lines = []
    for phase in session.phases:
        # The pending phase in full; the others one line each, so all fit.
        line = Text(no_wrap=phase is not pending, overflow="ellipsis")
        if phase.delivered_step is not None:
            line.append(f"✓ {phase.index + 1} at step {phase.delivered_step}: ", "green")
        elif phase is pending and phase.index == due:
            line.append(f"▶ {phase.index + 1} due now, waiting for you: ", "bold reverse yellow")
        elif phase is pending:
            line.append(f"▶ {phase.index + 1} {phase.trigger}: ", "bold yellow")
        else:
            line.append(f"· {phase.index + 1} {phase.trigger}: ", "dim")
        line.append(flow(phase.message))
        lines.append(line)
    return lines


def chat_prompt(session: EpisodeSession | None, draft_in_box: bool) -> tuple[str, str]:
    """The chat pane's border title and the box's placeholder: what the episode waits
    for from the person, and how to give it."""
    waiting = session.waiting if session and session.person else None
    due = ""
    if waiting is not None and waiting.phase is not None:
        # Where the script's message is: in the box, unless the person's own
        # text was there first (it is never replaced).
        where = "is in the box" if draft_in_box else "is in the phases box"
        due = f" · phase {waiting.phase + 1} is due: the script's message {where}"
    if session is None or session.ended:
        title = "conversation"
        placeholder = "no running episode"
    elif waiting is not None and waiting.what == "answer":
        # The key first: a long question is cut at the border's end.
        title = f"c answers · the agent asks: {waiting.question}{due}"
        placeholder = "type your answer, enter sends it"
    elif waiting is not None and waiting.what == "review" and waiting.phase is not None:
        # No F3 here: accepting is refused while the phase is due (action_accept).
        title = f"c, then enter sends it · the agent says it is DONE{due}"
        placeholder = "your message for this phase (enter): the episode continues"
    elif waiting is not None and waiting.what == "review":
        title = f"F3 accepts, c gives feedback · the agent says it is DONE{due}"
        placeholder = "feedback (enter): the episode continues with it"
    elif waiting is not None and waiting.what == "phase":
        title = (
            f"phase {(waiting.phase or 0) + 1} is due: c, then enter sends the script's "
            "message, or edit it, or write your own"
        )
        placeholder = "your message for this phase (enter)"
    else:
        title = "conversation"
        placeholder = "message to the agent, sent as the kind on the left (enter)"
    return title, placeholder
