"""Generate ``evokernel/demo/script.json`` (the scripted demo LLM) from ``kernels/*.py``.

Four tasks where a native kernel truly beats PyTorch on a CPU (RMSNorm, cross-entropy, tanh-GELU,
residual-add + LayerNorm + scale): by fusing PyTorch's chain of ops into one parallel region (fewer
passes over memory, one fork/join instead of one per op) and by vectorising exp. Each task's
responses fail gates on purpose first (the hack, compile and correctness gates all appear), then a
feasible draft that mirrors the reference op by op, then refinements: ones that win (fused,
vectorised: the patterns of kernelbench_npu/solutions/cpu), one that is correct but slower than
the best, and ones that fail a gate. PLAN records the gate each kernel is expected to fail (None: it passes every gate);
tests/cli/test_cli_demo.py verifies every kernel for real against that.
Run ``python -m evokernel.demo.make_script`` after editing a kernel.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "script.json"
LABEL = ("EvoKernel demo script: scripted responses written by the EvoKernel developers for the "
         "offline demo, not produced by any model")
BUDGET = 5  # iterations per task: every task's drafts and refinements add up to it

# task id -> stage -> [(kernel file stem, the prose the "model" says before its code, expected failed gate)]
PLAN: dict[str, dict[str, list[tuple[str, str, str | None]]]] = {
    "L1/016_rms_norm": {
        "draft": [("rms_draft_hack", "PyTorch's reduction is already tuned: keep it, and scale natively.", "hack"),
                  ("rms_draft_syntax", "Native code, the reference op by op: a parallel loop each for the mean of "
                   "squares, the scale and the scaling.", "compile"),
                  ("rms_draft_passes", "The same loops with the missing semicolon fixed.", None)],
        "refine": [("rms_refine_fused", "One parallel region: per row a SIMD sum of squares, then one fused scaling "
                    "pass while the row is in cache.", None),
                   ("rms_refine_fast_rsqrt", "Replace 1/sqrtf with the bit-trick inverse square root.",
                    "correctness")],
    },
    "L1/032_cross_entropy_loss": {
        "draft": [("ce_draft_sum", "Rows over the thread pool: log-sum-exp minus the target logit, over the batch.",
                   "correctness"),
                  ("ce_draft_rows", "Divide by the batch size: the loss is a mean.", None)],
        "refine": [("ce_refine_omp", "Keep the rows in float: a SIMD max and float expf.", None),
                   ("ce_refine_simd", "A branch-free polynomial exp so the sum of exponentials vectorises.", None),
                   ("ce_refine_int32_targets", "Read the targets as 32-bit ints: half the index traffic.",
                    "correctness")],
    },
    "L1/003_gelu": {
        "draft": [("gelu_draft_erf", "GELU with erf, elements over the thread pool.", "correctness"),
                  ("gelu_draft_tanhf", "The reference uses the tanh approximation: use it too.", None)],
        "refine": [("gelu_refine_sigmoid", "Rewrite 0.5x(1 + tanh u) as x / (1 + exp(-2u)) with a vectorised "
                    "polynomial exp.", None),
                   ("gelu_refine_torch_tail", "Let PyTorch finish the last partial SIMD block.", "hack"),
                   ("gelu_refine_libm_simd", "Same formula with libm's expf under omp simd.", None)],
    },
    "L2/014_add_layernorm_scale": {
        "draft": [("aln_draft_link", "Residual add, LayerNorm and the gain natively, op by op.", "compile"),
                  ("aln_draft_no_gain", "Export the function under the name load_c asks for.", "correctness"),
                  ("aln_draft_passes", "Apply the gain after LayerNorm's affine.", None)],
        "refine": [("aln_refine_fused", "One parallel region: per row the sum written once, SIMD reductions, the "
                    "affine and the gain in place.", None),
                   ("aln_refine_unbiased", "Use the sample variance (n - 1) for the row statistics.", "correctness")],
    },
}

DISTILL: dict[str, list[dict[str, str]]] = {
    "L1/016_rms_norm": [
        {"kind": "experience", "title": "torch ops in forward are rejected",
         "body": "Computing with torch (rsqrt, pow, mean) in ModelNew.forward fails the hack gate; only allocation "
                 "(torch.empty_like) and views are allowed, all arithmetic goes through load_c."},
        {"kind": "best_practice", "title": "row-wise normalisations: one fused pass per row",
         "body": "Spread rows over the OpenMP pool; per row a '#pragma omp simd reduction' for the statistics, "
                 "then one vectorised pass that applies them while the row is still in cache. PyTorch writes a "
                 "temporary per op; the fused kernel reads x twice and writes y once."},
    ],
    "L1/032_cross_entropy_loss": [
        {"kind": "experience", "title": "losses: check the reduction",
         "body": "F.cross_entropy averages over the batch by default; a sum is off by the batch size and fails "
                 "correctness. Match the argument dtypes of load_c's signature: targets are int64."},
        {"kind": "best_practice", "title": "vectorise exp with a polynomial",
         "body": "Without -ffast-math, libm's expf keeps a simd loop scalar; a branch-free Cephes-style "
                 "polynomial exp (see the known-good solutions) vectorises and stays within 1 ulp."},
    ],
    "L1/003_gelu": [
        {"kind": "experience", "title": "GELU: match the approximation; no torch for the tail",
         "body": "F.gelu(approximate='tanh') and the erf GELU differ by up to 5e-4, far outside fp32 tolerance. "
                 "Computing even a few elements with torch in forward fails the hack gate: loop to n natively."},
        {"kind": "best_practice", "title": "tanh-based activations as a sigmoid of exp",
         "body": "0.5 x (1 + tanh u) = x / (1 + exp(-2u)): one vectorised exp per element instead of a tanhf call."},
    ],
    "L2/014_add_layernorm_scale": [
        {"kind": "experience", "title": "LayerNorm uses the biased variance",
         "body": "nn.LayerNorm divides the sum of squares by n, not n - 1; the unbiased variance fails correctness. "
                 "load_c looks names up as extern \"C\" symbols: the exported name must match."},
        {"kind": "best_practice", "title": "fusions of elementwise ops and a normalisation",
         "body": "Write the elementwise result once (with its SIMD sum), then variance and the affine epilogue in "
                 "place, per row over the pool: three row passes in cache instead of three full temporaries."},
    ],
}


def response(prose: str, stem: str) -> str:
    code = (HERE / "kernels" / f"{stem}.py").read_text()
    return f"{prose}\n\n```python\n{code}```\n"


def build_script() -> dict:
    responses = {
        task: {stage: [response(prose, stem) for stem, prose, _gate in entries] for stage, entries in stages.items()}
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
