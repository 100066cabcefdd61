"""Which API calls are wrapped, per namespace prefix of the record names.

The lists cover the arithmetic, layers, losses and optimizer updates of ordinary training
code. Left out on purpose: creation ops (``empty`` and friends return uninitialised memory,
whose statistics would differ run to run), comparisons and hashing dunders (``__eq__`` is used
by containers), and metadata accessors (``size``, ``dim``). Names missing from the installed
torch are skipped.
"""

from __future__ import annotations

TORCH = (
    "abs", "add", "addbmm", "addcdiv", "addcmul", "addmm", "amax", "amin", "argmax", "argmin",
    "argsort", "baddbmm", "bmm", "cat", "ceil", "chunk", "clamp", "clip", "clone", "concat",
    "cos", "cumprod", "cumsum", "div", "dot", "dropout", "einsum", "erf", "exp", "flatten", "flip",
    "floor", "gather", "index_select", "layer_norm", "log", "log_softmax", "logsumexp", "masked_fill",
    "matmul", "max", "maximum", "mean", "min", "minimum", "mm", "mul", "narrow", "neg", "norm",
    "outer", "permute", "pow", "prod", "reciprocal", "relu", "reshape", "roll", "round", "rsqrt",
    "scatter", "sigmoid", "sign", "sin", "softmax", "sort", "split", "sqrt", "square", "squeeze",
    "stack", "std", "sub", "sum", "t", "tanh", "topk", "transpose", "tril", "triu", "unbind",
    "unsqueeze", "var", "where",
)  # fmt: skip

FUNCTIONAL = (
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool2d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "batch_norm", "bilinear",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "celu", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "cosine_similarity", "cross_entropy",
    "dropout", "dropout1d", "dropout2d", "dropout3d", "elu", "embedding", "embedding_bag", "fold",
    "gelu", "glu", "grid_sample", "group_norm", "hardsigmoid", "hardswish", "hardtanh", "huber_loss",
    "instance_norm", "interpolate", "kl_div", "l1_loss", "layer_norm", "leaky_relu", "linear",
    "log_softmax", "logsigmoid", "max_pool1d", "max_pool2d", "max_pool3d", "mish", "mse_loss",
    "multi_head_attention_forward", "nll_loss", "normalize", "one_hot", "pad", "pairwise_distance",
    "pixel_shuffle", "pixel_unshuffle", "relu", "relu6", "rms_norm", "scaled_dot_product_attention",
    "selu", "silu", "smooth_l1_loss", "softmax", "softmin", "softplus", "softsign", "tanhshrink",
    "unfold",
)  # fmt: skip

TENSOR = (
    "__abs__", "__add__", "__and__", "__floordiv__", "__getitem__", "__iadd__", "__imul__",
    "__invert__", "__isub__", "__itruediv__", "__matmul__", "__mod__", "__mul__", "__neg__",
    "__or__", "__pow__", "__radd__", "__rmatmul__", "__rmul__", "__rpow__", "__rsub__",
    "__rtruediv__", "__setitem__", "__sub__", "__truediv__", "__xor__",
    "abs", "add", "add_", "addcdiv_", "addcmul_", "addmm", "argmax", "bfloat16", "bmm", "chunk",
    "clamp", "clamp_", "clone", "contiguous", "copy_", "cumsum", "div", "div_", "double", "exp",
    "exp_", "expand", "expand_as", "fill_", "flatten", "float", "gather", "half", "index_select",
    "lerp_", "log", "masked_fill", "masked_fill_", "matmul", "max", "mean", "min", "mm", "mul",
    "mul_", "neg", "norm", "permute", "pow", "relu", "repeat", "reshape", "scatter", "scatter_",
    "sigmoid", "softmax", "split", "sqrt", "sqrt_", "squeeze", "std", "sub", "sub_", "sum", "t",
    "tanh", "to", "topk", "transpose", "type_as", "unsqueeze", "var", "view", "view_as", "zero_",
)  # fmt: skip

# Collectives and point-to-point calls of torch.distributed, recorded as ``Distributed.*``.
DISTRIBUTED = (
    "all_gather", "all_gather_into_tensor", "all_reduce", "all_to_all", "all_to_all_single",
    "barrier", "batch_isend_irecv", "broadcast", "gather", "irecv", "isend", "recv", "reduce",
    "reduce_scatter", "reduce_scatter_tensor", "scatter", "send",
)  # fmt: skip
