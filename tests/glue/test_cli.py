"""run_classifier.py as a command: flags → run, the restore log, and bad input → one line,
exit status 1, no cache file.

The command lines run in this process (`tests.in_process_tools.run_tool`: absl parses them,
`cli.run_script` reports errors, as `python -m albert_tf.run_classifier` does); the process
boundary itself (`python run_classifier.py`, one-line errors) is tested by
tests/test_script_flags.py and tests/test_help_flags.py.
"""

from __future__ import annotations

import logging
import os
import shutil

from albert_tf.checkpoints import save_original_checkpoint
from albert_tf.models import AlbertPretrainer
from albert_tf.config import AlbertConfig
from tests.conftest import random_inputs
from tests.in_process_tools import run_tool


def _flags(glue_dir, config_file, spm_model, output_dir, task):
    return [f"--data_dir={glue_dir}", f"--task_name={task}",
            f"--output_dir={output_dir}", f"--albert_config_file={config_file}",
            f"--spm_model_file={spm_model}", "--max_seq_length=32", "--train_batch_size=2",
            "--train_step=2", "--save_checkpoints_steps=1", "--log_steps=1", "--seed=3"]


def test_cli_trains_from_an_original_checkpoint_and_writes_the_submission(
        tmp_path, glue_dir, tiny_config_file, text_assets, caplog):
    config = AlbertConfig.from_json_file(tiny_config_file)
    pretrainer = AlbertPretrainer(config)
    pretrainer(random_inputs(config))
    init = save_original_checkpoint(pretrainer, str(tmp_path / "init" / "model.ckpt"))
    out = tmp_path / "out"
    with caplog.at_level(logging.INFO, logger="absl"):
        result = run_tool("albert_tf.run_classifier",
                          *_flags(glue_dir, tiny_config_file, text_assets.spm_model, out, "RTE"),
                          f"--init_checkpoint={init}", "--do_train", "--do_eval", "--do_predict",
                          "--recompute_grad", "--clip_norm_mode=dense",
                          "--verbosity=0")  # INFO, the command line's own default
    assert result.status == 0, result.stderr[-3000:]
    # The loop's flags reach the Trainer through GlueRunOptions (FineTuningOptions).
    log = caplog.text + result.stderr
    assert "recompute_grad: 1 transformer stack(s) recompute" in log
    assert "(clip_norm_mode=dense); per token occurrence: none" in log
    assert "restored 25/25 encoder variables and 0/2 classifier-head variables" in log
    assert (out / "RTE.tsv").read_text().startswith("index\tprediction\n0\t")
    assert "global_step = 2" in (out / "eval_results.txt").read_text()


def test_bad_input_is_one_line_and_leaves_no_cache(tmp_path, glue_dir, tiny_config_file, text_assets):
    data = tmp_path / "data"
    shutil.copytree(os.path.join(glue_dir, "MRPC"), data / "MRPC")
    with open(data / "MRPC" / "dev.tsv", "a") as f:
        f.write("1\t9\t9\tthree fields only\r\n")
    out = tmp_path / "out"
    result = run_tool("albert_tf.run_classifier",
                      *_flags(str(data), tiny_config_file, text_assets.spm_model, out, "mrpc"),
                      "--do_train", "--do_eval")
    assert result.status == 1
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last == (f"run_classifier: error: {data}/MRPC/dev.tsv: line 6: expected 5 "
                    "tab-separated columns, found 4")
    assert not out.exists() or not [p for p in os.listdir(out) if "tf_record" in p]
