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
from app.agents.adapters.deskloop import DeskLoopConfig
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
    openai: DeskLoopConfig | AdapterConfig | None = None
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
    warm: int = 0
    """Desktops beyond the concurrency brought to the next slots' start states while
    the current episodes run (app.batch.warm); 0: each episode sets up its own."""
    ray: str | None = None
    """The address of a Ray cluster (`auto`: the one this machine belongs to) whose
    nodes run the episodes on their own backends (app.batch.ray_nodes); None: this
    machine's pool runs them."""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise DeskLoopError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.hosts and self.backend != "libvirt":
            raise DeskLoopError(
                f"a pool of libvirt URIs (--libvirt-uri, {URIS_ENV}) needs --backend "
                f"libvirt, not {self.backend}"
            )
        if self.ray is not None and (self.hosts or self.warm):
            raise DeskLoopError(
                "--ray places episodes on the cluster's nodes: it takes no --libvirt-uri "
                "pool and no --warm (each node sets up its own desktops)"
            )
        if self.warm < 0:
            raise DeskLoopError(f"warm must be >= 0, got {self.warm}")
        total = sum(host.capacity for host in self.hosts)
        if self.hosts and self.concurrency + self.warm > total and self.warm:
            raise DeskLoopError(
                f"concurrency {self.concurrency} and {self.warm} warm desktop(s) need "
                f"{self.concurrency + self.warm} places, more than the pool's total "
                f"capacity {total} ({describe_pool(self.hosts)}); lower --concurrency or "
                "--warm, or give the hosts more capacity (URI*N)"
            )
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
            "warm": self.warm,
            "ray": self.ray,
        }

    @classmethod
    def from_json(
        cls,
        data: dict[str, Any],
        concurrency: int | None = None,
        hosts: Sequence[Host] | None = None,
        ray: str | None = None,
    ) -> BatchOptions:
        """Options recorded with a batch; `hosts` replaces the recorded pool and `ray`
        the recorded cluster's address. The concurrency defaults to the pool's total
        capacity, else 1."""
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
            warm=data.get("warm", 0),
            ray=ray or data.get("ray"),
        )


def model_config(data: dict[str, Any] | None) -> DeskLoopConfig | AdapterConfig | None:
    """A model agent's config as `to_json` recorded it: an adapter's has `adapter`."""
    if data is None:
        return None
    if "adapter" in data:
        return AdapterConfig(**data)
    return DeskLoopConfig(**data)
