"""Writes an `albert_config.json` to start from: the demo's small model or a released size.

    albert-write-config --preset=demo --output=albert_config.json
    python -m albert_tf.write_config --preset=albert_base_v2 --output=base/albert_config.json

`demo` is the model of `make demo` and of the README's pip section (H=32, 2 layers, a
1000-piece vocabulary: minutes on a 2-core CPU), installed with the package
(`albert_tf.config.DEMO_CONFIG_FILE`); the others are the original release's configs
(`AlbertConfig.from_preset`). The file has the original's keys: edit it and pass it to any
script's --albert_config_file. An existing --output is left as it is (one line, exit 1).
"""

from __future__ import annotations

import albert_tf.runtime.quiet_startup  # noqa: F401  (first: quiets TensorFlow's start-up)

from absl import flags

from albert_tf import cli
from albert_tf.runtime.atomic_files import REFUSE, atomic_file
from albert_tf.config import DEMO_CONFIG_FILE, PRESET_NAMES, AlbertConfig

flags.DEFINE_enum("preset", "demo", ["demo", *PRESET_NAMES],
                  "demo: the demo's small model; albert_{base,large,xlarge,xxlarge}_{v1,v2}: "
                  "the original release's configs.")
flags.DEFINE_string("output", None, "The albert_config.json to write (must not exist).")
flags.mark_flag_as_required("output")
FLAGS = flags.FLAGS


def run() -> None:
    """The flags → the config, written atomically; prints what it wrote."""
    if FLAGS.preset == "demo":
        config = AlbertConfig.from_json_file(DEMO_CONFIG_FILE)
    else:
        config = AlbertConfig.from_preset(FLAGS.preset)
    with atomic_file(FLAGS.output, existing=REFUSE, what="config") as f:
        f.write(config.to_json_string())
    print(f"wrote {FLAGS.output} ({FLAGS.preset}: hidden_size {config.hidden_size}, "
          f"{config.num_hidden_layers} layers, vocab_size {config.vocab_size})")


def console_main() -> None:
    """`albert-write-config` (console script) and `python -m albert_tf.write_config`."""
    cli.start("write_config", run, __name__, (FileExistsError,))


if __name__ == "__main__":
    console_main()
