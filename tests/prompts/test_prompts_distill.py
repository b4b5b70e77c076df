"""parse_distillation: the requested fenced JSON, and the sloppy variants models produce."""

from __future__ import annotations

from evokernel.prompts import DistilledItem, parse_distillation

GOOD = """Here are the lessons:
```json
[
  {"kind": "experience", "title": "Declare extern C", "body": "Without extern \\"C\\" ctypes cannot find the symbol."},
  {"kind": "best_practice", "title": "Vectorise the inner loop", "body": "#pragma omp simd gave 1.8x on relu."}
]
```"""


def test_the_requested_format():
    assert parse_distillation(GOOD) == (
        DistilledItem("experience", "Declare extern C", 'Without extern "C" ctypes cannot find the symbol.'),
        DistilledItem("best_practice", "Vectorise the inner loop", "#pragma omp simd gave 1.8x on relu."),
    )


def test_unfenced_with_trailing_commas_and_kind_spellings():
    text = ('Sure! [{"kind": "Best Practice", "title": "Tile", "body": "Tile by 64.",},'
            ' {"type": "failure", "title": "NaN", "text": "Guard the division.",},]')
    items = parse_distillation(text)
    assert [(i.kind, i.title, i.body) for i in items] == [
        ("best_practice", "Tile", "Tile by 64."), ("experience", "NaN", "Guard the division.")]


def test_an_items_wrapper_and_a_single_object():
    assert len(parse_distillation('{"items": [{"kind": "experience", "title": "a", "body": "b"}]}')) == 1
    assert parse_distillation('{"kind": "best-practice", "title": "t", "body": "b"}')[0].kind == "best_practice"


def test_missing_title_comes_from_the_body_and_bad_entries_are_dropped():
    text = ('```json\n[{"kind": "experience", "body": "Check strides first.\\nMore."},'
            ' {"kind": "joke", "title": "x", "body": "y"}, {"kind": "experience", "title": "empty", "body": " "},'
            ' "just a string"]\n```')
    items = parse_distillation(text)
    assert [(i.title, i.body) for i in items] == [("Check strides first.", "Check strides first.\nMore.")]


def test_duplicates_are_kept_once_and_lengths_capped():
    entry = '{"kind": "experience", "title": "Same ' + "t" * 300 + '", "body": "' + "b" * 5000 + '"}'
    items = parse_distillation(f"[{entry}, {entry}]")
    assert len(items) == 1 and len(items[0].title) == 120 and len(items[0].body) == 2000


def test_markdown_bullets_as_a_last_resort():
    text = ("- **experience**: Link with -fopenmp — the loader fails otherwise.\n"
            "- best practice: Fuse the bias add: one pass over memory is 1.4x faster\n"
            "* unrelated bullet")
    items = parse_distillation(text)
    assert [(i.kind, i.title) for i in items] == [
        ("experience", "Link with -fopenmp"), ("best_practice", "Fuse the bias add")]
    assert items[0].body == "the loader fails otherwise."


def test_nothing_usable_gives_an_empty_tuple():
    assert parse_distillation("I could not find any lessons.") == ()
    assert parse_distillation("```json\n[broken\n```") == ()


def test_a_reasoning_trace_is_ignored():
    text = ('<think>[{"kind": "experience", "title": "draft idea", "body": "x"}]</think>\n'
            '```json\n[{"kind": "best_practice", "title": "final", "body": "y"}]\n```')
    assert [i.title for i in parse_distillation(text)] == ["final"]
