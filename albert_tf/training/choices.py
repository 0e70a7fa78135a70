"""The named choices of the training flags, importable without TensorFlow (fast --help)."""

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")
# --dtype → Keras dtype policy: float16/bfloat16 compute, float32 variables (mixed precision).
DTYPE_POLICIES = {"float32": "float32", "float16": "mixed_float16", "bfloat16": "mixed_bfloat16"}
OPTIMIZER_NAMES = ("lamb", "adamw")
# --clip_norm_mode: how the global norm counts the embedding-lookup gradients (Q35).
CLIP_NORM_MODES = ("original", "dense")
