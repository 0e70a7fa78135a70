"""Training errors, importable without TensorFlow (scripts catch them to print one line)."""


class CheckpointWaitTimeout(TimeoutError):
    """Side-car evaluation: no new checkpoint appeared within --eval_timeout_secs (one line,
    exit status 1; `albert_tf.training.checkpoint_eval.follow_checkpoints`)."""


class NonFiniteLossError(RuntimeError):
    """Training stopped because the loss became NaN or infinite; no checkpoint was written."""


class TrainingPreempted(Exception):
    """SIGTERM or SIGINT stopped training after a checkpoint of the last completed step
    (albert_tf.training.preemption); the scripts exit with `exit_status`, and the same command
    resumes from `checkpoint`."""

    def __init__(self, message: str, exit_status: int, checkpoint: str, step: int):
        super().__init__(message)
        self.exit_status, self.checkpoint, self.step = exit_status, checkpoint, step


class WorkerLostError(RuntimeError):
    """A peer of a multi-worker run stopped answering (killed, crashed, unreachable):
    training stopped; restarting every worker resumes from the last checkpoint."""


class OutputWriteError(OSError):
    """Writing an output (checkpoint, feature records, export, converted checkpoint) failed,
    e.g. on a full disk; the message names the path and what was being written, and the
    partial files are removed."""
