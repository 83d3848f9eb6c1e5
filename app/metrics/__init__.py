"""Figures over recorded episodes and the one policy they follow (`summary`: what a
success is, how errors, aborts and batch retries count, the groups), the checkpoint
and reliability figures over the same attempts (`checkpoints`: per check, per phase,
pass@k and pass^k over repeats, paired agents) and their statistics (`stats`: Wilson
intervals, the pass@k estimators, t intervals), a batch's slots and the episode that
stands for each (`slots`), and reports as text and JSONL (`report`) and as an HTML page
(`html_report`, from `templates/`, with the matplotlib plots of `plots`; `render_page`
lays out another report's titled tables and plots, as the study report's). `tables` lays
out the text tables of the reports and of the command line, one look everywhere.

Reads the store only; the TUI's Results screen and `deskloop report` both take their
figures from `summary`, and neither computes a rate itself. May import the store and
core (and jinja2 and matplotlib, only for the HTML page).
"""
