"""Exact path distributions by teacher forcing (pacs.evaluation.path_exact): the distribution
math on hand-made cases, the batched scoring against a token-by-token brute force on a tiny
model built here, and the stage end to end."""

from __future__ import annotations

import json
import math
import random

import pytest
import torch

from pacs.data.synthetic.paths import canonical_solutions, make_problem
from pacs.evaluation import path_exact as pe
from pacs.evaluation.backends import prompt_token_ids
from pacs.evaluation.io import FormatError
from pacs.io import write_jsonl

LN = math.log


# ----------------------------------------------------------------------------- hand-made cases


def test_a_hand_made_distribution():
    """Paths with probabilities 0.1, 0.05, 0.05 (and three at 0): mass 0.2; given a path,
    (0.5, 0.25, 0.25); entropy 1.5 ln 2; Gini-Simpson 1 - (1/4 + 1/16 + 1/16) = 0.625."""
    logps = {"a": LN(0.1), "b": LN(0.05), "c": LN(0.05), "d": -math.inf, "e": -math.inf}
    got = pe.problem_summary(logps)
    assert got["mass"] == pytest.approx(0.2)
    assert pe.path_distribution(list(logps.values())) == pytest.approx([0.5, 0.25, 0.25, 0, 0])
    assert got["entropy"] == pytest.approx(1.5 * LN(2))
    assert got["gini_simpson"] == pytest.approx(0.625)


def test_uniform_and_one_path():
    uniform = pe.problem_summary({str(i): LN(1e-3) for i in range(6)})
    assert uniform["entropy"] == pytest.approx(LN(6))
    assert uniform["gini_simpson"] == pytest.approx(5 / 6)
    assert uniform["mass"] == pytest.approx(6e-3)
    one = pe.problem_summary({"a": LN(0.7), "b": -math.inf})
    assert one["entropy"] == 0.0 and one["gini_simpson"] == 0.0
    assert one["mass"] == pytest.approx(0.7)


def test_no_mass_at_all_is_undefined_not_zero():
    got = pe.problem_summary({"a": -math.inf, "b": -math.inf})
    assert got["mass"] == 0.0 and got["entropy"] is None and got["gini_simpson"] is None


def test_tiny_log_probabilities_do_not_underflow():
    """Log-probs of -2000 (exp underflows to 0) still give the right conditional distribution."""
    got = pe.problem_summary({"a": -2000.0, "b": -2000.0 - LN(3)})
    assert pe.path_distribution([-2000.0, -2000.0 - LN(3)]) == pytest.approx([0.75, 0.25])
    assert got["entropy"] == pytest.approx(-(0.75 * LN(0.75) + 0.25 * LN(0.25)))


def test_summary_means_leave_undefined_problems_out():
    per = {
        "p0": {"entropy": 1.0, "gini_simpson": 0.5, "mass": 0.2},
        "p1": {"entropy": None, "gini_simpson": None, "mass": 0.0},
        "p2": {"entropy": 0.0, "gini_simpson": 0.0, "mass": 0.4},
    }
    got = pe.summarize(per)
    assert got["entropy"] == pytest.approx(0.5) and got["entropy_problems"] == 2
    assert got["mass"] == pytest.approx(0.2) and got["mass_problems"] == 3


# ----------------------------------------------------------------------------- a tiny model


@pytest.fixture(scope="module")
def paths_model(tmp_path_factory):
    """A tiny random Qwen3 with a tokenizer trained on paths-task rows, saved as an HF folder,
    and three paths-task rows."""
    from pacs.tiny.build import build_model, build_tokenizer, corpus_from_rows, save_pretrained

    rng = random.Random(0)
    rows = [make_problem(rng) for _ in range(40)]
    tok = build_tokenizer(corpus_from_rows(rows), vocab_size=300)
    model = build_model(
        tok,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=64,
    )
    out = tmp_path_factory.mktemp("paths_model") / "model"
    save_pretrained(model, tok, out)
    for i, row in enumerate(rows[:3]):
        row["problem_id"] = f"synthetic/test/{i}"
    return {"dir": out, "model": model, "tok": tok, "rows": rows[:3]}


def brute_force_logprob(model, prompt: list[int], response: list[int], warp=None) -> float:
    """Sum over the response's tokens of log p(token | everything before it), one unpadded
    forward pass per token; ``warp(logits [V]) -> probabilities [V]`` replaces the softmax."""
    total = 0.0
    with torch.no_grad():
        for t in range(len(response)):
            ids = torch.tensor([prompt + response[:t]])
            logits = model(input_ids=ids).logits[0, -1].double()
            probs = torch.softmax(logits, -1) if warp is None else warp(logits)
            total += math.log(probs[response[t]].item()) if probs[response[t]] > 0 else -math.inf
    return total


def nucleus(temperature: float, top_p: float):
    """The sampling distribution by hand: softmax(logits / T), then the smallest set of the most
    likely tokens whose probability reaches top_p (HF's rule: drop the tokens whose cumulative
    probability, counted from the least likely, is <= 1 - top_p), renormalised."""

    def warp(logits: torch.Tensor) -> torch.Tensor:
        probs = torch.softmax(logits / temperature, -1)
        order = torch.argsort(probs)  # ascending
        dropped = torch.cumsum(probs[order], 0) <= 1 - top_p
        dropped[-1] = False  # the most likely token always stays
        kept = probs.clone()
        kept[order[dropped]] = 0.0
        return kept / kept.sum()

    return warp


def _pairs(m):
    tok, pairs = m["tok"], []
    for row in m["rows"]:
        prompt = prompt_token_ids(tok, row["prompt"], False)
        for text in canonical_solutions(row["quantities"]).values():
            pairs.append((prompt, text))
    return pairs


@pytest.mark.parametrize("batch_size", [1, 5, 64])
def test_batched_scoring_equals_the_token_by_token_loop(paths_model, batch_size):
    """Left padding, position ids and batching change nothing: every (prompt, path text) of three
    problems scores as the explicit loop over its tokens (text + eos, tokenized as SFT does)."""
    m = paths_model
    pairs = _pairs(m)
    got = pe.text_logprobs(
        m["model"], m["tok"], [p for p, _ in pairs], [t for _, t in pairs], batch_size=batch_size
    )
    for (prompt, text), lp in zip(pairs, got):
        response = m["tok"](text + m["tok"].eos_token, add_special_tokens=False)["input_ids"]
        assert response[-1] == m["tok"].eos_token_id
        assert lp == pytest.approx(brute_force_logprob(m["model"], prompt, response), abs=2e-4)


def test_scoring_under_the_sampling_warpers_equals_the_hand_made_nucleus(paths_model):
    m = paths_model
    pairs = _pairs(m)[:6]
    got = pe.text_logprobs(
        m["model"], m["tok"], [p for p, _ in pairs], [t for _, t in pairs], 0.6, 0.95
    )
    for (prompt, text), lp in zip(pairs, got):
        response = m["tok"](text + m["tok"].eos_token, add_special_tokens=False)["input_ids"]
        want = brute_force_logprob(m["model"], prompt, response, nucleus(0.6, 0.95))
        assert (lp == -math.inf and want == -math.inf) or lp == pytest.approx(want, abs=2e-4)


def test_a_small_nucleus_gives_paths_probability_zero(paths_model):
    """top_p small enough that only the argmax token survives: a path text that ever leaves the
    argmax has log-prob -inf (a random model's texts do)."""
    m = paths_model
    pairs = _pairs(m)[:6]
    got = pe.text_logprobs(
        m["model"], m["tok"], [p for p, _ in pairs], [t for _, t in pairs], 1.0, 1e-6
    )
    assert all(lp == -math.inf for lp in got)


def test_score_model_covers_every_path_of_every_problem(paths_model):
    m = paths_model
    got = pe.score_model(m["model"], m["tok"], m["rows"], False)
    assert list(got) == [r["problem_id"] for r in m["rows"]]
    for row in m["rows"]:
        rec = got[row["problem_id"]]
        assert set(rec["logp"]) == set(canonical_solutions(row["quantities"]))
        assert len(rec["logp"]) == 6
        assert 0 < rec["mass"] < 1 and 0 <= rec["entropy"] <= LN(6) + 1e-12
        total = math.fsum(math.exp(v) for v in rec["logp"].values())
        assert rec["mass"] == pytest.approx(total)


# ----------------------------------------------------------------------------- the stage


def test_stage_scores_an_hf_folder_and_a_state_dict_on_every_split(paths_model, tmp_path):
    """Step 0 from the HF folder, step 5 from a .pt state dict of perturbed weights: step 5 is
    the perturbed model's scores, not the folder's; one job writes each split's own file, the
    first two problems of one, all of the other."""
    m = paths_model
    bench = tmp_path / "hard.jsonl"
    write_jsonl(bench, m["rows"])
    perturbed = pe.load_checkpoint_model(m["dir"], m["dir"])
    with torch.no_grad():
        for p in perturbed.parameters():
            p.add_(0.05 * torch.randn_like(p))
    torch.save(perturbed.state_dict(), tmp_path / "step5.pt")
    outs = {"synthetic_hard": tmp_path / "hard" / "out.json", "synthetic": tmp_path / "n.json"}
    argv = [
        "--model", str(m["dir"]),
        "--checkpoint", f"0={m['dir']}", "--checkpoint", f"5={tmp_path / 'step5.pt'}",
        "--split", "synthetic_hard", str(bench), str(outs["synthetic_hard"]), "2",
        "--split", "synthetic", str(bench), str(outs["synthetic"]), "all",
        "--model-name", "tiny", "--run", "pacs", "--seed", "3", "--no-enable-thinking",
    ]  # fmt: skip
    docs = pe.main(argv)
    for name, n in (("synthetic_hard", 2), ("synthetic", len(m["rows"]))):
        doc = json.loads(outs[name].read_text())
        assert doc == docs[name] and doc["benchmark"] == name
        assert (doc["run"], doc["seed"], doc["n_problems"], doc["temperature"]) == (
            "pacs", 3, n, 1.0,
        )  # fmt: skip
        assert list(doc["steps"]) == ["0", "5"]
        base = pe.score_model(m["model"], m["tok"], m["rows"][:n], False)
        moved = pe.score_model(perturbed, m["tok"], m["rows"][:n], False)
        for step, want in (("0", base), ("5", moved)):
            got = doc["steps"][step]["per_problem"]
            assert list(got) == list(want)
            for pid in want:
                assert got[pid]["logp"] == pytest.approx(want[pid]["logp"], abs=1e-5)
            mean = sum(w["entropy"] for w in want.values()) / n
            assert doc["steps"][step]["entropy"] == pytest.approx(mean, abs=1e-5)
        assert doc["steps"]["0"]["entropy"] != pytest.approx(doc["steps"]["5"]["entropy"], abs=1e-6)


def test_a_row_without_quantities_names_file_line_and_field(tmp_path):
    path = tmp_path / "bad.jsonl"
    good = {"problem_id": "p0", "prompt": [{"role": "user", "content": "x"}], "quantities": [1, 2]}
    write_jsonl(path, [good, {**good, "problem_id": "p1", "quantities": None}])
    with pytest.raises(FormatError, match=r"bad\.jsonl:2.*quantities"):
        pe.load_rows(path, None)
    write_jsonl(path, [{**good, "quantities": [3, 3]}])
    with pytest.raises(FormatError, match=r"bad\.jsonl:1.*distinct"):
        pe.load_rows(path, None)


def test_a_state_dict_of_another_model_is_refused_by_name(paths_model, tmp_path):
    bad = tmp_path / "other.pt"
    torch.save({"weight": torch.zeros(2, 2)}, bad)
    with pytest.raises(ValueError, match="other.pt: not a state dict"):
        pe.load_checkpoint_model(paths_model["dir"], bad)
    with pytest.raises(FileNotFoundError, match="missing.pt"):
        pe.load_checkpoint_model(paths_model["dir"], tmp_path / "missing.pt")


@pytest.mark.parametrize("bad", ["16", "x=path", "=path", "16="])
def test_a_malformed_checkpoint_argument_is_refused(bad, capsys):
    with pytest.raises(SystemExit):
        pe.parse_args([*SPLIT_ARGS, "--split", "b", "f", "o", "all", "--checkpoint", bad])
    assert "STEP=PATH" in capsys.readouterr().err


SPLIT_ARGS = ["--model", "m", "--model-name", "t", "--run", "r", "--seed", "0"]


@pytest.mark.parametrize(
    "splits, message",
    [
        ([["b", "f", "o", "0"]], "LIMIT must be an integer >= 1 or 'all', got '0'"),
        ([["b", "f", "o", "some"]], "LIMIT must be an integer >= 1 or 'all', got 'some'"),
        ([["b", "f", "o", "all"], ["b", "g", "p", "3"]], "a benchmark given twice"),
    ],
)
def test_a_malformed_split_is_refused_naming_it(splits, message, capsys):
    argv = [*SPLIT_ARGS, "--checkpoint", "0=m"]
    for split in splits:
        argv += ["--split", *split]
    with pytest.raises(SystemExit):
        pe.parse_args(argv)
    assert message in capsys.readouterr().err
