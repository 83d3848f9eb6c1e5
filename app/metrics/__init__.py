"""Figures over recorded episodes: per-group rates (`summary`), a batch's slots and the
episode that stands for each (`slots`), and reports as text, HTML and JSONL (`report`).

Reads the store only; the TUI's Results screen and `deskloop report` both use it.
"""
