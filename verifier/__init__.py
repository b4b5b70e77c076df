"""verifier: anti-hack -> compile -> correctness -> latency gates, run in a sandboxed child.

Public entry point: :func:`verifier.api.verify` (task, candidate source, backend, settings) -> Verdict.
May import :mod:`kernelbench_npu.spec` only.
"""
