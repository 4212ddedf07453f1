"""Exit codes and output formats of contracts.md §1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ckpt_doctor.cli import main
from tests.stories import healthy_resume

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"


def rc_of(*args: str) -> int:
    return main(list(args))


def test_exit_codes(capsys, tmp_path: Path) -> None:
    assert rc_of("diagnose", "--bundle", str(EX / "healthy-resume")) == 0
    assert rc_of("diagnose", "--bundle", str(EX / "emptydir-fresh-start")) == 1
    # final-checkpoint-missing fails only at warning severity
    assert rc_of("diagnose", "--bundle", str(EX / "final-checkpoint-missing"), "--fail-on", "error") == 0
    assert rc_of("diagnose", "--bundle", str(EX / "final-checkpoint-missing"), "--fail-on", "warning") == 1
    s = healthy_resume()
    s.drop_kinds = {"Event"}
    s.not_collected = [{"what": "events", "reason": "forbidden"}]
    d = s.write(tmp_path / "b")
    assert rc_of("diagnose", "--bundle", str(d)) == 0
    assert rc_of("diagnose", "--bundle", str(d), "--strict") == 4
    assert rc_of("diagnose", "--bundle", str(EX / "nope")) == 3
    capsys.readouterr()


def test_usage_error_is_2(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        main(["diagnose", "--fail-on", "bogus"])
    assert e.value.code == 2
    # contracts.md §1: a missing or conflicting argument is a usage error, as argparse's own are
    assert main(["diagnose"]) == 2  # neither a TARGET nor --bundle
    assert main(["diagnose", "ns/x", "--bundle", str(EX / "healthy-resume")]) == 2
    assert main(["explain-error", ""]) == 2
    assert main(["rules", "show", "nope"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count(": error: ") >= 4


def test_text_output_leads_with_the_verdict(capsys) -> None:
    main(["diagnose", "--bundle", str(EX / "llamafactory-overwrite-output-dir")])
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("ckpt-doctor diagnose · TrainJob team-a/sft-resumable")
    assert lines[2].startswith("SYMPTOM") and "fresh-start-after-restart" in lines[2]
    assert "llamafactory-overwrite-output-dir" in out and "fix:" in out
    assert "\x1b[" not in out  # no colour when not a terminal


def test_markdown_output(capsys) -> None:
    main(["diagnose", "--bundle", str(EX / "no-failure-policy"), "-o", "markdown"])
    out = capsys.readouterr().out
    assert out.startswith("# ckpt-doctor: TrainJob `team-a/sft-resumable`")
    assert "## Verdict" in out and "`no-failure-policy`" in out


def test_rules_commands(capsys) -> None:
    assert main(["rules", "list"]) == 0
    assert "fresh-start-after-restart" in capsys.readouterr().out
    assert main(["rules", "show", "missing-ancestor-label"]) == 0
    out = capsys.readouterr().out
    assert "Explains: overrides-not-applied, fresh-start-after-restart" in out
    assert main(["rules", "graph", "-o", "mermaid"]) == 0
    assert "missing_ancestor_label --> overrides_not_applied" in capsys.readouterr().out
    assert main(["rules", "graph", "-o", "dot"]) == 0
    assert '"no-failure-policy" -> "job-failed-without-restart"' in capsys.readouterr().out
    assert main(["rules", "show", "nope"]) == 2
    assert main(["rules", "graph", "-o", "text"]) == 0  # the contract's text, json, mermaid, dot
    direct: dict[str, list[str]] = {}
    for line in capsys.readouterr().out.split("\n\n", 1)[0].splitlines():
        if not line.startswith(" "):
            direct[line] = []
        elif line.startswith("  ← "):
            direct[list(direct)[-1]].append(line.removeprefix("  ← "))
    from ckpt_doctor.engine.catalogue import default_rules
    from ckpt_doctor.engine.checks import load_checks
    from ckpt_doctor.engine.graph import build_graph

    g = build_graph(list(default_rules()), load_checks())
    assert direct == {n: sorted(g.predecessors(n)) for n in g if g.nodes[n]["kind"] == "symptom"}


def test_console_script_and_module_entry_points() -> None:
    exe = Path(sys.executable).parent
    for cmd in (
        [str(exe / "ckpt-doctor"), "--version"],
        [str(exe / "kubectl-ckpt_doctor"), "--version"],
        [sys.executable, "-m", "ckpt_doctor", "--version"],
    ):
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        assert out.strip() == "ckpt-doctor 0.1.0"


@pytest.mark.parametrize("verb", ["diagnose", "collect"])
@pytest.mark.parametrize("flag", ["--log-bytes", "--concurrency"])
def test_log_reading_flags_are_positive_whole_numbers(verb: str, flag: str, capsys) -> None:
    for bad in ("0", "-5", "lots"):
        with pytest.raises(SystemExit) as e:
            main([verb, "team-a/x", "-o", "out.tar.gz", flag, bad] if verb == "collect" else [verb, "x", flag, bad])
        assert e.value.code == 2
    assert flag in capsys.readouterr().err


@pytest.mark.parametrize("verb", ["diagnose", "collect", "report", "rbac", "watch", "drill", "mcp", "analyzer"])
def test_the_request_timeout_is_a_positive_number_of_seconds(verb: str, capsys) -> None:
    for bad in ("0", "-1", "nan", "inf", "soon"):  # -1 reached urllib3, which called it a connection error
        with pytest.raises(SystemExit) as e:
            main([verb, "--request-timeout", bad])
        assert e.value.code == 2, (verb, bad)
        assert "argument --request-timeout" in capsys.readouterr().err, (verb, bad)


def test_the_default_log_window_is_the_engines() -> None:
    from ckpt_doctor.cli import LOG_WINDOW
    from ckpt_doctor.facts.logs import HEAD_BYTES, TAIL_BYTES

    assert LOG_WINDOW == HEAD_BYTES == TAIL_BYTES  # cli.py keeps a copy so that --help stays fast


@pytest.mark.parametrize(
    ("argv", "verb", "says"),
    [
        (["diagnose", "team-a/x", "--bogus"], "diagnose", "unrecognized arguments: --bogus"),
        (["diagnose", "team-a/x", "-o", "yaml"], "diagnose", "invalid choice: 'yaml'"),
        (["diagnose", "--request-timeout", "0", "team-a/x"], "diagnose", "--request-timeout"),
        (["lint"], "lint", "required: FILE_OR_DIR"),
        (["rules", "show"], "rules show", "required"),
        (["nosuchverb"], "", "invalid choice: 'nosuchverb'"),
    ],
)
def test_a_usage_error_is_one_line_naming_the_verb(argv: list[str], verb: str, says: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """An unknown flag after a verb printed the top-level usage; a bad value printed the verb's whole usage (15
    lines) above the one line that mattered. Now: exit 2, one line, the verb's name and where its help is."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    prog = f"ckpt-doctor {verb}".strip()
    assert err.count("\n") == 1 and err.startswith(f"{prog}: error: ") and says in err, err
    assert f"(see `{prog} --help`)" in err
