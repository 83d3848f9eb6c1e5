"""Proving tasks: whether a task's checks tell a solved task from an unsolved one.

- `verify`: a task's reference scores 1, the null agent and the untouched start state
  score 0 (`deskloop tasks verify`);
- `audit`: the library's health, one row per task: references without integrity flags,
  the cheater flagged, rescores of the archive equal to the original (`deskloop tasks audit`);
- `prove`: an authored task's reference replays, and each sub-goal is needed (one skip
  replay per sub-goal; `deskloop author verify`).

Floor: with the batch, the environment and authoring (it launches whole episodes
through `app.episode.launch` and builds agents); below the CLI and the UI. It never
imports Textual.
"""
