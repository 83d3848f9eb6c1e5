"""Model endpoints: the one client for OpenAI-compatible chat-completions servers.

`client` owns everything about talking to such an endpoint that the model agent
(`app.agents.adapters.deskloop`) and the LLM user (`app.users.llm`) share: the settings every
caller gives (`EndpointConfig`: base URL, key variable, model, sampling, timeouts,
retries, deadline), the request, explicit httpx timeouts, the one retry policy and
the total deadline per call, and the typed errors that tell an unavailable endpoint
(`EndpointUnavailable`, which a batch retries) from a refused request
(`EndpointRefused`, which it does not). What a request asks and what its answer
means stay with the callers. `cache` keeps answers on disk for the callers that reuse
them (the model judge, the LLM user): one file format, one key.

It sits below agents and users because those two are siblings that may not import
each other. May import `app.core` only.
"""
