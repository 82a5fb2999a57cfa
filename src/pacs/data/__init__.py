"""Training and benchmark preparation, and the synthetic tasks of the tiny engine.

Modules:

- :mod:`pacs.data.synthetic`: the synthetic tasks with ``\\boxed{N}`` answers (multi-step
  add/subtract word problems; the many-paths task of the science profile);
- :mod:`pacs.data.benchmarks`: MATH500, AMC23, AIME24, AIME25 and BeyondAIME converted to the
  prepared-benchmark rows of ``docs/formats.md``;
- :mod:`pacs.data.train`: DeepScaleR-Preview converted to verl's RL parquet schema;
- :mod:`pacs.data.sources`: Hugging Face dataset ids with pinned revisions, and local files;
- :mod:`pacs.data.livecodebench`, :mod:`pacs.data.gpqa`: the two OOD benchmarks;
- :mod:`pacs.data.prepare`: read, convert and write one output (+ manifest) per command;
- :mod:`pacs.data.readers`, :mod:`pacs.data.normalize`, :mod:`pacs.data.files`: local files in,
  gold-answer normalisation, atomic writers and manifests;
- :mod:`pacs.data.cli`: ``python -m pacs.data {prepare-train,prepare-eval,prepare-synthetic}``.

Every malformed input raises :class:`DataError`, whose message names the file, the row and the
field. Outputs are written atomically, so a file that exists is complete.
"""

from pacs.data.errors import DataError

__all__ = ["DataError"]
