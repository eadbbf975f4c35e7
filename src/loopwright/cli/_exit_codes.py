"""The command's exit codes: 0 done, 1 error, 2 usage error, 3 ended by a limit, 130
interrupted."""

__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_LIMIT", "EXIT_OK", "EXIT_USAGE"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_LIMIT, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
