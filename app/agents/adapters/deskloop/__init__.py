"""The `deskloop` family: a model agent with DeskLoop's own tools, over any
OpenAI-compatible chat-completions endpoint.

It is one of the adapters' families, on the same endpoint client, agent base
(`app.agents.adapters.endpoint_agent`), families table and `pixels` coordinate
contract, but it keeps a loop of its own (`DeskLoopAgent`) rather than being a `Family`
of `AdapterAgent`. That loop reads several actions from one answer, answers looks at
once and keeps a family's conversation between requests; DeskLoop's tools ask for one
action per step and are rebuilt from scratch each step, and what the loop records per
step (`mode`, `sent_size`, `tool_call`, `json_action`) and with the episode (`tool_mode`)
is its own. Folding it in would change those records for every episode run with it.

Each step is one stateless request: a system prompt, then one user message with
the whole conversation (the active instruction marked), the agent's recent
actions (and why any was rejected), and the screenshot as a data-URL image,
resized to fit `image_width` × `image_height`. Rebuilding the prompt every step
keeps requests valid on endpoints that refuse images or tool results in history.

The protocol's actions are offered as tools: the GUI actions plus `done`, `ask`
and `fail`, always all of them, so the tool list never tells the model whether
a task is ambiguous. A model without tool calling (`tool_mode="json"`, or a tools
request answered with plain text) answers in the JSON action format:

    {"action": "click", "x": 512, "y": 300}
    {"action": "type", "text": "hello"}
    {"action": "ask", "question": "Which size do you want?"}

(one object; a ```json fence around it is fine). Coordinates are pixels of the
screenshot sent and are scaled to the real screen.

Outcomes: an answer that is not a usable action raises `MalformedAction` (the
runner records a rejected step and asks again). The request goes through
`app.endpoints.client`, whose one retry policy the LLM user shares: when its
retries or its deadline run out the agent raises `AgentUnavailable` (the episode
ends as `error`, and a batch retries it); a request the endpoint refuses (a 4xx
other than 408/409/425/429) raises `AgentError`. The API key comes from the
environment variable named by `api_key_env` and is never logged or recorded.

The modules, along the request's way: `config` (settings), `prompt` (system
prompt, tools, the user message), `screen` (the screenshot's pixels back to the
screen's), `answer` (the answer → an action) and `agent` (the loop).
"""

from app.agents.adapters.deskloop.agent import DeskLoopAgent
from app.agents.adapters.deskloop.answer import action_from_call, action_from_text, read_answer
from app.agents.adapters.deskloop.config import DeskLoopConfig, ToolMode
from app.agents.adapters.deskloop.prompt import TOOL_PARAMETERS, tool_definitions
from app.agents.adapters.deskloop.screen import on_screen, pixels_contract

__all__ = [
    "TOOL_PARAMETERS",
    "DeskLoopAgent",
    "DeskLoopConfig",
    "ToolMode",
    "action_from_call",
    "action_from_text",
    "on_screen",
    "pixels_contract",
    "read_answer",
    "tool_definitions",
]
