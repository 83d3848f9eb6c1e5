"""A model agent over any OpenAI-compatible chat-completions endpoint.

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
prompt, tools, the user message), `screen` (the screenshot sent, and its pixels
back to the screen's), `answer` (the answer → an action) and `agent` (the loop).
"""

from app.agents.openai.agent import OpenAIAgent
from app.agents.openai.answer import action_from_call, action_from_text, read_answer
from app.agents.openai.config import OpenAIConfig, ToolMode
from app.agents.openai.prompt import TOOL_PARAMETERS, tool_definitions
from app.agents.openai.screen import Scaler, fit_size

__all__ = [
    "TOOL_PARAMETERS",
    "OpenAIAgent",
    "OpenAIConfig",
    "Scaler",
    "ToolMode",
    "action_from_call",
    "action_from_text",
    "fit_size",
    "read_answer",
    "tool_definitions",
]
