"""The order in which test files start: the longest first, so that two workers end together.

`make test` / `make test-all` run files in 2 processes (`pytest-xdist --dist loadfile
--no-loadscope-reorder`): each process takes the next file of the queue when it is nearly done
with its own. With the longest files first, what is left at the end are short files, and neither
process waits long for the other (longest-processing-time-first scheduling). xdist's default
order, by number of tests per file, left one process idle for ~40 s while the other ran
test_pip_install.py and training/test_learning.py last.

Figures: each file's test time in a 2-process run of the whole suite on the 2-core AMD EPYC
(seconds, rounded). A file not listed starts after these, in collection order; a listed name
that is no file fails tests/test_tiers.py. Refresh when a file's time changes a lot.
"""

from __future__ import annotations

LONGEST_FIRST: tuple[str, ...] = (
    "tests/test_readme.py",                      # 417
    "tests/export/test_serving_matrix.py",       # 120
    "tests/glue/test_learning.py",               # 107
    "tests/training/test_clipping.py",           # 95
    "tests/training/test_loop.py",               # 89
    "tests/export/test_task_serving.py",         # 86
    "tests/test_pip_install.py",                 # 76
    "tests/corpus/test_race_task.py",            # 70
    "tests/export/test_int8_calibration.py",     # 66
    "tests/test_quiet_startup.py",               # 62
    "tests/checkpoints/test_model_garden.py",    # 62
    "tests/training/test_distribute.py",         # 61
    "tests/test_remote_paths.py",                # 59
    "tests/experiments/test_paper.py",           # 55
    "tests/checkpoints/test_keras_hub.py",       # 54
    "tests/training/test_faults_workers.py",     # 52
    "tests/glue/test_run_classifier.py",         # 50
    "tests/training/test_faults_preemption.py",  # 47
    "tests/export/test_encoder_export.py",       # 44
    "tests/training/test_faults_checkpoints.py",  # 43
    "tests/squad/test_run_squad.py",             # 43
    "tests/training/test_learning.py",           # 37
    "tests/training/test_run_pretraining.py",    # 37
    "tests/models/test_parameter_counts.py",     # 36
    "tests/finetuning/test_bucketing.py",        # 35
    "tests/export/test_keras_fine_tuning.py",    # 32
    "tests/export/test_onnx.py",                 # 30
    "tests/test_help_flags.py",                  # 29
    "tests/test_full_disk.py",                   # 29
    "tests/training/test_sidecar_pretraining.py",  # 26
    "tests/checkpoints/test_hf_parity.py",       # 26
    "tests/finetuning/test_bfloat16_inference.py",  # 26
    "tests/checkpoints/test_conversion.py",      # 25
)


_RANK = {file: place for place, file in enumerate(LONGEST_FIRST)}


def file_rank(nodeid: str) -> int:
    """Where a test's file starts: its place in LONGEST_FIRST, or after all of them."""
    return _RANK.get(nodeid.split("::", 1)[0], len(LONGEST_FIRST))
