"""The tasks whose proofs the test suite re-runs on real desktops.

Proving the whole library (three episodes per task on a real desktop) takes hours; CI
has an hour on two cores. The suite re-runs this fixed sample, and
tests/tasks/test_library.py checks that every task's recorded proof (`tasks verify
--record`) is current. The sample is chosen, not drawn: at least one task per app,
level and kind the library has, and every check kind the library uses, which
test_library.py enforces. When a new task brings a new check kind or fills a new
cell, add it here.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TASKS = ROOT / "tasks"

SAMPLE: dict[str, tuple[str, ...]] = {
    "gimp": (
        "gimp-flip-export",
        "gimp-grayscale-export",
        "gimp-web-portrait",
        "gimp-badge-interactive",
        "gimp-lake-flip-fix",  # L1 interactive
        "gimp-launch-poster",
        "gimp-shop-print-l3",
        "dc-gimp-city-night-run-cover",  # file_size
    ),
    "blender": (
        "blender-add-sphere",
        "blender-scale-ask",
        "blender-bounce",
        "blender-subdivide-interactive",
        "blender-product-shot",
        "blender-studio-look",
        # The checks only these bring (the test_library.py rule):
        "dc-blender-bottle-deliveries",  # blender_world_texture, image_has_alpha
        "dc-blender-ground-textures",  # blender_texture_link
        "dc-blender-hide-sphere",  # blender_visibility
        "blender-title-card-l3",  # blender_text, blender_constraint
        "blender-snowfall-l3",  # blender_particles
    ),
    "kdenlive": (
        "kdenlive-first-clip",
        "kdenlive-group-edit",  # kdenlive_groups
        "kdenlive-guide-ask",
        "kdenlive-drop-shot",
        "kdenlive-guides-interactive",
        "kdenlive-voiceover-delivery",
        "kdenlive-title-opening-l3",
    ),
    "web": (
        "web-kanban-count-answer",
        "web-photostore-cheapest-answer",
        "web-tagger-location-ask",
        "web-tagger-drafts-answer",
        "web-photostore-drop-interactive",
        "web-photostore-campaign-l3",
        "web-studio-interview-series-l3-interactive",
    ),
}


def sample_paths(app: str) -> list[Path]:
    """The sampled task files of `app`, in a stable order."""
    return [TASKS / app / f"{task_id}.yaml" for task_id in SAMPLE[app]]
