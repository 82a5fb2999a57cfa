"""The paths task's hard held-out split (pacs.data.synthetic.paths: carries, canonical solution
texts, make_hard_split; pacs.data.synthetic.hard_split: its stage): hand-computed carries, exact
enumeration, bad input."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from pacs.config import load_profile
from pacs.data.files import check_manifest
from pacs.data.synthetic import hard_split as hs
from pacs.data.synthetic import paths as pt
from pacs.io import read_jsonl, write_jsonl
from pacs.rewards.math import grade

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (12, 7, 0),  # 2+7 = 9
        (27, 48, 1),  # 7+8 = 15 carries; 2+4+1 = 7 does not
        (95, 5, 2),  # 5+5 = 10, then 9+0+1 = 10
        (999, 1, 3),
        (50, 50, 1),  # only the tens carry
        (0, 0, 0),
        (75, 39, 2),  # 5+9 = 14, 7+3+1 = 11
    ],
)
def test_carries_hand_computed(a, b, expected):
    assert pt.carries(a, b) == expected == pt.carries(b, a)


def test_chain_and_fewest_carries_hand_computed():
    # 27+48=75 (1 carry), 75+39=114 (2 carries)
    assert pt.chain_carries([27, 48, 39]) == 3
    # 48+39=87 (1: 8+9), 87+27=114 (2: 7+7, 8+2+1)
    assert pt.chain_carries([48, 39, 27]) == 3
    # 5+15=20 carries once, 20+25=45 not; every order of (5, 15, 25) carries exactly once
    assert [pt.chain_carries(o) for o in itertools.permutations([5, 15, 25])] == [1] * 6
    assert pt.fewest_carries([5, 15, 25]) == 1
    assert pt.fewest_carries([1, 2, 3]) == 0
    with pytest.raises(ValueError, match="non-negative"):
        pt.carries(-1, 3)


def test_canonical_solutions_are_the_six_paths_in_the_sft_format():
    texts = pt.canonical_solutions([12, 7, 25])
    assert len(texts) == 6
    assert texts["25-12-7"] == "25+12=37. 37+7=44. The answer is \\boxed{44}."
    for path, text in texts.items():
        assert pt.parse_path(text, [12, 7, 25]) == tuple(int(v) for v in path.split("-"))
        assert grade(text, "44").score == 1.0


def test_hard_value_sets_is_every_qualifying_set_by_exact_enumeration():
    """Against a second, independent enumeration: every 3-subset of 40..50 whose every ordered
    chain, added digit by digit with str(), carries at least twice."""

    def carries_by_strings(a, b):
        n, carry = 0, 0
        x, y = str(a)[::-1], str(b)[::-1]
        for i in range(max(len(x), len(y))):
            d = int(x[i] if i < len(x) else 0) + int(y[i] if i < len(y) else 0) + carry
            carry = int(d >= 10)
            n += carry
        return n

    def chain(order):
        total, n = order[0], 0
        for v in order[1:]:
            n, total = n + carries_by_strings(total, v), total + v
        return n

    want = [
        s
        for s in itertools.combinations(range(40, 51), 3)
        if all(chain(o) >= 2 for o in itertools.permutations(s))
    ]
    assert pt.hard_value_sets(3, 40, 50, 2) == want
    assert 0 < len(want) < 165  # some, not all, of C(11, 3) = 165


def test_hard_split_rows_are_hard_in_range_correct_and_disjoint():
    taken = {r["problem"] for r in pt.make_hard_split(9, 40, set(), min_operand=30, min_carries=3)}
    rows = pt.make_hard_split(9, 40, taken, min_operand=30, min_carries=3)
    assert [r["problem_id"] for r in rows] == [f"synthetic_hard/{i}" for i in range(40)]
    assert len({r["problem"] for r in rows}) == 40 and not taken & {r["problem"] for r in rows}
    # each set of quantities once
    assert len({tuple(sorted(r["quantities"])) for r in rows}) == 40
    for r in rows:
        q = r["quantities"]
        assert len(q) == 3 and len(set(q)) == 3 and all(30 <= v <= 50 for v in q)
        assert pt.fewest_carries(q) >= 3
        assert r["benchmark"] == pt.HARD_BENCHMARK and r["answer"] == str(sum(q))
        assert pt.parse_path(r["solution"], q) is not None
        assert grade(r["solution"], r["answer"]).score == 1.0
        assert r["problem"] in r["prompt"][0]["content"]
    assert rows == pt.make_hard_split(9, 40, taken, min_operand=30, min_carries=3)
    assert rows != pt.make_hard_split(10, 40, taken, min_operand=30, min_carries=3)


@pytest.mark.parametrize(
    ("knobs", "match"),
    [
        ({"terms": 1}, "terms"),
        ({"min_operand": 49, "max_operand": 50}, "distinct"),
        ({"min_carries": -1}, "min_carries"),
        ({"min_operand": 1, "max_operand": 9, "min_carries": 3}, "only 0 sets of quantities"),
    ],
)
def test_bad_hard_knobs_are_refused(knobs, match):
    with pytest.raises(ValueError, match=match):
        pt.make_hard_split(0, 3, set(), **knobs)


def test_every_qualifying_set_once_at_most():
    """48..50 holds one qualifying set: one problem is possible, two are not."""
    assert pt.hard_value_sets(3, 48, 50, 2) == [(48, 49, 50)]
    assert len(pt.make_hard_split(0, 1, set(), min_operand=48, min_carries=2)) == 1
    with pytest.raises(ValueError, match="2 problems asked for, but only 1 sets"):
        pt.make_hard_split(0, 2, set(), min_operand=48, min_carries=2)


def _splits(tmp_path, rows_per_split=3):
    for split in ("sft", "train", "test"):
        write_jsonl(tmp_path / f"{split}.jsonl", pt.make_splits(1, 4, 4, 4)[split])
    return tmp_path


def test_the_stage_writes_a_manifested_split_disjoint_from_the_others(tmp_path):
    splits = _splits(tmp_path / "synthetic")
    spec = load_profile(REPO_ROOT / "configs" / "science.yaml").study.hard
    out = tmp_path / "eval" / "synthetic_hard.jsonl"
    args = spec.cli_args().replace(f"--n {spec.n}", "--n 12").split()
    hs.main(["--splits-dir", str(splits), "--out", str(out), *args])
    rows = read_jsonl(out)
    assert len(rows) == 12
    manifest = check_manifest(out, required=True)
    assert manifest["rows"] == 12 and manifest["params"]["min_carries"] == spec.min_carries
    assert not {r["problem"] for r in rows} & hs.split_texts(splits)
    assert sorted(p.name for p in out.parent.iterdir()) == [
        "synthetic_hard.jsonl",
        "synthetic_hard.manifest.json",
    ]


def test_a_missing_split_or_a_bad_row_is_named(tmp_path):
    splits = _splits(tmp_path)
    (splits / "train.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match=r"train\.jsonl: split file not found"):
        hs.split_texts(splits)
    rows = read_jsonl(splits / "test.jsonl")
    rows[1]["problem"] = None
    write_jsonl(splits / "train.jsonl", rows)
    with pytest.raises(ValueError, match=r"train\.jsonl, row 2, field 'problem': must be a string"):
        hs.split_texts(splits)


def test_the_stage_refuses_n_below_one(tmp_path, capsys):
    with pytest.raises(SystemExit):
        hs.parse_args(["--splits-dir", "x", "--out", "y", "--seed", "0", "--n", "0"])
    assert "--n must be >= 1" in capsys.readouterr().err


def test_make_problem_draws_what_it_drew_before_problem_row_was_split_out():
    """The science profile's splits must not change: a seeded row, as the code before the
    refactor drew it (checked then on all 24200 rows of the profile's splits)."""
    import random

    row = pt.make_problem(random.Random(0))
    assert row["quantities"] == [33, 32, 26]
    assert row["problem"] == (
        "Sam has three bags of coins with 33, 32 and 26 coins. How many coins does Sam have in all?"
    )
    assert row["solution"] == "32+26=58. 58+33=91. The answer is \\boxed{91}."
    assert (row["benchmark"], row["answer"], row["problem_id"]) == ("synthetic", "91", "")
