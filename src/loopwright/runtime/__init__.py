"""The run's lifecycle: one scope that opens a run, a sample or a nested run's span.

:func:`run` runs an agent within a run's scope; :func:`recording` opens a run's scope
for any loop; :meth:`RunScope.sample` opens an eval sample of a run; :func:`replay` runs
an agent again on a recorded run (``_replay.py``); :func:`resume` continues a run that
stopped unfinished, as the same run (``_resume.py``). A scope puts the run's store and
transcript in force, hands the transcript to the run store (``log/`` writes what it
hears), and records how it ended — completed, limit, error, cancelled or stopped — once,
by the scope that owns it (``_ending.py``).
"""

from ..agents._specs import write_tool_spec
from ._approve import ApprovalRefused, approve, pending_calls
from ._in_force import current_recording
from ._recording import recording
from ._replay import ReplayDivergence, ReplayResult, replay
from ._resume import resume
from ._run import run, run_sync
from ._scope import RunScope
from ._stream import RunStream, run_stream

__all__ = [
    "ApprovalRefused",
    "ReplayDivergence",
    "ReplayResult",
    "RunScope",
    "RunStream",
    "approve",
    "current_recording",
    "pending_calls",
    "recording",
    "replay",
    "resume",
    "run",
    "run_stream",
    "run_sync",
    "write_tool_spec",
]
