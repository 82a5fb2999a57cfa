"""Any causal LM on a profile's evaluation protocol, or generations made elsewhere: ``make eval``.

``python -m pacs.model_eval --model <hub id or folder> [--config PROFILE]
[--benchmarks math500,aime24] [--n N] [--temperature T] [--top-p P] [--max-new-tokens M] [--seed S]
[--limit K] [--backend hf|vllm] [--[no-]enable-thinking] [--system-prompt TEXT] [--chat-template
FILE] [--name NAME] [--out DIR] [--paper-model NAME]``. Without ``--config``
(:func:`pacs.evaluation.model_source.default_config`): a folder inside a profile's results
(``results/<profile>/...``) is evaluated on that profile's protocol (its config snapshot),
any other model on ``configs/paper.yaml``; a hub id must be cached or reachable (:func:`check_hub`).

``python -m pacs.model_eval --generations FILE.jsonl --benchmarks aime24 --name NAME``
grades generations made elsewhere (schema: docs/formats.md, "Bring your own generations"; checked
by :mod:`pacs.evaluation.external`).

The protocol (benchmarks, n, temperature, top-p, max tokens, seed, backend, engine settings,
thinking mode) is the profile's (``eval:``, ``prompt:``, ``data.benchmarks``: what the DAG's
generate jobs get, spelled by :mod:`pacs.evaluation.protocol`), each flag overriding one. A model
listed in the profile's ``eval.released`` section gets that entry's documented prompt format (system
prompt, chat template, thinking mode) and its Table 1 name unless flags say otherwise. Each
benchmark runs the
DAG's own stages in this process: ``pacs.evaluation.generate`` → ``grade`` → ``passk``, into
``<out>/<benchmark>/{samples,graded}.jsonl, passk.json, passk.csv`` (default ``<out>``:
``results/<profile>/model_eval/<name>``); the benchmark files are the DAG's
(``results/<profile>/data/eval/``), prepared by ``pacs.data`` when missing. Then the row
(:mod:`pacs.report.model_row`): ``<out>/row.md`` and ``row.csv``, printed too.

Resuming. Every file is written to a temporary name and renamed; generation keeps its finished
chunks (``samples.jsonl.partial``). A rerun with the same settings skips a stage only when its
output, its inputs and the protocol have the content hashes its record holds
(``<benchmark>/stages.json``, :mod:`pacs.evaluation.reuse`), and resumes generation; every
output is checked complete against the benchmark and the protocol before it is recorded (a
``FormatError`` naming the file otherwise, and no row). ``<out>/protocol.json`` records the
settings and the inputs' content (a foreign file's sha256, marked "generated elsewhere" with no
generation settings; a local model folder's files by size and mtime): a rerun with other
settings or changed inputs into the same ``--out`` is refused, naming what differs; a corrupt
protocol.json is named; without one nothing is reused.
Temp files a killed run left are removed. ``--name`` (or the name taken from the input) must be
one safe folder name. ``make eval`` passes MODEL, GENERATIONS, EVAL_CONFIG and EVAL_ARGS through
the environment (``--from-env``), never through a shell string.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from pacs import layout
from pacs.config import ConfigError, Profile, load_profile
from pacs.evaluation.backends.vllm import EngineDied
from pacs.evaluation.io import FormatError
from pacs.evaluation.model_source import (
    EvalError,
    check_hub,
    check_model,
    default_config,
    model_files,
    model_name,
)
from pacs.evaluation.protocol import generate_cli_args
from pacs.evaluation.reuse import (
    RECORD,
    StageRecord,
    check_graded,
    check_samples,
    file_sha256,
    settings_sha256,
)
from pacs.io import write_json
from pacs.progress import ConsoleBar

log = logging.getLogger(__name__)

# ----------------------------------------------------------------------------- the inputs


def known_benchmarks() -> tuple[str, ...]:
    from pacs.data.benchmarks import ALL_BENCHMARKS

    return (*ALL_BENCHMARKS, layout.SYNTHETIC)


def check_benchmarks(names: Sequence[str]) -> list[str]:
    """The benchmarks asked for, each one we can prepare and grade; else an error naming it."""
    known = known_benchmarks()
    unknown = [b for b in names if b not in known]
    if unknown:
        raise EvalError(f"--benchmarks: unknown benchmark(s) {unknown}; known: {', '.join(known)}")
    if not names:
        raise EvalError("--benchmarks: none given")
    return list(dict.fromkeys(names))


# A row's folder name: it becomes a path under results/<profile>/model_eval/.
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def check_name(name: str, what: str) -> str:
    """A name that stays one folder: no separator, not ``.``/``..``, a safe character set."""
    if name in (".", "..") or not SAFE_NAME.fullmatch(name):
        raise EvalError(
            f"{what} {name!r}: not a safe folder name (letters, digits, '.', '_', '-', starting "
            "with a letter or digit, at most 128 characters; no path separator, not . or ..)"
        )
    return name


def released_entry(spec: Profile, model: str):
    """The profile's ``eval.released`` entry whose hub id (or path) is ``model``, else None."""
    for entry in spec.eval.released.values():
        if model in (entry.hf_id, entry.path):
            return entry
    return None


# ----------------------------------------------------------------------------- the protocol


@dataclasses.dataclass(frozen=True)
class Plan:
    """Everything one ``make eval`` run does: model, benchmarks, files, settings."""

    model: str
    name: str
    benchmarks: list[str]
    out: Path
    data_root: str
    generate_args: str  # the profile's protocol with the overrides, as generate flags
    prompt_args: list[str]  # --system-prompt / --chat-template
    bootstrap: int
    paper_model: str | None
    spec: Profile
    generations: Path | None = None  # a file generated elsewhere (then no generation settings)
    inputs: dict | None = None  # the inputs' content: generations sha256 or model files

    def settings(self) -> dict:
        """What protocol.json records (and a rerun must match): the settings used, and the
        content of the inputs, so a changed input is never reused."""
        if self.generations is not None:
            return {
                "model": self.model,
                "generated": "elsewhere",
                "generations": str(self.generations),
                "generations_sha256": (self.inputs or {}).get("sha256"),
                "bootstrap": self.bootstrap,
            }
        return {
            "model": self.model,
            "generate_args": self.generate_args,
            "prompt_args": self.prompt_args,
            "bootstrap": self.bootstrap,
            "model_files": self.inputs,
        }


def eval_spec(spec: Profile, args: argparse.Namespace):
    """The profile's ``eval:`` with the command line's overrides."""
    names = ("n_samples", "temperature", "top_p", "max_new_tokens", "seed", "limit", "backend")
    flags = ("n", "temperature", "top_p", "max_new_tokens", "seed", "limit", "backend")
    changes = {k: getattr(args, f) for k, f in zip(names, flags) if getattr(args, f) is not None}
    try:
        return dataclasses.replace(spec.eval, **changes)
    except (ValueError, TypeError) as err:
        raise EvalError(f"the evaluation settings are invalid: {err}") from None


def prompt_format(
    args: argparse.Namespace, entry, profile_system: str | None = None
) -> tuple[bool | None, list[str]]:
    """Thinking mode and the --system-prompt / --chat-template flags: the command line's, else
    the released entry's documented format, else the profile's (thinking mode, system turn), as
    the DAG evaluates its own runs."""
    thinking = args.enable_thinking
    system = args.system_prompt
    template = args.chat_template
    if entry is None:
        system = profile_system if system is None else system
    else:
        thinking = entry.enable_thinking if thinking is None else thinking
        system = entry.system_prompt if system is None else system
        template = template or (Path(entry.chat_template) if entry.chat_template else None)
    if template is not None and not Path(template).is_file():
        raise EvalError(f"--chat-template {template}: no such file")
    flags = [] if system is None else ["--system-prompt", system]
    flags += [] if template is None else ["--chat-template", str(template)]
    return thinking, flags


def make_plan(args: argparse.Namespace) -> Plan:
    """Check every input and decide the settings, before any model is loaded."""
    model = check_model(args.model) if args.model else f"generations:{args.generations}"
    spec = _load_spec(args.config or default_config(args.model))
    entry = released_entry(spec, args.model) if args.model else None
    benchmarks = check_benchmarks(args.benchmarks or list(spec.data.benchmarks))
    thinking, prompt_args = prompt_format(args, entry, spec.prompt.system_prompt)
    if thinking is None:  # as the DAG: the profile's switch unless the model's entry sets one
        thinking = spec.prompt.enable_thinking
    given = args.name is not None
    name = args.name if given else (model_name(args.model) if args.model else "")
    name = name if given or args.model else Path(args.generations).stem
    check_name(name, "--name" if given else "the name taken from the input")
    out = args.out or Path(layout.results_dir(spec.profile)) / "model_eval" / name
    if args.generations is not None:  # a missing file is refused by run(), before any record
        found = Path(args.generations).is_file()
        inputs = {"sha256": file_sha256(Path(args.generations))} if found else None
    else:
        inputs = model_files(model)
    paper_model = args.paper_model or (entry.paper_name if entry else None)
    return Plan(
        model=model,
        name=name,
        benchmarks=benchmarks,
        out=Path(out),
        data_root=args.data_root or layout.results_dir(spec.profile),
        generate_args=generate_cli_args(eval_spec(spec, args), thinking),
        prompt_args=prompt_args,
        bootstrap=spec.eval.bootstrap if args.bootstrap is None else args.bootstrap,
        paper_model=paper_model,
        spec=spec,
        generations=args.generations,
        inputs=inputs,
    )


def _load_spec(config: Path) -> Profile:
    if not Path(config).is_file():
        raise EvalError(f"--config {config}: no such file")
    try:
        return load_profile(config)
    except ConfigError as err:
        raise EvalError(str(err)) from None


def check_protocol(plan: Plan) -> None:
    """Refuse an ``--out`` that holds an evaluation made with other settings. Without a
    protocol.json nothing in ``--out`` is reused: the stage records go. A row from an earlier
    run goes too: it is written again only when every stage is complete."""
    path = plan.out / "protocol.json"
    settings = plan.settings()
    for old_row in (plan.out / "row.md", plan.out / "row.csv"):
        old_row.unlink(missing_ok=True)
    if not path.is_file():
        for record in plan.out.glob(f"*/{RECORD}"):
            log.info("%s: no protocol.json in %s, so nothing is reused", record, plan.out)
            record.unlink()
    else:
        old = read_protocol(path)
        diff = {k: _changed(old.get(k), v) for k, v in settings.items() if old.get(k) != v}
        if diff:
            raise EvalError(
                f"{path}: {plan.out} holds an evaluation made with other settings or inputs "
                f"(setting: (old, new)) {diff}; give another --out or delete it"
            )
    write_json(path, settings)


def read_protocol(path: Path) -> dict:
    """protocol.json's settings; a file that is not a JSON object is an EvalError naming it."""
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise EvalError(f"{path}: corrupt (not JSON: {err}); delete it or give another --out")
    if not isinstance(old, dict):
        raise EvalError(f"{path}: corrupt (not a JSON object); delete it or give another --out")
    return old


def _changed(old, new):
    """(old, new), or for two file lists only the files that differ (weights, tokenizer)."""
    if isinstance(old, dict) and isinstance(new, dict):
        names = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        return {"files changed": names}
    return (old, new)


def remove_stale_temps(out: Path) -> list[Path]:
    """Temporary files a killed run left (``.<name>.*.tmp``, written then renamed): removed."""
    stale = [p for p in out.glob("**/.*.tmp") if p.is_file()]
    for p in stale:
        p.unlink()
    return stale


def check_chat_template(plan: Plan) -> None:
    """Refuse a model whose tokenizer has no chat template when none is given (before
    generating)."""
    if "--chat-template" in plan.prompt_args:
        return
    from transformers import AutoTokenizer

    from pacs.evaluation.backends import use_chat_template

    try:
        tok = AutoTokenizer.from_pretrained(plan.model)
    except (OSError, ValueError) as err:
        raise EvalError(f"--model {plan.model}: cannot load its tokenizer: {err}") from None
    try:
        use_chat_template(tok, plan.model, None)
    except ValueError as err:
        raise EvalError(str(err)) from None


# ----------------------------------------------------------------------------- the stages


def benchmark_file(plan: Plan, benchmark: str) -> Path:
    """The DAG's prepared benchmark file, prepared with the profile's data settings if missing."""
    from pacs.data.cli import main as data_main

    path = Path(layout.benchmark_file(plan.data_root, benchmark))
    if path.is_file():
        return path
    data = plan.spec.data
    if benchmark == layout.SYNTHETIC:
        if data.synthetic is None:
            raise EvalError(f"--benchmarks synthetic: profile {plan.spec.profile} has no task")
        argv = [
            "prepare-synthetic",
            "--out-dir",
            str(path.parent),
            *data.synthetic.cli_args().split(),
        ]
    else:
        argv = [
            "prepare-eval",
            "--benchmark",
            benchmark,
            *data.prepare_eval_args(benchmark).split(),
        ]
        argv += ["--out", str(path)]
    if data_main(argv) != 0:
        raise EvalError(f"{path}: preparing benchmark {benchmark} failed (message above)")
    return path


def run_benchmark(plan: Plan, benchmark: str, args: argparse.Namespace) -> Path:
    """generate (or the foreign file's check) → grade → passk for one benchmark; passk.json.

    A stage is skipped only when its output is what it recorded (:mod:`pacs.evaluation.reuse`:
    content hashes of output, inputs and protocol); each output is checked complete first."""
    from pacs.evaluation import grade, passk

    bench = benchmark_file(plan, benchmark)
    folder = plan.out / benchmark
    folder.mkdir(parents=True, exist_ok=True)
    record = StageRecord(folder, settings_sha256(plan.settings()))
    samples, graded = folder / "samples.jsonl", folder / "graded.jsonl"
    inputs = {"benchmark": bench}
    if args.generations:
        inputs["generations"] = Path(args.generations)
    if not record.reusable("samples", samples, inputs):
        record.forget("samples", samples)
        if args.generations:
            from pacs.evaluation.external import convert

            convert(Path(args.generations), bench, samples, limit=_limit(plan))
        else:
            _generate(plan, bench, samples, args)
        n = None if args.generations else int(re.search(r"--n (\d+)", plan.generate_args)[1])
        check_samples(samples, bench, n, _limit(plan))
        record.record("samples", samples, inputs)
    if not record.reusable("graded", graded, {"samples": samples, "benchmark": bench}):
        record.forget("graded", graded)
        grade.main(
            ["--samples", str(samples), "--benchmark-file", str(bench), "--out", str(graded)]
            + ["--workers", str(args.workers)]
        )
        check_graded(graded, samples)
        record.record("graded", graded, {"samples": samples, "benchmark": bench})
    out = folder / "passk.json"
    if not record.reusable("passk", out, {"graded": graded}):
        record.forget("passk", out, folder / "passk.csv")
        passk.main(
            [
                "--graded",
                str(graded),
                "--out-json",
                str(out),
                "--out-csv",
                str(folder / "passk.csv"),
            ]
            + ["--benchmark", benchmark, "--model", plan.name, "--run", "model_eval", "--seed", "0"]
            + ["--bootstrap", str(plan.bootstrap)]
        )
        record.record("passk", out, {"graded": graded})
    return out


def _limit(plan: Plan) -> int | None:
    match = re.search(r"--limit (\d+)", plan.generate_args)
    return int(match.group(1)) if match else None


def _generate(plan: Plan, bench: Path, samples: Path, args: argparse.Namespace) -> None:
    from pacs.evaluation import generate

    argv = ["--model", plan.model, "--benchmark-file", str(bench), "--out", str(samples)]
    argv += plan.generate_args.split() + plan.prompt_args
    argv += ["--threads", str(args.threads or plan.spec.threads_per_job)]  # as the DAG's jobs
    argv += [] if args.device is None else ["--device", args.device]
    generate.main(argv)


# ----------------------------------------------------------------------------- the row


def write_row(plan: Plan, passk_files: list[Path]) -> str:
    """``row.csv`` and ``row.md`` from the passk.json files; returns the markdown."""
    from pacs.fingerprint import code_commit
    from pacs.io import atomic_open
    from pacs.report.model_row import (
        display_rows,
        paper_model_of,
        records_frame,
        row_records,
    )
    from pacs.report.paper import load_paper_numbers
    from pacs.report.render import frame_to_markdown

    paper = load_paper_numbers()
    paper_model = plan.paper_model or paper_model_of(plan.model, paper)
    docs = [json.loads(p.read_text(encoding="utf-8")) for p in passk_files]
    records = row_records(docs, paper, model=plan.name, label=plan.name, paper_model=paper_model)
    with atomic_open(plan.out / "row.csv") as fh:
        records_frame(records).to_csv(fh, index=False, lineterminator="\n")
    text = "\n".join(
        [
            _row_heading(plan),
            "",
            _provenance_line(plan) + f"; code: {code_commit() or 'outside git'}.",
            *_mixed_counts(plan, docs),
            "",
            frame_to_markdown(display_rows(records)),
            "",
        ]
    )
    with atomic_open(plan.out / "row.md") as fh:
        fh.write(text)
    return text


def _row_heading(plan: Plan) -> str:
    """Generations made elsewhere used none of the protocol's generation settings: only its
    grader and pass@k."""
    if plan.generations is not None:
        return (
            f"# {plan.name}: generations made elsewhere, graded by the "
            f"`{plan.spec.profile}` protocol's grader"
        )
    return f"# {plan.name} on the `{plan.spec.profile}` protocol"


def _provenance_line(plan: Plan) -> str:
    """Where the samples came from: the generate flags used, or the foreign file and its sha256
    (no generation setting: none was used here)."""
    if plan.generations is not None:
        sha = (plan.inputs or {}).get("sha256")
        return f"Generations: `{plan.generations}` (sha256 `{sha}`), generated elsewhere"
    prompt = f" {plan.prompt_args}" if plan.prompt_args else ""
    return f"Model: `{plan.model}`; generate flags: `{plan.generate_args}`{prompt}"


def _mixed_counts(plan: Plan, docs: list[dict]) -> list[str]:
    """A line per benchmark whose problems have different sample counts (pass@k's k stops at
    the smallest)."""
    return [
        f"Mixed sample counts: {bench} has {d['n_min']} to {d['n_max']} samples per problem "
        f"(k up to {d['n_min']})."
        for bench, d in zip(plan.benchmarks, docs)
        if d.get("n_min") != d.get("n_max")
    ]


# ----------------------------------------------------------------------------- CLI


def argv_from_env(env: dict[str, str]) -> list[str]:
    """``make eval``'s arguments from the environment (MODEL, GENERATIONS, EVAL_CONFIG,
    EVAL_ARGS): each value reaches Python as an argument, never through a shell string."""
    if env.get("MODEL"):
        argv = ["--model", env["MODEL"]]
    elif env.get("GENERATIONS"):
        argv = ["--generations", env["GENERATIONS"]]
    else:
        raise EvalError("make eval: give MODEL=<hub id or folder> (or GENERATIONS=<file>)")
    argv += ["--config", env["EVAL_CONFIG"]] if env.get("EVAL_CONFIG") else []
    try:
        return argv + shlex.split(env.get("EVAL_ARGS", ""))
    except ValueError as err:
        raise EvalError(f"EVAL_ARGS {env.get('EVAL_ARGS')!r}: {err}") from None


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m pacs.model_eval",
        description="Evaluate any causal LM (or grade generations made elsewhere) on a profile's "
        "evaluation protocol, and print its Table-1-style row beside the paper's numbers.",
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--model", help="a hub id (owner/name) or a local model folder")
    what.add_argument(
        "--generations", type=Path, help="a JSONL of generations made elsewhere (docs/formats.md)"
    )
    p.add_argument("--config", type=Path, default=None, help="the profile (protocol); default: "
                   "a results/<profile>/ folder's own, else configs/paper.yaml")  # fmt: skip
    p.add_argument(
        "--benchmarks",
        type=lambda s: [b for b in s.split(",") if b],
        default=None,
        help="comma-separated (default: the profile's data.benchmarks)",
    )
    p.add_argument("--name", default=None, help="the row's name (default: from --model)")
    p.add_argument(
        "--out", type=Path, default=None, help="default results/<profile>/model_eval/<name>"
    )
    p.add_argument("--data-root", default=None, help="results folder of the benchmark files")
    p.add_argument("--paper-model", default=None, help="the paper's Table 1 row to compare with")
    _protocol_arguments(p)
    p.add_argument("--bootstrap", type=int, default=None, help="CI resamples (default: profile)")
    p.add_argument("--workers", type=int, default=2, help="grader processes")
    p.add_argument(
        "--threads", type=int, default=None, help="torch CPU threads (default: threads_per_job)"
    )
    p.add_argument("--device", default=None, help="hf: cpu | cuda[:i]")
    args = p.parse_args(argv)
    if args.generations and args.benchmarks is not None and len(args.benchmarks) != 1:
        p.error("--generations grades one benchmark: give exactly one in --benchmarks")
    if args.generations and args.benchmarks is None:
        p.error("--generations needs --benchmarks <the benchmark the file answers>")
    return args


def _protocol_arguments(p: argparse.ArgumentParser) -> None:
    """Overrides of the profile's protocol (unset: the profile's value)."""
    p.add_argument("--n", type=int, default=None, help="samples per problem")
    p.add_argument("--temperature", type=float, default=None)
    p.add_argument("--top-p", type=float, default=None)
    p.add_argument("--max-new-tokens", type=int, default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--limit", type=int, default=None, help="only the first K problems")
    p.add_argument("--backend", choices=("hf", "vllm"), default=None)
    p.add_argument("--enable-thinking", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--system-prompt", default=None, help="a system turn before every prompt")
    p.add_argument("--chat-template", type=Path, default=None, help="a Jinja chat-template file")


def run(args: argparse.Namespace) -> str:
    plan = make_plan(args)
    if args.model and not Path(plan.model).is_dir():
        check_hub(plan.model)
    if args.model:
        check_chat_template(plan)
    if plan.generations is not None and plan.inputs is None:
        raise EvalError(f"--generations {plan.generations}: no such file")
    plan.out.mkdir(parents=True, exist_ok=True)
    check_protocol(plan)
    for stale_temp in remove_stale_temps(plan.out):
        log.info("removed %s, left by a killed run", stale_temp)
    files = []
    bar = ConsoleBar(total=len(plan.benchmarks), unit="benchmark", desc=f"eval {plan.name}")
    for benchmark in plan.benchmarks:
        bar.set_postfix_str(benchmark)
        files.append(run_benchmark(plan, benchmark, args))
        bar.update(1)
    bar.close()
    return write_row(plan, files)


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if list(argv) == ["--from-env"]:  # make eval: the values come from the environment
        try:
            argv = argv_from_env(dict(os.environ))
        except EvalError as err:
            print(f"pacs.model_eval: error: {err}", file=sys.stderr)
            return 2
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        text = run(args)
    except (EvalError, FormatError, FileNotFoundError) as err:
        print(f"pacs.model_eval: error: {err}", file=sys.stderr)
        return 2
    except EngineDied as err:  # vLLM's engine died: the message says what to change; reruns resume
        print(f"pacs.model_eval: {err}", file=sys.stderr)
        return 3
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
