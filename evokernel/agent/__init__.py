"""evokernel.agent: the two-stage loop (cold-start drafting, continual refining) over one memory.

- rewards.py: stage rewards and the online (PopArt-style) normaliser
- methods.py: what each method (evokernel, pass-at-k, refinement, heuristic) retrieves and learns
- state.py: a task's progress (start points, best latency, budget), rebuilt from the lake on resume
- step.py: one iteration: retrieve, prompt, generate, verify, reward, update, store
- distill.py: experience summaries and best practices distilled by the LLM after each task
- campaign.py: the campaign plan and loop (the Prefect flow wraps the same steps)
"""
