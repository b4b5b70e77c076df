"""The vocabulary of the Python static policy: which modules, torch names, tensor methods, builtins
and attributes the checks in :mod:`verifier.gates.hack_python` allow or forbid, and where.

"Per-call" names are judged only in code that can run when ``forward`` runs (see
:mod:`verifier.gates.hack_py_phases`); "anywhere" names are judged in every line of the candidate,
import-time code included (research/verifier.md §2.2 ids in the comments).
"""

from __future__ import annotations

ALLOWED_IMPORTS = {"torch", "torch.nn", "torch.nn.functional", "math", "typing", "__future__",
                   "verifier.cpu_native", "torch.utils.cpp_extension", "torch.utils", "functools",
                   "dataclasses", "numpy"}
ALLOWED_FROM_NAMES = {"verifier.cpu_native": {"load_c"}, "torch.utils.cpp_extension": {"load_inline"},
                      "torch.utils": {"cpp_extension"}}
LOADERS = {"verifier.cpu_native.load_c", "torch.utils.cpp_extension.load_inline"}
# Modules that are never allowed: the reason the import check gives (D6/C2/C4/D4/B6).
SYSTEM_MODULES = {"os", "io", "sys", "pathlib", "shutil", "tempfile", "mmap", "pickle", "marshal", "shelve",
                  "subprocess", "socket", "ctypes", "cffi", "multiprocessing", "threading", "_thread",
                  "concurrent", "signal", "time", "inspect", "gc", "importlib", "builtins", "resource",
                  "fcntl", "posix", "urllib", "http", "requests", "asyncio", "select", "glob", "fileinput",
                  "copyreg", "runpy", "code", "codeop", "weakref", "atexit", "faulthandler", "sysconfig"}
# Modules the allowed ones import and so expose as attributes (torch.os, typing.sys,
# dataclasses.builtins, torch.utils.cpp_extension.subprocess...): never reached through them.
REEXPORTED_MODULES = SYSTEM_MODULES | {"builtins", "platform", "shlex", "sysconfig", "setuptools", "copyreg", "copy",
                                       "operator", "logging", "collections", "contextlib", "abc", "keyword", "re",
                                       "stdlib_re", "itertools", "textwrap", "warnings", "errno", "glob", "types"}
REEXPORT_EXCEPTIONS = {("torch", "types"), ("torch", "signal")}  # torch's own submodules

# torch.<name> allowed in per-call code: allocation, dtype/device objects, grad-mode managers.
TORCH_ALLOWED = {"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like",
                 "full", "full_like", "tensor", "as_strided", "Size", "Tensor", "device", "dtype",
                 "no_grad", "inference_mode", "is_tensor", "float32", "float64", "float16",
                 "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool", "long", "float",
                 "half", "double", "int", "contiguous_format", "strided", "finfo", "iinfo", "nn",
                 "utils", "__version__"}
TORCH_ALLOWED_DOTTED = {"torch.nn.Module", "torch.nn.functional", "torch.utils.cpp_extension",
                        "torch.utils.cpp_extension.load_inline"}
TORCH_ALLOWED_PREFIXES = ("torch.nn.Parameter", "torch.Size")
# Calling these torch names gives plain Python values, not tensors.
TORCH_VALUE_RESULTS = {"torch.Size", "torch.device", "torch.dtype", "torch.finfo", "torch.iinfo", "torch.no_grad",
                       "torch.inference_mode", "torch.is_tensor", "torch.get_default_dtype"}
# nn containers whose forward does not compute (subclassing them is fine); calling their
# constructors keeps the modules passed in (ModuleList([nn.Linear(...)])[0] is a Linear).
NN_CONTAINERS = {"torch.nn.Module", "torch.nn.ModuleList", "torch.nn.ModuleDict", "torch.nn.ParameterList",
                 "torch.nn.ParameterDict"}
NN_CARRYING = NN_CONTAINERS | {"torch.nn.Sequential"}

# Tensor methods that compute (A1): a static tripwire; the dispatch trace is the authority.
TENSOR_COMPUTE = set("""abs absolute acos add addbmm addcdiv addcmul addmm addmv all amax amin any argmax
argmin argsort asin atan atan2 baddbmm bmm ceil clamp clamp_max clamp_min clip cos cosh cross cummax
cummin cumprod cumsum diag div divide dot einsum eq erf erfc exp exp2 expm1 flip floor fmod frac ge
gather gelu gt hardtanh index_add index_select inner kron le lerp lgamma log log10 log1p log2 logaddexp
logical_and logical_not logical_or logsumexp lt masked_fill masked_scatter masked_select matmul max
maximum mean median min minimum mm mode mul multiply mv nan_to_num nanmean nansum ne neg negative norm
outer pow prod reciprocal relu remainder renorm repeat repeat_interleave roll rot90 round rsqrt
scatter scatter_add sigmoid sign signbit sin sinh softmax log_softmax sort sqrt square std sub
subtract sum tan tanh topk trace tril triu trunc var where xlogy addr cov count_nonzero diff
histc kthvalue logcumsumexp nanmedian quantile silu mish softplus hardswish hardsigmoid elu selu
celu leaky_relu logit sinc true_divide floor_divide bitwise_and bitwise_or bitwise_xor conv2d""".split())
# Tensor attributes and methods whose result is a plain Python value (shape arithmetic).
TENSOR_VALUE_ATTRS = {"shape", "dtype", "device", "ndim", "layout", "is_cuda", "is_cpu", "requires_grad",
                      "is_leaf", "itemsize", "nbytes", "is_sparse", "is_quantized", "is_meta", "names"}
TENSOR_VALUE_METHODS = {"size", "dim", "numel", "stride", "element_size", "is_contiguous", "storage_offset",
                        "nelement", "ndimension", "get_device", "is_floating_point", "is_complex", "item",
                        "is_pinned", "is_set_to", "__len__"}
# Plain-value attributes of nn modules (configuration, not tensors).
NN_VALUE_ATTRS = {"in_features", "out_features", "in_channels", "out_channels", "kernel_size", "stride",
                  "padding", "dilation", "groups", "padding_mode", "eps", "momentum", "affine",
                  "normalized_shape", "num_features", "training", "output_padding", "transposed",
                  "num_embeddings", "embedding_dim", "p", "inplace", "negative_slope", "dim",
                  "elementwise_affine", "track_running_stats", "num_groups", "num_channels"}
# nn.Module methods that read or move a module without running it.
NN_ACCESSORS = {"parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children",
                "modules", "named_modules", "state_dict", "get_parameter", "get_buffer", "get_submodule",
                "extra_repr", "train", "eval", "requires_grad_", "zero_grad", "to", "cpu", "cuda", "float",
                "double", "half", "bfloat16"}
# Tensor methods that hand the data to the host, where Python or numpy computes unseen (A1).
HOST_BRIDGES = {"numpy", "tolist", "__array__", "__dlpack__"}

FORBIDDEN_BUILTINS = {"exec", "eval", "compile", "__import__", "open", "getattr", "setattr", "delattr",
                      "globals", "locals", "vars", "breakpoint", "input", "id", "hash", "memoryview",
                      "exit", "quit", "help", "dir"}
# typing helpers that evaluate annotation strings as code.
EVALUATING_TYPING = {"typing.get_type_hints", "typing.ForwardRef", "typing.evaluate_forward_ref"}
FORBIDDEN_DUNDERS = {"__class__", "__dict__", "__globals__", "__builtins__", "__subclasses__", "__code__",
                     "__closure__", "__getattribute__", "__mro__", "__bases__", "__import__", "__loader__",
                     "__spec__", "__torch_function__", "__torch_dispatch__", "__reduce__", "__setattr__",
                     "__func__", "__self__", "__wrapped__", "__defaults__", "__kwdefaults__", "__module__",
                     "__getattr__", "__reduce_ex__", "__getstate__", "__setstate__", "__array_interface__",
                     "__array_struct__", "__cuda_array_interface__", "__dlpack__", "__array__", "__file__",
                     "__cached__", "__path__", "__package__", "__delattr__", "__init_subclass__"}
# Class members that let an object pose as a tensor or array (raw memory, dispatch overrides).
FORBIDDEN_MEMBERS = {"__torch_function__", "__torch_dispatch__", "__array_interface__", "__array_struct__",
                     "__cuda_array_interface__", "__dlpack__", "__array__", "__array_function__",
                     "__array_ufunc__", "__getattribute__"}
POINTER_ATTRS = {"data_ptr", "_version", "untyped_storage", "storage", "_cdata"}

STATE_CHANGERS = {"set_num_threads", "set_num_interop_threads", "set_default_dtype", "set_default_tensor_type",
                  "set_flush_denormal", "use_deterministic_algorithms", "manual_seed", "seed", "Generator",
                  "set_rng_state", "set_default_device", "set_float32_matmul_precision", "set_printoptions",
                  "compile", "jit", "library", "ops", "_C", "_dynamo", "overrides", "_ops", "_refs",
                  "_prims", "fx", "autograd", "profiler", "cuda", "backends", "hub", "multiprocessing"}
RNG = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal",
       "bernoulli", "multinomial", "poisson", "uniform_", "normal_", "random_", "exponential_", "bernoulli_",
       "geometric_", "cauchy_", "log_normal_", "random", "uniform", "choice", "permutation", "shuffle",
       "trunc_normal_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
       "orthogonal_", "sparse_"}

# Files, processes, network, pickling and memory mapping (issue 13), anywhere in the candidate.
TORCH_IO = {"save", "load", "from_file", "serialization", "package", "distributed", "classes", "storage",
            "UntypedStorage", "TypedStorage", "ByteStorage", "FloatStorage", "DoubleStorage", "HalfStorage",
            "IntStorage", "LongStorage", "ShortStorage", "CharStorage", "BoolStorage", "BFloat16Storage",
            "hub", "multiprocessing", "_utils", "_weights_only_unpickler", "_tensor_str"}
TORCH_UTILS_IO = {"data", "model_zoo", "tensorboard", "file_baton", "collect_env", "benchmark", "bottleneck",
                  "hipify", "dlpack", "bundled_inputs", "mobile_optimizer", "show_pickle", "jit"}
NUMPY_IO = {"load", "save", "savez", "savez_compressed", "savetxt", "loadtxt", "genfromtxt", "fromfile",
            "fromregex", "memmap", "tofile", "DataSource", "ctypeslib", "lib", "f2py", "distutils", "testing",
            "core", "_core", "rec", "info", "source", "lookfor", "show_config", "show_runtime", "recfromcsv",
            "recfromtxt", "dump", "dumps"}
IO_METHODS = {"tofile", "dump", "dumps", "from_file", "share_memory_", "_share_filename_cpu_",
              "_share_fd_cpu_", "_new_shared_filename_cpu", "_new_shared_fd_cpu", "_new_using_filename_cpu",
              "_new_using_fd_cpu", "_new_shared", "_share_memory_"}
IO_KEYWORDS = {"build_directory"}  # load_inline(build_directory=...) writes where the candidate says

# Calls that change what running a module does (hooks run inside nn.Module.__call__).
HOOK_PREFIXES = ("register_forward_hook", "register_forward_pre_hook", "register_module_forward",
                 "register_full_backward", "register_backward_hook", "register_parametrization")
HOOK_NAMES = {"weight_norm", "spectral_norm", "parametrize", "parametrizations", "orthogonal"}
# Decorators that return the function they wrap (its callers are its callers).
TRANSPARENT_DECORATORS = {"staticmethod", "classmethod", "functools.lru_cache", "functools.cache",
                          "torch.no_grad", "torch.inference_mode", "typing.overload", "typing.final"}
# Names nn.Module (or the harness) may call on a module by itself: never import-time only.
NN_MODULE_NAMES = set("""T_destination _apply _call_impl _compiled_call_impl _get_backward_hooks
_get_backward_pre_hooks _get_name _load_from_state_dict _maybe_warn_non_full_backward_hook _named_members
_register_load_state_dict_pre_hook _register_state_dict_hook _replicate_for_data_parallel
_save_to_state_dict _slow_forward _version _wrapped_call_impl add_module apply bfloat16 buffers
call_super_init children compile cpu cuda double dump_patches eval extra_repr float forward get_buffer
get_extra_state get_parameter get_submodule half ipu load_state_dict modules mtia named_buffers
named_children named_modules named_parameters parameters register_backward_hook register_buffer
register_forward_hook register_forward_pre_hook register_full_backward_hook
register_full_backward_pre_hook register_load_state_dict_post_hook register_load_state_dict_pre_hook
register_module register_parameter register_state_dict_post_hook register_state_dict_pre_hook
requires_grad_ set_extra_state set_submodule share_memory state_dict to to_empty train type xpu
zero_grad""".split())
# Builtins whose result is a plain value / one of their arguments.
VALUE_BUILTINS = {"len", "int", "float", "bool", "str", "range", "abs", "round", "isinstance", "issubclass",
                  "hasattr", "callable", "print", "repr", "format", "divmod", "pow", "any", "all", "ord", "chr",
                  "hex", "bin", "oct", "slice", "object", "bytes", "complex", "ascii", "None", "True", "False",
                  "NotImplemented", "Ellipsis", "ValueError", "TypeError", "RuntimeError", "AssertionError",
                  "NotImplementedError", "KeyError", "IndexError", "Exception"}
CARRYING_BUILTINS = {"list", "tuple", "set", "frozenset", "dict", "sorted", "reversed", "iter", "next", "zip",
                     "enumerate", "map", "filter", "staticmethod", "classmethod", "property", "min", "max", "sum"}
