"""Generate ``evokernel/demo/script.json`` (the scripted demo LLM) from ``kernels/*.py``.

Each task's responses cover the gates on purpose: drafts that fail the hack, compile and
correctness gates before a feasible one, then refinements that are faster, slower or wrong.
Run ``python -m evokernel.demo.make_script`` after editing a kernel.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "script.json"
LABEL = ("EvoKernel demo script: scripted responses written by the EvoKernel developers for the "
         "offline demo, not produced by any model")

# task id -> stage -> [(kernel file stem, the prose the "model" says before its code)]
PLAN: dict[str, dict[str, list[tuple[str, str]]]] = {
    "L1/001_relu": {
        "draft": [("relu_draft_hack", "Let torch handle the activation and keep a native hook."),
                  ("relu_draft_syntax", "A native OpenMP loop over all elements."),
                  ("relu_draft_scalar", "A plain scalar loop in C, called through load_c.")],
        "refine": [("relu_refine_omp", "Parallelise over the thread pool and vectorise."),
                   ("relu_refine_leaky_bug", "A branch-free select to help the vectoriser.")],
    },
    "L1/013_softmax": {
        "draft": [("softmax_draft_nomax", "exp, sum and normalise each row."),
                  ("softmax_draft_stable", "Subtract the row maximum first for stability.")],
        "refine": [("softmax_refine_omp", "Rows over the thread pool, simd reductions for max and sum.")],
    },
    "L1/009_sum_reduction": {
        "draft": [("sum_draft_link_error", "Reduce the middle axis of an (outer, red, inner) view."),
                  ("sum_draft_strided", "Same kernel with the exported name fixed.")],
        "refine": [("sum_refine_rowwise", "Stream the reduced rows contiguously in blocks over the pool.")],
    },
    "L2/001_gemm_bias_relu": {
        "draft": [("gemm_draft_missing_bias", "Fuse the linear layer and the ReLU."),
                  ("gemm_draft_naive", "Fuse linear, both biases and the ReLU in one triple loop.")],
        "refine": [("gemm_refine_omp", "Columns over the pool, 4 rows per weight row, simd dot products.")],
    },
}

DISTILL: dict[str, list[dict[str, str]]] = {
    "L1/001_relu": [
        {"kind": "experience", "title": "torch ops in forward are rejected",
         "body": "Calling torch.relu (or any torch compute) in ModelNew.forward fails the hack gate; only "
                 "allocation (torch.empty_like) and views are allowed, all arithmetic goes through load_c."},
        {"kind": "best_practice", "title": "elementwise kernels: parallel for simd",
         "body": "For elementwise ops use '#pragma omp parallel for simd schedule(static)' with __restrict "
                 "pointers; a branch-free select must keep the exact semantics (ReLU has slope 0)."},
    ],
    "L1/013_softmax": [
        {"kind": "experience", "title": "softmax must subtract the row max",
         "body": "Without subtracting the row maximum, large inputs overflow expf to inf and the correctness "
                 "gate reports non-finite values; compute max, then exp(x - max), then normalise."},
        {"kind": "best_practice", "title": "row-wise ops: one row per thread",
         "body": "Spread rows over the OpenMP pool and use simd reductions (max, +) inside a row."},
    ],
    "L1/009_sum_reduction": [
        {"kind": "experience", "title": "load_c names must match the C symbol",
         "body": "load_c(SOURCE, {name: signature}) looks the names up in the library: a name that the "
                 "source does not define as extern \"C\" fails at load time (compile gate)."},
        {"kind": "best_practice", "title": "reductions over a middle axis: stream rows",
         "body": "View the tensor as (outer, red, inner) and accumulate whole contiguous rows into a block "
                 "of outputs, instead of striding through memory one output at a time."},
    ],
    "L2/001_gemm_bias_relu": [
        {"kind": "experience", "title": "fusions: apply every parameter of the reference",
         "body": "The reference adds the linear bias and an extra bias before the ReLU; forgetting one is "
                 "a correctness failure localised at the first output column where it matters."},
        {"kind": "best_practice", "title": "small-batch GEMM: reuse weight loads",
         "body": "With few input rows, parallelise over output columns and compute 4 rows per weight row "
                 "so each weight load feeds 4 multiply-adds."},
    ],
}


def response(prose: str, stem: str) -> str:
    code = (HERE / "kernels" / f"{stem}.py").read_text()
    return f"{prose}\n\n```python\n{code}```\n"


def build_script() -> dict:
    responses = {
        task: {stage: [response(prose, stem) for stem, prose in entries] for stage, entries in stages.items()}
        for task, stages in PLAN.items()
    }
    for task, items in DISTILL.items():
        responses[task]["distill"] = ["Lessons from this task:\n\n```json\n" + json.dumps(items, indent=2) + "\n```\n"]
    return {"label": LABEL, "responses": responses}


def render() -> str:
    return json.dumps(build_script(), indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":  # pragma: no cover
    SCRIPT.write_text(render())
    print(f"wrote {SCRIPT}")
