"""Figures over recorded episodes and the one policy they follow (`summary`: what a
success is, how errors, aborts and batch retries count, the groups), a batch's slots
and the episode that stands for each (`slots`), and reports as text and JSONL
(`report`) and as an HTML page (`html_report`, from `templates/`, with the matplotlib
plots of `plots`).

Reads the store only; the TUI's Results screen and `deskloop report` both take their
figures from `summary`, and neither computes a rate itself. May import the store and
core (and jinja2 and matplotlib, only for the HTML page).
"""
