"""The training metrics both engines log, named once, and the writer that sends them to
TensorBoard (always) and Weights & Biases (when the config asks for it).

A training step of either engine is one row of ``metrics.jsonl`` (docs/formats.md) whose fields are
the ``name``s below. The same values go to TensorBoard under the ``tag``s below, as event files in
``<run>/tensorboard/`` beside ``metrics.jsonl``, so ``tensorboard --logdir results/<profile>`` shows
every run of a profile, tiny or paper, under one set of names:

- the tiny engine writes each row as it is made (:class:`MetricsLog`);
- verl writes its own metric names live through ``trainer.logger`` (``tensorboard`` with
  ``TENSORBOARD_DIR`` = the same folder, see ``pacs.verl_plugin.launch.overrides``), and when the
  run is finalised ``metrics.jsonl`` is made from verl's logs with ``verl_keys`` and written again
  here under the stated tags (:func:`write_event_file`).

``logging.backends`` in the config (:class:`pacs.config.LoggingSpec`) picks the backends:
``[tensorboard]`` (the default) or
``[tensorboard, wandb]``. W&B reads its usual environment (``WANDB_API_KEY``,
``WANDB_MODE=offline``,
``WANDB_ENTITY``); the project is ``pacs-<profile>`` and the run is named like its folder.
"""

from __future__ import annotations

import math
import re
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pacs.config import LoggingSpec
from pacs.io import read_jsonl

DEFAULT_BACKENDS = LoggingSpec().backends  # logging.backends' default, stated in pacs.config
TENSORBOARD_DIR = "tensorboard"  # the event-file folder inside a run folder
# verl's finalised rows are written to files with this suffix, replaced as a whole on each finalise.
ROWS_SUFFIX = ".pacs-metrics"


# PACS stats each engine also logs per mini-batch (update) index of a step, as
# ``<stat>/mb<i>`` in metrics.jsonl (verl's own logs: ``actor/pacs_<stat>/mb<i>``,
# ``actor/grad_norm/mb<i>``): the step's mean hides that ψ starts at 0 on the first mini-batch
# (ref: rollout) and how far it moves by the last. grad_norm is the update's pre-clip norm,
# clip_bound 1 where the clip scaled that update down.
PSI_STATS: tuple[str, ...] = ("psi_abs_mean", "psi_std", "sigma_std")
PER_MINI_BATCH_STATS: tuple[str, ...] = (*PSI_STATS, "grad_norm", "clip_bound")
MINI_BATCH_COLUMN = re.compile(r"^(?P<stat>\w+)/mb(?P<index>\d+)$")


def mini_batch_column(stat: str, index: int) -> str:
    """``psi_std`` of mini-batch 2 -> ``psi_std/mb2``."""
    return f"{stat}/mb{index}"


@dataclass(frozen=True)
class Metric:
    """One logged quantity: its ``metrics.jsonl`` field, TensorBoard tag, meaning and verl
    source."""

    name: str  # the field in metrics.jsonl / eval_curve.jsonl
    tag: str  # the TensorBoard / W&B key
    label: str  # what it is, for axis labels and docs
    verl_keys: tuple[str, ...] = ()  # verl 0.9.1 metric keys it is read from: first present wins
    summed: bool = False  # True: the sum of every present ``verl_keys`` entry (timers)
    # Also logged as log10 under this tag: one exploding step (a pre-clip norm of 5.9e6) flattens
    # a linear chart of every other run, while a log10 chart keeps them all readable.
    log10_tag: str | None = None


# verl keys: verl/trainer/ppo/metric_utils.py, verl/trainer/ppo/v1/trainer_base.py,
# pacs.verl_plugin.loss.
TRAIN_METRICS: tuple[Metric, ...] = (
    Metric(
        "reward_mean",
        "train/reward_mean",
        "mean verifier reward of the step's responses",
        ("critic/rewards/mean", "critic/score/mean"),
    ),
    Metric(
        "mixed_frac",
        "train/mixed_frac",
        "fraction of groups holding both labels",
        ("actor/pacs_mixed_frac",),
    ),
    Metric(
        "loss",
        "train/loss",
        "policy loss (PACS: weighted BCE; GRPO, PPO: clipped surrogate)",
        ("actor/pg_loss", "actor/loss"),
    ),
    Metric("entropy", "train/entropy", "mean token entropy of the policy", ("actor/entropy",)),
    Metric(
        "grad_norm",
        "train/grad_norm",
        "policy gradient norm before clipping",
        ("actor/grad_norm",),
        log10_tag="train/grad_norm_log10",
    ),
    Metric(
        "response_len",
        "train/response_len",
        "mean response length (tokens)",
        ("response_length/mean",),
    ),
    Metric("time_generate", "time/generate", "seconds sampling responses", ("timing_s/gen",)),
    Metric("time_reward", "time/reward", "seconds grading responses", ("timing_s/reward",)),
    Metric(
        "time_reference",
        "time/reference",
        "seconds for old/reference log-probs and values",
        ("timing_s/old_log_prob", "timing_s/ref", "timing_s/values"),
        summed=True,
    ),
    Metric(
        "time_update",
        "time/update",
        "seconds in optimizer updates (actor and critic)",
        ("timing_s/update_actor", "timing_s/update_critic"),
        summed=True,
    ),
    Metric("time_total", "time/step", "seconds per training step", ("timing_s/step",)),
    Metric(
        "clip_bound",
        "train/clip_bound",
        "share of the step's updates whose pre-clip norm exceeded the clip norm",
        ("actor/clip_bound",),
    ),
    Metric(
        "psi_mean",
        "pacs/psi_mean",
        "PACS: mean score psi (the BCE logit)",
        ("actor/pacs_psi_mean",),
    ),
    Metric("sigma_mean", "pacs/sigma_mean", "PACS: mean sigma(psi)", ("actor/pacs_sigma_mean",)),
    Metric(
        "score_acc",
        "pacs/score_acc",
        "PACS: accuracy of sigma(psi) > 0.5 as a classifier",
        ("actor/pacs_score_acc",),
    ),
    Metric(
        "weight_mean",
        "pacs/weight_mean",
        "PACS: mean class-balance weight",
        ("actor/pacs_weight_mean",),
    ),
    # DAPO's dynamic sampling, tiny engine (docs/design.md#dapo-and-real; verl 0.9.1 logs its own
    # training/filter_groups/* counts instead).
    Metric("ds_rounds", "dapo/gen_rounds", "DAPO: generation rounds this step"),
    Metric("ds_cap_hit", "dapo/cap_hit", "DAPO: 1 when the step hit its cap on rounds"),
    Metric("ds_reward_all", "dapo/reward_all", "DAPO: mean reward of every generated response"),
    # The paths task only (docs/design.md#the-science-profile): per group, over its correct
    # responses.
    Metric(
        "path_diversity",
        "paths/diversity",
        "share of pairs of correct responses on different paths",
    ),
    Metric(
        "path_entropy", "paths/entropy", "plug-in entropy (nats) of the correct responses' paths"
    ),
)
# The tiny engine's in-loop held-out pass@1 (eval_curve.jsonl); at paper scale the curve is made by
# evaluating checkpoints (curve/ in the results tree), not by the trainer.
EVAL_METRICS: tuple[Metric, ...] = (
    Metric("pass_at_1", "eval/pass_at_1", "held-out pass@1 during training"),
)
TRAIN_FIELDS = tuple(m.name for m in TRAIN_METRICS)  # metrics.jsonl fields after "step", in order
BY_NAME = {m.name: m for m in TRAIN_METRICS + EVAL_METRICS}


def tags(metrics: Iterable[Metric]) -> set[str]:
    """Every TensorBoard tag the stated metrics can be logged under (log10 tags included)."""
    return {t for m in metrics for t in (m.tag, m.log10_tag) if t}


def scalars(row: dict[str, Any], metrics: Iterable[Metric]) -> dict[str, float]:
    """``{tag: value}`` of the stated metrics present in ``row`` as numbers (nulls are skipped),
    plus ``{log10_tag: log10(value)}`` where a metric has one and its value is positive."""
    out = {}
    for m in metrics:
        value = row.get(m.name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[m.tag] = float(value)
            if m.log10_tag and math.isfinite(value) and value > 0:
                out[m.log10_tag] = math.log10(value)
    return out


class MetricsLog:
    """Sends metric rows to the chosen backends for one run folder; use as a context manager.

    Each attempt starts ``tensorboard/`` afresh and the caller logs the rows it resumes with first
    (:meth:`replay`): a crashed attempt's events past its last checkpoint (steps that are redone)
    are gone, without relying on TensorBoard's purge, which needs the attempts' files to sort in
    time order (same-second files of one process do not: their counter is not zero-padded).
    """

    def __init__(
        self,
        run_dir: str | Path,
        backends: Sequence[str] = DEFAULT_BACKENDS,
        *,
        project: str = "pacs",
        run_name: str | None = None,
        config: dict[str, Any] | None = None,
    ):
        self.run_dir = Path(run_dir)
        self.tensorboard = self.wandb = None
        if "tensorboard" in backends:
            from torch.utils.tensorboard import SummaryWriter

            folder = self.run_dir / TENSORBOARD_DIR
            for old in folder.glob("events.out.tfevents.*"):
                old.unlink()
            self.tensorboard = SummaryWriter(str(folder))
        if "wandb" in backends:
            self.wandb = start_wandb(self.run_dir, project, run_name or self.run_dir.name, config)

    def log(self, row: dict[str, Any], metrics: Iterable[Metric] = TRAIN_METRICS) -> None:
        """Log one row (``metrics.jsonl`` or ``eval_curve.jsonl``) at its ``step``."""
        values = scalars(row, metrics)
        if self.tensorboard is not None:
            for tag, value in values.items():
                self.tensorboard.add_scalar(tag, value, int(row["step"]))
            self.tensorboard.flush()  # a live `tensorboard` sees every step as it is written
        if self.wandb is not None and values:
            self.wandb.log(values, step=int(row["step"]), commit=True)  # a row is a whole step

    def replay(self, rows: Iterable[dict[str, Any]], points: Iterable[dict[str, Any]]) -> None:
        """Log the ``metrics.jsonl`` rows and ``eval_curve.jsonl`` points a resumed run kept."""
        for row in rows:
            self.log(row)
        for point in points:
            self.log(point, EVAL_METRICS)

    def close(self) -> None:
        if self.tensorboard is not None:
            self.tensorboard.close()
        if self.wandb is not None:
            self.wandb.finish()

    def __enter__(self) -> MetricsLog:  # noqa: PYI034  (typing.Self needs Python 3.11)
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def start_wandb(run_dir: Path, project: str, run_name: str, config: dict[str, Any] | None):
    """A W&B run writing its local files under ``run_dir``; a clear error when wandb is missing."""
    try:
        import wandb
    except ImportError as err:
        raise RuntimeError(
            "logging.backends lists wandb but the wandb package is not installed "
            "(pip install wandb), or drop wandb from logging.backends"
        ) from err
    return wandb.init(
        project=project,
        name=run_name,
        dir=str(run_dir),
        config=config or {},
        reinit="finish_previous",
    )


def write_event_file(metrics_path: str | Path) -> Path:
    """Write a finished run's ``metrics.jsonl`` as one event file under the stated tags, in
    ``tensorboard/`` beside it, replacing the one an earlier finalise wrote (a resumed, extended run
    is not shown twice). The file is written in a temporary folder and moved in whole."""
    from torch.utils.tensorboard import SummaryWriter

    metrics_path = Path(metrics_path)
    rows = read_jsonl(metrics_path)
    folder = metrics_path.parent / TENSORBOARD_DIR
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".tmp-") as tmp:
        writer = SummaryWriter(tmp, filename_suffix=ROWS_SUFFIX)
        for row in rows:
            for tag, value in scalars(row, TRAIN_METRICS).items():
                writer.add_scalar(tag, value, int(row["step"]))
        writer.close()
        (written,) = Path(tmp).glob(f"events.out.tfevents.*{ROWS_SUFFIX}")
        for old in folder.glob(f"events.out.tfevents.*{ROWS_SUFFIX}"):
            old.unlink()
        return Path(shutil.move(str(written), folder / written.name))
