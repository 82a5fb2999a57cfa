"""The evaluation protocol of a profile as ``python -m pacs.evaluation.generate`` flags.

One spelling for the DAG (``workflow/rules/common.smk``: ``generate_args``) and for
``python -m pacs.model_eval`` (``make eval``), so a model evaluated by hand sees exactly
the sampling settings, engine settings and chat-template switch of the DAG's generate jobs.
"""

from __future__ import annotations

from pacs.evaluation.backends.vllm import engine_cli_args


def generate_cli_args(eval_spec, enable_thinking: bool | None, n: int | None = None) -> str:
    """Flags of config ``eval`` (a :class:`pacs.config.EvalSpec`) and ``prompt.enable_thinking``.

    ``n`` replaces ``eval.n_samples`` (the Fig. 3 checkpoints sample fewer); ``enable_thinking``
    None leaves the template's own default (no flag)."""
    spec = eval_spec
    args = (
        f"--backend {spec.backend} --n {n or spec.n_samples} --temperature {spec.temperature} "
        f"--top-p {spec.top_p} --max-new-tokens {spec.max_new_tokens} --seed {spec.seed}"
    )
    if spec.limit:
        args += f" --limit {spec.limit}"
    if spec.backend == "vllm":  # engine settings (eval.vllm); unset ones: the platform's default
        args += f" {engine_cli_args(spec.vllm)}".rstrip()
    if enable_thinking is None:
        return args
    # The same chat-template switch as training (verl data.apply_chat_template_kwargs).
    return args + (" --enable-thinking" if enable_thinking else " --no-enable-thinking")
