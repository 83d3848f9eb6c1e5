"""Tasks: the model of a task file (`model`) and the loader that validates files,
parses their check trees and resolves assets inside the task folder (`loader`). The
model holds the parsed triggers (`app.core.triggers`) and check trees (`app.checks.tree`)
that everything downstream uses.

May import the checks (to validate evaluate trees) and core.
"""
