"""Checks proposed from a changed .kdenlive project and from rendered media:
clips, tracks, guides, effects, compositions, the profile, and a render's streams."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from app.authoring.diff import FileDiff, effect_places, media_summary
from app.authoring.proposed import (
    DURATION_SHARE,
    EFFECT_PARAMS,
    TIMELINE_SECONDS_TOLERANCE,
    ProposedCheck,
    changes_of,
    make_check,
)

# --- Kdenlive ----------------------------------------------------------------------------------


def _glob_literal(text: str) -> str:
    """`text` as an fnmatch pattern that matches only itself."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def _first_value(value: str) -> float | None:
    """The one number of a parameter that is a plain number or a single keyframe."""
    parts = value.split(";")
    if len(parts) != 1:
        return None
    text = parts[0].rsplit("=", 1)[-1].split()[0] if parts[0].strip() else ""
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def kdenlive_checks(file: FileDiff, facts: Mapping[str, Any]) -> list[ProposedCheck]:
    path = file.guest_path
    fps = float(facts.get("fps") or 25.0)
    tolerance = max(1, round(fps * TIMELINE_SECONDS_TOLERANCE))
    tracks = {t["label"]: t for t in facts.get("tracks", [])}
    out: list[ProposedCheck] = []
    for change in changes_of(file, "profile_changed"):
        out.append(
            make_check(
                "kdenlive_profile",
                f"{path}: {change.words()}",
                path,
                width=facts["width"],
                height=facts["height"],
                fps=round(fps, 3),
            )
        )
    for change in changes_of(file, "bin_changed"):
        before, after = Counter(change.before or []), Counter(change.after or [])
        added = sorted(after - before)
        gone = sorted(name for name in before - after if name not in after)
        bounds: dict[str, Any] = {}
        if added:
            bounds["present"] = added
        if gone:
            bounds["absent"] = gone
        if bounds:
            out.append(make_check("kdenlive_bin", f"{path}: {change.words()}", path, **bounds))
    for change in changes_of(file, "tracks_changed"):
        video, audio = change.after
        out.append(
            make_check(
                "kdenlive_tracks", f"{path}: {change.words()}", path, video=video, audio=audio
            )
        )
    for change in changes_of(file, "track_changed"):
        label, key = change.key
        out.append(
            make_check(
                "kdenlive_track",
                f"{path}: {change.words()}",
                path,
                track=label,
                **{key: tracks[label][key]},
            )
        )
    for change in changes_of(file, "clips_changed"):
        clips = tracks[change.subject]["clips"]
        if not clips:
            continue  # an emptied track: kdenlive_clips needs at least one clip
        specs = [_clip_spec(c) for c in clips]
        out.append(
            make_check(
                "kdenlive_clips",
                f"{path}: {change.words()} (the track is kept only where the instruction names it)",
                path,
                track=change.subject,
                clips=specs,
                tolerance=tolerance,
            )
        )
    effects = {(*where, str(e.get("id"))): e for where, e in effect_places(facts)}
    for change in changes_of(file, "effect_added", "effect_changed"):
        if len(change.key) != 4 or change.key not in effects:
            continue
        target, track, clip, effect_id = change.key
        effect = effects[(target, track, clip, effect_id)]
        params: dict[str, Any] = {"effect": effect_id, "target": target}
        if track:
            params["track"] = track
        if clip:
            params["clip"] = _glob_literal(clip)
        wanted = EFFECT_PARAMS.get(effect_id, EFFECT_PARAMS.get(str(effect.get("service")), ()))
        values = {
            k: _first_value(str(v)) for k, v in (effect.get("params") or {}).items() if k in wanted
        }
        values = {k: v for k, v in values.items() if v is not None}
        if values:
            params["params"] = values
        if effect.get("disabled"):
            params["enabled"] = False
        out.append(make_check("kdenlive_effect", f"{path}: {change.words()}", path, **params))
    compositions = {
        (c.get("id"), c.get("a_track"), c.get("b_track")): c for c in facts.get("compositions", [])
    }
    for change in changes_of(file, "composition_added"):
        for (comp_id, a_track, b_track), comp in compositions.items():
            if change.subject == f"{comp_id} {a_track}→{b_track}":
                out.append(
                    make_check(
                        "kdenlive_composition",
                        f"{path}: {change.words()}",
                        path,
                        composition=comp_id,
                        a_track=a_track,
                        b_track=b_track,
                        start=comp["start"],
                        end=comp["end"],
                        tolerance=tolerance,
                    )
                )
    for change in changes_of(file, "guides_changed"):
        guides = [
            {"position": g["position"], **({"comment": g["comment"]} if g.get("comment") else {})}
            for g in facts.get("guides", [])
        ]
        if guides:
            out.append(
                make_check(
                    "kdenlive_guides",
                    f"{path}: {change.words()}",
                    path,
                    guides=guides,
                    tolerance=tolerance,
                )
            )
    for change in changes_of(file, "length_changed"):
        if facts.get("length"):
            out.append(
                make_check(
                    "kdenlive_length",
                    f"{path}: {change.words()} ({facts['length'] / fps:.2f} s)",
                    path,
                    frames=facts["length"],
                    tolerance=tolerance,
                )
            )
    return out


def _clip_spec(clip: Mapping[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if clip.get("source") and clip.get("kind") not in ("color",):
        spec["source"] = _glob_literal(str(clip["source"]))
    else:
        spec["kind"] = clip.get("kind")
    if clip.get("kind") == "title" and str(clip.get("text") or "").strip():
        spec["text"] = str(clip["text"]).strip()
    spec.update(position=clip["position"], length=clip["length"])
    if clip.get("in"):
        spec["in"] = clip["in"]
    if isinstance(clip.get("speed"), int | float) and abs(clip["speed"] - 1.0) > 1e-3:
        spec["speed"] = float(clip["speed"])
    return spec


# --- renders -------------------------------------------------------------------------------------


def media_checks(file: FileDiff, facts: Mapping[str, Any]) -> list[ProposedCheck]:
    path = file.guest_path
    info = media_summary(facts)
    params: dict[str, Any] = {"video": info["video"], "audio": info["audio"]}
    if info["duration"]:
        params.update(
            duration=round(info["duration"], 3),
            duration_tolerance=round(max(0.1, DURATION_SHARE * info["duration"]), 3),
        )
    for key in ("width", "height", "video_codec", "audio_codec"):
        if info[key] is not None:
            params[key] = info[key]
    if info["fps"]:
        params["fps"] = round(info["fps"], 3)
    moved = changes_of(file, "media_changed")
    why = (
        "; ".join(c.words() for c in moved)
        if moved
        else (
            f"rendered {info['width']}×{info['height']} {info['video_codec']}, {info['duration']} s"
            if info["video"]
            else f"rendered audio {info['audio_codec']}, {info['duration']} s"
        )
    )
    return [make_check("media_info", f"{path}: {why}", path, **params)]
