"""The terminal UI (Textual). The only package that may import Textual.

`app` assembles the screens (`screens/`, thin: they show what the services give them);
`services/` are the headless parts the screens manage (the desktop pool, the episode
session, the live frame feed) and may not import Textual either. May import every
floor below the CLI: the episode loop, metrics, agents, users, desktops, RFB, tasks,
the store and core.
"""
