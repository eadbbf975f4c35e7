"""Displays of running agents. ``console_display()`` prints to the terminal with rich
(imported when a display is created)."""

from ._console import ConsoleDisplay, abbreviate, console_display

__all__ = ["ConsoleDisplay", "abbreviate", "console_display"]
