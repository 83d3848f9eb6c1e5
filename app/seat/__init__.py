"""The participant's seat in the browser: the participant view (DESIGN.md) a study's
participant works in, served by DeskLoop on 127.0.0.1 with a per-session token.

- `app.seat.view`: what the page shows and what the participant may do next (pure
  asyncio; no web imports).
- `app.seat.seat`: `BrowserSeat`, the studies' `Seat` a person sits in.
- `app.seat.web`: the ASGI app (pages, the JSON state, actions, noVNC, the desktop's
  websocket) and `app.seat.server`: serving it, token and cookie.
"""
