"""Evaluation: sample responses, grade them, and summarise them (pass@k, maj@k, diversity).

Stages, each a module with ``main(argv=None)`` (run as ``python -m pacs.evaluation.<stage>``):

- :mod:`pacs.evaluation.generate`: ``samples.jsonl`` from a model (``hf`` or ``vllm`` backend);
  the backends themselves live in :mod:`pacs.evaluation.backends` (one module each);
- :mod:`pacs.evaluation.grade`: ``graded.jsonl`` (samples + verifier score and status);
- :mod:`pacs.evaluation.passk`: ``passk.json`` / ``passk.csv`` (pass@k, maj@k, mean@n with CIs);
- :mod:`pacs.evaluation.diversity`: App. E diversity of correct responses and a 2-D PCA.

File formats: ``docs/formats.md``.
"""
