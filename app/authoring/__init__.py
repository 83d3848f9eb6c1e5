"""Authoring tasks by demonstration: record a person's work once, compile it into a
reference that replays, diff the desktop's state and propose the task's checks.

Floor: with the batch, the environment and proving (above the episode runner and the
desktops it records); below the CLI and the UI. It never imports Textual.

- `recording`: the recording folder (meta, events written as they happen, frames);
- `recorder`: records a person on a live desktop through the recording proxy (marks, end);
- `compile`: a recording → a reference script with window and image-anchor guards;
- `start_state`: the start state a recording begins in (a task's, or the app on some files);
- `state`: snapshots of the desktop's home (start, each boundary, end) with copies;
- `analysis`: the facts of each snapshot's files (images, XCF, Kdenlive, Blender, renders);
- `diff`: two snapshots' difference, files and facts;
- `propose`: checks proposed from a diff, valid by construction, with why and assets;
- `draft`: a compiled recording → a task of the library, its assets and its reference.

Proving an authored task (the reference three times, null and untouched, one skip
replay per sub-goal) is `app.proving.prove`.
"""
