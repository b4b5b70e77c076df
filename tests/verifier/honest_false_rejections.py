"""Honest corpus entries the verifier rejects today (issue 24), each with its cause.

Every entry is a correct kernel in a style real solutions use (the fixture's covers line says which);
the static tier rejects it before anything runs. test_verifier_corpus turns each entry into a strict
xfail: when the policy stops rejecting it the test XPASSes, which fails the run until the entry is
removed here; a rejection for any other reason fails it too. ``python -m benchmarks.honest_corpus``
prints the same picture from real verifications, grouped by cause.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FalseRejection:
    """An honest candidate rejected at `gate` with `text` in the feedback, because of `cause`."""

    gate: str
    text: str
    cause: str
    static: bool = True  # rejected by the parent-side tier (static policy, build arguments read statically)
    later: "FalseRejection | None" = None  # what rejects it next once this cause is fixed (checked end to end)

    def matches(self, gate: str, feedback: str) -> bool:
        return (gate == self.gate and self.text in feedback) or bool(self.later and self.later.matches(gate, feedback))


OPERATOR_IMPORTS = ("issue 24: `operator`/`itertools` imports are refused by name (functools.reduce(operator.mul, "
                    "shape, 1), itertools.product/accumulate/chain on sizes)")
MAIN_BLOCK = ("issue 24: code under `if __name__ == \"__main__\":` (a self-test that never runs under the verifier) is "
              "held to the per-call policy (imports of time/argparse, torch.manual_seed, torch.cuda.synchronize)")
PARALLEL_FOR = "issue 24: at::parallel_for (a threading utility) is read as ATen compute by its name"
METHOD_NAMES = ("issue 24: methods of the candidate's own C++ structs/classes named like tensor ops (.add(), .mul(), "
                ".sum(), .mean()) are read as ATen compute by their names")
CLONE = "issue 24: x.contiguous().clone() / a clone() method is read as the clone syscall by its name"
GET_NUM_THREADS = "issue 24: torch.get_num_threads() (a query sizing the work) is read as torch compute"
SUPER_INIT = ("issue 24: with super(ModelNew, self).__init__() the checker treats __init__ as per-call code, so "
              "nn.Linear/nn.Conv2d/nn.LayerNorm/torch.randn there count as torch compute or randomness in forward")
BUILD_ARGS = ("issue 24: build arguments computed at import (f-strings of computed values, str.format, %, "
              "\"\".join, loops, conditional flag lists) cannot be read without running the candidate")


TRIVIAL_TANH = ("the scale-aware trivial-output check: on the small-magnitude distribution tanh(x) is x to ~x^3/3, so "
                "an honest libm/SLEEF tanhf (its error a few 1e-9 against torch's) is not 0.01x below the input copy's")
AOT_IMPORT = ("triton's compile gate imports only imports, constants, functions and literal triton.Config tables: "
              "autotune configs built by a comprehension at import fail its import slice")
MUTATED_FLAGS = ("a flag list built by .append() in a build helper is read statically as its first value "
                 "(['-O3']): the compile gate builds those flags, the real call passes others, and the loader refuses "
                 "the call at import")
LATER = {  # a second cause behind the first (the first is the one the static tier reports)
    "honest_cpu_inline_build_helper_conv_relu_bias": FalseRejection(
        "compile", "these arguments were not built by the compile gate", MUTATED_FLAGS, static=False),
    "honest_cpu_get_num_threads_chunks": FalseRejection("correctness", "is not far below that of a trivial output",
                                                        TRIVIAL_TANH, static=False),
    "honest_cpu_loop_generated_kernels": FalseRejection("correctness", "is not far below that of a trivial output",
                                                        TRIVIAL_TANH, static=False),
    "honest_triton_itertools_autotune_configs": FalseRejection("compile", "importing the candidate's kernels failed",
                                                               AOT_IMPORT, static=False),
}


def _rejected(cause: str, gate: str, text: str, *names: str) -> dict[str, FalseRejection]:
    return {name: FalseRejection(gate, text, cause, later=LATER.get(name)) for name in names}


KNOWN_FALSE_REJECTIONS: dict[str, FalseRejection] = {
    **_rejected(BUILD_ARGS, 'compile', 'must be a string literal, a module-level constant or a build-helper parameter bound to one',
                'honest_cpu_fstring_computed_unroll',
                'honest_cpu_inline_computed_flags_gelu',
                'honest_cpu_inline_joined_sources_bmm',
                'honest_cpu_join_source_parts',
                'honest_cpu_loop_generated_kernels',
                'honest_cpu_percent_format_pool',
                'honest_cpu_str_format_dtype_template',
                'honest_cuda_computed_flags_relu',
                'honest_cuda_format_maxpool',
                'honest_cuda_fstring_block_tanh',
                'honest_cuda_join_several_activations',
                ),
    **_rejected(CLONE, 'hack', 'clone: processes, signals and exits are not allowed',
                'honest_cpu_class_buffer_clone',
                'honest_cpu_inline_clone_scale_add',
                'honest_cuda_contiguous_clone_scale_add',
                ),
    **_rejected(GET_NUM_THREADS, 'hack', 'torch.get_num_threads() computes with torch (only allocation, views and copies are allowed in code that runs per call)',
                'honest_cpu_get_num_threads_chunks',
                'honest_cpu_get_num_threads_gemm',
                'honest_cpu_get_num_threads_partials',
                'honest_cpu_get_num_threads_pool',
                ),
    **_rejected(MAIN_BLOCK, 'hack', "import of 'argparse' is not allowed",
                'honest_cpu_main_selftest_avgpool',
                ),
    **_rejected(MAIN_BLOCK, 'hack', "import of 'time' is not allowed (files, processes, network, threads, timers and raw memory are off limits)",
                'honest_cpu_main_selftest_bmm',
                ),
    **_rejected(MAIN_BLOCK, 'hack', 'torch.cuda.synchronize is not allowed (global state, internals or RNG seeding)',
                'honest_cuda_main_selftest_bmm',
                ),
    **_rejected(MAIN_BLOCK, 'hack', 'torch.manual_seed is not allowed (global state, internals or RNG seeding)',
                'honest_cpu_main_selftest_softmax',
                ),
    **_rejected(METHOD_NAMES, 'hack', '.add(): tensor compute in native code is not allowed',
                'honest_cpu_omp_declare_reduction_minmax',
                'honest_cpu_struct_kahan_sum',
                'honest_cpu_struct_online_softmax',
                'honest_cpu_struct_rowstats_mean',
                'honest_cuda_struct_online_softmax',
                ),
    **_rejected(METHOD_NAMES, 'hack', '.mul(): tensor compute in native code is not allowed',
                'honest_cpu_class_matrix_mul',
                ),
    **_rejected(OPERATOR_IMPORTS, 'hack', "import of 'itertools' is not allowed",
                'honest_cpu_itertools_accumulate_strides',
                'honest_cpu_itertools_chain_args',
                'honest_cpu_operator_itemgetter_conv',
                'honest_cuda_itertools_avgpool',
                'honest_triton_itertools_autotune_configs',
                ),
    **_rejected(OPERATOR_IMPORTS, 'hack', "import of 'operator' is not allowed",
                'honest_cpu_functools_operator_numel',
                'honest_cpu_functools_partial_leaky',
                'honest_cuda_functools_operator_l2norm',
                'honest_triton_dataclass_launch_config',
                'honest_triton_functools_operator_swish',
                ),
    **_rejected(PARALLEL_FOR, 'hack', 'at::parallel_for: ATen/torch compute in native code is not allowed',
                'honest_cpu_inline_dispatch_log_softmax',
                'honest_cpu_inline_struct_add_minmax',
                'honest_cpu_inline_template_dispatch_matmul',
                ),
    **_rejected(SUPER_INIT, 'hack', 'nn.Conv2d (= torch.nn.Conv2d) computes with torch (only allocation, views and copies are allowed in code that runs per call)',
                'honest_cpu_inline_build_helper_conv_relu_bias',
                'honest_cpu_super_conv_randn_bias',
                'honest_cuda_super_conv_relu_bias',
                'honest_triton_super_conv_relu_bias',
                ),
    **_rejected(SUPER_INIT, 'hack', 'nn.LayerNorm (= torch.nn.LayerNorm) computes with torch (only allocation, views and copies are allowed in code that runs per call)',
                'honest_cpu_inline_parallel_for_layernorm',
                'honest_cpu_struct_welford_layernorm',
                'honest_cpu_super_layernorm_avx512',
                'honest_cuda_struct_welford_layernorm',
                'honest_triton_super_layernorm_randn',
                ),
    **_rejected(SUPER_INIT, 'hack', 'nn.Linear (= torch.nn.Linear) computes with torch (only allocation, views and copies are allowed in code that runs per call)',
                'honest_cpu_super_gemm_gelu_residual',
                'honest_cpu_super_linear_relu',
                'honest_cpu_super_linear_swish_scale',
                'honest_cuda_super_linear_swish_scale',
                'honest_triton_super_gemm_gelu_residual',
                'honest_triton_super_linear_relu',
                'honest_triton_super_linear_swish_scale',
                ),
    **_rejected(SUPER_INIT, 'hack', 'random numbers (torch.randn()) in code that runs per call',
                'honest_cpu_super_batchnorm_helper',
                'honest_cuda_super_batchnorm_helper',
                'honest_triton_super_batchnorm_helper',
                ),
}
