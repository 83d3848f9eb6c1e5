"""Studies: people working with agents under planned conditions.

`model` is the study file's format and `loader` reads and checks it; `design` plans
each participant's conditions and tasks (Williams designs) and measures the balance;
`instruments` holds the questionnaires and their scoring. A study's sessions run
episodes and its pilots run batches, so the package sits above `app.batch` and
`app.episode` and below the interfaces (`app.ui`, `app.cli`); it never imports Textual.
"""
