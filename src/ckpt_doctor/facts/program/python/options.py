"""The program's argparse options and its argument parsers."""

from __future__ import annotations

import ast

from ckpt_doctor.facts.program.python.facts import (
    Option,
    Site,
    Value,
)


class Options:
    def options(self) -> dict[str, Option]:
        out: dict[str, Option] = {}
        for node, _stmt, func in self.by_attr.get("add_argument", ()):
            flags = tuple(a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
            if not flags:
                continue
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            dest = None
            if "dest" in kw and isinstance(kw["dest"], ast.Constant) and isinstance(kw["dest"].value, str):
                dest = kw["dest"].value
            if dest is None:
                longs = [f for f in flags if f.startswith("--")]
                pick = longs[0] if longs else flags[0]
                dest = pick.lstrip("-").replace("-", "_")
            required = False
            if "required" in kw and isinstance(kw["required"], ast.Constant):
                required = bool(kw["required"].value)
            action = kw.get("action")
            act = action.value if isinstance(action, ast.Constant) else None
            if "default" in kw:
                default = self.value(kw["default"], func)
                default = Value(default.const, default.known, default.source, "argparse-default")
            elif act == "store_true":
                default = Value(False, True, "", "argparse-default")
            elif act == "store_false":
                default = Value(True, True, "", "argparse-default")
            elif required or not flags[0].startswith("-"):
                default = Value(None, False, "", "argparse-default")
            else:
                default = Value(None, True, "", "argparse-default")
            if required:
                default = Value(None, False, default.source, "argparse-default")
            out.setdefault(dest, Option(dest, flags, default, self.site(node), required))
        return out

    def _argparse_option(self, node: ast.Attribute) -> Option | None:
        opts = self._opts
        if not opts or node.attr not in opts:
            return None
        base = node.value
        name = base.id if isinstance(base, ast.Name) else (base.attr if isinstance(base, ast.Attribute) else "")
        if name in self.parsed_args or name in ("args", "opt", "opts", "flags", "FLAGS", "cfg", "hparams", "a"):
            return opts[node.attr]
        return None

    def _arg_parsers(self) -> dict[str, Site]:
        out: dict[str, Site] = {}
        for name in ("HfArgumentParser", "TrlParser", "ArgumentParser"):
            for node, _s, _f in self.by_attr.get(name, ()):
                out.setdefault("argparse" if name == "ArgumentParser" else name, self.site(node))
        return out
