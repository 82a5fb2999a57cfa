"""The grade stage: real graders on a hand-made benchmark, plumbing with a fake grader, errors."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pacs.evaluation import grade
from pacs.evaluation.io import FormatError


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def sample(pid: str, idx: int, response: str) -> dict:
    return {
        "problem_id": pid,
        "sample_idx": idx,
        "response": response,
        "finish_reason": "stop",
        "n_tokens": 5,
    }


def math_row(pid: str, answer: str) -> dict:
    return {
        "problem_id": pid,
        "benchmark": "synthetic",
        "task": "math",
        "answer": answer,
        "problem": "p",
        "prompt": [{"role": "user", "content": "p"}],
    }


@dataclass
class FakeResult:
    score: float
    extracted: str | None
    status: str
    details: dict = field(default_factory=dict)


def test_grade_cli_with_real_graders(tmp_path, capsys):
    bench = write_jsonl(
        tmp_path / "bench.jsonl",
        [
            math_row("m/1", "2"),
            math_row("m/2", "\\frac{1}{2}"),
            {
                "problem_id": "g/1",
                "benchmark": "gpqa",
                "task": "gpqa",
                "answer": "C",
                "problem": "q",
                "prompt": [{"role": "user", "content": "q"}],
                "options": ["w", "x", "y", "z"],
                "seed": 1,
            },
        ],
    )
    samples = write_jsonl(
        tmp_path / "samples.jsonl",
        [
            sample("m/1", 0, "1 + 1 = \\boxed{2}"),
            sample("m/1", 1, "so \\boxed{3}"),
            sample("m/1", 2, "I do not know"),
            sample("m/2", 0, "half: \\boxed{0.5}"),
            sample("g/1", 0, "The answer is \\boxed{C}"),
        ],
    )
    out = tmp_path / "graded.jsonl"
    counts = grade.main(
        [
            "--samples",
            str(samples),
            "--benchmark-file",
            str(bench),
            "--out",
            str(out),
            "--workers",
            "1",
        ]
    )
    got = read_jsonl(out)
    assert [(r["problem_id"], r["sample_idx"]) for r in got] == [
        ("m/1", 0),
        ("m/1", 1),
        ("m/1", 2),
        ("m/2", 0),
        ("g/1", 0),
    ]
    assert [r["score"] for r in got] == [1.0, 0.0, 0.0, 1.0, 1.0]
    assert [r["status"] for r in got] == ["ok", "ok", "no_answer", "ok", "ok"]
    assert [r["task"] for r in got] == ["math"] * 4 + ["gpqa"]
    assert got[2]["extracted"] is None and got[4]["extracted"] == "C"
    assert all(r["response"] and r["finish_reason"] == "stop" for r in got)
    assert counts == {"ok": 4, "no_answer": 1, "timeout": 0, "error": 0}
    assert "'no_answer': 1" in capsys.readouterr().out


def fake_code_or_exact_grader(calls: list):
    """A ``grade_rows`` stand-in: code passes when the response says "ok", math by equality;
    each call's (rows, workers) appended to ``calls``."""

    def fake_grade_rows(rows, responses, workers=2):
        calls.append((len(rows), workers))
        assert all(not k.startswith("_") for r in rows for k in r), (
            "loader bookkeeping leaked to the grader"
        )
        out = []
        for row, resp in zip(rows, responses):
            if row["task"] == "code":
                ok = "ok" in resp
                tests = ["pass", "pass"] if ok else ["pass", "timeout"]
                status = "ok" if ok else "timeout"
                out.append(FakeResult(float(ok), None, status, {"tests_status": tests}))
            else:
                out.append(FakeResult(float(resp == row["answer"]), resp, "ok"))
        return out

    return fake_grade_rows


def test_grade_plumbing_with_fake_grader(tmp_path, monkeypatch):
    calls = []
    fake_grade_rows = fake_code_or_exact_grader(calls)
    monkeypatch.setattr("pacs.rewards.grade_rows", fake_grade_rows)
    bench = write_jsonl(
        tmp_path / "bench.jsonl",
        [
            {
                "problem_id": "c/1",
                "benchmark": "livecodebench",
                "task": "code",
                "answer": "",
                "problem": "p",
                "prompt": [{"role": "user", "content": "p"}],
                "tests": [],
                "fn_name": None,
                "starter_code": "",
            },
            math_row("m/1", "7"),
        ],
    )
    samples = write_jsonl(
        tmp_path / "samples.jsonl",
        [sample("c/1", i, r) for i, r in enumerate(["ok", "slow", "ok"])] + [sample("m/1", 0, "7")],
    )
    out = tmp_path / "graded.jsonl"
    counts = grade.main(
        ["--samples", str(samples), "--benchmark-file", str(bench), "--out", str(out)]
        + ["--workers", "3", "--chunk-size", "2"]
    )
    assert calls == [(2, 3), (2, 3)]
    got = read_jsonl(out)
    assert [r["tests_status"] for r in got[:3]] == [
        ["pass", "pass"],
        ["pass", "timeout"],
        ["pass", "pass"],
    ]
    assert "tests_status" not in got[3]
    assert list(got[3]) == [
        "problem_id",
        "sample_idx",
        "response",
        "finish_reason",
        "n_tokens",
        "task",
        "score",
        "extracted",
        "status",
    ]
    assert counts == {"ok": 3, "no_answer": 0, "timeout": 1, "error": 0}


def test_unknown_problem_id_names_file_row_and_field(tmp_path):
    bench = write_jsonl(tmp_path / "bench.jsonl", [math_row("m/1", "2")])
    samples = write_jsonl(
        tmp_path / "samples.jsonl", [sample("m/1", 0, "x"), sample("m/9", 0, "y")]
    )
    with pytest.raises(
        FormatError,
        match=r"samples\.jsonl:2: field 'problem_id' 'm/9' is not in benchmark file .*bench\.jsonl",
    ):
        grade.main(
            [
                "--samples",
                str(samples),
                "--benchmark-file",
                str(bench),
                "--out",
                str(tmp_path / "g.jsonl"),
            ]
        )
    assert not (tmp_path / "g.jsonl").exists()


def test_duplicate_sample_and_bad_benchmark_are_errors(tmp_path):
    bench = write_jsonl(tmp_path / "bench.jsonl", [math_row("m/1", "2")])
    samples = write_jsonl(
        tmp_path / "samples.jsonl", [sample("m/1", 0, "x"), sample("m/1", 0, "y")]
    )
    with pytest.raises(
        FormatError, match=r"samples\.jsonl:2: field 'sample_idx' 0 .*duplicates line 1"
    ):
        grade.main(
            [
                "--samples",
                str(samples),
                "--benchmark-file",
                str(bench),
                "--out",
                str(tmp_path / "g.jsonl"),
            ]
        )
    dup = write_jsonl(tmp_path / "dup.jsonl", [math_row("m/1", "2"), math_row("m/1", "3")])
    with pytest.raises(
        FormatError, match=r"dup\.jsonl:2: field 'problem_id' 'm/1' duplicates line 1"
    ):
        grade.main(
            [
                "--samples",
                str(samples),
                "--benchmark-file",
                str(dup),
                "--out",
                str(tmp_path / "g.jsonl"),
            ]
        )
