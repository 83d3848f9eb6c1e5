"""`ray start` with every address on 127.0.0.1: a test cluster that nothing outside
this machine can reach. Run as `python -m tests.ray_node start ...` (ray's own
arguments). Ray turns a loopback node address into the machine's outward one when
clusters are enabled, and refuses to join a head when they are not: this process
joins with clusters enabled and its addresses kept, and the processes it starts
(raylet, workers) keep 127.0.0.1 through the environment."""

from __future__ import annotations

import os
import sys

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # the processes it starts
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"

from ray._private import ray_constants, services
from ray.scripts.scripts import main

ray_constants.ENABLE_RAY_CLUSTER = True  # this process may join a head
services.resolve_ip_for_localhost = lambda host: host
services.get_node_ip_address = lambda address=None: "127.0.0.1"

if __name__ == "__main__":
    sys.argv = ["ray", *sys.argv[1:]]
    main()  # type: ignore[no-untyped-call]
