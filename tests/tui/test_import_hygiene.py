"""What loads when: the engine never imports Textual, the CLI does not pay for it, and the app's first
frame comes before the engine and the kubernetes client are imported.

Each check runs in a fresh interpreter: `sys.modules` there is the only honest proof that an import
was deferred.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.fakeapi import FakeKube
from tests.tui.conftest import NAME, NS, ROOT

ENGINE = [
    "ckpt_doctor.pipeline",
    "ckpt_doctor.engine.walk",
    "ckpt_doctor.engine.catalogue",
    "ckpt_doctor.engine.graph",
    "ckpt_doctor.engine.checks",
    "ckpt_doctor.facts.context",
    "ckpt_doctor.scope",
    "ckpt_doctor.sources.bundle",
    "ckpt_doctor.report.markdown",
    "ckpt_doctor.report.jsonout",
]


def loaded_after(code: str, *probes: str) -> dict[str, bool]:
    """Run `code` in a new interpreter and say which of `probes` are in sys.modules afterwards."""
    script = code + f"\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {list(probes)!r}}}))\n"
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_engine_never_imports_textual() -> None:
    code = "\n".join(f"import {m}" for m in ENGINE)
    code += "\nfrom ckpt_doctor.pipeline import diagnose_snapshot\nfrom ckpt_doctor.sources.bundle import open_bundle\n"
    code += "with open_bundle('examples/final-checkpoint-missing') as s:\n    diagnose_snapshot(s)\n"
    got = loaded_after(code, "textual", "kubernetes", "ckpt_doctor.tui")
    assert got == {"textual": False, "kubernetes": False, "ckpt_doctor.tui": False}


def test_the_cli_does_not_import_textual_or_kubernetes_until_needed() -> None:
    got = loaded_after(
        "from ckpt_doctor.cli import build_parser\nbuild_parser()", "textual", "ckpt_doctor.tui.app", "kubernetes"
    )
    assert got == {"textual": False, "ckpt_doctor.tui.app": False, "kubernetes": False}


def test_the_app_module_leaves_the_engine_and_the_cluster_client_for_later() -> None:
    got = loaded_after(
        "import ckpt_doctor.tui.app",
        "textual",
        "networkx",
        "ruamel.yaml",
        "kubernetes",
        "ckpt_doctor.engine.walk",
        "ckpt_doctor.sources.live",
    )
    assert got == {
        "textual": True,
        "networkx": False,
        "ruamel.yaml": False,
        "kubernetes": False,
        "ckpt_doctor.engine.walk": False,
        "ckpt_doctor.sources.live": False,
    }


FIRST_FRAME = textwrap.dedent(
    """
    import asyncio, json, sys
    from ckpt_doctor.tui.app import DoctorApp
    from ckpt_doctor.tui.target import Target

    seen = {}

    class Probe(DoctorApp):
        def on_ready(self):
            seen["at_first_frame"] = {m: m in sys.modules for m in ("kubernetes", "networkx")}
            super().on_ready()

    async def main():
        app = Probe(Target(trainjob=sys.argv[1], kubeconfig=sys.argv[2], timeout=5.0))
        async with app.run_test(size=(80, 24)) as pilot:
            for _ in range(50):
                await pilot.pause(0.1)
                if app.view is not None or app.error:
                    break
            seen["after"] = {m: m in sys.modules for m in ("kubernetes", "networkx")}
            seen["verdict"] = app.view.verdict[0].symptom.id if app.view else app.error
    asyncio.run(main())
    print(json.dumps(seen))
    """
)


def test_first_frame_comes_before_the_kubernetes_client(fake_kube: tuple[FakeKube, Path]) -> None:
    _, kubeconfig = fake_kube
    out = subprocess.run(
        [sys.executable, "-c", FIRST_FRAME, f"{NS}/{NAME}", str(kubeconfig)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["at_first_frame"] == {"kubernetes": False, "networkx": False}
    assert seen["after"] == {"kubernetes": True, "networkx": False}  # the rule graph is walked without it
    assert seen["verdict"] == "final-checkpoint-missing"


READER_FIRST = textwrap.dedent(
    """
    import json, sys, time
    from ckpt_doctor.tui import source

    seen = {}

    class Stop(BaseException):
        pass

    start, close = source.BundleLoader.start, source.BundleLoader.close

    def probe_start(self):
        seen["textual_before_start"] = "textual" in sys.modules
        seen["readers_before_start"] = [m for m in ("ckpt_doctor.sources.bundle", "ckpt_doctor.yamlio", "yaml")
                                        if m in sys.modules]  # the child imports them, on its own core
        start(self)
        seen["forked"] = self._run is not None and self._run.pid is not None
        end = time.monotonic() + 30
        while not self._run._backlog and time.monotonic() < end:  # the child sends its first frames
            time.sleep(0.01)
        time.sleep(0.2)  # time enough for an eager reader to unpickle what came
        seen["frames_came"] = bool(self._run._backlog)
        seen["unpickled_unasked"] = self._run.rows is not None or "ckpt_doctor.tui.model" in sys.modules
        raise Stop

    def probe_close(self):
        seen["closed"] = True
        close(self)

    source.BundleLoader.start, source.BundleLoader.close = probe_start, probe_close
    source.head_start = lambda: True  # as on a machine with a processor to spare (see test_source)
    import ckpt_doctor.commands.tui as tui_verb
    tui_verb.need_terminal = lambda: None  # no terminal here: this probe stops before the app draws
    from ckpt_doctor.cli import main

    try:
        main(["tui", "--bundle", "examples/final-checkpoint-missing"])
    except Stop:
        pass
    print(json.dumps(seen))
    """
)


def test_the_bundle_reader_starts_before_textual_and_holds_its_frames_until_asked() -> None:
    # the fork copies a small process, the reading overlaps Textual's import, and the app's start
    # never shares the GIL with unpickling the results
    out = subprocess.run([sys.executable, "-c", READER_FIRST], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {
        "textual_before_start": False,
        "readers_before_start": [],
        "forked": True,
        "frames_came": True,
        "unpickled_unasked": False,
        "closed": True,
    }


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["tui", "--bundle", "no/such/dir"], 3),  # input: no such bundle
        (["tui", "a/b", "--bundle", "examples"], 2),  # usage: a target and a bundle
        (["tui", "--bundle", "examples", "--refresh", "0"], 2),  # usage: a bad --refresh
    ],
)
def test_bad_flags_fail_before_the_app_starts(argv: list[str], code: int) -> None:
    from ckpt_doctor.cli import main

    assert main(argv) == code


def test_a_broken_signature_directory_fails_before_the_app_starts(tmp_path: Path) -> None:
    from ckpt_doctor.cli import main

    (tmp_path / "bad.yaml").write_text("framework: x\nsignatures:\n  - id: x\n    event: nope\n")
    assert main(["tui", "--bundle", "examples/final-checkpoint-missing", "--signatures", "no/such/dir"]) == 3
    assert main(["tui", "--bundle", "examples/final-checkpoint-missing", "--signatures", str(tmp_path)]) == 3


@pytest.mark.parametrize(
    "argv",
    [
        ["tui", "--bundle", "no/such/dir"],
        ["diagnose", "--bundle", "no/such/dir"],
        ["lint", "no/such/dir"],
    ],
)
def test_an_unknown_trainer_version_is_a_usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from ckpt_doctor.cli import main

    with pytest.raises(SystemExit) as e:
        main([*argv, "--trainer-version", "two"])
    assert e.value.code == 2
    assert "unknown Trainer version 'two'" in capsys.readouterr().err


AT_FIRST_FRAME = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from textual.app import App
    from textual.widgets import Static

    seen = {}
    if sys.argv[1] == "bare":
        class Probe(App):
            def compose(self):
                yield Static("bare")
            def on_ready(self):
                seen["modules"] = sorted(sys.modules)
        app = Probe()
    else:
        import ckpt_doctor.cli, ckpt_doctor.commands.tui, ckpt_doctor.tui.source  # what `ckpt-doctor tui` runs first
        from ckpt_doctor.tui.app import DoctorApp
        from ckpt_doctor.tui.target import Target

        class Probe(DoctorApp):
            def on_ready(self):
                seen["modules"] = sorted(sys.modules)
                super().on_ready()
        app = Probe(Target(bundle=Path("examples/final-checkpoint-missing")))

    async def main():
        async with app.run_test(size=(80, 24)) as pilot:
            while "modules" not in seen:
                await pilot.pause(0.05)
    asyncio.run(main())
    print(json.dumps(seen["modules"]))
    """
)
# The app's own modules that may load before its first frame: the CLI's path to the app, the app,
# its first screens and their widgets. A new one here is start-up time: keep it off this path.
BEFORE_FIRST_FRAME = {
    "ckpt_doctor",
    "ckpt_doctor.cli",
    "ckpt_doctor.commands",
    "ckpt_doctor.commands.tui",
    "ckpt_doctor.errors",
    "ckpt_doctor.sources",
    "ckpt_doctor.sources.archive_limits",
    "ckpt_doctor.tui",
    "ckpt_doctor.tui.app",
    "ckpt_doctor.tui.commands",
    "ckpt_doctor.tui.paint",
    "ckpt_doctor.tui.source",
    "ckpt_doctor.tui.target",
    "ckpt_doctor.tui.screens",
    "ckpt_doctor.tui.screens.base",
    "ckpt_doctor.tui.screens.filtering",
    "ckpt_doctor.tui.screens.overview",
    "ckpt_doctor.tui.screens.picker",
    "ckpt_doctor.tui.widgets",
    "ckpt_doctor.tui.widgets.banner",
    "ckpt_doctor.tui.widgets.filterbar",
    "ckpt_doctor.tui.widgets.guard",
    "ckpt_doctor.tui.widgets.header",
    "ckpt_doctor.tui.widgets.keyfooter",
    "ckpt_doctor.tui.widgets.navbar",
    "ckpt_doctor.tui.widgets.objtree",
    "ckpt_doctor.tui.widgets.safelists",
    "ckpt_doctor.tui.widgets.tone",
    "ckpt_doctor.tui.widgets.verdict",
}


def test_before_its_first_frame_the_app_loads_little_beyond_a_bare_textual_app() -> None:
    """Which modules are loaded when the first frame is composed, against a bare Textual app's: the
    app's own start-up modules listed above, more of Textual and Rich, a few of the standard
    library; no engine, no YAML, no cluster client, no other third-party package."""
    mods = {}
    for kind in ("bare", "app"):
        out = subprocess.run(
            [sys.executable, "-c", AT_FIRST_FRAME, kind], cwd=ROOT, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        mods[kind] = set(json.loads(out.stdout.strip().splitlines()[-1]))
    extra = mods["app"] - mods["bare"]
    own = {m for m in extra if m.split(".")[0] == "ckpt_doctor"}
    assert own <= BEFORE_FIRST_FRAME, sorted(own - BEFORE_FIRST_FRAME)
    others = {m for m in extra - own if m.split(".")[0] not in ("textual", "rich")}
    assert all(m.split(".")[0] in sys.stdlib_module_names for m in others), sorted(others)
    assert len(others) <= 10, sorted(others)  # today: argparse, gettext, tarfile and its helpers
