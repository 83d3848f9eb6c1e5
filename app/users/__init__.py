"""The user side of the protocol: who answers the agent's questions and reviews its DONEs.

`simulated` (the task's phase script, the `User` protocol, and `ReadsConversation`
for a user whose answers read the episode so far), `person` (replies from a
person at a UI) and `llm` (free-form answers from a model, for ASKs no phase answers).
Phase delivery is not decided here but by the protocol engine in `app.episode`.

May import `app.tasks`, `app.endpoints` (the LLM user's client) and `app.core`.
"""
