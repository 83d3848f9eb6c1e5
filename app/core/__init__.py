"""The ground floor: value types and vocabulary every other package shares.

Owns the agent's action space (`actions`, `keys`), the error classes (`errors`), the
episode's words (`vocabulary`: statuses, end reasons, message kinds...), the phase
triggers (`triggers`), a check's outcome (`outcomes`), a model judge's question and
answer (`judgements`), the conversation's shapes
(`conversation`), screen frames and settle results (`frames`), the windows a desktop
showed (`windows`),
guest command results (`commands`), the /proc helpers (`procfs`), and two things every
file-reading or printing layer does alike: YAML files validated by pydantic models with
`FILE: field.path: message` errors (`validation`) and text tables laid out by rich
(`tables`).

Imports nothing from `app`, and no I/O happens at import time. `procfs` and this file
must stay standard-library only: the desktop watchdog imports them by path.
"""
