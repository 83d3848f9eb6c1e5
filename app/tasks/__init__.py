"""Tasks: the model of a task file (`model`), its triggers (`triggers`) and the loader
that validates files and resolves assets inside the task folder (`loader`).

May import the checks (to validate evaluate trees) and core.
"""
