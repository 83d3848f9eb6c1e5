"""DeskCraft's task files (OSWorld-style JSON) → DeskLoop task folders.

- `convert`: one file → a task folder, with its assets and a report (imported, with
  manual steps, or not importable and why);
- `checks`: the table of DeskCraft's evaluator functions → DeskLoop check leaves;
- `rules`: the shared pieces of that table (`Leaf`, `Unmapped`, reading `rules`);
- `gimp`, `blender`, `kdenlive`: each app's evaluators (with what is read from their
  files: an image's ICC profile, a .blend's version).
"""
