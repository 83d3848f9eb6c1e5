"""Adapters: model families' native action formats read as DeskLoop actions, and the
`deskloop` family (DeskLoop's own tools), which keeps a loop of its own (its package
says why): the one stack of model agents.

Each family's output becomes `app.core.actions` actions and DONE / ASK / FAIL, and
none of it is ever executed as code: pyautogui code and UI-TARS actions are parsed
with `ast`, tool calls are read as data. The modules: `coords` (the coordinate
contracts and the screenshot sizes they need), `config` (`AdapterConfig`), `base` (the
`Family` protocol), the families (`pyautogui_code`, `uitars`, `qwen` over chat
completions through `chat`; `anthropic`, the Messages API; `openai_cua`, the Responses
API), `agent` (`AdapterAgent`, the loop), `deskloop` (`DeskLoopAgent`, its own loop)
and `endpoint_agent` (what both loops share: the client's lifetime and the endpoint's
failures in the agent's terms). Key names of every family are normalised
by `app.core.keys`.
"""

from app.agents.adapters.agent import AdapterAgent
from app.agents.adapters.config import ADAPTERS, AdapterConfig
from app.agents.adapters.coords import CONVENTIONS, CoordinateContract, smart_resize
from app.agents.adapters.deskloop import DeskLoopAgent, DeskLoopConfig

ModelConfig = DeskLoopConfig | AdapterConfig
"""A model agent's config: DeskLoop's tools', or an adapter's."""

__all__ = [
    "ADAPTERS",
    "CONVENTIONS",
    "AdapterAgent",
    "AdapterConfig",
    "CoordinateContract",
    "DeskLoopAgent",
    "DeskLoopConfig",
    "ModelConfig",
    "smart_resize",
]
