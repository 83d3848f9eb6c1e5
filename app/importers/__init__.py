"""Importers: other benchmarks' task files turned into DeskLoop task folders.

- `deskcraft`: DeskCraft's OSWorld-style JSON tasks (`deskloop tasks import deskcraft`).

Floor: with the desktops, above the task model and loader it writes for (each task it
writes is loaded back to be validated); it may import the tasks, checks and core, and
never a desktop, the episode loop or anything above. Only the CLI imports it.
"""
