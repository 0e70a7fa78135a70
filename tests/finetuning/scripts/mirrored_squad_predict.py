"""Subprocess body of the mirrored prediction test: SQuAD v2 prediction (the span labeler's
five beam outputs, `unique_ids` passed through, a partial last batch) with the same weights on
one device and on a MirroredStrategy over 2 logical CPUs.

    python -m tests.finetuning.scripts.mirrored_squad_predict SPM_MODEL WORK_DIR

Prints one JSON line {"replicas": 2, "one_device": {...}, "mirrored": {...}}, each with the
predictions, null odds and n-best heads the run left in its output_dir.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import tensorflow as tf

tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0],
    [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])

from albert_tf import checkpoints  # noqa: E402
from albert_tf.models import AlbertSpanLabeler  # noqa: E402
from albert_tf.squad.runner import SquadRunOptions, run  # noqa: E402
from albert_tf.tokenization import FullTokenizer  # noqa: E402
from albert_tf.training import get_strategy  # noqa: E402
from tests.squad.conftest import fixture_path  # noqa: E402
from tests.squad.reference import snapshot, tiny_config  # noqa: E402


def main(spm_model: str, work_dir: str) -> None:
    config = tiny_config(FullTokenizer(spm_model_file=spm_model).vocab_size)
    config_file = os.path.join(work_dir, "albert_config.json")
    config.to_json_file(config_file)
    keras.utils.set_random_seed(7)
    model = AlbertSpanLabeler(config, version_2_with_negative=True, start_n_top=3, end_n_top=3)
    init = checkpoints.save_original_checkpoint(model, os.path.join(work_dir, "init", "model.ckpt"))
    outputs = {}
    for name in ("one_device", "mirrored"):
        strategy = get_strategy(name)
        outputs[name] = strategy.num_replicas_in_sync
        out = os.path.join(work_dir, name)
        run(SquadRunOptions(
            albert_config_file=config_file, spm_model_file=spm_model, output_dir=out,
            init_checkpoint=init, predict_file=fixture_path("dev-v2.0.json"), do_predict=True,
            version_2_with_negative=True, max_seq_length=96, doc_stride=48,
            max_query_length=16, start_n_top=3, end_n_top=3, predict_batch_size=7), strategy)
        outputs[name] = {"replicas": strategy.num_replicas_in_sync, **snapshot(out)}
    print(json.dumps(outputs))


if __name__ == "__main__":
    main(*sys.argv[1:3])
