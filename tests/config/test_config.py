"""pacs.config: YAML -> validated, frozen spec; every error names the file and the key path."""

from __future__ import annotations

import copy
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import pacs.methods as methods_module
from pacs.config import ConfigError, Profile, RunSpec, load_config, load_profile, parse_profile
from pacs.config import profile as profile_module
from pacs.config import sections as sections_module
from pacs.methods import PacsSpec, PpoSpec, RefSchedule

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted((REPO / "configs").glob("*.yaml"))
SMOKE = REPO / "configs" / "smoke.yaml"


def smoke() -> dict:
    return copy.deepcopy(load_config(SMOKE))


def problems(cfg: dict, source: str = "configs/x.yaml") -> list[str]:
    with pytest.raises(ConfigError) as err:
        parse_profile(cfg, source)
    return str(err.value).splitlines()


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_every_shipped_config_loads(path):
    profile = load_profile(path)
    assert profile.runs and profile.matrix.train_jobs
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile.train.lr = 1.0  # frozen all the way down
    with pytest.raises(dataclasses.FrozenInstanceError):
        next(iter(profile.runs.values())).method.beta = 3.0


def test_runs_merge_spec_defaults_method_defaults_and_their_own_knobs():
    cfg = smoke()
    cfg["method_defaults"]["pacs"] = {"score": "drgrpo"}
    cfg["runs"]["pacs_beta2"]["use_weight"] = False
    p = parse_profile(cfg)
    assert p.runs["pacs"].method == PacsSpec(score="drgrpo")
    assert p.runs["pacs_beta2"].method == PacsSpec(beta=2.0, score="drgrpo", use_weight=False)
    assert p.runs["ppo"].method == PpoSpec(critic_lr=1e-3)  # smoke.yaml's one method default
    assert p.runs["pacs"].label == "PACS" and p.runs["pacs_beta2"].ablation == "beta"
    assert p.run("grpo") is p.runs["grpo"]
    assert p.run("pacs").method.name == "pacs"
    with pytest.raises(ConfigError, match="unknown run 'nope'"):
        p.run("nope")


def test_the_issue_cases_fail_at_load():
    """The measured bugs: a typo trained at beta = 1, beta -1 reached a Ray worker, ref: rollout
    with a reset period was accepted and never reset."""
    cfg = smoke()
    cfg["runs"]["pacs_beta2"] = {"method": "pacs", "betta": 2.0, "ablation": "beta"}
    assert problems(cfg) == [
        "configs/x.yaml: runs.pacs_beta2.betta: unknown key; did you mean 'beta'?"
    ]
    cfg["runs"]["pacs_beta2"] = {"method": "pacs", "beta": -1, "ablation": "beta"}
    assert problems(cfg) == [
        "configs/x.yaml: runs.pacs_beta2.beta: Input should be greater than 0 (got -1)"
    ]
    cfg["runs"]["pacs_beta2"] = {"method": "pacs", "ref": "rollout", "ref_reset_every": 5}
    (line,) = problems(cfg)
    assert line.startswith(
        "configs/x.yaml: runs.pacs_beta2: ref_reset_every is set but ref is "
        "'rollout', which never resets"
    )


@pytest.mark.parametrize(
    "edit, expected",
    [
        (lambda c: c.update(trian={}), "trian: unknown key; did you mean 'train'?"),
        (
            lambda c: c["train"].update(micro_batch_per_gu=1),
            "train.micro_batch_per_gu: unknown key; did you mean 'micro_batch_per_gpu'?",
        ),
        (
            lambda c: c["data"]["synthetic"].update(n_tset=3),
            "data.synthetic.n_tset: unknown key; did you mean 'n_test'?",
        ),
        (
            lambda c: c["models"]["tiny"]["build"].update(hiden_size=3),
            "models.tiny.build.hiden_size: unknown key; did you mean 'hidden_size'?",
        ),
        (
            lambda c: c["method_defaults"]["ppo"].update(critic_rl=1.0),
            "method_defaults.ppo.critic_rl: unknown key; did you mean 'critic_lr'?",
        ),
        (
            lambda c: c["method_defaults"].update(pcas={}),
            "method_defaults.pcas: unknown key; did you mean 'pacs'?",
        ),
        (
            lambda c: c["runs"].update(x={"method": "ppoo"}),
            "runs.x.method: unknown method 'ppoo'; did you mean 'ppo'?",
        ),
        (
            lambda c: c["runs"].update(x={"method": "grpo", "beta": 2.0}),
            (
                "runs.x.beta: unknown key; valid: method, label, ablation, models, nnodes, "
                "loss_agg_mode, clip_ratio, clip_ratio_c, loss_scale, grad_clip"
            ),
        ),
        (
            lambda c: c["runs"].update(x={"method": "pacs", "ablation": "betas"}),
            (
                "runs.x.ablation: Input should be 'main', 'beta', 'score', 'weight' or 'ref' (got "
                "'betas')"
            ),
        ),
        (
            lambda c: c["method_defaults"]["ppo"].update(
                critic_lr="1e-3"
            ),  # PyYAML reads 1e-3 as a string
            "method_defaults.ppo.critic_lr: Input should be a valid number (got '1e-3')",
        ),
        (
            lambda c: c["train"].update(group_size=1),
            "train.group_size: Input should be greater than or equal to 2 (got 1)",
        ),
        (
            lambda c: c["train"].update(prompts_per_step=5),
            (
                "train: prompts_per_step=5 must be a multiple of mini_batches=2: mini-batches hold "
                "whole groups"
            ),
        ),
        (
            lambda c: c["eval"].update(top_p=1.5),
            "eval.top_p: Input should be less than or equal to 1 (got 1.5)",
        ),
        (lambda c: c["train"].pop("steps"), "train.steps: required by the tiny engine"),
        (
            lambda c: c["prompt"].update(system_prompt="You are a helpful assistant."),
            "prompt.system_prompt: the tiny engine's prompts have no system turn",
        ),
        (
            lambda c: c["runs"]["pacs"].update(models=["big"]),
            "runs.pacs.models: ['big'] are not in models (['tiny'])",
        ),
        (
            lambda c: c["prompt"].update(enable_thinking="no"),
            "prompt.enable_thinking: Input should be a valid boolean (got 'no')",
        ),
        (
            lambda c: c.update(method_defaults=3),
            "method_defaults: expected a mapping of method -> knobs",
        ),
        (
            lambda c: c["method_defaults"].update(ppo=[1]),
            "method_defaults.ppo: expected a mapping of knobs",
        ),
        (
            lambda c: c["runs"].update(x=3),
            "runs.x: needs `method` (one of pacs, grpo, ppo, dapo, real)",
        ),
        (lambda c: c.pop("eval"), "eval: Field required"),
    ],
)
def test_a_bad_key_or_value_is_named_with_file_and_path(edit, expected):
    cfg = smoke()
    edit(cfg)
    assert problems(cfg) == [f"configs/x.yaml: {expected}"]


def test_one_update_per_rollout_is_refused_for_pacs_runs_that_reset_every_step():
    cfg = smoke()
    cfg["train"]["mini_batches"] = 1
    lines = problems(cfg)
    # PACS and REAL: a log-ratio to the rollout policy (their spec's ``reference``)
    pacs_runs = [n for n, r in cfg["runs"].items() if r["method"] in ("pacs", "real")]
    assert len(lines) == len(pacs_runs) and all(
        "docs/design.md#when-the-ablations-are-no-ops" in line for line in lines
    )
    cfg["runs"] = {
        "p": {"method": "pacs", "ref": "periodic", "ref_reset_every": 3},
        "f": {"method": "pacs", "ref": "fixed"},
        "g": {"method": "grpo"},
    }
    profile = parse_profile(cfg)  # psi != 0 after the first step there: allowed
    with pytest.raises(ConfigError, match="runs.pacs: PACS with the reference reset every step"):
        profile.run("pacs")  # a bare method name gets the same guard


def test_engine_specific_keys():
    paper = copy.deepcopy(load_config(REPO / "configs" / "paper.yaml"))
    paper["train"]["micro_batch_per_gpu"] = 12
    paper["runs"]["soft"] = {"method": "pacs", "soft_labels": True}
    scale = (
        "loss_scale: verl's loss_scale_factor is an integer, train.max_new_tokens=8192 / "
        "train.micro_batch_per_gpu=12 is not: make max_new_tokens a multiple of micro_batch_per_gpu"
    )
    assert problems(paper, "p.yaml") == [
        (
            "p.yaml: runs.pacs: PACS keeps groups whole: train.micro_batch_per_gpu=12 must be a "
            "multiple of train.group_size=8"
        ),
        f"p.yaml: runs.grpo.{scale}",
        f"p.yaml: runs.ppo.{scale}",
        (
            "p.yaml: runs.real: REAL keeps groups whole: train.micro_batch_per_gpu=12 must be a "
            "multiple of train.group_size=8"
        ),
        *[
            f"p.yaml: runs.{r}: PACS keeps groups whole: train.micro_batch_per_gpu=12 must be a "
            "multiple of train.group_size=8"
            for r in (
                "pacs_noweight",
                "pacs_score_grpo",
                "pacs_score_drgrpo",
                "pacs_beta0.5",
                "pacs_beta2",
            )
        ],
        (
            "p.yaml: runs.soft: PACS keeps groups whole: train.micro_batch_per_gpu=12 must be a "
            "multiple of train.group_size=8"
        ),
        (
            "p.yaml: runs.soft.soft_labels: the verl engine carries 0/1 labels only "
            "(docs/design.md#soft-labels); soft labels are supported by the tiny engine only"
        ),
    ]
    paper = copy.deepcopy(load_config(REPO / "configs" / "paper.yaml"))
    paper["train"]["mini_batch_size"] = 128
    (line,) = problems(paper, "p.yaml")
    assert "mini_batch_size=128 must equal mini_batches=4" in line


def test_reference_schedule_is_one_rule():
    assert [
        s
        for s in range(1, 12)
        if PacsSpec(ref="periodic", ref_reset_every=3).reference.reset_due(s)
    ] == [4, 7, 10]
    assert (
        PacsSpec().reference == RefSchedule("rollout", 1) and not PacsSpec().reference.needs_model
    )
    assert PacsSpec(ref="fixed").reference.needs_model
    assert not any(PacsSpec(ref="fixed").reference.reset_due(s) for s in range(1, 20))
    with pytest.raises(ValueError, match="ref: periodic needs ref_reset_every"):
        PacsSpec(ref="periodic")


def test_matrix_is_runs_times_models_times_seeds():
    cfg = smoke()
    cfg["models"]["other"] = copy.deepcopy(cfg["models"]["tiny"])
    cfg["seeds"] = {"main": [0, 1], "ablation": [5]}
    cfg["runs"]["grpo"]["models"] = ["other"]
    m = parse_profile(cfg).matrix
    assert ("tiny", "pacs", 1) in m.train_jobs and ("other", "pacs_beta2", 5) in m.train_jobs
    assert not [j for j in m.train_jobs if j[:2] == ("tiny", "grpo")]
    assert len(m.train_jobs) == 2 * 2 * 2 + 1 * 2 + 4 * 2 * 1  # pacs, ppo; grpo; 4 ablation runs
    assert m.eval_jobs[:2] == [("tiny", "base", 0), ("other", "base", 0)]
    assert m.diversity_runs("tiny") == [("base", 0), ("pacs", 0), ("ppo", 0)]
    assert m.curve_jobs == []  # tiny: the curve is computed in the loop
    paper = load_profile(REPO / "configs" / "paper.yaml").matrix
    assert paper.curve_steps("qwen3_4b") == list(range(20, 121, 20))
    assert len(paper.curve_jobs) == len(paper.train_jobs) // 2 * (6 + 16) * 3


def test_every_field_has_a_docstring():
    """Adding a key is one field with a docstring (pydantic reads attribute docstrings)."""
    specs = [
        cls
        for module in (sections_module, profile_module, methods_module)
        for cls in vars(module).values()
        if isinstance(cls, type)
        and cls.__module__ == module.__name__
        and hasattr(cls, "__pydantic_fields__")
    ]
    names = {c.__name__ for c in specs}
    assert {"Profile", "RunSpec", "VerlSpec", "EvalVllmSpec", "PacsSpec"} <= names
    missing = [
        f"{cls.__name__}.{name}"
        for cls in specs
        for name, info in cls.__pydantic_fields__.items()
        if name != "name" and not info.description
    ]
    assert missing == []
    assert "paper eq. 7" in PacsSpec.__pydantic_fields__["beta"].description
    assert Profile.__pydantic_fields__ and RunSpec.__pydantic_fields__


def _bad_config(tmp_path) -> Path:
    cfg = smoke()
    cfg["runs"]["pacs_beta2"] = {"method": "pacs", "betta": 2.0}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_a_hand_run_stage_fails_at_load(tmp_path):
    """`python -m pacs.<stage>` by hand reads the same spec: one clear line, no traceback."""
    bad = _bad_config(tmp_path)
    expected = f"{bad}: runs.pacs_beta2.betta: unknown key; did you mean 'beta'?"
    from pacs.tiny import train as tiny_train

    with pytest.raises(SystemExit) as exc:
        tiny_train.main(
            [
                "--config",
                str(bad),
                "--method",
                "pacs_beta2",
                "--base",
                "b",
                "--train-data",
                "t",
                "--eval-data",
                "e",
                "--out",
                str(tmp_path / "o"),
            ]
        )
    assert str(exc.value) == f"error: {expected}"
    check = subprocess.run(
        [sys.executable, "-m", "pacs.config", str(SMOKE), str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 2
    assert check.stdout.startswith(f"{SMOKE}: ok (tiny engine, 7 runs, 7 training jobs)")
    assert check.stderr.strip() == expected


def test_a_config_that_is_not_a_mapping_is_named(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(
        ConfigError, match=f"{path}: expected a YAML mapping at the top level, got list"
    ):
        load_profile(path)


def test_nested_cli_overrides_are_typed_as_snakemake_types_top_level_ones():
    """What Snakemake's BaseLoader leaves as strings, typed by hand: int, float, bool, null."""
    from pacs.config import typed_cli_overrides

    raw = {
        "seed": 3,
        "models": {"tiny": {"sft": {"steps": "151", "lr": "5e-4"}}},
        "eval": {"benchmarks": ["math500", "7"], "flag": "true", "off": "False", "none": "null"},
        "label": "v1.2",
    }
    assert typed_cli_overrides(raw) == {
        "seed": 3,
        "models": {"tiny": {"sft": {"steps": 151, "lr": 5e-4}}},
        "eval": {"benchmarks": ["math500", 7], "flag": True, "off": False, "none": None},
        "label": "v1.2",
    }
    cfg = smoke()
    cfg["models"]["tiny"]["sft"]["steps"] = "151"
    assert any("models.tiny.sft.steps" in p for p in problems(cfg))  # a YAML file stays strict
    cfg["models"]["tiny"]["sft"].update(typed_cli_overrides({"steps": "151"}))
    assert parse_profile(cfg, "x").models["tiny"].sft.steps == 151
