"""Fixtures of the data tests: a tiny ChatML tokenizer built locally (no download)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def chat_tokenizer():
    """The tiny profile's own byte-level BPE with its ChatML template (pacs.tiny.build)."""
    from pacs.tiny.build import build_tokenizer

    return build_tokenizer(
        ["Please reason step by step, and put your final answer within \\boxed{}."] * 4,
        vocab_size=300,
    )


@pytest.fixture(scope="session")
def chat_tokenizer_dir(chat_tokenizer, tmp_path_factory):
    """``chat_tokenizer`` saved with ``save_pretrained`` (for code that takes a directory)."""
    path = tmp_path_factory.mktemp("tokenizer")
    chat_tokenizer.save_pretrained(path)
    return path
