"""The compiled parts of the training loop: one replica's train and eval step (gradient
accumulation, cross-replica summation, clipping with the original's norm, faithfulness §6.3,
Q35) and the in-graph loops that run `iterations_per_loop` of them per call.

A mixin of `training.loop.Trainer`, apart so that the graph code reads on its own: it uses
the Trainer's model, objective, optimizer, strategy, config, metrics and global step.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from albert_tf.training.clipping import clip_by_norm, global_norm


def _split(structure: Any, index: tf.Tensor, parts: int) -> Any:
    """Micro-batch `index` of `parts` equal slices along the batch axis."""
    def take(x):
        size = tf.shape(x)[0] // parts
        return x[index * size:(index + 1) * size]
    return tf.nest.map_structure(take, structure)



class CompiledSteps:
    """The per-replica steps and in-graph loops of `Trainer` (see the module docstring)."""

    def _forward_backward(self, features, labels, normalizers):
        """Loss share, dense gradients and the per-occurrence norm term (Q35) of one
        micro-batch (jit-compiled with --jit_compile)."""
        with tf.GradientTape() as tape:
            outputs = self.model(features, training=True)
            loss = self.objective.loss(labels, outputs, normalizers)
            scaled = (self.optimizer.scale_loss(loss) if self._loop_optimizer.loss_scaled
                      else loss)
        grads = tape.gradient(scaled, self.trainable_variables)
        # Dense gradients (embedding lookups give IndexedSlices): the original's optimizers
        # update every row's moments, and dense tensors sum and all-reduce simply. Which
        # ones count per occurrence is fixed by the graph, so it is recorded when traced.
        grads, occurrence_sq, self._per_occurrence = self._norm_rule.split(
            grads, self.trainable_variables)
        return loss, grads, outputs, occurrence_sq

    def _replica_train_step(self, batch):
        features, labels = batch
        context = tf.distribute.get_replica_context()
        normalizers = context.all_reduce(tf.distribute.ReduceOp.SUM,
                                         self.objective.normalizers(labels))
        k = self.config.gradient_accumulation_steps
        if k == 1:
            loss, grads, outputs, occurrence_sq = self._forward_backward_fn(
                features, labels, normalizers)
            self.objective.update_metrics(self.train_metrics, labels, outputs)
        else:
            first_f, first_l = _split(features, 0, k), _split(labels, 0, k)
            loss, grads, outputs, occurrence_sq = self._forward_backward_fn(
                first_f, first_l, normalizers)
            self.objective.update_metrics(self.train_metrics, first_l, outputs)
            present = [i for i, g in enumerate(grads) if g is not None]
            accumulated = [grads[i] for i in present]
            for index in tf.range(1, k):
                micro_f, micro_l = _split(features, index, k), _split(labels, index, k)
                micro_loss, micro_grads, micro_outputs, micro_sq = self._forward_backward_fn(
                    micro_f, micro_l, normalizers)
                self.objective.update_metrics(self.train_metrics, micro_l, micro_outputs)
                loss += micro_loss
                occurrence_sq += micro_sq  # every occurrence of every micro-batch counts
                accumulated = [a + micro_grads[i] for a, i in zip(accumulated, present)]
            grads = [None] * len(grads)
            for a, i in zip(accumulated, present):
                grads[i] = a
        present = [i for i, g in enumerate(grads) if g is not None]
        *summed, occurrence_sq = context.all_reduce(
            tf.distribute.ReduceOp.SUM, [grads[i] for i in present] + [occurrence_sq])
        norm = global_norm(summed, [self._per_occurrence[i] for i in present], occurrence_sq)
        if self._loop_optimizer.loss_scaled:  # gradients of the scaled loss: unscale the norm
            norm = norm / tf.cast(self.optimizer.dynamic_scale, norm.dtype)
        if self.config.clip_norm:
            summed = clip_by_norm(summed, norm, self.config.clip_norm)
        pre_divide = self._loop_optimizer.pre_divide
        if pre_divide != 1.0:
            summed = [g * pre_divide for g in summed]
        self.optimizer.apply(summed, [self.trainable_variables[i] for i in present])
        return loss, norm

    def _replica_eval_step(self, batch):
        features, labels = batch
        context = tf.distribute.get_replica_context()
        normalizers = context.all_reduce(tf.distribute.ReduceOp.SUM,
                                         self.objective.normalizers(labels))
        outputs = self.model(features, training=False)
        loss = self.objective.loss(labels, outputs, normalizers)
        self.objective.update_metrics(self.eval_metrics, labels, outputs)
        return loss

    # ----- in-graph loops -----
    def _make_train_loop(self):
        strategy = self.strategy

        @tf.function
        def train_loop(iterator, num_steps):
            loss_sum = tf.constant(0.0)
            last_loss = tf.constant(0.0)
            steps = tf.constant(0, tf.int64)
            norm_sum = tf.constant(0.0)  # over steps with a finite norm (float16 skips others)
            norm_steps = tf.constant(0.0)
            for _ in tf.range(num_steps):
                # Each local replica takes the next per-replica batch, in replica order.
                batch = strategy.experimental_distribute_values_from_function(
                    lambda _: next(iterator))
                per_replica_loss, per_replica_norm = strategy.run(
                    self._replica_train_step, args=(batch,))
                last_loss = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_loss,
                                            axis=None)
                if not tf.math.is_finite(last_loss):
                    break  # global_step stays at the failing step; the host raises
                # Every replica computed the same global norm.
                norm = strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica_norm, axis=None)
                finite = tf.math.is_finite(norm)
                norm_sum += tf.where(finite, norm, 0.0)
                norm_steps += tf.cast(finite, tf.float32)
                self.global_step.assign_add(1)
                loss_sum += last_loss
                steps += 1
            return loss_sum, steps, last_loss, norm_sum, norm_steps

        return train_loop

    def _make_eval_loop(self):
        strategy = self.strategy

        @tf.function
        def eval_loop(iterator, num_steps):
            loss_sum = tf.constant(0.0)
            steps = tf.constant(0, tf.int64)
            for _ in tf.range(num_steps):
                optional = iterator.get_next_as_optional()
                if not optional.has_value():
                    break
                per_replica = strategy.run(self._replica_eval_step, args=(optional.get_value(),))
                loss_sum += strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
                steps += 1
            return loss_sum, steps

        return eval_loop
