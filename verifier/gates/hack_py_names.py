"""The vocabulary of the Python static policy: which modules, torch names, tensor methods, builtins
and attributes the checks in :mod:`verifier.gates.hack_python` allow or forbid, and where.

"Per-call" names are judged only in code that can run when ``forward`` runs (see
:mod:`verifier.gates.hack_py_phases`); "anywhere" names are judged in every line of the candidate,
import-time code included (research/verifier.md §2.2 ids in the comments).
"""

from __future__ import annotations

ALLOWED_IMPORTS = {"torch", "torch.nn", "torch.nn.functional", "math", "typing", "__future__",
                   "verifier.cpu_native", "torch.utils.cpp_extension", "torch.utils", "functools",
                   "dataclasses", "numpy", "operator", "itertools", "collections", "collections.abc", "enum"}
# Members of allowed modules that reach attributes by a string (getattr by another name): refused
# unless the string is a constant, non-dunder name.
STRING_ACCESSORS = {"operator.attrgetter", "operator.methodcaller"}
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
                                       "stdlib_re", "itertools", "textwrap", "warnings", "errno", "glob", "types",
                                       "bltns"}  # enum's name for builtins
REEXPORT_EXCEPTIONS = {("torch", "types"), ("torch", "signal"), ("collections", "abc")}  # their own submodules

# Calling these torch names gives plain Python values, not tensors.
TORCH_VALUE_RESULTS = {"torch.Size", "torch.device", "torch.dtype", "torch.finfo", "torch.iinfo", "torch.no_grad",
                       "torch.inference_mode", "torch.is_tensor", "torch.get_default_dtype"}
# nn containers whose forward does not compute (subclassing them is fine); calling their
# constructors keeps the modules passed in (ModuleList([nn.Linear(...)])[0] is a Linear).
NN_CONTAINERS = {"torch.nn.Module", "torch.nn.ModuleList", "torch.nn.ModuleDict", "torch.nn.ParameterList",
                 "torch.nn.ParameterDict"}
NN_CARRYING = NN_CONTAINERS | {"torch.nn.Sequential"}

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
# typing helpers that evaluate strings as code (string annotations are checked where they stand).
EVALUATING_TYPING = {"typing.get_type_hints", "typing.ForwardRef", "typing.evaluate_forward_ref"}
FORBIDDEN_DUNDERS = {"__class__", "__dict__", "__globals__", "__builtins__", "__subclasses__", "__code__",
                     "__closure__", "__getattribute__", "__mro__", "__bases__", "__import__", "__loader__",
                     "__spec__", "__torch_function__", "__torch_dispatch__", "__reduce__", "__setattr__",
                     "__func__", "__self__", "__wrapped__", "__defaults__", "__kwdefaults__", "__module__",
                     "__getattr__", "__reduce_ex__", "__getstate__", "__setstate__", "__array_interface__",
                     "__array_struct__", "__cuda_array_interface__", "__dlpack__", "__array__", "__file__",
                     "__cached__", "__path__", "__package__", "__delattr__", "__init_subclass__",
                     "__annotations__", "__annotate__", "__traceback__", "__base__", "__objclass__"}
# Attributes that reach frames, code objects or raw memory from pure Python (B6/D1; issue 23 class 4):
# tracebacks and generators lead to the frames of whoever called, ``array.ctypes`` to ctypes.pythonapi.
FRAME_ATTRS = {"tb_frame", "tb_next", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "gi_frame",
               "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "co_code", "co_consts", "ctypes"}
# Class members that let an object pose as a tensor or array (raw memory, dispatch overrides).
FORBIDDEN_MEMBERS = {"__torch_function__", "__torch_dispatch__", "__array_interface__", "__array_struct__",
                     "__cuda_array_interface__", "__dlpack__", "__array__", "__array_function__",
                     "__array_ufunc__", "__getattribute__"}
POINTER_ATTRS = {"data_ptr", "_version", "untyped_storage", "storage", "_cdata"}

# torch.<name> that change process-global state or reach torch internals (C7/D1), refused anywhere;
# reading state (get_num_threads, backends.*.is_available, cuda.current_stream) is fine.
STATE_CHANGERS = {"set_num_threads", "set_num_interop_threads", "set_default_dtype", "set_default_tensor_type",
                  "set_flush_denormal", "set_default_device", "compile", "jit", "library", "ops", "fx",
                  "overrides", "profiler", "hub", "multiprocessing", "export", "random"}
# Last parts refused under any torch path (torch.cuda.manual_seed_all, torch.autograd.profiler): seeding
# or reading the RNG the verifier seeded with its secret (A13), and the profiler's hooks.
RNG_STATE = {"manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "set_rng_state",
             "set_rng_state_all", "get_rng_state", "get_rng_state_all", "fork_rng", "profiler"}
# torch.cuda members that put work where the monitor's timer does not look (C1 streams, C6 graph
# replay) or compile kernels from strings outside the recorded loaders (jiterator).
CUDA_REFUSED = {"Stream", "ExternalStream", "stream", "set_stream", "CUDAGraph", "graph", "graphs",
                "make_graphed_callables", "jiterator"}

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
