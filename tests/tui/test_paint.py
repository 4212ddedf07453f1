"""`when_painted`: work that would hold back the thread writing the first frame waits until the
driver's output queue has drained (or a bound has passed); without an output thread it runs at once.

The output queue is a stand-in whose size the test sets: no timing is asserted, only the order.
"""

from __future__ import annotations

from types import SimpleNamespace

from textual.app import App, ComposeResult
from textual.widgets import Static

from ckpt_doctor.tui.paint import AfterPaint, when_painted


class Queue:
    def __init__(self, items: int) -> None:
        self.items = items
        self.looks = 0

    def qsize(self) -> int:
        self.looks += 1
        return self.items


class One(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("one")


async def _until(pilot, cond, rounds: int = 400) -> None:  # type: ignore[no-untyped-def]
    for _ in range(rounds):
        if cond():
            return
        await pilot.pause(0.01)


async def test_the_work_waits_until_the_output_queue_has_drained() -> None:
    app = One()
    async with app.run_test() as pilot:
        queue = Queue(3)
        app._driver._writer_thread = SimpleNamespace(_queue=queue)  # type: ignore[union-attr]
        calls: list[int] = []
        when_painted(app, lambda: calls.append(queue.items), limit=60)
        while queue.items:
            looks = queue.looks
            await _until(pilot, lambda looks=looks: queue.looks > looks + 1)
            assert calls == []  # text still queued: the work waits
            queue.items -= 1
        await _until(pilot, lambda: bool(calls))
        assert calls == [0]
        looks = queue.looks
        await _until(pilot, lambda: queue.looks > looks, rounds=5)
        assert queue.looks == looks and calls == [0]  # looked no more, called once


async def test_an_app_that_keeps_writing_does_not_hold_the_work_back_for_ever() -> None:
    app = One()
    async with app.run_test() as pilot:
        app._driver._writer_thread = SimpleNamespace(_queue=Queue(5))  # type: ignore[union-attr]
        calls: list[str] = []
        when_painted(app, lambda: calls.append("ran"), limit=0.05)
        await _until(pilot, lambda: bool(calls))
        assert calls == ["ran"]


async def test_without_an_output_thread_the_work_runs_on_the_next_turn() -> None:
    app = One()
    async with app.run_test() as pilot:
        calls: list[str] = []
        when_painted(app, lambda: calls.append("ran"))
        assert calls == []
        await _until(pilot, lambda: bool(calls))
        assert calls == ["ran"]


async def test_a_deferred_widget_is_mounted_in_place_of_its_placeholder() -> None:
    class Deferred(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("top", id="top")
            yield AfterPaint(Static("body", id="body"))
            yield Static("bottom", id="bottom")

    app = Deferred()
    async with app.run_test() as pilot:
        await _until(pilot, lambda: bool(app.query("#body")))
        assert [w.id for w in app.screen.children] == ["top", "body", "bottom"]
