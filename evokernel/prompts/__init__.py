"""Prompts for drafting, refining and distilling, and parsing of what the LLM answers.

Templates are text files in ``evokernel/prompts/templates/`` (package data) rendered with
``string.Template``; this package never imports memory_lake: retrieved items only need the
:class:`ContextItem` attributes.
"""

from evokernel.prompts.build import build_draft_prompt, build_refine_prompt, shown_before_memory
from evokernel.prompts.distill_prompt import build_distill_prompt
from evokernel.prompts.dedup import repeat_of
from evokernel.prompts.distill import parse_distillation
from evokernel.prompts.extract import extract_code
from evokernel.prompts.budget import SectionSize
from evokernel.prompts.types import AttemptSummary, CodeExtraction, ContextItem, DistilledItem, Prompt

__all__ = [
    "Prompt", "SectionSize", "ContextItem", "AttemptSummary", "DistilledItem", "CodeExtraction",
    "build_draft_prompt", "build_refine_prompt", "build_distill_prompt", "parse_distillation",
    "extract_code", "shown_before_memory", "repeat_of",
]
