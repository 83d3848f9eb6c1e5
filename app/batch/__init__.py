"""Batch runs: a suite of tasks × agents × repeats over a pool of desktops.

A *slot* is one (task, agent spec, repeat index) of the suite (`app.metrics.slots`).
The package owns:

- `suite`: suite files (a validated model, like task files) and the tasks their
  references name;
- `hosts`: the libvirt hosts of a pool, `URI[*N]`, from `--libvirt-uri` or
  $DESKLOOP_LIBVIRT_URIS;
- `options`: a batch's options, recorded with it so a resume runs the same way;
- `pool`: the desktops of a run, placed on hosts with free capacity and reused from
  try to try;
- `warm`: the warm pool, desktops brought to the next slots' start states while the
  current episodes run (`--warm N`);
- `ray_nodes`: tries run as Ray tasks on the nodes of a Ray cluster (`--ray`), their
  episodes brought back whole to the driver's store; the only module importing Ray;
- `retry`: which failed tries are retried and which mark their host down;
- `progress`: the progress bar on stderr;
- `runner`: `start_batch`, `resume_batch` and the `BatchRunner` that runs the slots.

Crash safety comes from the store. A batch records its suite (the `batches` table) and
every episode records its slot (`batch_agent`, `batch_repeat`, `batch_attempt`) while
it is still running. A resume reruns exactly the slots without a finished episode;
finished episodes are never touched, and a unique index makes a second finished
episode for one slot impossible. So a batch killed with SIGKILL and resumed ends with
the same table as one that ran through.

An episode that ends in an infrastructure error (the desktop, VNC, the guest channel,
an unavailable model endpoint, the batch's time limit) is retried on a fresh desktop,
up to `retries` more times, on another host where one has room; every try stays
recorded. Errors that would repeat (a broken script, a refused request) are not
retried. A host whose desktop failed before the agent's first step is taken out of
the pool while another host is up.

May import the episode loop, metrics, agents, users, desktops, tasks, store and core
below it; never the UI or the CLI above it, nor `app.env` beside it. The names below
(`__all__`) are what the CLI, the bench and library users build batches with; the
pool's and the retry policy's parts are imported from their modules.
"""

from app.batch.hosts import Host, hosts_from_env, parse_hosts
from app.batch.options import BatchOptions
from app.batch.pool import DesktopFactory
from app.batch.runner import BatchRunner, resume_batch, start_batch
from app.batch.suite import Suite, load_suite, resolve_tasks
from app.episode.launch import DesktopSpec

__all__ = [
    "BatchOptions",
    "BatchRunner",
    "DesktopFactory",
    "DesktopSpec",
    "Host",
    "Suite",
    "hosts_from_env",
    "load_suite",
    "parse_hosts",
    "resolve_tasks",
    "resume_batch",
    "start_batch",
]
