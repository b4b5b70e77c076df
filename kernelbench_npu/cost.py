"""A meta-device cost model of one reference forward: FLOPs, bytes moved, ops, footprint, estimated time.

``Model(*get_init_inputs())(*get_inputs())`` runs on PyTorch's ``meta`` device (built through
:mod:`kernelbench_npu.instantiate`) under a dispatch mode that, per aten op, counts FLOPs (the
matmul/convolution/attention family, from torch's FLOP registry) and bytes read and written. No
real tensor is allocated, so a 16 GiB KernelBench task costs milliseconds to estimate, and the
estimate is deterministic: the sizes the size profile picks (and the build's bytes) do not depend
on how busy the machine is.

The time estimate is per op: FLOPs at the op family's rate, plus bytes at the memory bandwidth,
plus a fixed per-op overhead (recurrent layers: plus a fixed cost per cell update). Rates
calibrated on this project's 2-core build host (torch 2.13 CPU, 2 threads, fp32); ``python -m
benchmarks.kernelbench_fidelity --calibrate`` measures them again on the machine it runs on.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelbench_npu.instantiate import load_module, meta_instance

GFLOP = 1e9
FLOPS_PER_S = {  # by aten op family
    "matmul": 40 * GFLOP,
    "convolution": 25 * GFLOP,
    "conv_dilated": 4 * GFLOP,  # im2col slow paths
    "conv_transpose": 10 * GFLOP,
    "conv_transpose_3d": 1.5 * GFLOP,
    "attention": 20 * GFLOP,
}
WINDOWS_PER_S = {"max_pool": 50e6, "avg_pool": 200e6}  # output elements x window volume per second
BYTES_PER_S = 5e9
INDEX_REDUCTION_BYTES_PER_S = 0.4e9  # max/min/argmax/argmin along an axis (they track indices)
SECONDS_PER_OP = 10e-6
SEED = 0
_WARM_UP = """import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x @ x.T).sum(dim=1)
def get_inputs():
    return [torch.rand(4, 8)]
def get_init_inputs():
    return []
"""


@dataclass(frozen=True)
class Cost:
    """Meta-device estimate of one reference forward."""

    flops: int
    bytes_moved: int
    ops: int
    footprint_bytes: int  # inputs + output + parameters and buffers
    input_shapes: tuple[tuple[int, ...] | None, ...]  # None for a Python scalar input
    output_shape: tuple[int, ...]
    output_dtype: str
    estimated_ms: float


class CostError(RuntimeError):
    """The meta-device run failed (an op without a meta kernel, a shape error after scaling, ...)."""


def estimate_cost(source: str, dtype: str = "float32", path: str = "<problem>") -> Cost:
    """Run the problem once on the meta device and count FLOPs, bytes and ops (no real allocation)."""
    import torch

    try:
        module = load_module(source, path)
        instance = meta_instance(module, dtype, SEED)
        with torch.device("meta"):
            counter = _counter_class()()
            with torch.no_grad(), counter, _recurrent_class()(counter):
                out = instance.model(*instance.inputs)
    except Exception as exc:  # noqa: BLE001 - reported to the caller as one line
        text = str(exc).strip().splitlines()
        raise CostError(f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__) from None
    if not isinstance(out, torch.Tensor):
        raise CostError(f"forward returned a {type(out).__name__}, expected one tensor")
    tensors = [x for x in instance.inputs if isinstance(x, torch.Tensor)]
    state = list(instance.model.parameters()) + list(instance.model.buffers())
    return Cost(
        flops=int(counter.flops), bytes_moved=counter.bytes_moved, ops=counter.ops,
        footprint_bytes=sum(_nbytes(t) for t in tensors + state) + _nbytes(out),
        input_shapes=tuple(tuple(x.shape) if isinstance(x, torch.Tensor) else None for x in instance.inputs),
        output_shape=tuple(out.shape), output_dtype=str(out.dtype).removeprefix("torch."),
        estimated_ms=round(counter.seconds * 1e3, 6),
    )


def warm_up() -> None:
    """Pay the first meta-device dispatch's one-time imports now (it pulls in ``torch._dynamo``:
    ~1.5 s on a quiet host, far more on a busy one), so no task's timeout pays for them."""
    estimate_cost(_WARM_UP, path="<warm-up>")


def cost_from_dict(data: dict) -> Cost:
    shapes = tuple(tuple(s) if s is not None else None for s in data["input_shapes"])
    return Cost(**{**data, "input_shapes": shapes, "output_shape": tuple(data["output_shape"])})


def _nbytes(tensor) -> int:
    return tensor.numel() * tensor.element_size()


def op_family(name: str, args: tuple) -> str | None:
    """The FLOP-rate family of an aten op name (None: memory-bound)."""
    if name in ("mm", "addmm", "bmm", "baddbmm", "_scaled_mm"):
        return "matmul"
    if "convolution" in name or name == "_slow_conv2d_forward":
        transposed = len(args) > 6 and isinstance(args[6], bool) and args[6]
        if transposed:
            return "conv_transpose_3d" if args[0].dim() == 5 else "conv_transpose"
        dilated = len(args) > 5 and any(int(d) > 1 for d in _ints(args[5]))
        return "conv_dilated" if dilated else "convolution"
    if "attention" in name:
        return "attention"
    return None


def _ints(value) -> list[int]:
    return [value] if isinstance(value, int) else list(value) if isinstance(value, (list, tuple)) else []


def window_seconds(name: str, args: tuple, out) -> float:
    """Pooling: output elements x window volume at the pooling rate (not memory-bound on a CPU)."""
    kind = "max_pool" if name.startswith("max_pool") else "avg_pool" if name.startswith("avg_pool") else None
    if kind is None or len(args) < 2:
        return 0.0
    spatial = args[0].dim() - 2
    kernel = _ints(args[1])
    volume = 1
    for k in (kernel * spatial if len(kernel) == 1 else kernel):
        volume *= int(k)
    first = out[0] if isinstance(out, (tuple, list)) else out
    return first.numel() * volume / WINDOWS_PER_S[kind]


def attention_flops(args: tuple) -> int:
    """QK^T and PV of scaled dot-product attention: 4 * batch... * Lq * Lk * E."""
    q, k = args[0], args[1]
    batch = 1
    for size in q.shape[:-2]:
        batch *= size
    return 4 * batch * q.shape[-2] * k.shape[-2] * q.shape[-1]


_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
# Fixed cost of one cell update on top of its FLOPs: CPU LSTM runs a fused cell; GRU and RNN cells
# are several small ops each, which dominate at KernelBench's small hidden sizes.
SECONDS_PER_CELL_STEP = {"lstm": 2e-6, "gru": 12e-6, "rnn_tanh": 6e-6, "rnn_relu": 6e-6}


def recurrent_cost(name: str, args: tuple) -> tuple[int, tuple]:
    """FLOPs and meta outputs of ``torch.lstm/gru/rnn_*`` (unpacked input) without running them:
    on the meta device they decompose into tens of thousands of per-timestep ops (minutes)."""
    import torch

    x, hx, params, _bias, layers, _dropout, _train, bidirectional, batch_first = args[:9]
    h0 = hx[0] if isinstance(hx, (list, tuple)) else hx
    directions, hidden = (2 if bidirectional else 1), h0.shape[-1]
    seq_dim, batch = (1, x.shape[0]) if batch_first and x.dim() == 3 else (0, x.shape[1] if x.dim() == 3 else 1)
    steps, width = x.shape[seq_dim], x.shape[-1]
    gate_rows = params[0].shape[0]  # gates x hidden (the input-hidden weight of layer 0)
    flops = 0
    for layer in range(layers):
        inputs = width if layer == 0 else directions * hidden
        flops += directions * steps * batch * 2 * gate_rows * (inputs + hidden)
    out_shape = list(x.shape[:-1]) + [directions * hidden]
    outputs = (torch.empty(out_shape, dtype=x.dtype, device=x.device),)
    states = hx if isinstance(hx, (list, tuple)) else (hx,)
    return flops, outputs + tuple(torch.empty_like(h) for h in states)


def cell_steps(args: tuple) -> int:
    """Time steps x layers x directions of a recurrent call (each one a cell update)."""
    x, _hx, _params, _bias, layers, _dropout, _train, bidirectional, batch_first = args[:9]
    steps = x.shape[1 if batch_first and x.dim() == 3 else 0]
    return steps * layers * (2 if bidirectional else 1)


def _recurrent_class():
    import torch
    from torch.overrides import TorchFunctionMode

    functions = {getattr(torch, name): name for name in _GATES}

    class RecurrentCost(TorchFunctionMode):
        """Costs recurrent layers analytically (matmul rate) instead of tracing their decomposition."""

        def __init__(self, counter) -> None:
            super().__init__()
            self.counter = counter

        def __torch_function__(self, func, types, args=(), kwargs=None):
            name = functions.get(func)
            if name is None or len(args) < 9 or not isinstance(args[1], (torch.Tensor, list, tuple)) \
                    or isinstance(args[3], torch.Tensor):  # a packed sequence: trace it
                return func(*args, **(kwargs or {}))
            flops, outputs = recurrent_cost(name, args)
            moved = sum(_nbytes(t) for t in [args[0], *args[2], *outputs])
            cells = cell_steps(args)
            self.counter.add(flops, moved, flops / FLOPS_PER_S["matmul"] + moved / BYTES_PER_S + SECONDS_PER_OP
                             + cells * SECONDS_PER_CELL_STEP[name])
            return outputs

    return RecurrentCost


def _counter_class():
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves
    from torch.utils.flop_counter import flop_registry

    class CostCounter(TorchDispatchMode):
        """Sums FLOPs, bytes and the estimated seconds of every non-view aten op."""

        def __init__(self):
            super().__init__()
            self.flops, self.bytes_moved, self.ops, self.seconds = 0, 0, 0, 0.0

        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False  # no torch.compile here; the dynamo guard costs ~ms per op

        def add(self, flops: int, moved: int, seconds: float) -> None:
            self.flops += flops
            self.bytes_moved += moved
            self.ops += 1
            self.seconds += seconds

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if getattr(func, "is_view", False):
                return out
            packet, name = func._overloadpacket, func._overloadpacket.__name__
            family = op_family(name, args)
            flops = 0
            if packet in flop_registry:
                flops = int(flop_registry[packet](*args, **kwargs, out_val=out))
            elif family == "attention":
                flops = attention_flops(args)
            moved = sum(_nbytes(t) for t in tree_leaves((args, kwargs, out)) if isinstance(t, torch.Tensor))
            indexed = name in ("argmax", "argmin") or (name in ("max", "min") and len(args) > 1)
            bandwidth = INDEX_REDUCTION_BYTES_PER_S if indexed else BYTES_PER_S
            self.add(flops, moved, (flops / FLOPS_PER_S[family] if family and flops else 0.0)
                     + window_seconds(name, args, out) + moved / bandwidth + SECONDS_PER_OP)
            return out

    return CostCounter
