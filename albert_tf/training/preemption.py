"""Preemption: SIGTERM (a cluster's notice) or SIGINT (Ctrl-C) during training ends the run
with a checkpoint of the last completed step and a documented exit status (docs/faults.md).

While `Trainer.train` runs, `SignalWatch` records the first SIGTERM or SIGINT instead of
dying. The loop looks at it between calls of its compiled loop (every `iterations_per_loop`
steps at most), so the step in flight finishes, then:

- one worker (default, one_device, mirrored strategies): `LocalGuard` saves a checkpoint of
  the current step (model, optimizer, step, input position, dropout RNG states: the loop's
  usual checkpoint) and raises `TrainingPreempted`;
- MultiWorkerMirrored: every worker must save the same step, so TensorFlow's own
  `tf.distribute.experimental.PreemptionCheckpointHandler` agrees on it over the
  coordination service (`ClusterGuard`). Its `TerminationConfig` gets our recorded signal as
  `termination_watcher_fn`, our verified save as `save_fn`, and `TrainingPreempted` as
  `exit_fn`. (It also runs one more loop call after the notice, its protocol for workers a
  step apart.) On one worker the handler would add nothing but costs: it probes the GCE
  metadata server over HTTP when built and keeps watcher threads, so one worker uses the
  plain check instead.

A signal outside training (start-up, evaluation, prediction) keeps Python's default: the
process ends, and nothing is lost that a checkpoint held. The scripts exit with
`TrainingPreempted.exit_status`: 128 + the signal's number (143 for SIGTERM, 130 for SIGINT;
143 also on a worker whose peer was preempted), the status a cluster manager already reads as
"terminated by SIGTERM, restart me" (and TensorFlow's own restartable exit code on GCP).
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, Callable

import tensorflow as tf
from absl import logging

from albert_tf.training.errors import TrainingPreempted

WATCHED_SIGNALS = (signal.SIGTERM, signal.SIGINT)
PEER_EXIT_STATUS = 128 + signal.SIGTERM


def exit_status(signum: int | None) -> int:
    """128 + the signal's number (as if it had ended the process); a peer's preemption: 143."""
    return 128 + signum if signum else PEER_EXIT_STATUS


class SignalWatch:
    """Records the first SIGTERM/SIGINT while active (a context manager); the previous
    handlers come back on exit. A second SIGINT raises KeyboardInterrupt (Ctrl-C twice: stop
    now); a second SIGTERM is ignored while the checkpoint is written. Signals are only
    catchable in the main thread: elsewhere the watch is inactive (`active` False).
    """

    def __init__(self):
        self.received: int | None = None
        self.active = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> "SignalWatch":
        if threading.current_thread() is threading.main_thread():
            for signum in WATCHED_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
            self.active = True
        return self

    def __exit__(self, *exc_info) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
        self.active = False

    def _handle(self, signum: int, frame: Any) -> None:
        del frame
        if self.received is None:
            self.received = signum
            logging.info("Received %s: finishing the current steps, then saving a checkpoint",
                         signal.Signals(signum).name)
        elif signum == signal.SIGINT:
            raise KeyboardInterrupt

    def is_set(self) -> bool:
        return self.received is not None


def preempted(signum: int | None, step: int, path: str) -> TrainingPreempted:
    """The exception (and its one log line) for a run stopped at `step` with checkpoint `path`."""
    cause = signal.Signals(signum).name if signum else "the preemption of a peer worker"
    error = TrainingPreempted(
        f"{cause}: saved checkpoint {path} (step {step}); exiting with status "
        f"{exit_status(signum)}; run the same command again to resume from it",
        exit_status=exit_status(signum), checkpoint=path, step=step)
    logging.warning("%s", error)
    return error


class LocalGuard:
    """One worker: `run(fn, *args)` saves and raises TrainingPreempted once a signal came,
    else calls fn."""

    def __init__(self, watch: SignalWatch, save: Callable[[], tuple[int, str]]):
        self.watch, self.save = watch, save

    def run(self, fn: Callable, *args: Any) -> Any:
        if self.watch.is_set():
            step, path = self.save()
            raise preempted(self.watch.received, step, path)
        return fn(*args)

    def close(self) -> None:
        """Nothing to stop."""


class ClusterGuard:
    """MultiWorkerMirrored: `run` is PreemptionCheckpointHandler.run, every worker saving the
    step the handler agreed on with the others."""

    def __init__(self, strategy: tf.distribute.Strategy, watch: SignalWatch,
                 save: Callable[[], tuple[int, str]], scratch_dir: str):
        self.watch, self._save = watch, save
        self._saved: tuple[int, str] | None = None
        config = tf.distribute.experimental.TerminationConfig(
            termination_watcher_fn=watch.is_set, exit_fn=self._exit, save_fn=self._save_step)
        # The handler keeps only its call counter in this checkpoint, and never writes it
        # (save_fn replaces its write); our checkpoint restores, verifies and rotates itself.
        counter_only = tf.train.CheckpointManager(
            tf.train.Checkpoint(), os.path.join(scratch_dir, ".preemption_handler"),
            max_to_keep=1)
        self.handler = tf.distribute.experimental.PreemptionCheckpointHandler(
            strategy.cluster_resolver, counter_only, termination_config=config)

    def _save_step(self) -> None:
        self._saved = self._save()

    def _exit(self) -> None:
        step, path = self._saved
        raise preempted(self.watch.received, step, path)

    def run(self, fn: Callable, *args: Any) -> Any:
        return self.handler.run(fn, *args)

    def close(self) -> None:
        """Stops the handler's watcher threads (TensorFlow does so only in the handler's
        __del__, which those threads' references to it keep from running)."""
        self.handler.__del__()


def is_multi_worker(strategy: tf.distribute.Strategy) -> bool:
    """True for a MultiWorkerMirroredStrategy given a cluster (TF_CONFIG)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    return (isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
            and resolver is not None and bool(resolver.cluster_spec().jobs))


def guard(strategy: tf.distribute.Strategy, watch: SignalWatch,
          save: Callable[[], tuple[int, str]], scratch_dir: str) -> LocalGuard | ClusterGuard:
    """ClusterGuard on a multi-worker cluster, else LocalGuard. `save()` writes a checkpoint
    of the current step (unless one exists) and returns (step, its path)."""
    if is_multi_worker(strategy):
        return ClusterGuard(strategy, watch, save, scratch_dir)
    return LocalGuard(watch, save)
