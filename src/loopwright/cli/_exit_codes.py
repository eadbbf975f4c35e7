"""The command's exit codes: 0 done, 1 error, 2 usage error, 3 ended by a limit, 4 an
eval not finished (samples wait for approval), 130 interrupted."""

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_LIMIT",
    "EXIT_OK",
    "EXIT_USAGE",
    "EXIT_WAITING",
]

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_LIMIT, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_WAITING = 4
"""``loopwright eval``: a task's samples wait for approval, its eval is not finished."""
