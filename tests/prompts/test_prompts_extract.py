"""extract_code: the kernel or a one-line problem for every way an answer can go wrong."""

from __future__ import annotations

import pytest

from evokernel.prompts import extract_code

KERNEL = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"


def _one_line(problem: str | None) -> str:
    assert problem is not None and "\n" not in problem and len(problem) < 300
    return problem


def test_one_python_block_is_extracted_exactly():
    got = extract_code(f"Here is my kernel:\n```python\n{KERNEL}```\nIt uses SIMD.")
    assert (got.code, got.problem, got.ok) == (KERNEL, None, True)


@pytest.mark.parametrize("opening", ["```py", "```Python", "```python3", "~~~python", "````python", "```"])
def test_language_aliases_fence_styles_and_untagged_blocks(opening):
    closing = opening.rstrip("Pythonpy3")
    got = extract_code(f"{opening}\n{KERNEL}{closing}\n")
    assert got.code == KERNEL


def test_no_code_block():
    got = extract_code("I would write a loop over the elements and vectorise it.")
    assert got.code is None and "no code block found" in _one_line(got.problem)


def test_wrong_language_only():
    got = extract_code("```cpp\nextern \"C\" void relu(float* x, int n) {}\n```")
    assert got.code is None
    problem = _one_line(got.problem)
    assert "found only ```cpp code, no ```python block" in problem and "class ModelNew" in problem


def test_several_blocks_the_one_defining_modelnew_wins():
    text = (f"```cpp\nvoid k() {{}}\n```\n```python\nimport torch\nprint('usage')\n```\n"
            f"```python\n{KERNEL}```\n")
    assert extract_code(text).code == KERNEL


def test_several_modelnew_blocks_the_last_wins():
    revised = KERNEL.replace("return x", "return x + 0")
    assert extract_code(f"```python\n{KERNEL}```\nOops, fixed:\n```python\n{revised}```").code == revised


def test_a_python_block_without_modelnew():
    got = extract_code("```python\nclass Model(torch.nn.Module):\n    pass\n```")
    assert got.code is None and "no ```python block defines class ModelNew" in _one_line(got.problem)


def test_an_empty_block():
    got = extract_code("```python\n```")
    assert got.code is None and "empty" in _one_line(got.problem)


def test_an_unclosed_fence_is_truncation():
    got = extract_code("```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    def forw")
    assert got.code is None and "cut off" in _one_line(got.problem) and "never closed" in got.problem


def test_finish_reason_length_is_truncation():
    got = extract_code("Let me think about tiling first, the reference computes", finish_reason="length")
    assert got.code is None and "finish_reason=length" in _one_line(got.problem)


def test_a_complete_kernel_survives_a_cut_in_the_trailing_prose():
    got = extract_code(f"```python\n{KERNEL}```\nThis kernel is fast because it", finish_reason="length")
    assert got.code == KERNEL


def test_a_complete_kernel_followed_by_a_cut_revision_keeps_the_complete_one():
    got = extract_code(f"```python\n{KERNEL}```\nBetter:\n```python\nclass ModelNew(nn.Mod", finish_reason="length")
    assert got.code == KERNEL


def test_backticks_inside_the_code_do_not_close_the_block():
    code = 'class ModelNew:\n    doc = "use ``x``"\n    src = """\n  int a;\n"""\n'
    assert extract_code(f"```python\n{code}```").code == code


def test_modelnew_must_be_a_class_definition_not_a_mention():
    got = extract_code("```python\n# TODO: class ModelNew goes here\nx = 1\n```")
    assert got.code is None


def test_other_languages_can_be_requested():
    got = extract_code("```cuda\n__global__ void k() {}\nclass ModelNew\n```", language="cuda")
    assert got.code is not None


def test_code_inside_a_reasoning_trace_is_not_the_answer():
    draft = KERNEL.replace("return x", "return x * 0  # first idea")
    text = f"<think>\nMaybe:\n```python\n{draft}```\nNo, simpler.\n</think>\n```python\n{KERNEL}```"
    assert extract_code(text).code == KERNEL
    only_thinking = f"<think>\n```python\n{draft}```\n</think>\nI am not sure."
    assert extract_code(only_thinking).code is None


def test_an_answer_cut_off_while_thinking_is_truncation():
    got = extract_code(f"<think>\nLet me try\n```python\n{KERNEL}```\nhmm", finish_reason="length")
    assert got.code is None and "cut off" in _one_line(got.problem)
