"""What the DeskCraft evaluator mappers share: the names of their data and how they
refuse what has no DeskLoop equivalent (app/importers/deskcraft/checks.py explains the table)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Leaf = dict[str, Any]
"""A check-tree node: a check leaf, or an `any` group of them."""
Rules = dict[str, Any]
Mapper = Callable[[str, Rules], list[Leaf]]


class Unmapped(Exception):
    """This evaluator (or one of its options) has no DeskLoop check yet."""


def take(rules: Rules, known: dict[str, str]) -> dict[str, Any]:
    """The rules renamed to DeskLoop parameter names; any other rule is Unmapped."""
    extra = sorted(set(rules) - set(known))
    if extra:
        raise Unmapped(f"options {extra} have no DeskLoop parameter")
    return {known[key]: value for key, value in rules.items()}


def one_object(rules: Rules, key: str = "object_name") -> dict[str, Any]:
    """`name` for an exact object name, `name_regex` for DeskCraft's `..._contains`."""
    if key in rules:
        return {"name": rules[key]}
    if f"{key}_contains" in rules:
        return {"name_regex": re.escape(str(rules[f"{key}_contains"]))}
    raise Unmapped("it names no object")
