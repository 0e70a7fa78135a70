#!/usr/bin/env bash
# Fine-tunes ALBERT on every GLUE task with the original run_glue.sh's per-task settings
# (faithfulness §8.7), then collects the GLUE server files in $OUTPUT_ROOT/submission/.
#
#   ALBERT_ROOT=albert_base INIT_CHECKPOINT=albert_base/model.ckpt-best \
#   GLUE_DIR=glue_data OUTPUT_ROOT=glue_out scripts/run_glue.sh [TASK ...]
#
# Environment:
#   ALBERT_ROOT      holds albert_config.json and 30k-clean.model (as the released tarballs)
#   INIT_CHECKPOINT  original TF1 checkpoint or one of ours (default: $ALBERT_ROOT/model.ckpt-best)
#   ALBERT_HUB_MODULE_HANDLE  an exported encoder instead of config + checkpoint (issue [7/8];
#                    the original defaults to https://tfhub.dev/google/albert_base/1 — nothing
#                    is downloaded here, so give a local export path)
#   GLUE_DIR         GLUE data in the official layout (default: $ALBERT_ROOT/glue)
#   OUTPUT_ROOT      one directory per task is created here (default: glue_output)
#   EXTRA_FLAGS      appended to every run (e.g. "--dtype=bfloat16 --jit_compile")
# Tasks default to all; like the original, each is run twice: training, then eval + predict.
# MNLI's model also predicts MNLI-mm (mismnli) and the AX diagnostic set. WNLI is not in the
# original script; it runs with RTE's settings (our addition).
set -euo pipefail

ALBERT_ROOT=${ALBERT_ROOT:?set ALBERT_ROOT (config + SentencePiece model)}
GLUE_DIR=${GLUE_DIR:-$ALBERT_ROOT/glue}
OUTPUT_ROOT=${OUTPUT_ROOT:-glue_output}
INIT_CHECKPOINT=${INIT_CHECKPOINT:-$ALBERT_ROOT/model.ckpt-best}
PYTHON=${PYTHON:-python}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# task: warmup_step learning_rate train_step save_checkpoints_steps train_batch_size
declare -A SETTINGS=(
  [SST-2]="1256 1e-5 20935 100 32"
  [MNLI]="1000 3e-5 10000 100 128"
  [CoLA]="320 1e-5 5336 100 16"
  [QNLI]="1986 1e-5 33112 200 32"
  [QQP]="1000 5e-5 14000 100 128"
  [RTE]="200 3e-5 800 100 32"
  [STS-B]="214 2e-5 3598 100 16"
  [MRPC]="200 2e-5 800 100 32"
  [WNLI]="200 3e-5 800 100 32"
)
TASKS=("$@")
[ ${#TASKS[@]} -eq 0 ] && TASKS=(SST-2 MNLI CoLA QNLI QQP RTE STS-B MRPC WNLI)

COMMON=(--data_dir="$GLUE_DIR" --do_lower_case --max_seq_length=512 --optimizer=adamw
        --vocab_file="$ALBERT_ROOT/vocab.txt" --spm_model_file="$ALBERT_ROOT/30k-clean.model")
if [ -n "${ALBERT_HUB_MODULE_HANDLE:-}" ]; then
  MODEL=(--albert_hub_module_handle="$ALBERT_HUB_MODULE_HANDLE")
else
  MODEL=(--albert_config_file="$ALBERT_ROOT/albert_config.json" --init_checkpoint="$INIT_CHECKPOINT")
fi
# shellcheck disable=SC2206
EXTRA=(${EXTRA_FLAGS:-})

classifier() { "$PYTHON" "$HERE/run_classifier.py" "${COMMON[@]}" "$@" "${EXTRA[@]}"; }

mkdir -p "$OUTPUT_ROOT/submission"
for task in "${TASKS[@]}"; do
  read -r warmup lr steps save batch <<< "${SETTINGS[$task]:?unknown task $task}"
  out="$OUTPUT_ROOT/$task"
  hyper=(--task_name="$task" --output_dir="$out" --warmup_step="$warmup" --learning_rate="$lr"
         --train_step="$steps" --save_checkpoints_steps="$save" --train_batch_size="$batch")
  classifier "${MODEL[@]}" "${hyper[@]}" --do_train
  classifier "${MODEL[@]}" "${hyper[@]}" --do_eval --do_predict
  if [ "$task" = MNLI ]; then
    # MNLI-mm and AX are predicted by the MNLI model (its best checkpoint).
    best=(--albert_config_file="$ALBERT_ROOT/albert_config.json" --init_checkpoint="$out/model.ckpt-best")
    # (--train_step=0: no training run to follow, evaluate the given weights once)
    classifier "${best[@]}" --task_name=mismnli --output_dir="$OUTPUT_ROOT/MNLI-mm" --train_step=0 \
      --do_eval --do_predict
    classifier "${best[@]}" --task_name=ax --output_dir="$OUTPUT_ROOT/AX" --do_predict
    cp "$OUTPUT_ROOT/MNLI-mm/MNLI-mm.tsv" "$OUTPUT_ROOT/AX/AX.tsv" "$OUTPUT_ROOT/submission/"
  fi
  cp "$out"/*.tsv "$OUTPUT_ROOT/submission/" 2>/dev/null || true
done
rm -f "$OUTPUT_ROOT/submission/test_results.tsv" "$OUTPUT_ROOT/submission/submit_results.tsv"
echo "GLUE server files in $OUTPUT_ROOT/submission/ (zip them for gluebenchmark.com)"
