"""The TUI's screens, one module each."""
