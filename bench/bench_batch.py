"""Episodes per hour of a batch with the scripted reference agent, by backend and concurrency.

    .venv/bin/python bench/bench_batch.py [--task gimp-flip-export] [--episodes 4]
        [--concurrency 1 2 4] [--backend local libvirt] [--libvirt-uri URI[*N] ...]
        [--warm 0 1] [--ray-nodes 2]

For each backend and concurrency level, one batch of `--episodes` episodes (one
task, the reference agent, repeats) runs into a throw-away database. The bench
prints its wall time, episodes per hour and how many passed, then a table of
episodes per hour, one row per backend and warm pool size (`--warm`: desktops
set up for the next episodes while the current ones run, app.batch.warm; 0 is
without a warm pool), and each warm row's ratio to the row without. On libvirt
the pool is `--libvirt-uri` (else $DESKLOOP_LIBVIRT_URIS, else one host); a
level above the pool's capacity is skipped with the reason. The first episode
on each VM place boots the VM and saves the task's start state (minutes under
TCG), so an unmeasured warm-up batch first runs one episode on every place the
highest level uses; the VMs keep their names, so the measured levels restore it.
On a shared 2-core machine the figures move with the load: run it when the
machine is quiet and compare within one run.

`--ray-nodes N` adds a row: the same batches on a Ray cluster started on this machine
for the run (tests/ray_cluster.py: a head offering no desktop and N worker nodes, every
service on 127.0.0.1 only), each node running its episodes on its own local backend
and offering enough desktops for the highest concurrency; the cluster is stopped at the
end. All rows of one run share the machine, so they compare side by side.

Measured on the 2-core development machine, shared with other engineers' test
runs (load average 3-5 during the runs), `--backend local --episodes 4`,
gimp-flip-export, two runs a minute apart:

    backend   concurrency 1   concurrency 2   concurrency 4
    local     487, 465/h      546, 859/h      880, 1163/h     (4/4 passed each)

An episode alone takes 7-8 s (GIMP opens with the image, the reference flips
and exports). More episodes at once help, but on two busy cores by how much
moves a lot from run to run.

Every row in one run, the machine quiet (load average 4-5), `--backend local libvirt
--concurrency 1 2 4 --episodes 4 --ray-nodes 2`, libvirt under TCG (docs/batch.md
says more, including the one failed libvirt episode at concurrency 2):

    backend                warm   concurrency 1   concurrency 2   concurrency 4
    local                  0      470.0           760.1           720.2
    libvirt                0      206.0           58.3            180.2
    ray (2 nodes, local)   0      423.2           723.6           758.3

With warm pools, `--episodes 6 --concurrency 1 --warm 0 1 2` (load average 3-4):

    backend   warm   concurrency 1
    local     0      442.6
    local     1      701.7 (1.59×)
    local     2      677.5 (1.53×)
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

from app.batch import BatchOptions, Host, hosts_from_env, parse_hosts, resolve_tasks, start_batch
from app.cli.common import run_async
from app.core.errors import DeskLoopError
from app.metrics.tables import render_table
from app.store import Store


async def one(
    task_ref: str,
    episodes: int,
    concurrency: int,
    backend: str,
    hosts: tuple[Host, ...],
    warm: int = 0,
    ray: str | None = None,
    label: str = "",
) -> float | None:
    """Episodes per hour of one batch; None when the level cannot run."""
    tasks = resolve_tasks([task_ref], Path("tasks"))
    what = label or f"{backend if ray is None else 'ray':<8} concurrency {concurrency} warm {warm}"
    try:
        options = BatchOptions(
            backend=backend,
            concurrency=concurrency,
            hosts=hosts if backend == "libvirt" and ray is None else (),
            warm=warm,
            ray=ray,
        )
    except DeskLoopError as exc:
        print(f"{what}: skipped: {exc}", flush=True)
        return None
    with (
        tempfile.TemporaryDirectory(prefix="deskloop-bench-") as folder,
        Store(Path(folder) / "db.sqlite") as store,
    ):
        runner = start_batch(
            store, tasks, ["reference"], episodes, options, progress_stream=io.StringIO()
        )
        started = time.monotonic()
        rows = await runner.run()
        seconds = time.monotonic() - started
    passed = sum(1 for r in rows if r.episode is not None and r.episode.passed)
    # The database is thrown away: say here why an episode did not pass.
    for r in rows:
        e = r.episode
        if e is None or not e.passed:
            why = "never ran" if e is None else f"{e.status}, {e.end_reason}, score {e.score}"
            detail = f": {e.error}" if e is not None and e.error else ""
            print(f"  not passed: {r.slot.task_id} #{r.slot.repeat} ({why}){detail}", flush=True)
    rate = episodes / seconds * 3600
    print(
        f"{what}: {episodes} episodes in {seconds:6.1f} s"
        f" = {rate:6.1f} episodes/hour ({passed}/{episodes} passed)",
        flush=True,
    )
    return rate


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} {five:.1f} {fifteen:.1f} on {os.cpu_count()} cores"


async def ray_rates(
    task: str, episodes: int, levels: list[int], nodes: int
) -> dict[tuple[str, int, int], float | None]:
    """Episodes per hour at each concurrency on a Ray cluster of `nodes` local nodes."""
    # The tests' loopback-only cluster: started and stopped here, nothing else touched.
    # `tests` is not installed with the package: found from the repository's root.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.ray_cluster import ray_cluster

    label = f"ray ({nodes} nodes, local)"
    per_node = -(-max(levels) // nodes)  # enough desktops for the highest level
    rates: dict[tuple[str, int, int], float | None] = {}
    with (
        tempfile.TemporaryDirectory(prefix="deskloop-bench-ray-") as folder,
        ray_cluster(Path(folder), {f"node-{i}": per_node for i in range(nodes)}) as cluster,
    ):
        for c in levels:
            rates[label, 0, c] = await one(task, episodes, c, "local", (), ray=cluster.address)
    return rates


async def measure(
    args: argparse.Namespace, hosts: tuple[Host, ...], warms: list[int]
) -> dict[tuple[str, int, int], float | None]:
    """Every row's episodes per hour, keyed by (backend, warm, concurrency)."""
    rates: dict[tuple[str, int, int], float | None] = {}
    # Ray's rows first: they take minutes, a libvirt row's first VMs much longer under
    # emulation, and each row is printed as it ends.
    if args.ray_nodes:
        rates.update(await ray_rates(args.task, args.episodes, args.concurrency, args.ray_nodes))
    for backend in dict.fromkeys(args.backend):
        if backend == "libvirt":
            # Every VM place a level uses boots and makes its start state on its first
            # episode (minutes under TCG); measured, that would be the boot, not the batch.
            places = max(args.concurrency) + max(warms)
            print(f"libvirt warm-up: {places} VM places booted and brought to the start state")
            await one(args.task, places, places, backend, hosts, 0, label="warm-up")
        for concurrency in args.concurrency:
            for warm in warms:
                rates[backend, warm, concurrency] = await one(
                    args.task, args.episodes, concurrency, backend, hosts, warm
                )
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="gimp-flip-export")
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--backend", nargs="+", choices=["local", "libvirt"], default=["local"])
    parser.add_argument("--libvirt-uri", action="append", metavar="URI[*N]")
    parser.add_argument(
        "--warm", type=int, nargs="+", default=[0], metavar="N", help="warm pool sizes"
    )
    parser.add_argument(
        "--ray-nodes", type=int, default=0, metavar="N", help="also on a Ray cluster of N nodes"
    )
    args = parser.parse_args()
    try:
        hosts = parse_hosts(args.libvirt_uri) if args.libvirt_uri else hosts_from_env()
    except DeskLoopError as exc:
        sys.exit(str(exc))
    warms = list(dict.fromkeys(args.warm))
    # What was run, so a table can be told apart from another run's.
    pool = ", ".join(str(h) for h in hosts) or "the default URI (as many VMs as the concurrency)"
    print(
        f"task {args.task}, reference agent, {args.episodes} episodes per batch; "
        f"backends {' '.join(dict.fromkeys(args.backend))}; concurrency "
        f"{' '.join(map(str, args.concurrency))}; warm {' '.join(map(str, warms))}; "
        f"libvirt pool {pool}; Ray nodes {args.ray_nodes or 'none'}"
    )
    print(f"at start: {load_average()}", flush=True)
    ray_label = f"ray ({args.ray_nodes} nodes, local)"
    # One event loop for every row, under the CLI's Ctrl-C handling: the first Ctrl-C
    # aborts the running batch and ends the bench (exit 130), not only that row.
    rates = run_async(measure(args, hosts, warms))
    print(f"\nat the end: {load_average()}")
    print("episodes/hour")
    rows = []
    for backend in dict.fromkeys(args.backend):
        for warm in warms:
            cells = []
            for c in args.concurrency:
                rate, cold = rates[backend, warm, c], rates.get((backend, 0, c))
                cell = "skipped" if rate is None else f"{rate:.1f}"
                if rate is not None and warm and cold:
                    cell += f" ({rate / cold:.2f}×)"
                cells.append(cell)
            rows.append([backend, str(warm), *cells])
    if args.ray_nodes:
        ray_cells = [rates[ray_label, 0, c] for c in args.concurrency]
        rows.append([ray_label, "0", *("skipped" if r is None else f"{r:.1f}" for r in ray_cells)])
    headers = ["backend", "warm", *(f"concurrency {c}" for c in args.concurrency)]
    print(render_table(headers, rows, empty="(no backend)"))


if __name__ == "__main__":
    main()
