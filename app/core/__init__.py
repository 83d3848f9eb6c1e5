"""The ground floor: value types and vocabulary every other package shares.

Owns the agent's action space (`actions`, `keys`), the error classes (`errors`), the
conversation's shapes (`conversation`), screen frames and settle results (`frames`),
guest command results (`commands`), the /proc helpers (`procfs`) and what every
validated file format shares (`validation`: the strict pydantic base, reading the YAML,
pydantic errors as ``file: field.path: problem`` lines).

Imports nothing from `app`, and no I/O happens at import time. `procfs` and this file
must stay standard-library only: the desktop watchdog imports them by path.
"""
