"""Serving an export: `load_serving` reads any serving artifact an export holds (the frozen
`serving/` SavedModel, a TFLite file, an OpenVINO IR, an ONNX file) on any engine.

* `loader` — `load_serving`, `ServingModel`, `auto_backend`;
* `engines` — the engine table (`ENGINES`: one `Engine` row each) and their runners;
* `auto_rule` — `AUTO_RULE`, the engine `backend="auto"` picks per CPU profile;
* `artifact` — `Artifact`, what a serving path holds; `file_precision` reads a bare file's;
* `manifest` — `serving.json`, read (and written, by the export writers);
* `layout` — the file names a server reads; `runtimes` — a TFLite signature runner and an
  ONNX Runtime session; `float32_graph` — a bf16 graph widened for OpenVINO.

Nothing here imports the export writers (albert_tf.export: the TFLite converter, the ONNX
builder, NNCF, the TF-Hub exporter); they import this package. Names are imported on first use.
"""

from __future__ import annotations

from albert_tf.runtime.lazy_names import lazy_names

_EXPORTS = {
    "BACKENDS": "loader", "ServingModel": "loader", "auto_backend": "loader",
    "load_serving": "loader", "normalize_precision": "loader",
    "Artifact": "artifact", "PRECISIONS": "artifact", "ServingLoadError": "artifact",
    "AUTO_RULE": "auto_rule",
    "ENGINES": "engines", "Engine": "engines", "installed": "engines",
    "Manifest": "manifest", "ManifestError": "manifest", "read_manifest": "manifest",
    "write_manifest": "manifest",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_names(__name__, _EXPORTS)
