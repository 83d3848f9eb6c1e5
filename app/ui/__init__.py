"""The terminal UI (Textual). The only package that may import Textual."""
