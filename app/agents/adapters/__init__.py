"""Adapters: model families' native action formats read as DeskLoop actions.

Each family's output becomes `app.core.actions` actions and DONE / ASK / FAIL, and
none of it is ever executed as code: pyautogui code and UI-TARS actions are parsed
with `ast`, tool calls are read as data. The modules: `coords` (the coordinate
contracts and the screenshot sizes they need), `config` (`AdapterConfig`), `base` (the
`Family` protocol), the families (`pyautogui_code`, `uitars`, `qwen` over chat
completions through `chat`; `anthropic`, the Messages API; `openai_cua`, the Responses
API) and `agent` (`AdapterAgent`, the loop). Key names of every family are normalised
by `app.core.keys`.
"""

from app.agents.adapters.agent import AdapterAgent
from app.agents.adapters.config import ADAPTERS, AdapterConfig
from app.agents.adapters.coords import CONVENTIONS, CoordinateContract, smart_resize

__all__ = [
    "ADAPTERS",
    "CONVENTIONS",
    "AdapterAgent",
    "AdapterConfig",
    "CoordinateContract",
    "smart_resize",
]
