"""absl flags every run_* script shares, and the runtime set-up they drive.

Our additions to the original scripts: strategy, dtype, XLA, accumulation, seeding,
logging cadence, clip-norm mode and recomputation; plus the original's TPU plumbing flags
(faithfulness §6.1). Choices are DEFINE_enum, so a typo is a usage error rather than a silent
fallback.

Example (in a run_* script):
    >>> from albert_tf.training import flags as training_flags
    >>> training_flags.define_training_flags()
    >>> training_flags.define_tpu_flags()
    >>> ...
    >>> strategy = training_flags.setup_from_flags(FLAGS)
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import TYPE_CHECKING, Mapping

from absl import flags, logging

from albert_tf.export.choices import TFLITE_QUANTIZATIONS
from albert_tf.training.choices import CLIP_NORM_MODES, DTYPE_POLICIES, STRATEGIES

if TYPE_CHECKING:
    import tensorflow as tf


def _define_once(definer, name: str, *args, flag_values: flags.FlagValues, **kwargs) -> None:
    if name not in flag_values:
        definer(name, *args, flag_values=flag_values, **kwargs)


def define_training_flags(flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """--distribution_strategy, --num_gpus, --dtype, --jit_compile,
    --gradient_accumulation_steps, --seed, --deterministic, --log_steps, --clip_norm_mode,
    --recompute_grad (idempotent)."""
    define = functools.partial(_define_once, flag_values=flag_values)
    define(flags.DEFINE_enum, "distribution_strategy", None, list(STRATEGIES),
           "tf.distribute strategy. Default: mirrored when GPUs are visible, else "
           "one_device (tpu when --use_tpu).")
    define(flags.DEFINE_integer, "num_gpus", None,
           "GPUs for one_device/mirrored; 0 = CPU. Default: all visible.", lower_bound=0)
    define(flags.DEFINE_enum, "dtype", "float32", list(DTYPE_POLICIES),
           "Compute dtype of training, eval and predict: float32, or mixed float16 "
           "(dynamic loss scaling) / bfloat16. Variables, LayerNorm, softmax, logits and "
           "losses stay float32. bfloat16 is faster only on CPUs with bf16 units "
           "(AVX512-BF16/AMX) or accelerators; a warning says when the CPU has none.")
    define(flags.DEFINE_bool, "jit_compile", False,
           "XLA-compile the forward/backward pass.")
    define(flags.DEFINE_integer, "gradient_accumulation_steps", 1,
           "Split each global batch into this many micro-batches per replica and sum "
           "their gradients before one update (same result, less memory).",
           lower_bound=1)
    define(flags.DEFINE_integer, "seed", None,
           "Seeds Python, NumPy, TensorFlow/Keras initialisation, dropout and the input "
           "pipeline. Default: unseeded.")
    define(flags.DEFINE_bool, "deterministic", False,
           "Enable TensorFlow op determinism (slower; needs --seed for repeatability).")
    define(flags.DEFINE_integer, "log_steps", 100,
           "Log (and write TensorBoard scalars) every this many steps.", lower_bound=1)
    define(flags.DEFINE_enum, "clip_norm_mode", "original", list(CLIP_NORM_MODES),
           "Global norm of the clip at 1.0: 'original' counts an embedding gradient once "
           "per token occurrence where the original does (off TPU: the token-type table "
           "always, the word table when fine-tuning; Q35); 'dense' uses the norm of the "
           "summed gradient everywhere.")
    define(flags.DEFINE_bool, "recompute_grad", False,
           "Recompute each transformer block's activations in the backward pass instead of "
           "keeping them: much less memory at long sequences, for about one more forward "
           "pass of time.")


def define_tpu_flags(flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """The original's TPU plumbing: --use_tpu, --tpu_name, --tpu_zone, --gcp_project,
    --master, --num_tpu_cores (idempotent)."""
    define = functools.partial(_define_once, flag_values=flag_values)
    define(flags.DEFINE_bool, "use_tpu", False, "Run on a TPU (selects --distribution_strategy=tpu).")
    define(flags.DEFINE_string, "tpu_name", None, "Cloud TPU name or grpc:// address.")
    define(flags.DEFINE_string, "tpu_zone", None, "GCE zone of the Cloud TPU (looked up when None).")
    define(flags.DEFINE_string, "gcp_project", None, "GCP project of the Cloud TPU (looked up when None).")
    define(flags.DEFINE_string, "master", None, "TPU master address (used when --tpu_name is unset).")
    define(flags.DEFINE_integer, "num_tpu_cores", 8,
           "Kept for the original's command lines; TPUStrategy reads the core count from "
           "the TPU system.", lower_bound=1)


def define_bucketing_flag(flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """--bucket_by_length of the fine-tuning scripts (`albert_tf.finetuning.bucketing`);
    unset means on, except on TPU (idempotent)."""
    _define_once(flags.DEFINE_bool, "bucket_by_length", None,
                 "Pad each batch to the shortest multiple of 16 that holds its examples "
                 "(grouped by length) instead of to max_seq_length: the same eval and predict "
                 "results, faster. Default: on, except on TPU (static shapes). Training "
                 "batches then group examples of similar length; --nobucket_by_length keeps "
                 "the original's batch order. SQuAD v1 always pads (Q22).",
                 flag_values=flag_values)


def define_tflite_flag(flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """--tflite_quantization of the `--export_dir` TFLite file (`albert_tf.export.tflite`)
    (idempotent)."""
    _define_once(flags.DEFINE_enum, "tflite_quantization", "none", list(TFLITE_QUANTIZATIONS),
                 "Weights of the albert_model.tflite written with --export_dir: 'none' float32 "
                 "(the original's), 'dynamic_int8' int8 weights and dynamic-range int8 matmuls "
                 "(~4x smaller), 'float16' float16 weights (~2x smaller).",
                 flag_values=flag_values)


def define_openvino_flag(ir_file: str = "openvino/albert_model.xml",
                         flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """--openvino_ir: also write the OpenVINO IR `ir_file` of the export's serving graph
    (`albert_tf.export.serving_artifacts`; idempotent)."""
    _define_once(flags.DEFINE_bool, "openvino_ir", False,
                 f"Also write {ir_file} (+ .bin): the OpenVINO IR of the frozen serving graph, "
                 "float32 weights, for albert_tf.export.load_serving(backend='openvino'); needs "
                 "pip install 'albert-tf[openvino]'.", flag_values=flag_values)


def define_eval_poll_flags(flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """--eval_poll_secs and --eval_timeout_secs of side-car evaluation (--do_eval without
    --do_train: `albert_tf.training.checkpoint_eval`; idempotent). Register them as
    POSITIVE float flags."""
    define = functools.partial(_define_once, flag_values=flag_values)
    define(flags.DEFINE_float, "eval_poll_secs", 60.0,
           "With --do_eval and no --do_train: seconds between looks for a new checkpoint of "
           "the training run in --output_dir.")
    define(flags.DEFINE_float, "eval_timeout_secs", 3600.0,
           "With --do_eval and no --do_train: give up (error, exit status 1) when no new "
           "checkpoint appeared for this many seconds (the original waits forever).")


@dataclasses.dataclass(frozen=True)
class FloatRange:
    """What a float flag must hold besides being finite: optional bounds (closed unless
    `*_open`), applied only while the bool flag `when` is true (e.g. "do_train").

    `unset` accepts NaN as "not given" (the original's `--threshold_to_export` default);
    None, the default of optional float flags, is always accepted.
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    when: str | None = None
    unset: bool = False

    def requirement(self) -> str:
        """E.g. "a finite number > 0", "a finite number in [0, 1)"."""
        if self.low is not None and self.high is not None:
            return (f"a finite number in {'(' if self.low_open else '['}{self.low:g}, "
                    f"{self.high:g}{')' if self.high_open else ']'}")
        if self.low is not None:
            return f"a finite number {'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None:
            return f"a finite number {'<' if self.high_open else '<='} {self.high:g}"
        return "a finite number"

    def contains(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return not (self.high is not None
                    and (value >= self.high if self.high_open else value > self.high))


FINITE = FloatRange()
POSITIVE = FloatRange(low=0.0, low_open=True)
NON_NEGATIVE = FloatRange(low=0.0)
PROBABILITY = FloatRange(low=0.0, high=1.0)
DROPOUT = FloatRange(low=0.0, high=1.0, high_open=True)  # rate 1 would divide by zero
# The ranges of define_eval_poll_flags' flags, for register_float_validators.
EVAL_POLL_RANGES = {"eval_poll_secs": POSITIVE, "eval_timeout_secs": POSITIVE}


def float_flag_names(flag_values: flags.FlagValues = flags.FLAGS) -> list[str]:
    """Names of the float flags defined in `flag_values`."""
    return sorted(name for name in flag_values
                  if isinstance(flag_values[name].parser, flags.FloatParser))


def register_float_validators(ranges: Mapping[str, FloatRange] | None = None,
                              flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """Every float flag must be finite (NaN and ±inf otherwise train a step and then stop
    on a non-finite loss); those named in `ranges` must also lie in their range.

    Call once, after the script's flags are defined. A bad value is a flag parsing error:
    `<script>: error: flag --learning_rate=nan: expected a finite number > 0` with
    `albert_tf.cli.flags_parser`.

    Example:
        >>> register_float_validators({"learning_rate": FloatRange(0, low_open=True,
        ...                                                        when="do_train")})
    """
    ranges = dict(ranges or {})
    names = float_flag_names(flag_values)
    unknown = sorted(set(ranges) - set(names))
    if unknown:
        raise ValueError(f"not float flags: {', '.join(unknown)}")
    for name in names:
        flags.register_validator(
            name, functools.partial(_check_float, ranges.get(name, FINITE), flag_values),
            flag_values=flag_values)


def float_problem(allowed: FloatRange, value: float | None, applies: bool = True) -> str | None:
    """What is wrong with `value` under `allowed` ("expected a finite number > 0 with
    --do_train"), or None when it is fine. `applies`: the `when` flag's value. Shared by the
    flag validators and the options dataclasses of in-process runs."""
    if value is None or (allowed.unset and math.isnan(value)):
        return None
    if not math.isfinite(value):
        return f"expected {FINITE.requirement()}"
    if applies and not allowed.contains(value):
        condition = f" with --{allowed.when}" if allowed.when else ""
        return f"expected {allowed.requirement()}{condition}"
    return None


def _check_float(allowed: FloatRange, flag_values: flags.FlagValues, value: float | None) -> bool:
    """absl validator: True, or a ValidationError whose text says what was expected."""
    applies = allowed.when is None or bool(flag_values[allowed.when].value)
    problem = float_problem(allowed, value, applies)
    if problem is not None:
        raise flags.ValidationError(problem)
    return True


def strategy_from_flags(flag_values: flags.FlagValues = flags.FLAGS) -> "tf.distribute.Strategy":
    """The strategy the flags name; the TPU resolver is built from the TPU flags."""
    from albert_tf.training.distribute import (  # TensorFlow on demand
        default_strategy_name, get_strategy, tpu_cluster_resolver)

    name = flag_values.distribution_strategy
    use_tpu = getattr(flag_values, "use_tpu", False)
    if name is None:
        name = default_strategy_name(use_tpu)
    if use_tpu and name != "tpu":
        raise flags.ValidationError(f"--use_tpu conflicts with --distribution_strategy={name}")
    resolver = None
    if name == "tpu":
        resolver = tpu_cluster_resolver(flag_values.tpu_name, flag_values.tpu_zone,
                                        flag_values.gcp_project, flag_values.master)
    return get_strategy(name, flag_values.num_gpus, tpu_resolver=resolver)


def setup_runtime(seed: int | None, deterministic: bool) -> None:
    """Seeds every RNG Keras/TF/NumPy/Python use and optionally enables op determinism."""
    import keras
    import tensorflow as tf

    if seed is not None:
        keras.utils.set_random_seed(seed)
        logging.info("Random seed: %d", seed)
    if deterministic:
        if seed is None:
            logging.warning("--deterministic without --seed: runs differ by initialisation")
        tf.config.experimental.enable_op_determinism()
        logging.info("TensorFlow op determinism enabled")


def setup_from_flags(flag_values: flags.FlagValues = flags.FLAGS) -> "tf.distribute.Strategy":
    """setup_runtime + strategy_from_flags: call first in main()."""
    setup_runtime(flag_values.seed, flag_values.deterministic)
    return strategy_from_flags(flag_values)
