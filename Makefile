# Two entry points for a fresh machine: `make demo` and `make test` (and `make paper`, the
# paper's ablation tables at toy scale, ≈1–2 h on 2 cores).
# Each creates .venv when missing and (re)installs when its requirements change: `make demo`
# installs the runtime set only (requirements.txt + the package), `make paper` adds
# scikit-learn (requirements-paper.txt), `make test` adds the test set (requirements-dev.txt:
# torch, transformers, keras-hub, ... as independent references; requirements-nodeps.txt:
# TF Model Garden, installed without its dependencies, which would replace TensorFlow).
# One stamp per set, so `make test` after `make demo` only adds what is missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
RUNTIME_STAMP := $(VENV)/.installed-runtime
DEV_STAMP := $(VENV)/.installed-dev
PAPER_STAMP := $(VENV)/.installed-paper
DEMO_DIR ?= demo_output
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: demo test test-all paper install install-dev clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(RUNTIME_STAMP): $(PY) requirements.txt pyproject.toml
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(RUNTIME_STAMP)

$(PAPER_STAMP): $(RUNTIME_STAMP) requirements-paper.txt
	$(PY) -m pip install --quiet -r requirements-paper.txt
	touch $(PAPER_STAMP)

$(DEV_STAMP): $(RUNTIME_STAMP) requirements-paper.txt requirements-dev.txt requirements-nodeps.txt
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.txt
	touch $(DEV_STAMP)

install: $(RUNTIME_STAMP)
install-dev: $(DEV_STAMP)

# Two tiers. `make test`: ruff (the whole tree, under a second), then the fast tier: every
# test not marked `slow` (pyproject.toml [tool.pytest.ini_options] markers).
# `make test-all` (what CI's .ci/run calls): ruff, every test, then the oneDNN pass below.
# Both run the test files in $(TEST_WORKERS) processes (pytest-xdist; a file's tests stay
# together so its module fixtures are built once), the longest files first (tests/run_order.py,
# so the processes end together), and list the slowest tests at the end.
TEST_WORKERS ?= 2
PYTEST := $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
test: $(DEV_STAMP)
	$(PY) -m ruff check .
	$(PYTEST) --durations=15 -m "not slow" tests

# TensorFlow turns oneDNN's custom ops on by default on Intel CPUs (most cloud machines): they
# print a notice at start-up and change the order of float sums. TF_ENABLE_ONEDNN_OPTS=1 turns
# them on on any x86 CPU, so the tests that read stderr (the logs, one-line errors for bad
# input) and those that compare numbers with an independent reference run again with it
# (their fast tests: the slow ones repeat a mechanism on more processes or steps). One file per
# reference: HF's outputs through tests/models/test_hf_parity.py (the same encoder numerics as
# tests/checkpoints/test_hf_parity.py's heads), the optimizer's update through
# tests/training/test_optimizers.py (the gradients tests/training/test_clipping.py clips).
ONEDNN_TESTS := tests/test_quiet_startup.py tests/test_script_flags.py \
  tests/training/test_run_pretraining.py tests/training/test_sidecar_pretraining.py \
  tests/finetuning/test_preflight.py tests/data/test_record_checks.py \
  tests/layers/test_layers.py tests/layers/test_transformer.py tests/models/test_hf_parity.py \
  tests/training/test_optimizers.py tests/export/test_serving.py
# Tests that set TF_ENABLE_ONEDNN_OPTS=1 themselves already ran so in the main pass.
ONEDNN_DUPLICATES := "tests/test_quiet_startup.py::test_tiny_pretraining_run_shows_only_its_own_log[1]" \
  "tests/test_quiet_startup.py::test_checkpoint_tools_show_their_report_and_real_errors_only[1]"
test-all: $(DEV_STAMP)
	$(PY) -m ruff check .
	$(PYTEST) --durations=25 tests
	for f in $(ONEDNN_TESTS); do test -f $$f || { echo "make test-all: $$f is gone; update ONEDNN_TESTS" >&2; exit 1; }; done
	TF_ENABLE_ONEDNN_OPTS=1 $(PYTEST) -m "not slow" $(ONEDNN_TESTS) $(ONEDNN_DUPLICATES:%=--deselect %)

# The main job on the built-in corpus, one real command per step (see README "make demo").
D := $(DEMO_DIR)
DEMO_CONFIG ?= configs/demo_albert_config.json
PRETRAIN_STEPS ?= 2000
FINETUNE_STEPS ?= 400
# Smaller data for tests (tests/test_readme.py): corpus documents (empty: all), dupe factor,
# pretraining eval batches, corpus-task pairs.
DEMO_DOCS ?=
DEMO_DUPE_FACTOR ?= 2
DEMO_EVAL_STEPS ?= 20
DEMO_GLUE_TRAIN ?= 8000
DEMO_GLUE_DEV ?= 400
DEMO_GLUE_TEST ?= 100
demo: $(RUNTIME_STAMP)
	rm -rf $(D) && mkdir -p $(D)
	# 1. corpus → SentencePiece → pretraining TFRecords
	$(PY) -m albert_tf.corpus.build --output=$(D)/corpus.txt$(if $(DEMO_DOCS), --max_documents=$(DEMO_DOCS))
	$(PY) -m albert_tf.train_sentencepiece --input=$(D)/corpus.txt --model_prefix=$(D)/spm --vocab_size=1000
	$(PY) -m albert_tf.create_pretraining_data --input_file=$(D)/corpus.txt --output_file=$(D)/pretrain.tfrecord \
	  --spm_model_file=$(D)/spm.model --max_seq_length=64 --max_predictions_per_seq=10 --dupe_factor=$(DEMO_DUPE_FACTOR)
	# 2. pretrain a small ALBERT (MLM + SOP, LAMB); curves in TensorBoard under $(D)/pretrain
	$(PY) run_pretraining.py --albert_config_file=$(DEMO_CONFIG) --input_file=$(D)/pretrain.tfrecord \
	  --output_dir=$(D)/pretrain --max_seq_length=64 --max_predictions_per_seq=10 --train_batch_size=64 \
	  --num_train_steps=$(PRETRAIN_STEPS) --num_warmup_steps=200 --learning_rate=2e-3 --seed=1 \
	  --save_checkpoints_steps=$(PRETRAIN_STEPS) --iterations_per_loop=100 --log_steps=100 \
	  --do_eval --eval_batch_size=64 --max_eval_steps=$(DEMO_EVAL_STEPS)
	# 3. fine-tune on the GLUE-format corpus task, from the pretrained checkpoint and from random init
	$(PY) -m albert_tf.corpus.make_glue_task --output_dir=$(D)/glue --corpus=$(D)/corpus.txt \
	  --num_train=$(DEMO_GLUE_TRAIN) --num_dev=$(DEMO_GLUE_DEV) --num_test=$(DEMO_GLUE_TEST)
	$(PY) run_classifier.py --task_name=MRPC --data_dir=$(D)/glue --output_dir=$(D)/mrpc_pretrained \
	  --albert_config_file=$(DEMO_CONFIG) --spm_model_file=$(D)/spm.model --init_checkpoint=$(D)/pretrain \
	  --max_seq_length=64 --do_train --do_eval --train_batch_size=32 --eval_batch_size=100 \
	  --learning_rate=3e-4 --train_step=$(FINETUNE_STEPS) --warmup_step=40 \
	  --save_checkpoints_steps=$(FINETUNE_STEPS) --log_steps=100 --seed=1
	$(PY) run_classifier.py --task_name=MRPC --data_dir=$(D)/glue --output_dir=$(D)/mrpc_random_init \
	  --albert_config_file=$(DEMO_CONFIG) --spm_model_file=$(D)/spm.model \
	  --max_seq_length=64 --do_train --do_eval --train_batch_size=32 --eval_batch_size=100 \
	  --learning_rate=3e-4 --train_step=$(FINETUNE_STEPS) --warmup_step=40 \
	  --save_checkpoints_steps=$(FINETUNE_STEPS) --log_steps=100 --seed=1
	$(PY) -m albert_tf.compare_runs --metric=eval_accuracy \
	  --runs="fine-tuned from pretraining=$(D)/mrpc_pretrained,same model from random init=$(D)/mrpc_random_init"
	# 4. export encoder + preprocessing SavedModels, reload them, classify raw sentence pairs
	$(PY) -m albert_tf.export_tfhub --albert_config_file=$(DEMO_CONFIG) \
	  --checkpoint=$(D)/mrpc_pretrained/model.ckpt-best --spm_model_file=$(D)/spm.model \
	  --export_path=$(D)/export/encoder --preprocess_export_path=$(D)/export/preprocess --seq_length=64
	$(PY) -m albert_tf.classify_with_exports --preprocess_export=$(D)/export/preprocess \
	  --encoder_export=$(D)/export/encoder --classifier_checkpoint=$(D)/mrpc_pretrained/model.ckpt-best \
	  --pairs_file=$(D)/glue/MRPC/dev.tsv --num_examples=8 --seq_length=64
	# 5. training curves (loss, MLM and SOP accuracy against step) as a PNG
	$(PY) -m albert_tf.plot_curves --event_dir=$(D)/pretrain --output=$(D)/pretraining_curves.png

# Tables 2–5 of the paper at toy scale → $(PAPER_DIR)/results.md (resumable: rerun to continue).
PAPER_DIR ?= paper_output
PAPER_TABLES ?= 2,3,4,5
PAPER_FLAGS ?=
paper: $(PAPER_STAMP)
	$(PY) -m albert_tf.experiments.paper --output_dir=$(PAPER_DIR) --tables=$(PAPER_TABLES) $(PAPER_FLAGS)

clean:
	rm -rf $(VENV) $(DEMO_DIR) $(PAPER_DIR)
