"""Pure checks of a desktop's final state, their registry, and the evaluate tree.

Floor 1: nothing here imports from `app` except `app.core` (errors, the judge's
judgements), so the task loader can validate check names and parameters without
anything that touches a desktop. Importing this package registers every built-in
check; `judge` reads a model's verdict that scoring asked for (app.episode.judge).

The checks of each app are apart from the reader they go through: gimp over xcf,
kdenlive over mlt, blender and blender_look over blender_scene, images over
imaging; files and media read plain bytes and probe results.
"""

from app.checks import blender, blender_look, files, gimp, images
from app.checks.base import (
    AssetPath,
    CheckParams,
    CheckResult,
    CheckState,
    FileState,
    GuestPath,
)
from app.checks.registry import (
    REGISTRY,
    CheckDefinitionError,
    CheckSpec,
    UnknownCheck,
    get_check,
    register,
    run_check,
)
from app.checks.tree import (
    CheckGroup,
    CheckLeaf,
    EvalNode,
    LeafOutcome,
    TreeError,
    TreeResult,
    evaluate,
    leaves,
    parse_tree,
    tree_assets,
    tree_files,
)

# Importing these modules registers their checks.
from app.checks import answers, judge, kdenlive, media, web  # noqa: F401  isort: skip
from app.checks import blender_setup, file_facts, kdenlive_bin  # noqa: F401  isort: skip

__all__ = [
    "REGISTRY",
    "AssetPath",
    "CheckDefinitionError",
    "CheckGroup",
    "CheckLeaf",
    "CheckParams",
    "CheckResult",
    "CheckSpec",
    "CheckState",
    "EvalNode",
    "FileState",
    "GuestPath",
    "LeafOutcome",
    "TreeError",
    "TreeResult",
    "UnknownCheck",
    "blender",
    "blender_look",
    "evaluate",
    "files",
    "get_check",
    "gimp",
    "images",
    "leaves",
    "parse_tree",
    "register",
    "run_check",
    "tree_assets",
    "tree_files",
]
