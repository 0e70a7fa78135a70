"""Reproducible studies over the package's own entry points: the paper's ablation tables.

    python -m albert_tf.experiments.paper --output_dir=paper_run [--tables=2,3,4,5]

`paper` reruns Tables 2–5 of Lan et al. (2020) at toy scale on the built-in corpus and writes
`results.md` with the paper's numbers beside ours and a verdict per claim (see `verdicts`).
"""
