"""The conversation of an episode: who said what, of which kind, from where.

The protocol engine writes these, the agents and users read them, and the store keeps
them; they live on the ground floor so none of those needs another to name them. The
words themselves (roles, kinds, sources) are `app.core.vocabulary`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.core.vocabulary import MessageKind, Role, Source


@dataclass(frozen=True)
class Message:
    role: Role
    kind: MessageKind
    text: str
    step: int
    source: Source
    phase_index: int | None = None
