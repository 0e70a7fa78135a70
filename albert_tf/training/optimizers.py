"""LAMB and AdamW as the original computes them, and its learning-rate schedule.

Spec §6.3 (optimization.py / lamb_optimizer.py): β1 0.9, β2 0.999, ε 1e-6, decoupled
weight decay 0.01 added to the Adam direction, no bias correction (Q15, kept), LayerNorm
and bias variables excluded from decay and from LAMB's trust ratio. The original removes
excluded variables from a list while iterating over it (Q16); we match names instead, so
no neighbour is skipped. Slots are named `adam_m` / `adam_v` for both, as the original.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import keras
import tensorflow as tf
from keras import ops

from albert_tf.training.choices import OPTIMIZER_NAMES

# Regexes searched in a variable's path (spec §6.3). Ours are ".../layer_norm/gamma|beta",
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
    """Linear warmup from 0, then polynomial decay to 0 at `num_train_steps` (spec §6.3).

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
    """Shared Adam-direction machinery of AdamW and LAMB (spec §6.3).

    `aggregate_gradients=False` tells the optimizer that the caller has already summed the
    gradients across replicas (our training loop does, so that clipping and the loss-scale
    finiteness check see the global gradient); Keras would otherwise sum them again.
    """

    def __init__(self, learning_rate: Any = 0.001, weight_decay_rate: float = 0.01,
                 beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-6,
                 exclude_from_weight_decay: Sequence[str] | None = DEFAULT_EXCLUDE_PATTERNS,
                 aggregate_gradients: bool = True, name: str | None = None, **kwargs: Any):
        if kwargs.get("weight_decay") is not None:
            raise ValueError("use weight_decay_rate (decoupled, spec §6.3), not weight_decay")
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
    `exclude_from_layer_adaptation` (defaults to the weight-decay exclusions, spec §6.3).

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
