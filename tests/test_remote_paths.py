"""Every path of the main job on a bucket: TensorFlow's in-memory `ram://` stands in for gs://.

`ram://` is reachable only through `tf.io.gfile`, as gs:// is, and lives only as long as the
process: so the tools run one after another in this process, each through its own
`console_main()` as `python -m` runs it (`tests.in_process_tools`). The job: corpus →
SentencePiece → pretraining records → pretraining (stopped after its first checkpoint,
resumed) → GLUE fine-tuning with evaluation (keep-best) and prediction → export (serving
SavedModel, TFLite, serving graph; encoder + preprocessing SavedModels) → `load_serving` and
`convert` from them. Every flag naming a file or directory points at ram://. The same
pretraining and fine-tuning also run on local disk, and their results must agree (resume and
keep-best behave the same). Bad remote paths: one line, exit 1, nothing written.
"""

from __future__ import annotations

import json
import os
import uuid

import numpy as np
import pytest
import tensorflow as tf

from tests.in_process_tools import run_tool

gfile = tf.io.gfile
SEQ = "--max_seq_length=32"


def tool(module: str, *args: str):
    result = run_tool(module, *args)
    assert result.status == 0, f"{module}: {result.stderr[-3000:]}"
    return result


def pretraining_flags(root: str, data: str, steps: int) -> list[str]:
    return [f"--albert_config_file={data}/albert_config.json", f"--input_file={data}/pre.tfrecord",
            f"--output_dir={root}/pretrain", SEQ, "--max_predictions_per_seq=4",
            "--train_batch_size=8", "--num_warmup_steps=1", "--save_checkpoints_steps=2",
            "--log_steps=1", "--do_eval", "--eval_batch_size=8", "--max_eval_steps=2",
            "--seed=1", "--deterministic", f"--num_train_steps={steps}"]


def classifier_flags(root: str, data: str, *extra: str) -> list[str]:
    return ["--task_name=MRPC", f"--data_dir={data}/glue", f"--output_dir={root}/mrpc",
            f"--albert_config_file={data}/albert_config.json", f"--spm_model_file={data}/spm.model",
            f"--init_checkpoint={root}/pretrain", SEQ, "--do_train", "--do_eval",
            "--train_batch_size=8", "--eval_batch_size=8", "--predict_batch_size=8",
            "--learning_rate=1e-3", "--train_step=4", "--warmup_step=1",
            "--save_checkpoints_steps=2", "--log_steps=1", "--seed=1", "--deterministic", *extra]


def read(path: str) -> str:
    with gfile.GFile(path, "r") as f:
        return f.read()


def train_and_fine_tune(root: str, data: str, *classifier_extra: str) -> None:
    """Pretraining stopped at step 2 and resumed to 4, then GLUE with eval (keep-best)."""
    tool("albert_tf.run_pretraining", *pretraining_flags(root, data, 2))
    tool("albert_tf.run_pretraining", *pretraining_flags(root, data, 4))
    tool("albert_tf.run_classifier", *classifier_flags(root, data, *classifier_extra))


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """The main job with every path on ram:// (and its data copied to local disk for the
    same job run locally)."""
    remote = f"ram://job-{uuid.uuid4().hex[:8]}"
    tool("albert_tf.corpus.build", f"--output={remote}/corpus.txt", "--max_documents=60")
    tool("albert_tf.train_sentencepiece", f"--input={remote}/corpus.txt",
         f"--model_prefix={remote}/spm", "--vocab_size=400", "--num_threads=1")
    tool("albert_tf.write_config", f"--output={remote}/albert_config.json")
    tool("albert_tf.create_pretraining_data", f"--input_file={remote}/corpus.txt",
         f"--output_file={remote}/pre.tfrecord", f"--spm_model_file={remote}/spm.model", SEQ,
         "--max_predictions_per_seq=4", "--dupe_factor=1", "--num_workers=1")
    tool("albert_tf.corpus.make_glue_task", f"--output_dir={remote}/glue",
         f"--corpus={remote}/corpus.txt", "--num_train=16", "--num_dev=8", "--num_test=8")
    # --int8_calibration_steps=0: no NNCF static int8 IR (half of this job's CPU; a local
    # staged file like the others, checked by tests/export/test_int8_calibration.py).
    train_and_fine_tune(remote, remote, "--do_predict", f"--export_dir={remote}/served",
                        "--int8_calibration_steps=0")
    return remote, tmp_path_factory.mktemp("local")


def test_the_main_job_writes_every_output_on_the_bucket(job):
    remote, _ = job
    assert {"spm.model", "spm.vocab", "pre.tfrecord", "pre.tfrecord.json",
            "albert_config.json"} <= set(gfile.listdir(remote))
    assert {"model.ckpt-2.index", "model.ckpt-4.index", "checkpoint",
            "eval_results.txt"} <= set(gfile.listdir(f"{remote}/pretrain"))
    state = tf.train.get_checkpoint_state(f"{remote}/pretrain")
    assert state.model_checkpoint_path == f"{remote}/pretrain/model.ckpt-4"
    mrpc = set(gfile.listdir(f"{remote}/mrpc"))
    assert {"model.ckpt-best.index", "best_trial.txt", "eval_results.txt", "test_results.tsv",
            "submit_results.tsv", "MRPC.tsv"} <= mrpc
    assert not any(".tmp" in name for name in mrpc)
    # TensorBoard summaries: event files under the run's train/ directory on the bucket.
    events = gfile.glob(f"{remote}/pretrain/train/events.out.tfevents.*")
    assert events and any(
        value.tag for event in tf.compat.v1.train.summary_iterator(events[0])
        for value in event.summary.value)
    export = set(gfile.listdir(f"{remote}/served"))
    assert {"saved_model", "serving.json", "albert_model.tflite", "serving"} <= export
    assert gfile.exists(f"{remote}/served/saved_model/saved_model.pb")
    assert not os.path.exists("ram:"), "a remote path was created as a local directory"


def test_the_bucket_export_serves_and_converts(job):
    from albert_tf.serving import load_serving

    remote, _ = job
    ids = np.array([[2, 10, 11, 3, 0, 0, 0, 0]], np.int32)
    inputs = {"input_word_ids": ids, "input_mask": (ids > 0).astype(np.int32),
              "input_type_ids": np.zeros_like(ids)}
    served = {backend: load_serving(f"{remote}/served", backend=backend)(inputs)
              for backend in ("tensorflow", "tflite")}
    assert served["tensorflow"].keys() == served["tflite"].keys()
    for name, value in served["tensorflow"].items():  # the TFLite file may be int8: shapes
        assert value.shape == served["tflite"][name].shape and np.all(np.isfinite(value))

    tool("albert_tf.export_tfhub", f"--albert_config_file={remote}/albert_config.json",
         f"--checkpoint={remote}/mrpc/model.ckpt-best", f"--spm_model_file={remote}/spm.model",
         f"--export_path={remote}/hub/encoder", f"--preprocess_export_path={remote}/hub/pre",
         "--seq_length=32")
    assert gfile.exists(f"{remote}/hub/encoder/saved_model.pb")
    assert gfile.exists(f"{remote}/hub/pre/saved_model.pb")
    encoder = load_serving(f"{remote}/hub/encoder", backend="tensorflow")(inputs)
    assert np.all(np.isfinite(encoder["pooled_output"]))

    tool("albert_tf.convert", f"--input={remote}/mrpc/model.ckpt-best", f"--output={remote}/hf",
         "--to=hf", f"--albert_config_file={remote}/albert_config.json",
         f"--spm_model_file={remote}/spm.model", "--task_name=MRPC")
    assert {"config.json", "model.safetensors", "spiece.model"} <= set(gfile.listdir(f"{remote}/hf"))
    with gfile.GFile(f"{remote}/hf/config.json") as f:
        assert json.load(f)["model_type"] == "albert"
    # and back from the bucket's HF directory to one of our checkpoints, on the bucket
    tool("albert_tf.convert", f"--input={remote}/hf", f"--output={remote}/ours", "--to=ours")
    assert gfile.glob(f"{remote}/ours/*.index")


def test_resume_and_keep_best_behave_the_same_on_local_disk(job):
    """The same data, the same flags, on local disk: the same checkpoints, the same
    evaluation results (to the digit), the same best step."""
    remote, local = job
    data = str(local / "data")
    for name in ("albert_config.json", "spm.model", "pre.tfrecord", "pre.tfrecord.json",
                 "glue/MRPC/train.tsv", "glue/MRPC/dev.tsv", "glue/MRPC/test.tsv"):
        gfile.makedirs(os.path.dirname(os.path.join(data, name)))
        gfile.copy(f"{remote}/{name}", os.path.join(data, name))
    root = str(local / "run")
    train_and_fine_tune(root, data)
    for run in ("pretrain", "mrpc"):
        names = {n for n in gfile.listdir(f"{remote}/{run}") if n.startswith("model.ckpt")}
        assert names == {n for n in os.listdir(f"{root}/{run}") if n.startswith("model.ckpt")}
        assert read(f"{remote}/{run}/eval_results.txt") == read(f"{root}/{run}/eval_results.txt")
    assert read(f"{remote}/mrpc/best_trial.txt").replace(remote, "") == \
        read(f"{root}/mrpc/best_trial.txt").replace(root, "")
    local_best = tf.compat.v1.train.NewCheckpointReader(f"{root}/mrpc/model.ckpt-best")
    remote_best = tf.compat.v1.train.NewCheckpointReader(f"{remote}/mrpc/model.ckpt-best")
    weights = [n for n in local_best.get_variable_to_shape_map() if n.startswith("model/")]
    assert len(weights) > 20
    for name in weights:  # the model's weights, bit for bit
        assert np.array_equal(local_best.get_tensor(name), remote_best.get_tensor(name)), name


@pytest.mark.parametrize("flag,value,message", [
    ("albert_config_file", "foo://bucket/albert_config.json", "no file system for the scheme foo://"),
    ("output_dir", "foo://bucket/out", "no file system for the scheme foo://"),
    ("albert_config_file", "{remote}/missing/albert_config.json", "config file not found"),
    ("input_file", "{remote}/missing/*.tfrecord", "matches no file"),
])
def test_a_bad_remote_path_is_one_line_and_writes_nothing(job, flag, value, message):
    remote, _ = job
    out = f"ram://bad-{uuid.uuid4().hex[:8]}/out"
    values = {"albert_config_file": f"{remote}/albert_config.json",
              "input_file": f"{remote}/pre.tfrecord", "output_dir": out}
    values[flag] = value.format(remote=remote)
    result = run_tool("albert_tf.run_pretraining", *[f"--{k}={v}" for k, v in values.items()],
                      SEQ, "--max_predictions_per_seq=4", "--train_batch_size=8",
                      "--num_train_steps=2")
    assert result.status == 1
    errors = result.error_lines()
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert errors[0].startswith("run_pretraining: error: ") and message in errors[0]
    if flag != "input_file":
        assert values[flag] in errors[0]
    assert not gfile.exists(out) and not os.path.exists("foo:")


def copy_up(local: str, remote: str) -> None:
    """A local file or directory tree copied to `remote`."""
    if os.path.isfile(local):
        gfile.copy(local, remote, overwrite=True)
        return
    for directory, _, files in os.walk(local):
        relative = os.path.relpath(directory, local)
        target = remote if relative == "." else f"{remote}/{relative}"
        gfile.makedirs(target)
        for name in files:
            gfile.copy(os.path.join(directory, name), f"{target}/{name}", overwrite=True)


def test_squad_feature_caches_and_race_on_the_bucket(job):
    """SQuAD with its data, feature caches and outputs on ram://, then predicting again from
    the cached features; RACE with its data directory and outputs there."""
    remote, _ = job
    fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
    copy_up(os.path.join(fixtures, "squad", "train-v1.1.json"), f"{remote}/squad/train.json")
    copy_up(os.path.join(fixtures, "squad", "dev-v1.1.json"), f"{remote}/squad/dev.json")
    squad = [f"--albert_config_file={remote}/albert_config.json",
             f"--spm_model_file={remote}/spm.model", f"--output_dir={remote}/squad_out",
             f"--train_file={remote}/squad/train.json", f"--predict_file={remote}/squad/dev.json",
             f"--train_feature_file={remote}/squad_cache/train.tf_record",
             f"--predict_feature_file={remote}/squad_cache/dev.tf_record",
             "--max_seq_length=64", "--doc_stride=32", "--max_query_length=16",
             "--train_batch_size=8", "--predict_batch_size=32", "--num_train_epochs=0.2",
             "--learning_rate=1e-3", "--seed=1"]
    tool("albert_tf.run_squad", *squad, "--do_train", "--do_predict")
    cache = set(gfile.listdir(f"{remote}/squad_cache"))
    assert {"train.tf_record", "dev.tf_record"} <= cache
    assert gfile.exists(f"{remote}/squad_cache/dev.tf_record.settings.json")  # the cache's key
    assert json.loads(read(f"{remote}/squad_out/predictions.json"))
    # The named cache is read back from the bucket: another length does not fit its key.
    other = [flag if flag != "--max_seq_length=64" else "--max_seq_length=48" for flag in squad]
    refused = run_tool("albert_tf.run_squad", *other, "--nodo_train", "--do_predict")
    assert refused.status == 1 and len(refused.error_lines()) == 1, refused.stderr[-2000:]
    assert f"{remote}/squad_cache/dev.tf_record: cached features were built with" in \
        refused.error_lines()[0]

    copy_up(os.path.join(fixtures, "race"), f"{remote}/race_data")
    tool("albert_tf.run_race", f"--data_dir={remote}/race_data",
         f"--albert_config_file={remote}/albert_config.json",
         f"--spm_model_file={remote}/spm.model", f"--output_dir={remote}/race_out",
         "--max_seq_length=64", "--max_qa_length=32", "--train_batch_size=2",
         "--eval_batch_size=2", "--predict_batch_size=2", "--learning_rate=1e-3",
         "--train_step=2", "--warmup_step=1", "--save_checkpoints_steps=2", "--seed=1",
         "--do_predict")
    race = set(gfile.listdir(f"{remote}/race_out"))
    assert {"eval_results.txt", "model.ckpt-best.index", "train.tf_record"} <= race


def test_a_bucket_directory_is_staged_locally_and_replaced_object_by_object():
    """atomic_directory on ram://: plain open() writes into the (local) staging directory;
    "replace" leaves exactly the new objects; a failure leaves the old output whole; no
    temporary prefix stays behind."""
    from albert_tf.runtime.atomic_files import atomic_directory

    root = f"ram://atomic-{uuid.uuid4().hex[:8]}"
    with atomic_directory(f"{root}/export") as staging:
        assert os.path.isdir(staging)  # local: every library can write there
        os.makedirs(os.path.join(staging, "variables"))
        for name in ("saved_model.pb", "variables/old.index"):
            with open(os.path.join(staging, name), "w") as f:
                f.write("old")
    with pytest.raises(RuntimeError):
        with atomic_directory(f"{root}/export") as staging:
            with open(os.path.join(staging, "saved_model.pb"), "w") as f:
                f.write("half")
            raise RuntimeError("the writer failed")
    assert read(f"{root}/export/saved_model.pb") == "old"
    with atomic_directory(f"{root}/export") as staging:
        with open(os.path.join(staging, "saved_model.pb"), "w") as f:
            f.write("new")
    files = {f"{d[len(root) + 1:]}/{n}" for d, _, names in gfile.walk(root) for n in names
             if gfile.exists(f"{d}/{n}")}
    assert files == {"export/saved_model.pb"}
    assert read(f"{root}/export/saved_model.pb") == "new"


def test_paths_helpers_agree_on_both_kinds(tmp_path):
    from albert_tf.runtime import paths

    remote = f"ram://paths-{uuid.uuid4().hex[:8]}"
    for root in (str(tmp_path), remote):
        paths.makedirs(paths.join(root, "d"))
        with gfile.GFile(paths.join(root, "d", "a.txt"), "w") as f:
            f.write("é\n")
        assert paths.is_local(root) == (root == str(tmp_path))
        assert paths.isdir(paths.join(root, "d")) and not paths.isfile(paths.join(root, "d"))
        assert paths.isfile(paths.join(root, "d", "a.txt"))
        assert not paths.exists(paths.join(root, "d", "b.txt"))
        assert paths.listdir(paths.join(root, "d")) == ["a.txt"]
        assert paths.glob(paths.join(root, "d", "*.txt")) == [paths.join(root, "d", "a.txt")]
        assert paths.read_text(paths.join(root, "d", "a.txt")) == "é\n"
        with paths.local_copy(paths.join(root, "d")) as local:
            with open(os.path.join(local, "a.txt"), encoding="utf-8") as f:
                assert f.read() == "é\n"
        assert paths.absolute(root) == root
    assert paths.unknown_scheme("foo://x/y") and paths.unknown_scheme(remote) is None
