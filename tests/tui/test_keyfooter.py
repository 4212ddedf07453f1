"""The footer shows the keys Textual's Footer shows, and rebuilds only when they change."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Static
from textual.widgets._footer import FooterKey

from ckpt_doctor.tui.widgets.keyfooter import KeyFooter


class Keys(App[None]):
    BINDINGS = [
        Binding("a", "alpha", "Alpha"),
        Binding("b", "beta", "Beta"),
        Binding("c", "gamma", "Hidden", show=False),
    ]
    beta_on = False

    def __init__(self, footer: type[Footer]) -> None:
        super().__init__()
        self.footer_class = footer
        self.rebuilds = 0

    def compose(self) -> ComposeResult:
        yield Static("body")
        yield self.footer_class()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return None if action == "beta" and not self.beta_on else True  # None: shown dimmed

    def action_alpha(self) -> None: ...
    def action_beta(self) -> None: ...
    def action_gamma(self) -> None: ...


def shown(app: App) -> list[tuple[str, str, bool]]:
    return [(k.key, k.description, k.has_class("-disabled")) for k in app.screen.query(FooterKey)]


async def keys_of(footer: type[Footer]) -> tuple[list, list]:
    app = Keys(footer)
    async with app.run_test() as pilot:
        await pilot.pause()
        before = shown(app)
        app.beta_on = True
        app.refresh_bindings()
        await pilot.pause()
        return before, shown(app)



async def test_the_same_keys_as_textual_s_footer() -> None:
    theirs, ours = await keys_of(Footer), await keys_of(KeyFooter)
    assert ours == theirs
    palette = ("ctrl+p", "palette", False)
    assert ours[0] == [("a", "Alpha", False), ("b", "Beta", True), palette]  # dimmed until it can act
    assert ours[1] == [("a", "Alpha", False), ("b", "Beta", False), palette]  # then rebuilt, enabled


async def test_signals_that_change_nothing_rebuild_nothing() -> None:
    app = Keys(KeyFooter)
    async with app.run_test() as pilot:
        await pilot.pause()
        footer = app.screen.query_one(KeyFooter)
        calls = []
        rebuild = footer.recompose

        async def counted() -> None:
            calls.append(1)
            await rebuild()

        footer.recompose = counted  # type: ignore[method-assign]
        first = list(app.screen.query(FooterKey))
        for _ in range(5):
            app.screen.refresh_bindings()
        await pilot.pause()
        assert calls == [] and list(app.screen.query(FooterKey)) == first  # the same widgets, kept
        app.beta_on = True
        for _ in range(5):  # five signals before the next refresh: one rebuild
            app.screen.refresh_bindings()
        await pilot.pause()
        assert calls == [1] and ("b", "Beta", False) in shown(app)
