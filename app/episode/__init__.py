"""The episode loop: one task, one agent, one user, from reset to score.

`protocol` (the pure phase/trigger/budget engine), `setup_steps` (a task's s0 on a
fresh desktop), `events` (what a running episode reports, and its result), `control`
(its options and a person's pause, inject and abort), `runner` (observe → decide →
act → protocol, recorded step by step) and `scoring` (gather the final state, run the
checks). Proving that a task's checks work (`verify`, `audit`) is `app.proving`.

May import the agents, users, probes, desktops, tasks, store, checks and core; never
the batch, metrics, UI or CLI above it.
"""
