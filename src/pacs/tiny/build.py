"""Build the tiny profile's tokenizer and model locally (docs/design.md#the-tiny-profile): nothing
is downloaded.

- Tokenizer: byte-level BPE trained with ``tokenizers`` on the SFT split, digits split one per
  token (arithmetic is learnable digit by digit), a ChatML-style chat template that renders the
  paper's prompt, ``<|im_end|>`` as eos, ``<|endoftext|>`` as pad, left padding for generation.
- Model: ``Qwen3ForCausalLM`` from a config (hidden 128, 2 layers, tied embeddings, ~0.44M params).

CLI::

    python -m pacs.tiny.build --config configs/default.yaml --model tiny --data-dir DIR --out DIR

writes ``DIR`` with ``save_pretrained`` (model + tokenizer) so ``AutoTokenizer`` and
``AutoModelForCausalLM`` reload it offline, bit-identically.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

from pacs.config import ConfigError, load_profile
from pacs.io import atomic_dir, read_jsonl
from pacs.progress import quiet_transformers

EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"
IM_START = "<|im_start|>"
SPECIAL_TOKENS = [PAD_TOKEN, IM_START, EOS_TOKEN]

# ChatML as in Qwen: every turn is "<|im_start|>role\ncontent<|im_end|>\n"; the generation prompt
# opens the assistant turn, so the model's answer ends with <|im_end|> (= eos).
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}"
)


def build_tokenizer(corpus: Iterable[str], vocab_size: int = 384) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE on ``corpus`` and wrap it as a transformers fast tokenizer."""
    tok = Tokenizer(models.BPE())
    # Digits first, so no merge ever spans two digits; then GPT-2 style byte-level splitting.
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        additional_special_tokens=[IM_START],
        padding_side="left",
        chat_template=CHAT_TEMPLATE,
        model_max_length=1024,
    )


def build_model(
    tokenizer: PreTrainedTokenizerFast,
    hidden_size: int = 128,
    num_hidden_layers: int = 2,
    num_attention_heads: int = 4,
    num_key_value_heads: int = 2,
    intermediate_size: int = 384,
    seed: int = 0,
) -> Qwen3ForCausalLM:
    """A freshly initialised tiny Qwen3 whose vocabulary and special ids match ``tokenizer``."""
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        num_key_value_heads=num_key_value_heads,
        head_dim=hidden_size // num_attention_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = None
    return model


def corpus_from_rows(rows: Iterable[dict]) -> Iterator[str]:
    """One text per row: the conversation as the chat template lays it out, special tokens left out.

    Whole conversations (roles included) let BPE merge the words every prompt repeats, which keeps
    prompts short (~50 tokens).
    """
    for row in rows:
        turns = [f"{m['role']}\n{m['content']}" for m in row["prompt"]]
        turns.append("assistant\n" + (row.get("solution") or ""))
        yield "\n".join(turns)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True, help="profile config (configs/default.yaml)")
    parser.add_argument("--model", default="tiny", help="key under models: in the config")
    parser.add_argument(
        "--data-dir", required=True, help="folder with sft.jsonl (tokenizer corpus)"
    )
    parser.add_argument("--out", required=True, help="output folder (HF save_pretrained layout)")
    parser.add_argument("--seed", type=int, default=0, help="weight initialisation seed")
    args = parser.parse_args(argv)

    try:
        build_cfg = dataclasses.asdict(load_profile(args.config).models[args.model].build)
    except ConfigError as err:
        raise SystemExit(f"error: {err}") from err
    vocab_size = build_cfg.pop("vocab_size")
    tokenizer = build_tokenizer(
        corpus_from_rows(read_jsonl(Path(args.data_dir) / "sft.jsonl")), vocab_size
    )
    model = build_model(tokenizer, seed=args.seed, **build_cfg)
    save_pretrained(model, tokenizer, args.out)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"built {args.model}: vocab {len(tokenizer)}, {n_params:,} parameters -> {args.out}")


def save_pretrained(
    model, tokenizer, out: str | Path, extra_json: dict[str, dict] | None = None
) -> None:
    """Save model + tokenizer (+ ``extra_json`` files) into ``out`` through a temporary sibling
    folder renamed into place (:func:`pacs.io.atomic_dir`), so an existing ``out`` is complete."""
    with atomic_dir(out) as tmp:
        with quiet_transformers():
            model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        for name, obj in (extra_json or {}).items():
            (tmp / name).write_text(json.dumps(obj, indent=2) + "\n")


if __name__ == "__main__":
    main()
