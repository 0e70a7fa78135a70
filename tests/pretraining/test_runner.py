"""run_pretraining's library call: the script passes every option; the checks (float options,
config, records and their sentence task) run inside the call, for in-process callers too,
before anything is built; --sentence_prediction=none trains the masked LM alone."""

from __future__ import annotations

import re

import numpy as np
import pytest

from albert_tf.data import features as F
from albert_tf.data.record_checks import RecordMismatchError
from albert_tf.pretraining.runner import PretrainingRunOptions
from tests.conftest import tiny_config
from tests.data import record_files
from tests.training import processes

SEQ, PRED = 16, 4


@pytest.fixture(scope="module")
def config_file(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("config") / "albert_config.json")
    tiny_config(vocab_size=100, max_position_embeddings=32).to_json_file(path)
    return path


def records(tmp_path, name: str = "train", task: str | None = "sop") -> str:
    summary = record_files.summary_of(F.STATIC, SEQ, PRED, vocab_size=100)
    if task is not None:
        summary["sentence_prediction"] = task
    return record_files.write(str(tmp_path / f"{name}.tfrecord"), record_files.rows(16, SEQ, PRED),
                              summary=summary)


def options(config_file: str, input_file: str, output_dir, **overrides) -> PretrainingRunOptions:
    values = dict(albert_config_file=config_file, input_file=input_file,
                  output_dir=str(output_dir), max_seq_length=SEQ, max_predictions_per_seq=PRED,
                  train_batch_size=4, num_train_steps=3, num_warmup_steps=0,
                  save_checkpoints_steps=3, iterations_per_loop=3, log_steps=1,
                  learning_rate=0.05, seed=1)
    values.update(overrides)
    return PretrainingRunOptions(**values)


@pytest.mark.parametrize("overrides,message", [
    ({"max_seq_length": 64}, "--max_seq_length=64 exceeds the model's max_position_embeddings (32)"),
    ({"learning_rate": 0.0}, "--learning_rate=0.0: expected a finite number > 0 with --do_train"),
    ({"learning_rate": float("nan")}, "--learning_rate=nan: expected a finite number"),
    ({"poly_power": -1.0}, "--poly_power=-1.0: expected a finite number > 0"),
    ({"do_train": False, "do_eval": False}, "at least one of --do_train and --do_eval"),
    ({"sentence_prediction": "mlm"}, "--sentence_prediction=mlm: expected one of sop, nsp, none"),
    ({"input_file": "nothing-*.tfrecord"}, "--input_file: input pattern 'nothing-*.tfrecord' matches no file"),
    ({"max_predictions_per_seq": 6}, "records hold 4 masked-LM slots per record"),
    ({"sentence_prediction": "nsp"}, "made for --sentence_prediction=sop"),
])
def test_in_process_runs_are_checked_before_anything_is_built(
        config_file, tmp_path, overrides, message):
    """The float, config, record and sentence-task checks of the script hold for library
    callers, and fail before anything is built or written."""
    overrides = dict(overrides)
    path = records(tmp_path)
    if "input_file" in overrides:
        path = str(tmp_path / overrides.pop("input_file"))
        message = message.replace("'nothing", f"'{tmp_path}/nothing")
    out = tmp_path / "out"
    opts = options(config_file, path, out, **overrides)
    with pytest.raises((ValueError, FileNotFoundError)) as error:
        opts.check()
    assert message in str(error.value) and "\n" not in str(error.value)
    from albert_tf.pretraining.runner import run

    with pytest.raises(type(error.value), match=f"^{re.escape(str(error.value))}$"):
        run(opts)
    assert not out.exists()


def test_the_script_reports_a_task_mismatch_in_one_line(config_file, tmp_path):
    path = records(tmp_path, task="none")
    out = tmp_path / "out"
    result = processes.run(["run_pretraining.py", f"--albert_config_file={config_file}",
                            f"--input_file={path}", f"--output_dir={out}",
                            f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PRED}"],
                           timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"run_pretraining: error: {path}: made for --sentence_prediction=none ({path}.json): its "
        f"sentence labels mark only one-sentence chunks (Q10); pass --sentence_prediction=none "
        f"to train the masked LM alone, or rewrite the records with sop or nsp")
    assert not out.exists()


def test_a_bad_id_in_process_is_a_record_error(config_file, tmp_path):
    """The input pipeline's value checks stop an in-process run as they stop the script."""
    features = record_files.rows(16, SEQ, PRED)
    features["input_ids"][5, 2] = 150
    path = record_files.write(str(tmp_path / "bad.tfrecord"), features)
    from albert_tf.pretraining.runner import run

    with pytest.raises(RecordMismatchError, match=r"bad\.tfrecord: record 5: input_ids holds 150, "
                       r"outside \[0, 100\)"):
        run(options(config_file, path, tmp_path / "out", num_train_steps=8,
                    save_checkpoints_steps=8, iterations_per_loop=1))


class LogKeys:
    """Collects the metric names of each logging window."""

    def __init__(self):
        self.keys: set[str] = set()
        self.trainer = None

    def on_log(self, step, logs):
        self.keys |= set(logs)

    def on_checkpoint(self, step, path):
        pass


def weights(checkpoint_dir) -> dict[str, np.ndarray]:
    import tensorflow as tf

    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(checkpoint_dir)))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name.startswith("model/") and "OPTIMIZER_SLOT" not in name}


def test_task_none_trains_the_masked_lm_alone(config_file, tmp_path):
    """Warm-started from one checkpoint: "none" leaves the sentence head's weights exactly as
    loaded while the encoder and the MLM head move, and logs no sentence metrics; "sop" from the
    same start moves the head too."""
    import tensorflow as tf

    from albert_tf import AlbertConfig
    from albert_tf.checkpoints.ours import keyed_variables
    from albert_tf.models import AlbertPretrainer
    from albert_tf.pretraining.runner import run

    start = tmp_path / "start"  # the loop's checkpoint layout, as --do_train writes it
    model = AlbertPretrainer(AlbertConfig.from_json_file(config_file))
    tf.train.Checkpoint(model=keyed_variables(model.variables),
                        global_step=tf.Variable(0, dtype=tf.int64)).save(str(start / "model.ckpt"))
    initial = weights(start)
    moved = {}
    for task in ("none", "sop"):
        logs = LogKeys()
        out = tmp_path / task
        run(options(config_file, records(tmp_path, task, task), out, sentence_prediction=task,
                    init_checkpoint=str(start), num_train_steps=2, save_checkpoints_steps=2,
                    iterations_per_loop=2), callbacks=[logs])
        final = weights(out)
        assert set(final) == set(initial)
        moved[task] = {name for name in initial if not np.array_equal(initial[name], final[name])}
        assert ("sentence_order_accuracy" in logs.keys) == (task == "sop")
        assert "masked_lm_accuracy" in logs.keys
    head = {name for name in initial if "sop_head" in name}
    assert head and not head & moved["none"]
    assert head <= moved["sop"]
    assert any("mlm_head" in name for name in moved["none"])
    assert any("encoder" in name or "transformer" in name for name in moved["none"])
