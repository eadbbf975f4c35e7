"""The default system-prompt templates of the text protocols (Jinja2).

Values (the agent's prompt, tool descriptions) are inserted as data, never parsed as
template code, so braces in them are safe. Replace a template with
``ReActProtocol(template=...)`` / ``JsonProtocol(template=...)``; the variables are listed
on :class:`~loopwright.model.protocols.TextProtocol`.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["JSON_TEMPLATE", "REACT_TEMPLATE", "TEXT_TEMPLATE", "compile_template"]

TEXT_TEMPLATE = """\
{% if system %}
{{ system }}

{% endif %}
Today is {{ today }}. Work on the task step by step with these tools:

{% for tool in tools %}
{{ tool.name }}: {{ tool.description }}
  Arguments: {{ tool.arguments }}

{% endfor %}
{{ format }}
{% if forced %}
In this reply, the tool must be {{ forced }}.
{% endif %}
{% if examples %}

Examples:
{% for example in examples %}

{{ example }}
{% endfor %}
{% endif %}
"""
"""Any text protocol's default: the tools, then the protocol's format reminder
(``format``), so a new protocol needs no template of its own."""

REACT_TEMPLATE = """\
{% if system %}
{{ system }}

{% endif %}
Today is {{ today }}. Work on the task step by step with these tools:

{% for tool in tools %}
{{ tool.name }}: {{ tool.description }}
  Input: {{ tool.arguments }}{{ " (or just the text)" if tool.text_input else "" }}

{% endfor %}
Use this format:

Thought: what you think about the task and what to do next
Action: the tool to use, one of [{{ tool_names }}]
Action Input: the tool's input, as a JSON object
Observation: the tool's result (it is given to you: never write it yourself)
... (Thought, Action, Action Input and Observation repeat as often as needed)
Thought: I know the final answer
Final Answer: the answer to the task

Write one Action per reply and stop right after its Action Input.
{% if forced %}
In this reply, the Action must be {{ forced }}.
{% endif %}
{% if examples %}

Examples:
{% for example in examples %}

{{ example }}
{% endfor %}
{% endif %}
"""

JSON_TEMPLATE = """\
{% if system %}
{{ system }}

{% endif %}
Today is {{ today }}. Work on the task step by step with these actions:

{% for tool in tools %}
{{ tool.name }}: {{ tool.description }}
  Arguments: {{ tool.arguments }}

{% endfor %}
{{ finish }}: Give your final answer and end the task.
  Arguments: {{ finish_arguments }}

Reply with exactly one JSON object and nothing else, in this form:
{"thought": "<what you think and what to do next>", "action": {"name": "<one of: \
{{ action_names }}>", "arguments": {<the action's arguments>}}}

Each action's result comes back to you as {"observation": ...}. Never write an \
observation yourself. When you know the answer, use the action "{{ finish }}".
{% if forced %}
In this reply, the action must be {{ forced }}.
{% endif %}
{% if worked_example %}

Example:
{{ worked_example }}
{% endif %}
{% if examples %}

Examples:
{% for example in examples %}
{{ example }}
{% endfor %}
{% endif %}
"""


@functools.lru_cache(maxsize=64)
def compile_template(template: str) -> Any:
    """A Jinja2 template, compiled once per process for each template text (~3 ms each)."""
    import jinja2

    env = jinja2.Environment(
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    return env.from_string(template)
