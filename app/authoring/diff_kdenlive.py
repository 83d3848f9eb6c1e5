"""What changed in a .kdenlive project, from its facts: clips, tracks, guides,
effects, compositions and the profile."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from app.authoring.changes import Change, changed_keys, differs


def clip_words(clip: Mapping[str, Any]) -> str:
    label = clip.get("name") or clip.get("source") or clip.get("kind")
    return f"{label} @{clip.get('position')} len {clip.get('length')}"


def effect_places(facts: Mapping[str, Any]) -> list[tuple[tuple[str, str, str], Mapping[str, Any]]]:
    """Every effect of a project with where it sits: ((target, track, clip), effect)."""
    found: list[tuple[tuple[str, str, str], Mapping[str, Any]]] = []
    for track in facts.get("tracks", []):
        for clip in track.get("clips", []):
            clip_name = str(clip.get("source") or clip.get("name") or "")
            for effect in clip.get("effects", []):
                found.append((("clip", track["label"], clip_name), effect))
        for effect in track.get("effects", []):
            found.append((("track", track["label"], ""), effect))
    for effect in facts.get("master_effects", []):
        found.append((("master", "", ""), effect))
    return found


def kdenlive_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    changes: list[Change] = []
    profile_keys = ("width", "height", "fps")
    profile = [new.get(k) for k in profile_keys]
    # A project made during the recording has no earlier profile: the one it was saved
    # with is the author's choice all the same (a saved empty project must not pass).
    if not old or differs([old.get(k) for k in profile_keys], profile):
        earlier = [old.get(k) for k in profile_keys] if old else None
        changes.append(Change("profile_changed", "profile", earlier, profile))
    old_bin, new_bin = list(old.get("bin", [])), list(new.get("bin", []))
    if Counter(old_bin) != Counter(new_bin):
        changes.append(Change("bin_changed", "bin", old_bin, new_bin))

    def counts(facts: Mapping[str, Any]) -> tuple[int, int]:
        kinds = [t.get("kind") for t in facts.get("tracks", [])]
        return kinds.count("video"), kinds.count("audio")

    if counts(old) != counts(new):
        changes.append(Change("tracks_changed", "tracks (video, audio)", counts(old), counts(new)))
    old_tracks = {t["label"]: t for t in old.get("tracks", [])}
    for track in new.get("tracks", []):
        label = track["label"]
        was = old_tracks.get(label, {})
        # A track with no earlier state (a project first saved under a new name, or a
        # track added) is compared with a fresh track, so that a track the person
        # locked, muted, hid or renamed before that first save still proposes it.
        before = was or {"name": label, "hidden": False, "muted": False, "locked": False}
        states = changed_keys(before, track, ("name", "hidden", "muted", "locked"))
        for key, (a, b) in states.items():
            changes.append(Change("track_changed", f"{label} {key}", a, b, key=(label, key)))

        def shape(clips: list[Any]) -> list[Any]:
            return [
                [
                    c.get("source"),
                    c.get("name"),
                    c.get("kind"),
                    c.get("position"),
                    c.get("in"),
                    c.get("length"),
                    c.get("speed"),
                ]
                for c in clips
            ]

        if differs(shape(was.get("clips", [])), shape(track.get("clips", []))):
            changes.append(
                Change(
                    "clips_changed",
                    label,
                    [clip_words(c) for c in was.get("clips", [])],
                    [clip_words(c) for c in track.get("clips", [])],
                )
            )
    old_effects = Counter((where, e.get("id")) for where, e in effect_places(old))
    new_effects = Counter((where, e.get("id")) for where, e in effect_places(new))
    for (where, effect_id), n in new_effects.items():
        if n > old_effects[(where, effect_id)]:
            changes.append(
                Change("effect_added", _where(where), after=effect_id, key=(*where, str(effect_id)))
            )
    for (where, effect_id), n in old_effects.items():
        if n > new_effects[(where, effect_id)]:
            changes.append(Change("effect_removed", _where(where), before=effect_id))
    old_params = {(w, e.get("id")): e.get("params") for w, e in effect_places(old)}
    for where, effect in effect_places(new):
        placed = (where, effect.get("id"))
        if placed in old_params and old_effects[placed] == new_effects[placed] == 1:
            was = old_params[placed] or {}
            moved = changed_keys(
                was,
                effect.get("params") or {},
                sorted(set(was) | set(effect.get("params") or {})),
            )
            if moved:
                changes.append(
                    Change(
                        "effect_changed",
                        f"{effect.get('id')} {_where(where)}",
                        {k: a for k, (a, _) in moved.items()},
                        {k: b for k, (_, b) in moved.items()},
                        key=(*where, str(effect.get("id"))),
                    )
                )

    def composition_key(c: Mapping[str, Any]) -> tuple[Any, ...]:
        return (c.get("id"), c.get("a_track"), c.get("b_track"), c.get("start"), c.get("end"))

    old_comps = Counter(composition_key(c) for c in old.get("compositions", []))
    new_comps = Counter(composition_key(c) for c in new.get("compositions", []))
    for comp in new_comps - old_comps:
        changes.append(
            Change(
                "composition_added",
                f"{comp[0]} {comp[1]}→{comp[2]}",
                after=f"frames {comp[3]}-{comp[4]}",
            )
        )
    for comp in old_comps - new_comps:
        changes.append(
            Change(
                "composition_removed",
                f"{comp[0]} {comp[1]}→{comp[2]}",
                before=f"frames {comp[3]}-{comp[4]}",
            )
        )

    def guides(facts: Mapping[str, Any]) -> list[str]:
        return [f"{g.get('position')} {g.get('comment')!r}" for g in facts.get("guides", [])]

    if guides(old) != guides(new):
        changes.append(Change("guides_changed", "guides", guides(old), guides(new)))
    if old.get("length") != new.get("length"):
        changes.append(
            Change("length_changed", "timeline frames", old.get("length"), new.get("length"))
        )
    return changes


def _where(where: tuple[str, str, str]) -> str:
    target, track, clip = where
    if target == "clip":
        return f"on clip {clip or '?'} ({track})"
    return f"on track {track}" if target == "track" else "on the master"
