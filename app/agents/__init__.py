"""Agents: the policies that act. `base` (the `Agent` protocol and its observation),
`scripted` (reference solutions and replays), `null`, `openai` (OpenAI-compatible model
endpoints with DeskLoop's own tools), `adapters` (computer-use models in their
families' own formats: pyautogui, UI-TARS, Qwen, Anthropic, OpenAI computer use),
`replay` (a recorded episode played back), `person` (a person driving through a VNC
viewer), `families` (the one table of model families, coordinate conventions and
computer tools), `spec` (the typed agent spec and its one parser) and `factory` (a
spec → an agent).

May import the desktops' contract, the RFB proxy, tasks, the store (a replay reads a
recorded episode), the endpoint client and core.
"""
