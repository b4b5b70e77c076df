"""Prompt scaffolds of the GPU/NPU backends, one Markdown file per backend (``<name>.md``).

Each scaffold states the candidate format and contract, the API notes an LLM needs, and one
complete worked example (which the tests compile, so the example is known to be valid). The
first-level sections (``## ...``) also become the backend's api_template seed items.
"""

from __future__ import annotations

from importlib.resources import files

from kernelbench_npu.spec import TaskSpec


def scaffold_text(name: str) -> str:
    return files(__package__).joinpath(f"{name}.md").read_text()


def read_scaffold(name: str, task: TaskSpec | None) -> str:
    """The scaffold, followed by the task's dtype and tolerances when a task is given."""
    text = scaffold_text(name)
    if task is None:
        return text
    return (f"{text}\n## This task\n{task.task_id} ({task.name}, level {task.level}, {task.category}): "
            f"inputs are {task.dtype}; the output must match the reference within atol={task.atol:g}, "
            f"rtol={task.rtol:g}.\n")


def scaffold_sections(name: str) -> tuple[tuple[str, str], ...]:
    """(title, body) of each ``## `` section of the scaffold, in order."""
    sections: list[tuple[str, list[str]]] = []
    for line in scaffold_text(name).splitlines():
        if line.startswith("## "):
            sections.append((line[3:].strip(), []))
        elif sections:
            sections[-1][1].append(line)
    return tuple((title, "\n".join(body).strip() + "\n") for title, body in sections)


def fenced_blocks(text: str, language: str) -> tuple[str, ...]:
    """The bodies of the ```<language> blocks of a scaffold section (the worked examples)."""
    blocks, current = [], None
    for line in text.splitlines():
        if current is None and line.strip() == f"```{language}":
            current = []
        elif current is not None and line.strip() == "```":
            blocks.append("\n".join(current) + "\n")
            current = None
        elif current is not None:
            current.append(line)
    return tuple(blocks)
