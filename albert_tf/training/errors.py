"""Training errors, importable without TensorFlow (scripts catch them to print one line)."""


class NonFiniteLossError(RuntimeError):
    """Training stopped because the loss became NaN or infinite; no checkpoint was written."""
