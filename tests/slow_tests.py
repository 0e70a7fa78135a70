"""The tests of the slow tier that are not slow as a whole file, each with the faster test that
checks the same module in `make test`'s fast tier.

A whole file that is slow says so itself (`pytestmark = pytest.mark.slow`, with its reason at the
top). This table is for single tests in files whose other tests stay fast: `conftest.py` marks
every test whose node id starts with a key. A key that matches no test in a collected file is
an error (a renamed test cannot silently fall back into the fast tier).

Figures are the tests' times in a 2-process run of the whole suite on 2 cores.
"""

from __future__ import annotations

SLOW_TESTS: dict[str, str] = {
    # ---- checkpoints ----
    "tests/checkpoints/test_keras_hub.py::test_text_classifier_predicts_the_probabilities_of_do_predict":
        "fine-tunes a classifier, 98 s; the task-preset writer is covered fast by "
        "test_our_model_to_keras_hub_loads_with_our_outputs and the bad-preset tests",
    "tests/checkpoints/test_model_garden.py::test_export_tfhub_keeps_the_model_garden_interface":
        "21 s; Model Garden reading is covered fast by test_the_kind_rule_reads_config_tokenizer_"
        "and_weights, the export's interface by tests/export/test_encoder_export.py",
    "tests/checkpoints/test_model_garden.py::test_fine_tuning_starts_from_the_export_and_the_checkpoint":
        "10 s; warm-starting from the same kinds is covered fast by test_the_kind_rule_… and "
        "tests/checkpoints/test_loading.py",
    "tests/checkpoints/test_hf_tokenizer.py::test_pipeline_gives_the_probabilities_of_do_predict":
        "fine-tunes then runs transformers' pipeline, 15 s; the tokenizer files are covered fast by "
        "test_autotokenizer_tokenizes_as_our_scripts",
    # ---- buckets (ram://) ----
    "tests/test_remote_paths.py::test_the_main_job_writes_every_output_on_the_bucket":
        "the whole job on ram://, 41 s; path handling is covered fast by test_paths_helpers_agree_"
        "on_both_kinds, test_a_bucket_directory_is_staged_… and tests/test_remote_paths_ast.py",
    "tests/test_remote_paths.py::test_the_bucket_export_serves_and_converts": "82 s; as above",
    "tests/test_remote_paths.py::test_resume_and_keep_best_behave_the_same_on_local_disk": "18 s; as above",
    "tests/test_remote_paths.py::test_a_bad_remote_path_is_one_line_and_writes_nothing":
        "needs the job fixture; the one-line path errors are covered fast by "
        "tests/finetuning/test_preflight.py",
    "tests/test_remote_paths.py::test_squad_feature_caches_and_race_on_the_bucket": "16 s; as above",
    # ---- export and serving ----
    "tests/export/test_task_serving.py::test_bfloat16_classifier_export_within_the_stated_bound":
        "38 s; the bf16 serving bound is checked fast by tests/export/test_serving_matrix.py's "
        "bf16 cells (the same 2^-5 bound on the bf16 encoder exports, on every engine)",
    "tests/export/test_task_serving.py::test_bfloat16_squad_export_within_the_stated_bound": "21 s; as above",
    "tests/export/test_int8_calibration.py::test_real_task_accuracy_and_argmax_kept":
        "fine-tunes and exports twice, 35 s; the static int8 path is covered fast by "
        "test_text_calibration_writes_an_int8_ir_that_load_serving_picks and the accuracy gate test",
    "tests/export/test_onnx.py::test_export_tfhub_onnx_shows_only_its_own_lines_in_absl_format":
        "a subprocess export, 24 s; the ONNX files are covered fast by test_float32_onnx_equals_"
        "the_keras_model, the quiet log by tests/test_quiet_startup.py",
    "tests/export/test_encoder_export.py::test_hub_keras_layer_under_tf_keras":
        "imports tf_keras, 19 s; the export's interface is covered fast by the Keras 3 wrapper tests",
    "tests/export/test_encoder_export.py::test_saved_model_cli_runs_serving_default":
        "a subprocess, 9 s; the signature is checked fast by test_saved_model_load_and_hub_load_…",
    # ---- training ----
    "tests/training/test_clipping.py::test_two_replicas_count_every_occurrence":
        "two replicas, 77 s; per-occurrence counting is covered fast by the one-device tests of "
        "this file, Mirrored by tests/training/test_distribute.py",
    "tests/training/test_clipping.py::test_dense_mode_is_another_trajectory":
        "35 s; covered fast: --embedding_clip=dense's own count by test_tpu_lookups_and_dense_mode_count_nothing_…",
    "tests/training/test_clipping.py::test_accumulated_micro_batches_count_every_occurrence":
        "20 s; accumulation is covered fast by tests/training/test_loop.py::"
        "test_gradient_accumulation_equals_one_big_batch",
    "tests/training/test_clipping.py::test_float16_loss_scaling_logs_and_clips_with_the_unscaled_norm":
        "float16 emulated on a CPU, 15-60 s; float16 training with loss scaling is covered fast by "
        "tests/training/test_loop.py::test_mixed_precision_trains[float16]",
    "tests/training/test_distribute.py::test_multi_worker_mirrored_two_processes":
        "two processes (the run test_faults_workers.py compares with), 27 s; MultiWorkerMirrored's input numbering is tested fast here "
        "(test_input_context_numbers_the_chief_first), Mirrored by test_mirrored_two_cpus_…",
    "tests/training/test_faults_checkpoints.py::test_index_without_data_and_truncated_data_fall_back":
        "40 s; the fallback rule is covered fast by test_state_file_naming_a_missing_prefix_falls_back",
    "tests/training/test_faults_checkpoints.py::test_full_disk_while_writing_a_checkpoint":
        "18 s; disk-full handling is covered fast by test_a_full_disk_elsewhere_is_one_line and "
        "tests/test_atomic_files.py",
    "tests/training/test_sidecar_pretraining.py::test_evaluator_follows_the_trainer":
        "two processes, 35 s; the side-car's waiting is covered fast by test_no_checkpoint_within_"
        "the_timeout_is_one_line and tests/training/test_faults_checkpoints.py::test_side_car_waits_…",
    "tests/training/test_run_pretraining.py::test_bad_id_deep_in_a_file_stops_training_with_file_and_record":
        "15 s; the record error is covered fast by tests/pretraining/test_runner.py::"
        "test_a_bad_id_in_process_is_a_record_error",
    # ---- fine-tuning ----
    "tests/finetuning/test_bucketing.py::test_training_traces_once_compiles_once_per_length_and_mirrors":
        "49 s; bucketed training batches are covered fast by test_train_batches_share_a_length_…",
    "tests/finetuning/test_bfloat16_inference.py::test_pretraining_eval_in_bfloat16":
        "27 s; bfloat16 evaluation is covered fast by the GLUE, RACE and SQuAD tests of this file",
    "tests/finetuning/test_inference.py::test_mirrored_two_cpus_predict_as_one_device":
        "20 s; Mirrored is covered fast by tests/training/test_distribute.py",
    "tests/glue/test_run_classifier.py::test_an_export_only_run_claims_no_evaluation":
        "20 s; --export_dir is covered fast by test_export_serves_the_best_checkpoint",
    "tests/glue/test_cli.py::test_cli_trains_from_an_original_checkpoint_and_writes_the_submission":
        "18 s; run_classifier's flags are covered fast by tests/glue/test_run_classifier.py",
    "tests/squad/test_run_squad.py::test_v2_end_to_end_then_predict_only":
        "17 s; covered fast: v2 scoring by tests/squad/test_metrics.py and test_postprocess.py, the script by "
        "test_v1_end_to_end",
    "tests/corpus/test_race_task.py::test_fine_tuning_learns_the_corpus_task":
        "a learning run, 71 s; the task files are covered fast by test_phrase_task_files",
    "tests/pretraining/test_runner.py::test_task_none_trains_the_masked_lm_alone":
        "27 s; the runner is covered fast by the other tests of this file and tests/training/test_loop.py",
    # ---- models ----
    "tests/models/test_pretrainer.py::test_outputs_and_gradients_equal_the_full_encoder_then_gather[True-True]":
        "recomputed and training, 5 s; covered fast by [False-True] (the training forward) and "
        "[True-False] (recomputation), recomputed gradients by tests/layers/test_transformer.py::"
        "test_recomputed_blocks_give_the_plain_gradients",
    "tests/models/test_parameter_counts.py::test_counts_equal_the_independent_count_and_the_paper[bert_large]":
        "builds BERT-large, 12 s; the other 15 rows of the paper's Table 1/3/4 stay fast",
    # ---- start-up logs (the oneDNN pass runs these files with oneDNN on) ----
    "tests/test_quiet_startup.py::test_tiny_pretraining_run_shows_only_its_own_log[0]":
        "22 s; [1] (oneDNN on, the x86 default) stays fast",
    "tests/test_quiet_startup.py::test_checkpoint_tools_show_their_report_and_real_errors_only[0]":
        "17 s; as above",
    "tests/export/test_serving.py::test_auto_names_the_engine_it_picks":
        "reads test_serving_matrix.py's fp32_full export, which the oneDNN pass (this file, fast "
        "tests) would build again (~20 s); the one line is covered fast by the matrix's checks",
    "tests/export/test_task_serving.py::test_dynamic_int8_task_export_keeps_a_fine_tuned_classifiers_argmax":
        "a third export of the fine-tuned classifier, ~12 s; dynamic int8 TFLite on it is covered fast "
        "by tests/export/test_serving.py::test_dynamic_int8_keeps_a_fine_tuned_classifiers_argmax, "
        "the classifier export's TFLite file by test_classifier_export_equals_the_keras_model_on_"
        "every_engine[tflite]",
    # ---- second cut (the fast tier's 8-minute target) ----
    "tests/training/test_faults_checkpoints.py::test_state_file_naming_a_missing_prefix_falls_back":
        "a subprocess run to compare with (40 s with it); the checkpoint checks are covered fast by "
        "test_a_new_checkpoint_is_read_back_before_the_rotation and test_side_car_waits_…",
    "tests/checkpoints/test_conversion.py::test_command_lines":
        "two subprocesses, 15 s; convert is covered fast in process by test_convert_logs_the_output_"
        "directory_not_its_staging_one, the console scripts by tests/test_console_scripts.py",
    "tests/models/test_parameter_counts.py::test_counts_equal_the_independent_count_and_the_paper[albert_xlarge]":
        "3 s each at full size; the same counting is covered fast by albert_base/large and the "
        "ablation rows",
    "tests/models/test_parameter_counts.py::test_counts_equal_the_independent_count_and_the_paper[albert_xxlarge]":
        "as above",
    "tests/models/test_parameter_counts.py::test_counts_equal_the_independent_count_and_the_paper[bert_base]":
        "as above",
    "tests/models/test_parameter_counts.py::test_counts_equal_the_independent_count_and_the_paper[not_shared_E128]":
        "as above",
    "tests/test_help_flags.py::test_helpshort_exits_0_and_lists_the_taught_flags[albert_tf.export_tfhub]":
        "12 s (a tool importing TensorFlow at start-up); the help frame is covered fast by the "
        "other tools' --helpshort and tests/test_console_scripts.py",
    "tests/test_help_flags.py::test_helpshort_exits_0_and_lists_the_taught_flags[albert_tf.classify_with_exports]":
        "12 s; as above",
    "tests/training/test_clipping.py::test_classifier_counts_word_and_type_rows_per_occurrence[adamw]":
        "7 s; the count is the optimizer's input, covered fast by the [lamb] case",
    "tests/training/test_clipping.py::test_pretrainer_counts_type_rows_per_occurrence[adamw]":
        "7 s; as above",
    "tests/finetuning/test_bfloat16_inference.py::test_race_eval_and_predict_in_bfloat16":
        "4 s; bfloat16 evaluation is covered fast by test_glue_eval_and_predict_in_bfloat16",
    "tests/finetuning/test_bfloat16_inference.py::test_squad_v2_predict_in_bfloat16": "7 s; as above",
    "tests/training/test_loop.py::test_recompute_grad_trains_like_the_plain_step":
        "10 s; recomputed blocks are covered fast by tests/layers/test_transformer.py::"
        "test_recomputed_blocks_give_the_plain_gradients",
    "tests/export/test_keras_fine_tuning.py::test_fit_with_adamw_trains_the_encoder[HubEncoder]":
        "7 s; fitting through an export is covered fast by the [load_keras_encoder] case, "
        "HubEncoder by tests/export/test_encoder_export.py's Keras 3 wrapper tests",
    "tests/export/test_serving_matrix.py::test_the_bf16_export_without_openvino_ir_loads_on_openvino_through_auto":
        "9 s; the bf16 graph on OpenVINO is covered fast by the matrix's bf16-openvino cells",
    "tests/race/test_run_race.py::test_fine_tunes_an_encoder_export":
        "13 s; fine-tuning from an encoder export is covered fast by tests/squad/test_run_squad.py::"
        "test_v1_fine_tunes_an_encoder_export (the same model_source path)",
}
