"""Subprocess body of the MirroredStrategy parity tests: 2 logical CPUs, 10 steps each.

Prints one JSON line {"one_device": [losses], "mirrored": [losses], "weights_max_diff": x};
with the argument `clipping` instead {"classifier_norms" / "pretrainer_norms": [per-step global
norms of test_clipping's classifier / pretrainer on 2 replicas]} (its tests are slow-tier ones).
Run as `python -m tests.training.scripts.mirrored_parity [clipping]` from the repository root.
"""

import json
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0],
    [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])

from albert_tf.training import get_strategy  # noqa: E402
from tests.training.test_loop import RecordLogs, make_trainer  # noqa: E402
from tests.training import synthetic  # noqa: E402
from tests.training.test_clipping import train as train_clipping_case  # noqa: E402


def run(strategy, output_dir, initial=None):
    record = RecordLogs()
    trainer = make_trainer(output_dir, steps=10, batch=8, log_steps=1, strategy=strategy,
                           callbacks=[record],
                           init_fn=(lambda m: m.set_weights(initial)) if initial else None)
    weights = trainer.model.get_weights()
    trainer.train(synthetic.dataset_fn(8))
    return [logs["loss"] for _, logs in record.logs], weights, trainer.model.get_weights()


def losses() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        single, initial, final_single = run(get_strategy("one_device"), os.path.join(tmp, "one"))
        mirrored_strategy = get_strategy("mirrored")
        assert mirrored_strategy.num_replicas_in_sync == 2
        mirrored, _, final_mirrored = run(mirrored_strategy, os.path.join(tmp, "two"), initial)
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(final_single, final_mirrored))
    return {"one_device": single, "mirrored": mirrored, "weights_max_diff": diff}


def clipping_norms() -> dict:
    mirrored_strategy = get_strategy("mirrored")
    assert mirrored_strategy.num_replicas_in_sync == 2
    norms = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case in ("classifier", "pretrainer"):
            _, norms[f"{case}_norms"] = train_clipping_case(case, "lamb", "original",
                                                            os.path.join(tmp, case),
                                                            mirrored_strategy)
    return norms


def main():
    print(json.dumps(clipping_norms() if sys.argv[1:] == ["clipping"] else losses()))


if __name__ == "__main__":
    main()
