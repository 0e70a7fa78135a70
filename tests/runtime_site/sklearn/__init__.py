"""Hides scikit-learn from the tests' subprocesses (tests/training/processes.RUNTIME_PYTHONPATH).

A runtime install (requirements.txt: what `make demo` and `pip install albert-tf` give) has no
scikit-learn; the test environment has it (metric references, the paper's probes). Keras imports
it at start-up when it is importable (its scikit-learn wrappers), ~1.5–2 CPU-s per process, and
the suite starts some hundred TensorFlow processes. Hidden, a tool that came to need it at run
time fails its tests instead of working only where the test packages are installed.
"""

raise ImportError("scikit-learn is hidden from the tests' subprocesses (tests/runtime_site)")
