"""Strategies: one device vs 2-replica mirrored, two real workers, TPU set-up from flags."""

from __future__ import annotations

import os

import numpy as np
import pytest
import tensorflow as tf
from absl import flags

from albert_tf.training import flags as training_flags
from albert_tf.training.distribute import get_strategy, input_context, tpu_cluster_resolver
from tests.training.fault_runs import checkpoint_values


def test_named_strategies_and_default():
    assert isinstance(get_strategy(), tf.distribute.OneDeviceStrategy)  # no GPU here
    assert isinstance(get_strategy("one_device"), tf.distribute.OneDeviceStrategy)
    with pytest.raises(ValueError, match="one_device, mirrored"):
        get_strategy("mirrorred")


class _ClusterStrategy:
    """What `input_context` reads of a multi-worker strategy."""

    def __init__(self, cluster: dict, task_type: str, task_id: int, replicas: int):
        self.cluster_resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            tf.train.ClusterSpec(cluster), task_type=task_type, task_id=task_id)
        self.num_replicas_in_sync = replicas


@pytest.mark.parametrize("task_type,task_id,index", [("chief", 0, 0), ("worker", 0, 1),
                                                     ("worker", 1, 2)])
def test_input_context_numbers_the_chief_first(task_type, task_id, index):
    cluster = {"chief": ["h0:1"], "worker": ["h1:1", "h2:1"]}
    context = input_context(_ClusterStrategy(cluster, task_type, task_id, replicas=6))
    assert (context.num_input_pipelines, context.input_pipeline_id) == (3, index)
    assert context.get_per_replica_batch_size(12) == 2
    workers_only = input_context(_ClusterStrategy({"worker": ["h1:1", "h2:1"]}, "worker", 1, 2))
    assert (workers_only.num_input_pipelines, workers_only.input_pipeline_id) == (2, 1)
    local = input_context(get_strategy("one_device"))
    assert (local.num_input_pipelines, local.input_pipeline_id) == (1, 0)


def test_mirrored_two_cpus_matches_one_device(mirrored_parity):
    """Same global batch on 1 and 2 replicas: same 10 losses (≤ 1e-4 relative)."""
    values = mirrored_parity
    assert len(values["one_device"]) == len(values["mirrored"]) == 10
    np.testing.assert_allclose(values["mirrored"], values["one_device"], rtol=1e-4)
    assert values["weights_max_diff"] < 1e-5


def test_multi_worker_mirrored_two_processes(multi_worker_run):
    """Two workers on 127.0.0.1 (the fault tests' 12 steps, conftest's multi_worker_run) end
    with identical weights and optimizer state in their checkpoints."""
    out = multi_worker_run["output_dir"]
    assert "2 replica(s) in sync" in multi_worker_run["logs"][0]
    chief = checkpoint_values(os.path.join(out, "model.ckpt-12"))
    worker = checkpoint_values(os.path.join(out, ".worker_1", "model.ckpt-12"))
    assert sorted(chief) == sorted(worker) and len(chief) > 60
    for name, value in chief.items():  # dropout's seed states too
        np.testing.assert_allclose(worker[name], value, atol=1e-6, err_msg=name)


def tpu_flag_values() -> flags.FlagValues:
    values = flags.FlagValues()
    training_flags.define_training_flags(values)
    training_flags.define_tpu_flags(values)
    return values


def test_tpu_strategy_is_built_from_the_flags(monkeypatch):
    """--use_tpu/--tpu_name/... reach TPUClusterResolver and the TPU system set-up."""
    resolver = tpu_cluster_resolver(tpu_name="grpc://127.0.0.3:8470")
    assert resolver.master() == "grpc://127.0.0.3:8470"

    values = tpu_flag_values()
    values(["prog", "--use_tpu", "--master=grpc://127.0.0.4:8470", "--tpu_zone=us-central1-b",
            "--gcp_project=demo"])
    seen = {}

    class Stop(Exception):
        pass

    def fake_connect(cluster_resolver):
        seen["resolver"] = cluster_resolver
        raise Stop

    monkeypatch.setattr(tf.config.experimental, "connect_to_cluster", fake_connect, raising=False)
    monkeypatch.setattr(tf.config, "experimental_connect_to_cluster", fake_connect)
    with pytest.raises(Stop):
        training_flags.strategy_from_flags(values)
    assert isinstance(seen["resolver"], tf.distribute.cluster_resolver.TPUClusterResolver)
    assert seen["resolver"].master() == "grpc://127.0.0.4:8470"

    values2 = tpu_flag_values()
    values2(["prog", "--use_tpu", "--distribution_strategy=mirrored"])
    with pytest.raises(flags.ValidationError, match="conflicts"):
        training_flags.strategy_from_flags(values2)
