"""A sample's agent, with the sample's files written into its sandbox first."""

from __future__ import annotations

from ..agents import Agent, AgentState
from ._sample import Sample, check_file_path
from ._task import Task, TaskError

__all__ = ["sample_agent"]


def sample_agent(task: Task, sample: Sample) -> Agent:
    """The agent to run for ``sample``: the task's, after writing the sample's files
    into the sandbox ``run(..., sandbox=task.sandbox)`` starts for it.

    The sandbox is started by ``run()``, inside the sample's limits: waiting for a free
    sandbox slot (``max_sandboxes``), starting the sandbox and writing the files count
    against a time limit, which can end the sample (as ``limit``) while it waits; the
    cleanup is outside the limits, which never cut it short.

    Raises:
        TaskError: The sample has files but the task no sandbox to put them in, or a
            file's path is absolute or leaves the sandbox's working folder.
    """
    if task.sandbox is None:
        if sample.files:
            raise TaskError(
                f"sample {sample.id!r} has files but task {task.name!r} has no sandbox "
                "to put them in; give the task sandbox='bwrap' (or 'local')"
            )
        return task.agent
    if not sample.files:
        return task.agent
    agent, files = task.agent, dict(sample.files)
    for path in files:  # (again: files may have been replaced since the sample was made)
        try:
            check_file_path(path)
        except ValueError as ex:
            raise TaskError(f"sample {sample.id!r}: {ex}") from None

    async def with_files(state: AgentState) -> AgentState:
        from ..sandboxes import sandbox

        box = sandbox()
        for path, contents in files.items():
            await box.write_file(path, contents)
        return await agent(state)

    return with_files
