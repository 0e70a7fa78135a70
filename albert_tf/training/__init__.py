"""The shared training machinery: optimizers, strategies, the one loop, shared flags.

Every task script (run_pretraining, run_classifier, run_squad, run_race) builds a model,
an `Objective` and dataset functions, then hands them to `Trainer` (faithfulness §6). Names are
imported on first use, so `albert_tf.training.flags` loads without TensorFlow.
"""

from __future__ import annotations

from albert_tf.runtime.lazy_names import lazy_names

_EXPORTS = {
    "TrainingCheckpoint": "checkpointing",
    "STRATEGIES": "choices", "DTYPE_POLICIES": "choices", "OPTIMIZER_NAMES": "choices",
    "get_strategy": "distribute", "tpu_cluster_resolver": "distribute",
    "Callback": "loop", "LoopConfig": "loop", "NonFiniteLossError": "errors", "Trainer": "loop",
    "write_eval_results": "checkpoint_eval",
    "MeanLossObjective": "objective", "Objective": "objective",
    "AdamW": "optimizers", "LAMB": "optimizers", "OPTIMIZERS": "optimizers",
    "WarmupPolynomialDecay": "optimizers", "create_optimizer": "optimizers",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_names(__name__, _EXPORTS)
