"""The HTML report is one self-contained file: no request of any kind, in any attribute, style or script."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from ckpt_doctor.report.incident import render_report
from tests.report.conftest import NAMES, diagnosis

URL_ATTRS = {"src", "href", "xlink:href", "srcset", "action", "formaction", "data", "poster", "background", "ping"}
CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]*)", re.I)


class Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.external: list[str] = []
        self.scripts = 0
        self.tags: set[str] = set()
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "script":
            self.scripts += 1
        if tag in ("link", "iframe", "object", "embed", "img", "image", "use", "base"):
            self.external.append(f"<{tag}>")
        for k, v in attrs:
            v = v or ""
            if k in URL_ATTRS and not (v.startswith("#") or v.startswith("data:")):
                self.external.append(f"{k}={v}")
            if k == "style":
                self._css(v)
            if k.startswith("on"):
                self.external.append(f"event handler {k}")
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self._css(data)

    def _css(self, css: str) -> None:
        for m in CSS_URL.finditer(css):
            if not m.group(1).startswith("#"):
                self.external.append(f"url({m.group(1)})")
        if "@import" in css:
            self.external.append("@import")


@pytest.mark.parametrize("name", NAMES)
def test_no_external_reference(name: str) -> None:
    page = render_report(diagnosis(name), "html").text
    refs = Refs()
    refs.feed(page)
    refs.close()
    assert refs.external == []
    assert refs.scripts == 0
    assert "svg" in refs.tags or "No step chart" in page


def test_the_checker_sees_what_it_must_refuse() -> None:
    refs = Refs()
    refs.feed('<img src="https://x/y.png"><script src="//cdn/x.js"></script><a href="http://e">e</a>'
              '<div style="background: url(http://h/i)"></div><style>@import "x.css";</style>'
              '<svg><use xlink:href="https://a/b#c"/></svg>')  # fmt: skip
    assert refs.scripts == 1
    assert {"<img>", "src=https://x/y.png", "src=//cdn/x.js", "href=http://e", "url(http://h/i)", "@import"} <= set(
        refs.external
    )
