"""The launcher around verl (not loaded by verl): ``python -m pacs.verl_plugin.launch.train``.

It turns one run of a profile config into verl Hydra overrides (``overrides``, ``devices``),
checks and fingerprints resumes (``resume``), starts verl, then converts its logs (``logs``) and
merges the last checkpoint into an HF folder (``merge``). ``smoke`` is ``make verl-smoke``'s timed
chain; ``engine_check`` tells whether this Python can run verl's vLLM rollout. Pure Python where
it can be: only ``merge`` and the launcher's plugin check import verl, so dry runs are fast.
"""
