"""A batch's options: how its episodes run (backend, concurrency, pool, limits, user,
model endpoints: the agent's and the judge's). A batch records them with its suite,
so a resume runs as the batch began; only the pool and the concurrency may be given
anew.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from app.agents.adapters import AdapterConfig
from app.agents.openai import OpenAIConfig
from app.batch.hosts import URIS_ENV, Host, describe_pool, parse_hosts
from app.core.errors import DeskLoopError
from app.episode.judge import JudgeConfig


@dataclass(frozen=True)
class BatchOptions:
    backend: str = "local"
    concurrency: int = 1
    time_limit: float | None = None
    """Wall-clock seconds per episode (setup to score); None: task budget + 300 s."""
    retries: int = 2
    """Extra tries of a slot after an infrastructure error, in one run."""
    openai: OpenAIConfig | AdapterConfig | None = None
    """The model agents' endpoint and, for an adapter, its family (`AdapterConfig`)."""
    user: str = "simulated"
    """simulated | llm (app.users.llm, configured by `llm_user`)."""
    llm_user: dict[str, Any] | None = None
    store_frames: bool = True
    judge: JudgeConfig | None = None
    """The model judge's endpoint for the tasks' `judge` checks (app.episode.judge)."""
    hosts: tuple[Host, ...] = ()
    """libvirt only: the URIs desktops are placed on, each with its capacity. Empty:
    every desktop on the default URI ($DESKLOOP_LIBVIRT_URI), as many as the
    concurrency."""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise DeskLoopError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.hosts and self.backend != "libvirt":
            raise DeskLoopError(
                f"a pool of libvirt URIs (--libvirt-uri, {URIS_ENV}) needs --backend "
                f"libvirt, not {self.backend}"
            )
        total = sum(host.capacity for host in self.hosts)
        if self.hosts and self.concurrency > total:
            raise DeskLoopError(
                f"concurrency {self.concurrency} is more than the pool's total capacity "
                f"{total} ({describe_pool(self.hosts)}); lower --concurrency or give the "
                "hosts more capacity (URI*N)"
            )
        if self.retries < 0:
            raise DeskLoopError(f"retries must be >= 0, got {self.retries}")
        if self.time_limit is not None and self.time_limit <= 0:
            raise DeskLoopError(f"time limit must be positive, got {self.time_limit}")

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "time_limit": self.time_limit,
            "retries": self.retries,
            "openai": None if self.openai is None else asdict(self.openai),
            "user": self.user,
            "llm_user": self.llm_user,
            "store_frames": self.store_frames,
            "judge": None if self.judge is None else asdict(self.judge),
            "libvirt_uris": [str(host) for host in self.hosts],
        }

    @classmethod
    def from_json(
        cls,
        data: dict[str, Any],
        concurrency: int | None = None,
        hosts: Sequence[Host] | None = None,
    ) -> BatchOptions:
        """Options recorded with a batch; `hosts` replaces the recorded pool. The
        concurrency defaults to the pool's total capacity, else 1."""
        openai = data.get("openai")
        judge = data.get("judge")
        pool = tuple(hosts) if hosts else parse_hosts(data.get("libvirt_uris") or [])
        return cls(
            backend=data.get("backend", "local"),
            concurrency=(sum(h.capacity for h in pool) or 1)
            if concurrency is None
            else concurrency,
            time_limit=data.get("time_limit"),
            retries=data.get("retries", 2),
            openai=model_config(openai),
            user=data.get("user", "simulated"),
            llm_user=data.get("llm_user"),
            store_frames=data.get("store_frames", True),
            judge=None if judge is None else JudgeConfig(**judge),
            hosts=pool,
        )


def model_config(data: dict[str, Any] | None) -> OpenAIConfig | AdapterConfig | None:
    """A model agent's config as `to_json` recorded it: an adapter's has `adapter`."""
    if data is None:
        return None
    if "adapter" in data:
        return AdapterConfig(**data)
    return OpenAIConfig(**data)
