"""evokernel: the agent (LLM providers, prompts, draft and refine stages) and the `evokernel` CLI."""

__version__ = "0.1.0"
