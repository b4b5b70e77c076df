"""Op categories: the tag every task carries (reports aggregate per level and category).

Bundled problems declare ``CATEGORY = "..."`` themselves. For a user's KernelBench checkout the
category is inferred from the file name: level 1 by the first matching keyword below, level 2 as
``fusion-<category of the leading op>``, level 3 and 4 as ``network``.
"""

from __future__ import annotations

import re

# Ordered: the first match wins ("Max_Pooling" is pooling, not a max reduction).
_KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("pooling", ("pool",)),
    ("convolution", ("conv",)),
    ("attention", ("attention", "sdpa")),
    ("loss", ("loss", "crossentropy", "kldiv", "hinge", "huber", "triplet")),
    ("normalization", ("norm",)),
    ("softmax", ("softmax",)),
    ("scan", ("cumsum", "cumprod", "scan")),
    ("matmul", ("matmul", "gemm", "bmm", "matrix", "einsum", "mm", "linear")),
    ("activation", ("relu", "gelu", "sigmoid", "tanh", "swish", "silu", "elu", "selu", "softplus",
                    "softsign", "hardtanh", "mish", "hardswish")),
    ("reduction", ("sum", "mean", "max", "min", "argmax", "argmin", "prod", "reduction", "logsumexp")),
)


def op_category(token_text: str) -> str:
    """The category of an op name such as "19_ReLU" or "Gemm" ("elementwise" if nothing matches)."""
    words = [w.lower() for w in re.split(r"[_\W\d]+", token_text) if w]
    for category, keywords in _KEYWORDS:
        for word in words:
            if any(word == k or (len(k) > 3 and k in word) for k in keywords):
                return category
    return "elementwise"


def infer_category(stem: str, level: int) -> str:
    """Category of a KernelBench file from its stem, e.g. ("19_ReLU", 1) -> "activation"."""
    if level == 1:
        return op_category(stem)
    if level == 2:
        lead = re.sub(r"^\d+_", "", stem).split("_")[0]
        return f"fusion-{op_category(lead)}"
    return "network"
