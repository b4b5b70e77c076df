"""The prelude of the policy test snippets: the imports and the native library every one uses."""

HEAD = """import math
import functools
import torch
import torch.nn as nn
import torch.nn.functional as F
from verifier.cpu_native import load_c
lib = load_c("void relu(){}", {})
"""
