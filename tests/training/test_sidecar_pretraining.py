"""run_pretraining as the original's side-car evaluator (faithfulness §6.4): a trainer
process and an evaluator process (--do_eval --nodo_train) started together on the same
output_dir. The evaluator evaluates every checkpoint once, appends the original's
`key = value` lines (and `saved … to …` when a checkpoint becomes the best) to
eval_results.txt, keeps the best masked_lm_accuracy as model.ckpt-best, and exits once
the last training step is evaluated. The fine-tuning scripts' side-car (run_classifier with
--do_eval and no --do_train) runs the same `checkpoint_eval.follow_training`;
its two-process test (tests/glue/test_sidecar_eval.py) was removed for the 20-minute
`make test-all`."""

from __future__ import annotations

import os

from tests.conftest import tiny_config
from tests.training import processes

STEPS, EVERY = 6, 2


def _evaluations(path: str) -> list[dict[str, str]]:
    """eval_results.txt → one {key: value} per evaluation (a block starts where a key
    repeats; its `saved …` lines are kept under "saved")."""
    blocks: list[dict] = []
    with open(path) as f:
        for line in f.read().splitlines():
            if line.startswith("saved "):
                blocks[-1].setdefault("saved", []).append(line)
                continue
            key, value = line.split(" = ", 1)
            if not blocks or key in blocks[-1]:
                blocks.append({})
            blocks[-1][key] = value
    return blocks


def test_evaluator_follows_the_trainer(pretraining_files, tmp_path):
    _, _, common = pretraining_files
    config = tmp_path / "one_layer.json"  # two processes trace one layer fewer
    tiny_config(num_hidden_layers=1).to_json_file(config)
    out = tmp_path / "out"
    flags = ["run_pretraining.py", *common, f"--albert_config_file={config}",
             f"--output_dir={out}", "--train_batch_size=4",
             f"--num_train_steps={STEPS}", f"--save_checkpoints_steps={EVERY}", "--log_steps=2",
             "--iterations_per_loop=1", "--eval_batch_size=4", "--max_eval_steps=3"]
    log = processes.trainer_and_side_car(
        [*flags, "--do_train"],
        [*flags, "--nodo_train", "--do_eval", "--eval_poll_secs=1", "--eval_timeout_secs=60"])
    assert f"Reached the final step {STEPS}: 3 checkpoint(s) evaluated" in log

    evaluations = _evaluations(str(out / "eval_results.txt"))
    assert [int(e["global_step"]) for e in evaluations] == [2, 4, 6]  # each step once
    accuracies = [float(e["masked_lm_accuracy"]) for e in evaluations]
    best, running = None, -1.0
    for i, accuracy in enumerate(accuracies):
        step = 2 * (i + 1)
        improved = accuracy > running
        saved = [f"saved {out}/model.ckpt-{step}{x} to {out}/model.ckpt-best{x}"
                 for x in (".data-00000-of-00001", ".index")]
        assert evaluations[i].get("saved", []) == (saved if improved else []), i
        if improved:
            best, running = step, accuracy
    with open(out / "best_trial.txt") as f:
        assert f.read() == f"6:{best}:{running}\n"
    # Pretraining keeps its checkpoints (keep_checkpoint_max decides); the best is a copy.
    with open(out / f"model.ckpt-{best}.index", "rb") as f, \
            open(out / "model.ckpt-best.index", "rb") as g:
        assert f.read() == g.read()
    assert {f"model.ckpt-{s}.index" for s in (2, 4, 6)} <= set(os.listdir(out))
    # (A restart resuming from best_trial.txt: tests/training/test_checkpoint_eval_follow.py.)


def test_no_checkpoint_within_the_timeout_is_one_line(pretraining_files, tmp_path):
    _, _, common = pretraining_files
    out = tmp_path / "out"
    result = processes.run(["run_pretraining.py", *common, f"--output_dir={out}",
                            "--nodo_train", "--do_eval", "--num_train_steps=4",
                            "--eval_poll_secs=0.5", "--eval_timeout_secs=1"])
    assert result.returncode == 1, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
    assert errors == [
        f"run_pretraining: error: no new checkpoint in {out} for 1s (--eval_timeout_secs) while "
        "waiting for the first checkpoint (the run ends at step 4, --num_train_steps); is the "
        "trainer running there, with the same --num_train_steps?"]
    assert "Traceback" not in result.stderr and not out.exists()
