"""DeskLoop: a lab for people and computer-use agents on real desktop software."""

__version__ = "0.1.0"
