"""LAMB and AdamW as the original computes them, and its learning-rate schedule.

Faithfulness §6.3 (optimization.py / lamb_optimizer.py): β1 0.9, β2 0.999, ε 1e-6, decoupled
weight decay 0.01 added to the Adam direction, no bias correction (Q15, kept), LayerNorm
and bias variables excluded from decay and from LAMB's trust ratio. The original removes
excluded variables from a list while iterating over it (Q16); we match names instead, so
no neighbour is skipped. Slots are named `adam_m` / `adam_v` for both, as the original.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Sequence

import keras
import tensorflow as tf
from keras import ops

from albert_tf.training.choices import OPTIMIZER_NAMES

# Regexes searched in a variable's path (faithfulness §6.3). Ours are ".../layer_norm/gamma|beta",
# ".../bias" and ".../output_bias"; the original's TF1 names use "LayerNorm".
DEFAULT_EXCLUDE_PATTERNS = ("LayerNorm", "layer_norm", "bias")


def variable_name(variable: Any) -> str:
    """The name exclusion patterns are matched against: Keras `path`, else TF `name`."""
    return getattr(variable, "path", None) or variable.name


def matches_any(variable: Any, patterns: Sequence[str]) -> bool:
    """True when any regex in `patterns` is found in the variable's path (re.search)."""
    name = variable_name(variable)
    return any(re.search(pattern, name) for pattern in patterns)


@keras.saving.register_keras_serializable(package="albert_tf")
class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup from 0, then polynomial decay to 0 at `num_train_steps` (faithfulness §6.3).

    lr(t) = lr·(t − start)/warmup while 0 ≤ … (t − start) < warmup, else
    lr·(1 − min(t, N)/N)^poly_power. Quirks kept (Q15): step 0 has LR 0 when warming up;
    warmup is not multiplied by the decay; the decay ignores `start_warmup_step`; the LR is
    negative before `start_warmup_step`.

    Example:
        >>> schedule = WarmupPolynomialDecay(1e-3, num_train_steps=100, num_warmup_steps=10)
        >>> float(schedule(5)), float(schedule(55))
        (0.0005, 0.00045)
    """

    def __init__(self, learning_rate: float, num_train_steps: int, num_warmup_steps: int = 0,
                 start_warmup_step: int = 0, poly_power: float = 1.0):
        if num_train_steps <= 0:
            raise ValueError(f"num_train_steps must be > 0, got {num_train_steps}")
        if num_warmup_steps < 0:
            raise ValueError(f"num_warmup_steps must be >= 0, got {num_warmup_steps}")
        self.learning_rate = float(learning_rate)
        self.num_train_steps = int(num_train_steps)
        self.num_warmup_steps = int(num_warmup_steps)
        self.start_warmup_step = int(start_warmup_step)
        self.poly_power = float(poly_power)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        total = float(self.num_train_steps)
        # tf.train.polynomial_decay with end_learning_rate 0 and cycle=False.
        decayed = self.learning_rate * ops.power(1.0 - ops.minimum(step, total) / total,
                                                 self.poly_power)
        if not self.num_warmup_steps:
            return decayed
        since_start = step - float(self.start_warmup_step)
        warmup = self.learning_rate * since_start / float(self.num_warmup_steps)
        return ops.where(since_start < float(self.num_warmup_steps), warmup, decayed)

    def get_config(self) -> dict[str, Any]:
        return {"learning_rate": self.learning_rate, "num_train_steps": self.num_train_steps,
                "num_warmup_steps": self.num_warmup_steps,
                "start_warmup_step": self.start_warmup_step, "poly_power": self.poly_power}


class _DecoupledAdamBase(keras.optimizers.Optimizer):
    """Shared Adam-direction machinery of AdamW and LAMB (faithfulness §6.3).

    `aggregate_gradients=False` tells the optimizer that the caller has already summed the
    gradients across replicas (our training loop does, so that clipping and the loss-scale
    finiteness check see the global gradient); Keras would otherwise sum them again.
    """

    def __init__(self, learning_rate: Any = 0.001, weight_decay_rate: float = 0.01,
                 beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-6,
                 exclude_from_weight_decay: Sequence[str] | None = DEFAULT_EXCLUDE_PATTERNS,
                 aggregate_gradients: bool = True, name: str | None = None, **kwargs: Any):
        if kwargs.get("weight_decay") is not None:
            raise ValueError("use weight_decay_rate (decoupled, faithfulness §6.3), not weight_decay")
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.weight_decay_rate = float(weight_decay_rate)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.exclude_from_weight_decay_patterns = tuple(exclude_from_weight_decay or ())
        self.aggregate_gradients = aggregate_gradients

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._adam_m = [self.add_variable_from_reference(v, name="adam_m") for v in var_list]
        self._adam_v = [self.add_variable_from_reference(v, name="adam_v") for v in var_list]

    def uses_weight_decay(self, variable) -> bool:
        """False for LayerNorm and bias variables (and when the rate is 0)."""
        return bool(self.weight_decay_rate) and not matches_any(
            variable, self.exclude_from_weight_decay_patterns)

    def _direction(self, gradient, variable):
        """Updates the slots and returns u = m/(√v + ε) [+ wd·w] (no bias correction, Q15)."""
        index = self._get_variable_index(variable)
        m, v = self._adam_m[index], self._adam_v[index]
        if isinstance(gradient, tf.IndexedSlices):
            # Embedding lookups give sparse gradients; like the original's dense math, every
            # row's moments decay each step.
            gradient = tf.convert_to_tensor(gradient)
        gradient = ops.cast(gradient, variable.dtype)
        next_m = self.beta_1 * m + (1.0 - self.beta_1) * gradient
        next_v = self.beta_2 * v + (1.0 - self.beta_2) * ops.square(gradient)
        self.assign(m, next_m)
        self.assign(v, next_v)
        update = next_m / (ops.sqrt(next_v) + self.epsilon)
        if self.uses_weight_decay(variable):
            update = update + self.weight_decay_rate * variable
        return update

    def _all_reduce_sum_gradients(self, grads_and_vars):
        # Hook of Keras' TensorFlow optimizer (keras/src/backend/tensorflow/optimizer.py).
        if self.aggregate_gradients:
            return super()._all_reduce_sum_gradients(grads_and_vars)
        return list(grads_and_vars)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.pop("weight_decay", None)
        config.update(weight_decay_rate=self.weight_decay_rate, beta_1=self.beta_1,
                      beta_2=self.beta_2, epsilon=self.epsilon,
                      exclude_from_weight_decay=list(self.exclude_from_weight_decay_patterns))
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class AdamW(_DecoupledAdamBase):
    """The original's AdamWeightDecayOptimizer: w −= lr·(m/(√v+ε) + wd·w), no bias correction.

    Example:
        >>> optimizer = AdamW(WarmupPolynomialDecay(2e-5, 1000, 100))
    """

    def update_step(self, gradient, variable, learning_rate):
        update = self._direction(gradient, variable)
        self.assign_sub(variable, ops.cast(learning_rate, variable.dtype) * update)


@keras.saving.register_keras_serializable(package="albert_tf")
class LAMB(_DecoupledAdamBase):
    """LAMB as the original: the AdamW direction scaled per variable by ‖w‖/‖u‖.

    The trust ratio is 1 when either norm is 0 and for variables matching
    `exclude_from_layer_adaptation` (defaults to the weight-decay exclusions, faithfulness §6.3).

    Example:
        >>> optimizer = LAMB(WarmupPolynomialDecay(0.00176, 125000, 3125))
    """

    def __init__(self, learning_rate: Any = 0.001, weight_decay_rate: float = 0.01,
                 beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-6,
                 exclude_from_weight_decay: Sequence[str] | None = DEFAULT_EXCLUDE_PATTERNS,
                 exclude_from_layer_adaptation: Sequence[str] | None = None, **kwargs: Any):
        super().__init__(learning_rate=learning_rate, weight_decay_rate=weight_decay_rate,
                         beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
                         exclude_from_weight_decay=exclude_from_weight_decay, **kwargs)
        # The original: "if exclude_from_layer_adaptation is None, use the decay exclusions".
        if exclude_from_layer_adaptation is None:
            exclude_from_layer_adaptation = self.exclude_from_weight_decay_patterns
        self.exclude_from_layer_adaptation_patterns = tuple(exclude_from_layer_adaptation)

    def uses_layer_adaptation(self, variable) -> bool:
        """False for LayerNorm and bias variables: their step is lr·u, unscaled."""
        return not matches_any(variable, self.exclude_from_layer_adaptation_patterns)

    def update_step(self, gradient, variable, learning_rate):
        update = self._direction(gradient, variable)
        step = ops.cast(learning_rate, variable.dtype) * update
        if self.uses_layer_adaptation(variable):
            w_norm = ops.norm(ops.reshape(variable, [-1]))
            u_norm = ops.norm(ops.reshape(update, [-1]))
            safe = ops.where(u_norm > 0.0, u_norm, 1.0)
            ratio = ops.where((w_norm > 0.0) & (u_norm > 0.0), w_norm / safe, 1.0)
            step = ratio * step
        self.assign_sub(variable, step)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(exclude_from_layer_adaptation=list(self.exclude_from_layer_adaptation_patterns))
        return config


OPTIMIZERS = {"lamb": LAMB, "adamw": AdamW}
assert tuple(OPTIMIZERS) == OPTIMIZER_NAMES


def create_optimizer(name: str, learning_rate: float, num_train_steps: int,
                     num_warmup_steps: int = 0, start_warmup_step: int = 0,
                     poly_power: float = 1.0, weight_decay_rate: float = 0.01,
                     **kwargs: Any) -> _DecoupledAdamBase:
    """The original's `optimization.create_optimizer` minus the train op: schedule + optimizer.

    Gradient clipping (global norm 1.0) is set by the training loop, which owns it.

    Args:
        name: "lamb" or "adamw" (anything else is an error).
    """
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; expected one of {', '.join(OPTIMIZERS)}")
    schedule = WarmupPolynomialDecay(learning_rate, num_train_steps, num_warmup_steps,
                                     start_warmup_step, poly_power)
    return OPTIMIZERS[name](learning_rate=schedule, weight_decay_rate=weight_decay_rate,
                            name=name, **kwargs)


@dataclasses.dataclass
class LoopOptimizer:
    """An optimizer as the training loop drives it (see `prepare_for_loop`).

    `optimizer` is what gradients are applied with (a LossScaleOptimizer under float16),
    `inner` the optimizer doing the update; `pre_divide` multiplies the loop's cross-replica
    gradient sum (1/R for optimizers that sum across replicas again themselves).
    """

    optimizer: Any
    inner: Any
    pre_divide: float = 1.0

    @property
    def loss_scaled(self) -> bool:
        return isinstance(self.optimizer, keras.optimizers.LossScaleOptimizer)


def prepare_for_loop(optimizer: Any, dtype: str, loop_clips: bool,
                     num_replicas: int) -> LoopOptimizer:
    """The loop's policy for a task's optimizer: dynamic loss scaling under float16, clipping
    owned by the loop (an optimizer that clips too is an error), gradients summed once.

    Args:
        dtype: the loop's --dtype ("float32", "float16", "bfloat16").
        loop_clips: True when the loop clips by global norm (LoopConfig.clip_norm).
        num_replicas: replicas in sync.
    """
    inner = optimizer
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        inner = optimizer.inner_optimizer
    elif dtype == "float16":
        optimizer = keras.optimizers.LossScaleOptimizer(inner)  # dynamic loss scaling
    if loop_clips and (inner.clipnorm or inner.clipvalue or inner.global_clipnorm):
        raise ValueError("the optimizer already clips gradients; the loop owns clipping "
                         "(LoopConfig.clip_norm, clip_norm_mode)")
    # Ours take the loop's cross-replica sum as is; others would sum again, so they get
    # the sum divided by the replica count.
    pre_divide = 1.0
    if hasattr(inner, "aggregate_gradients"):
        inner.aggregate_gradients = False
    else:
        pre_divide = 1.0 / num_replicas
    return LoopOptimizer(optimizer, inner, pre_divide)


def learning_rate_at(optimizer: Any, step: int) -> float:
    """The learning rate `optimizer` (or the one a LossScaleOptimizer wraps) uses at `step`."""
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    # Keras exposes only the current value; the schedule object is kept here.
    schedule = getattr(inner, "_learning_rate", None)
    if isinstance(schedule, keras.optimizers.schedules.LearningRateSchedule):
        return float(schedule(step))
    return float(inner.learning_rate)
