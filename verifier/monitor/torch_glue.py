"""Which of torch's functions are glue and which are compute, for a sample in torch's libraries
(verifier.monitor.code_map: ``torch``), by the function's own (mangled) name from the library's symbol
table (verifier.monitor.elf_functions).

The contract lets ``forward`` allocate, view, copy and move data with torch and nothing else
(verifier.sandbox.observer.ALLOWED_OPS); the runner itself views the arena and copies the outputs into
it. So glue is, and nothing else is:

- the machinery every operator passes through: the dispatcher and operator entries (``at::_ops``),
  autograd and tracing wrappers, record functions, tensor objects and their creation (``c10``,
  ``at::TensorBase``, ``at::detail::empty*``, ``at::TensorMaker``), TensorIterator's set-up, the
  parallel-for driver and the standard library's pieces;
- the native functions of the allowed operators (``at::native::empty_like``, ``copy_``, ``fill_``,
  ``cat``, ``constant_pad_nd`` ...) and their kernels (``direct_copy_kernel``, ``fill_kernel`` ...).

The safe way round: a function whose name says nothing of the above is compute, and so is an address no
symbol covers (inlined or stripped code) and every bundled library (MKL, oneDNN, SLEEF, fbgemm).
A name that holds a kernel (``*_kernel``, ``*Kernel``, or the lambda of one) is judged by its kernels: glue
only if every one of them is a data-movement kernel.
"""

from __future__ import annotations

import re
from functools import lru_cache

from verifier.monitor.elf_functions import table_for
from verifier.sandbox.observer import ALLOWED_OPS

# kernels that move data (copies, fills, concatenation, padding, the index arithmetic of views)
GLUE_KERNELS = frozenset("""
direct_copy_kernel copy_kernel copy_same_dtype copy_impl fill_kernel fill_non_native_type cat_serial_kernel
cat_contig_kernel cat_contig_firstdim_impl cat_serial_kernel_impl stack_serial_kernel stack_serial_kernel_impl
transpose_copy_kernel neg_conj_kernel float_bfloat16_copy_kernel reduced_float_copy_kernel bfloat16_copy_kernel
""".split())
# scopes (leading identifiers of a function's qualified name) whose functions are glue
GLUE_SCOPES = (
    ("c10",), ("std",), ("__gnu_cxx",), ("caffe2",), ("at", "_ops"), ("at", "TensorBase"), ("at", "Tensor"),
    ("at", "detail"), ("at", "impl"), ("at", "RecordFunction"), ("at", "TensorMaker"), ("at", "TensorIteratorBase"),
    ("at", "TensorIterator"), ("at", "TensorIteratorConfig"), ("at", "internal"), ("at", "OperandInfo"),
    ("at", "ThreadLocalState"), ("at", "NamedTensorMeta"), ("at", "namedinference"), ("at", "meta"),
    ("torch", "autograd"), ("torch", "jit"), ("torch", "ADInplaceOrView"), ("torch", "TraceType"),
    ("at", "functorch"), ("at", "functionalization"), ("torch", "dynamo"), ("at", "Context"),
    ("at", "_GLOBAL__N_1", "LocalCallbackManager"), ("at", "_GLOBAL__N_1", "GlobalCallbackManager"),
    ("at", "CPUGeneratorImpl"), ("at", "TensorGeometry"), ("at", "Allocator"), ("at", "native", "DispatchStubImpl"),
    ("at", "sequence_number"), ("at", "_GLOBAL__N_1", "CacheEntry"), ("at", "_GLOBAL__N_1", "check_type"),
)
# C symbols of the runtime's own in every library (thread-local and static initialisation)
GLUE_C = frozenset("__tls_init _init _fini frame_dummy register_tm_clones deregister_tm_clones __do_global_dtors_aux".split())
GLUE_FREE_FUNCTIONS = frozenset("""
getStepCallbacksUnlessEmpty getStepCallbacks empty empty_like empty_strided from_blob infer_size infer_size_dimvector
get_num_threads in_parallel_region get_thread_num set_thread_num init_num_threads globalContext
has_internal_overlap assert_no_internal_overlap get_overlap_status assert_no_partial_overlap assert_no_overlap
original_options
""".split())
GLUE_NATIVE_EXTRA = frozenset("""
empty_cpu empty_strided_cpu copy_impl copy_ _copy_from _copy_from_and_resize clone contiguous resize_ resize_output
as_strided_tensorimpl as_strided_ view expand reshape alias fill_ zero_ _to_copy to narrow slice select
transpose permute unsqueeze squeeze split chunk unbind cat_out_cpu cat stack constant_pad_nd _cat_out_cpu
structured_cat_out_cpu check_cat_no_zero_dim _reshape_alias _unsafe_view view_dtype detach lift_fresh
from_blob is_contiguous sizes strides numel item _local_scalar_dense copy_same_type_transpose_ set_ _empty_affine_quantized
checkInBoundsForStorage checkSetStorage checkAsStridedArgs inferSqueezeGeometry inferUnsqueezeGeometry alias_with_sizes_and_strides
compute_cpu_capability get_cpu_capability TORCH_PRECOMPUTE_META_FUNC empty_generic empty_strided_generic resize_impl_cpu_ _resize_output
""".split())
# templates that run an operator's loop body: a name holding one (or a lambda) is the body of some operator
LOOP_HELPERS = frozenset("""
VectorizedLoop2d basic_loop vectorized_loop cpu_kernel cpu_kernel_vec cpu_serial_kernel cpu_serial_kernel_vec
loop_2d_from_1d binary_kernel_reduce binary_kernel_reduce_vec binary_kernel_reduce_lastdim unary_kernel_reduce
invoke_parallel parallel_for parallel_reduce _omp_fn
""".split())
# functions whose loop bodies and lambdas are data movement
GLUE_BODIES = GLUE_KERNELS | frozenset("""
copy_ _copy_from copy_impl copy_same_type_transpose_ _to_copy clone contiguous cat stack cat_out_cpu _cat_out_cpu
constant_pad_nd fill_ zero_ empty_like empty_cpu as_strided_tensorimpl resize_ _reshape_alias
""".split())
_STD = re.compile(r"_ZN?K?S[tabsiod]")  # std::, std::allocator, std::basic_string ... (abbreviated)
_SOURCE_NAME = re.compile(r"(\d+)([A-Za-z_])")
_KERNEL = re.compile(r"_kernel(_impl)?$")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def identifiers(mangled: str) -> list[str]:
    """The source names in an Itanium-mangled name, in order (``<length><identifier>``), without demangling:
    a run of digits after ``S`` or ``T`` is a substitution or a template parameter, not a length."""
    out, pos, end = [], 0, len(mangled)
    while True:
        m = _SOURCE_NAME.search(mangled, pos)
        if not m:
            return out
        length, start = int(m.group(1)), m.start(2)
        name = mangled[start:start + length]
        if m.start() > 0 and mangled[m.start() - 1] in "ST":
            pos = m.end(1)
        elif len(name) == length and _IDENT.fullmatch(name) and start + length <= end:
            out.append(name)
            pos = start + length
        else:
            pos = m.end(1)


@lru_cache(maxsize=1 << 16)
def is_glue(mangled: str) -> bool:
    """Whether torch's function ``mangled`` is glue (the module doc's rules)."""
    if not mangled.startswith("_Z"):
        return mangled.split(".", 1)[0] in GLUE_C  # else a C symbol: MKL, oneDNN, SLEEF, the bundled libraries
    names = identifiers(mangled)
    kernels = [n for n in names if _KERNEL.search(n) and n not in LOOP_HELPERS]
    if kernels:
        return all(k in GLUE_KERNELS for k in kernels)
    if _holds_a_body(mangled, names):
        return any(n in GLUE_BODIES for n in names)
    if _STD.match(mangled):
        names = ["std", *names]
    if not names:
        return False
    if any(tuple(names[:len(scope)]) == scope for scope in GLUE_SCOPES):
        return True
    head = names[:2]
    if head[0] == "at" and len(names) > 1 and names[1] in GLUE_FREE_FUNCTIONS:
        return True
    if head == ["at", "native"] or head == ["at", "cpu"]:
        rest = [n for n in names[2:] if n not in ("_GLOBAL__N_1", "DEFAULT", "AVX2", "AVX512")]
        return bool(rest) and any(name in ALLOWED_OPS or name in GLUE_NATIVE_EXTRA for name in _stems(rest[0]))
    return False


def _stems(name: str) -> tuple[str, ...]:
    """A native function's name and its operator's (``reshape_symint`` is ``reshape``'s, ``copy_out_cpu`` is
    ``copy``'s ...)."""
    stems = [name]
    for suffix in ("_symint", "_cpu", "_out", "_impl", "_generic"):
        if stems[-1].endswith(suffix) and len(stems[-1]) > len(suffix):
            stems.append(stems[-1][: -len(suffix)])
    return tuple(stems)


def _holds_a_body(mangled: str, names: list[str]) -> bool:
    """A loop template or a lambda (a closure type ``Ul...E_`` outside every identifier) is in the name."""
    if any(n in LOOP_HELPERS for n in names) or "._omp_fn" in mangled:
        return True
    skeleton = mangled
    for name in sorted(set(names), key=len, reverse=True):
        skeleton = skeleton.replace(name, "")
    return "Ul" in skeleton


def short_name(mangled: str) -> str:
    """A readable name for a reason: the kernel a function runs, else its qualified name (no demangler)."""
    names = identifiers(mangled)
    kernels = [n for n in names if _KERNEL.search(n) and n not in LOOP_HELPERS]
    if kernels:
        return kernels[0]
    if not mangled.startswith("_Z"):
        return mangled
    scope = [n for n in names[:4] if n not in ("_GLOBAL__N_1",)]
    return "::".join(scope[:3]) or mangled


def classify_all(mapping, ips) -> list[tuple[str, bool, int]]:
    """(function's mangled name or "[plt]" or "?", whether it is glue, samples) of the samples at ``ips`` (an
    array of addresses inside ``mapping``), one entry per function."""
    import numpy as np

    table = table_for(mapping.path)
    if table is None or not len(ips):
        return [("?", False, len(ips))] if len(ips) else []
    offsets = ips.astype(np.int64) - mapping.start + mapping.offset
    vaddr0 = table.vaddr(int(offsets[0]))
    if vaddr0 is None:
        return [("?", False, len(ips))]
    vaddrs = offsets + (vaddr0 - int(offsets[0]))  # a mapping is one segment: one displacement
    out = []
    stub = np.zeros(len(vaddrs), bool)
    for a, b in table.stubs:
        stub |= (vaddrs >= a) & (vaddrs < b)
    if stub.any():
        out.append(("[plt]", True, int(stub.sum())))
    for index, count in zip(*np.unique(table.functions_at(vaddrs[~stub].astype(np.uint64)), return_counts=True)):
        name = table.name(int(index)) if index >= 0 else "?"
        out.append((name, index >= 0 and is_glue(name), int(count)))
    return out
