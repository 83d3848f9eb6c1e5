"""Probers: state made by running a tool in the guest at scoring time.

A check that needs more than a file's bytes (a file's modification time, a Blender
scene dump from `blender -b`, ffprobe's view of a render) declares a `Probe`
(kind + guest path). Scoring runs each distinct probe once per episode through
the guest channel and hands the JSON-like result to the pure check. A prober
never raises for a problem in the guest: it returns `ProbeResult.failure(reason)`,
and the check fails with that reason.

Helper scripts a prober needs in the guest (a Blender dump script, say) are written
at scoring time and removed after, so an agent can neither see nor change them.

May import the desktops' contract (`Guest`), checks and core.
"""

from app.probes.registry import ANSWER_PROBERS, PROBERS, answer_prober, gather_probe, prober

# Importing the modules registers their probers.
from app.probes import blender, stat  # noqa: F401  isort: skip
from app.probes import media, web  # noqa: F401  isort: skip
from app.probes import listdir  # noqa: F401  isort: skip

__all__ = ["ANSWER_PROBERS", "PROBERS", "answer_prober", "gather_probe", "prober"]
