"""DeskCraft's Kdenlive and file evaluators → DeskLoop checks (see checks.py beside it)."""

from __future__ import annotations

from app.importers.deskcraft.rules import Leaf, Rules, Unmapped, take


def kdenlive_profile(path: str, rules: Rules) -> list[Leaf]:
    taken = take(
        rules,
        {"width": "width", "height": "height", "frame_rate_num": "num", "frame_rate_den": "den"},
    )
    leaf: Leaf = {"check": "kdenlive_profile", "path": path}
    for key in ("width", "height"):
        if key in taken:
            leaf[key] = taken[key]
    if "num" in taken:
        fps = taken["num"] / taken.get("den", 1)
        leaf["fps"] = int(fps) if float(fps).is_integer() else round(fps, 3)
    return [leaf]


def track_count(path: str, rules: Rules) -> list[Leaf]:
    exact = take(
        rules,
        {
            "video_tracks": "video",
            "audio_tracks": "audio",
            "exact_video_tracks": "video",
            "exact_audio_tracks": "audio",
            "min_video_tracks": "min_video",
            "min_audio_tracks": "min_audio",
        },
    )
    return [{"check": "kdenlive_tracks", "path": path, **exact}]


def guide(path: str, rules: Rules) -> list[Leaf]:
    del path, rules
    # DeskCraft gives the guide's time in seconds; kdenlive_guides counts frames, and the
    # frame rate is the project's, which the importer does not read.
    raise Unmapped("a guide time in seconds needs the project's frame rate (give frames)")


def file_exists(path: str, rules: Rules) -> list[Leaf]:
    if rules:
        raise Unmapped(f"options {sorted(rules)} have no DeskLoop parameter")
    return [{"check": "file_exists", "path": path}]


def bin_content(path: str, rules: Rules) -> list[Leaf]:
    taken = take(
        rules,
        {
            "expected_present": "present",
            "expected_absent": "absent",
            "expected_file": "present",
            "expected_files": "present",
        },
    )
    if isinstance(taken.get("present"), str):
        taken["present"] = [taken["present"]]
    return [{"check": "kdenlive_bin", "path": path, **taken}]


def clip_group(path: str, rules: Rules) -> list[Leaf]:
    taken = take(rules, {"min_groups": "min_groups", "min_clips_in_group": "min_clips"})
    # DeskCraft asks for clips the person grouped; Kdenlive's own A/V groups do not count.
    return [{"check": "kdenlive_groups", "path": path, "group_type": "Normal", **taken}]


def proxy(path: str, rules: Rules) -> list[Leaf]:
    taken = take(rules, {"proxy_enabled": "enabled", "proxy_min_size": "min_size"})
    return [{"check": "kdenlive_proxy", "path": path, **taken}]


def track_lock(path: str, rules: Rules) -> list[Leaf]:
    take(rules, {"locked_track": ""})
    return [
        {"check": "kdenlive_track", "path": path, "track": rules["locked_track"], "locked": True}
    ]


def timeline_empty(path: str, rules: Rules) -> list[Leaf]:
    take(rules, {"expected_in_bin": "", "expected_not_on_timeline": ""})
    if rules.get("expected_not_on_timeline", True):
        # kdenlive_length counts frames > 0; an empty timeline has no DeskLoop check yet.
        raise Unmapped("an empty timeline (expected_not_on_timeline) has no DeskLoop check")
    return [{"check": "kdenlive_bin", "path": path, "present": [rules["expected_in_bin"]]}]


def effect(path: str, rules: Rules) -> list[Leaf]:
    taken = take(
        rules,
        {
            "effect_service": "effect",
            "source_file": "clip",
            "param_name": "param",
            "expected_value": "value",
            "tolerance": "tolerance",
        },
    )
    services = taken.pop("effect")
    services = services if isinstance(services, list) else [services]
    if ("param" in taken) != ("value" in taken):
        raise Unmapped("a parameter without its value, or a value without its parameter")
    base: Leaf = {"check": "kdenlive_effect", "path": path}
    if "clip" in taken:
        base["clip"] = taken["clip"]
    if "param" in taken:
        base["params"] = {taken["param"]: taken["value"]}
        if "tolerance" in taken:
            base["tolerance"] = taken["tolerance"]
    # DeskCraft accepts any of several effects that do the job: one of them must be there.
    options = [dict(base, effect=str(service)) for service in services]
    return options if len(options) == 1 else [{"any": options}]


def transition(path: str, rules: Rules) -> list[Leaf]:
    taken = take(rules, {"transition_type": "composition"})
    return [{"check": "kdenlive_composition", "path": path, **taken}]


TRACKS = ("V1", "V2", "V3", "A1", "A2", "A3")
"""The tracks a clip added to "the timeline" may be on: Kdenlive's default 2+2, and one more
each (a check on a track the project lacks fails, so extra ones cost nothing)."""


def add_to_timeline(path: str, rules: Rules) -> list[Leaf]:
    take(rules, {"expected_file": ""})
    source = str(rules["expected_file"])
    # On any track: DeskCraft names no track, and the bin alone does not count.
    return [
        {
            "any": [
                {
                    "check": "kdenlive_clips",
                    "path": path,
                    "track": track,
                    "clips": [{"source": source}],
                    "exact": False,
                }
                for track in TRACKS
            ]
        }
    ]


def render(path: str, rules: Rules) -> list[Leaf]:
    """A rendered video (ffprobe): how long, which codec, which size, with sound. The
    render's content (effects, titles, sources) is another function's; not mapped here."""
    taken = take(
        rules,
        {
            "min_duration": "min_duration",
            "expected_codec": "video_codec",
            "codec": "video_codec",
            "expected_width": "width",
            "expected_height": "height",
            "require_audio": "audio",
        },
    )
    if taken.get("audio") is False:
        del taken["audio"]  # not requiring sound is not requiring silence
    return [{"check": "media_info", "path": path, "video": True, **taken}]
