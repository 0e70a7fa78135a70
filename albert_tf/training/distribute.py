"""tf.distribute strategy from a name: one_device, mirrored, multi_worker_mirrored, tpu.

Replaces the original's TPUEstimator plumbing (faithfulness §6.1: use_tpu, tpu_name, tpu_zone,
gcp_project, master). The default is "mirrored" when GPUs are visible, else "one_device".
"""

from __future__ import annotations

import json
import os
import re

import tensorflow as tf
from absl import logging

from albert_tf.training.choices import STRATEGIES


def default_strategy_name(use_tpu: bool = False) -> str:
    """"tpu" under --use_tpu, else "mirrored" with visible GPUs, else "one_device"."""
    if use_tpu:
        return "tpu"
    return "mirrored" if tf.config.list_physical_devices("GPU") else "one_device"


def tpu_cluster_resolver(tpu_name: str | None = None, tpu_zone: str | None = None,
                         gcp_project: str | None = None, master: str | None = None
                         ) -> tf.distribute.cluster_resolver.TPUClusterResolver:
    """A TPUClusterResolver from the original's flags: `tpu_name` (or `master`, a grpc://
    address) names the TPU; zone and project are looked up from GCE metadata when None."""
    tpu = tpu_name or master or ""
    return tf.distribute.cluster_resolver.TPUClusterResolver(
        tpu=tpu, zone=tpu_zone, project=gcp_project)


def _mirrored_devices(num_gpus: int | None) -> list[str]:
    gpus = tf.config.list_logical_devices("GPU")
    if gpus and num_gpus != 0:
        count = len(gpus) if num_gpus is None else num_gpus
        if count > len(gpus):
            raise ValueError(f"--num_gpus={count} but only {len(gpus)} GPU(s) are visible")
        return [d.name for d in gpus[:count]]
    # No GPU: mirror over the logical CPU devices (one unless configured otherwise).
    return [d.name for d in tf.config.list_logical_devices("CPU")]


def get_strategy(name: str | None = None, num_gpus: int | None = None, *,
                 tpu_resolver: tf.distribute.cluster_resolver.TPUClusterResolver | None = None
                 ) -> tf.distribute.Strategy:
    """Builds the named strategy (None: the default above).

    Args:
        name: one of STRATEGIES.
        num_gpus: GPUs to use for one_device (0 = CPU) and mirrored (None = all visible).
        tpu_resolver: required for "tpu" (see `tpu_cluster_resolver`).
    """
    name = name or default_strategy_name()
    if name not in STRATEGIES:
        raise ValueError(f"unknown distribution strategy {name!r}; expected one of "
                         f"{', '.join(STRATEGIES)}")
    if name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        device = "/gpu:0" if gpus and num_gpus != 0 else "/cpu:0"
        strategy = tf.distribute.OneDeviceStrategy(device)
    elif name == "mirrored":
        strategy = tf.distribute.MirroredStrategy(devices=_mirrored_devices(num_gpus))
    elif name == "multi_worker_mirrored":
        if "TF_CONFIG" not in os.environ:
            logging.warning("multi_worker_mirrored without TF_CONFIG: running as a single worker")
        else:
            cluster = json.loads(os.environ["TF_CONFIG"]).get("cluster", {})
            logging.info("TF_CONFIG cluster: %s", cluster)
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    else:
        if tpu_resolver is None:
            raise ValueError("the tpu strategy needs a TPUClusterResolver (--tpu_name or --master)")
        tf.config.experimental_connect_to_cluster(tpu_resolver)
        tf.tpu.experimental.initialize_tpu_system(tpu_resolver)
        strategy = tf.distribute.TPUStrategy(tpu_resolver)
    logging.info("Distribution strategy: %s with %d replica(s) in sync", name,
                 strategy.num_replicas_in_sync)
    return strategy


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """True on the worker that writes checkpoints, summaries and results."""
    return bool(strategy.extended.should_checkpoint)


def input_context(strategy: tf.distribute.Strategy) -> tf.distribute.InputContext:
    """This worker's InputContext: one input pipeline per worker, replicas in sync.

    Workers are numbered chief first, then `worker` tasks, as TF_CONFIG lists them.
    """
    num_workers, index = 1, 0
    resolver = getattr(strategy, "cluster_resolver", None)
    spec = resolver.cluster_spec().as_dict() if resolver is not None else {}
    if spec.get("worker") or spec.get("chief"):
        chiefs = len(spec.get("chief", []))
        num_workers = chiefs + len(spec.get("worker", []))
        index = 0 if resolver.task_type == "chief" else chiefs + int(resolver.task_id or 0)
    return tf.distribute.InputContext(num_workers, index, strategy.num_replicas_in_sync)


def is_tpu(strategy: tf.distribute.Strategy) -> bool:
    """True when the strategy runs on TPUs: the one TPU test of the package."""
    return isinstance(strategy, (tf.distribute.TPUStrategy,
                                 tf.distribute.experimental.TPUStrategy))


def uses_one_hot_lookups(strategy: tf.distribute.Strategy) -> bool:
    """True on TPUs, where the original looks words and token types up by one-hot matmul
    (`use_one_hot_embeddings=FLAGS.use_tpu`), so its embedding gradients are dense (Q35)."""
    return is_tpu(strategy)


def runs_on_cpu(strategy: tf.distribute.Strategy) -> bool:
    """True when the strategy's replicas are CPUs (no GPU or TPU in use)."""
    if is_tpu(strategy):
        return False
    try:
        devices = strategy.extended.worker_devices
    except RuntimeError:  # the default strategy lists no devices: TF places on a GPU if any
        return not tf.config.list_logical_devices("GPU")
    return all("CPU" in device.upper() for device in devices)


_TASK = re.compile(r"/job:[\w-]+/replica:\d+/task:\d+")


def own_task(strategy: tf.distribute.Strategy) -> str | None:
    """This worker's task name in a cluster ("/job:worker/replica:0/task:1"), else None."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return None
    return f"/job:{resolver.task_type}/replica:0/task:{int(resolver.task_id or 0)}"


def lost_peer_description(error: Exception, own: str | None = None) -> str:
    """What a collective's error says about a lost peer, in a phrase naming it: the tasks the
    coordination service reports as "unhealthy" (they stopped sending heartbeats), else the
    other tasks the message names (e.g. the one a connection was refused by); else the
    error's first line."""
    message = getattr(error, "message", None) or str(error)
    first = message.strip().splitlines()[0] if message.strip() else type(error).__name__
    unhealthy = message.split("unhealthy", 1)
    if len(unhealthy) > 1:
        how = "stopped sending heartbeats to the coordination service"
        tasks = set(_TASK.findall(unhealthy[1]))
    else:
        how = first if len(first) < 200 else first[:200] + "…"
        tasks = set(_TASK.findall(message))
    tasks.discard(own)
    if not tasks:
        return f"a collective operation failed ({first})"
    return (f"lost peer worker {', '.join(sorted(tasks))} (killed, crashed or unreachable: "
            f"{how})")
