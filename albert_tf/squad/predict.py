"""Running a span labeler over the prediction records: raw per-feature outputs by unique id.

v1 keeps the raw start/end logits (the original names them `start_log_prob` /
`end_log_prob`, Q22); v2 keeps the beam (top starts, top ends per start) and `cls_logits`
(spec §9.5–9.6 "predict outputs").
"""

from __future__ import annotations

import keras
import tensorflow as tf
from absl import logging

from albert_tf.squad.inputs import model_inputs
from albert_tf.squad.postprocess import RawResult

V1_OUTPUTS = ("start_logits", "end_logits")
V2_OUTPUTS = ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index",
              "cls_logits")



def predict_raw_results(model: keras.Model, dataset: tf.data.Dataset,
                        version_2_with_negative: bool, log_every: int = 100
                        ) -> dict[int, RawResult]:
    """{unique_id: {output name: array}} for every record of `dataset` (`predict_dataset`)."""
    names = V2_OUTPUTS if version_2_with_negative else V1_OUTPUTS

    @tf.function
    def step(record):
        inputs = model_inputs(record, version_2_with_negative)
        if version_2_with_negative:
            inputs["start_positions"] = None  # inference: the head searches the starts
        outputs = model(inputs, training=False)
        return record["unique_ids"], {name: outputs[name] for name in names}

    results: dict[int, RawResult] = {}
    for batch_index, record in enumerate(dataset):
        unique_ids, outputs = step(record)
        arrays = {name: value.numpy() for name, value in outputs.items()}
        for row, unique_id in enumerate(unique_ids.numpy().tolist()):
            results[int(unique_id)] = {name: array[row] for name, array in arrays.items()}
        if (batch_index + 1) % log_every == 0:
            logging.info("predicted %d features", len(results))
    logging.info("predicted %d features in total", len(results))
    return results

