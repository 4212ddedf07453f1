"""Simple commands: their words, redirections, here-documents and environment, recorded in order."""

from __future__ import annotations

import posixpath
import re
from typing import Any

from ckpt_doctor.facts.program.shell.env import _Env, _Var
from ckpt_doctor.facts.program.shell.expand import _Acc
from ckpt_doctor.facts.program.shell.heredoc import _HD
from ckpt_doctor.facts.program.shell.program import Command, HereDoc, Word
from ckpt_doctor.facts.program.shell.walk import _Ctx


class Commands:
    def simple(self, node: Any, ctx: _Ctx, outer_redirects: list[Any], outer: Any = None) -> None:
        prefix: list[Any] = []
        words: list[Any] = []
        redirects: list[Any] = list(outer_redirects)
        for ch in node.children:
            if not ch.is_named or ch.type == "comment":
                continue
            t = ch.type
            if t == "variable_assignment" and not words:
                prefix.append(ch)
            elif t.endswith("_redirect"):
                redirects.append(ch)
            elif t == "command_name":
                inner = [c for c in ch.named_children if c.type != "comment"]
                words.extend(inner or [ch])
            else:
                words.append(ch)
        self.substitutions(node, ctx)
        for r in outer_redirects:
            self.substitutions(r, ctx)
        # prefix assignments: visible to the command only
        assigns: dict[str, str | None] = {}
        env_cmd = self.env
        for p in prefix:
            name, var, _word = self.eval_assignment(p, env_for_values=env_cmd)
            env_cmd = env_cmd.set(name, _Var(var.value, var.unresolved, True, var.array, var.assumed))
            assigns[name] = var.value
        argv = [self.word(w) for w in words]
        if not argv:
            # assignments (and redirections) only: the assignments persist
            for p in prefix:
                name, var, word = self.eval_assignment(p)
                self.assign(name, var, p.start_byte, word=word)
            if redirects:
                self.record(outer or node, [], ctx, redirects, {}, name=None)
            return
        self.record(outer or node, argv, ctx, redirects, assigns, env_cmd=env_cmd)

    def record(
        self,
        node: Any,
        argv: list[Word],
        ctx: _Ctx,
        redirects: list[Any],
        assigns: dict[str, str | None],
        name: str | None = "",
        env_cmd: _Env | None = None,
    ) -> None:
        exec_ = timed = False
        while argv and argv[0].raw in ("exec", "time") and argv[0].value == argv[0].raw:
            if argv[0].raw == "exec":
                exec_ = True
                argv = argv[1:]
                while argv and argv[0].text.startswith("-"):
                    opt = argv[0].text
                    argv = argv[1:]
                    if opt == "--":
                        break
                    if opt == "-a" and argv:
                        argv = argv[1:]
            elif argv[0].raw == "time":
                timed = True
                argv = argv[1:]
                while argv and argv[0].text in ("-p", "--"):
                    argv = argv[1:]
        fields: list[Word] = []
        for w in argv:
            if w.fields is None:
                fields.append(w)
            else:
                for f in w.fields:
                    fields.append(Word(w.raw, f, (), w.line, w.col, partial=f, fields=(f,), assumed=w.assumed))
        heredocs: list[HereDoc] = []
        stdin: str | None = None
        red_texts: list[str] = []
        for r in redirects:
            red_texts.append(self._redirect_text(r))
            hd = self._heredoc_of(r)
            if hd is not None:
                heredocs.append(hd)
                stdin = hd.body  # with several, the command reads the last one
            elif r.type == "herestring_redirect":
                val = list(r.named_children)
                if val:
                    w = self.word(val[-1])
                    stdin = None if w.value is None else w.value + "\n"
        start, end = node.start_byte, node.end_byte
        text = self.src[start:end]
        ln, col = self.pos(start)
        eln, _ = self.pos(max(start, end - 1))
        cmd = Command(
            argv=argv,
            text=text,
            line=ln,
            col=col,
            exec_=exec_,
            pipeline=ctx.pipeline,
            redirected=bool(redirects) or ctx.redirected,
            heredoc=heredocs[0].body if heredocs else None,
            background=ctx.background,
            conditional=ctx.conditional,
            cwd=self.cwd,
            fields=fields,
            assigns=assigns,
            heredocs=heredocs,
            redirects=red_texts,
            stdin=stdin,
            timed=timed,
            substitution=ctx.substitution,
            within=ctx.within,
            end_line=eln,
            _env=env_cmd if env_cmd is not None else self.env,
            _traps=self.trap_state,
            _start=start,
            _subshell=ctx.subshell,
        )
        cname = fields[0].text if fields else ""
        if not self.dry:
            self.commands.append(cmd)
            self.by_node[(start, end)] = cmd
            if self.cur_fn_cmds is not None and cname:
                self.cur_fn_cmds.add(posixpath.basename(cname))
        if name is None or not fields:
            return
        self.effects(cmd, cname, ctx)

    def _redirect_text(self, r: Any) -> str:
        return self.src[r.start_byte : r.end_byte]

    def _heredoc_of(self, r: Any) -> HereDoc | None:
        if r.type != "file_redirect":
            return None
        for ch in r.children:
            if ch.type == "<":
                hd = self.hd_by_op.get(ch.start_byte)
                if hd is None:
                    return None
                return self._make_heredoc(hd)
        return None

    def _make_heredoc(self, hd: _HD) -> HereDoc:
        made = self.hd_made.get(hd.op)
        if made is not None and not self.dry:
            return made
        raw = self.src[hd.body_start : hd.body_end] if hd.body_start >= 0 else ""
        if hd.strip:
            raw = re.sub(r"(?m)^\t+", "", raw)
        unres: tuple[str, ...] = ()
        if hd.quoted:
            body = raw
        else:
            acc = _Acc()
            self.scan(raw, 0, len(raw), acc, "H", 0)
            body = "".join(acc.partial)
            unres = tuple(acc.unres)
        out = HereDoc(
            delimiter=hd.delim,
            quoted=hd.quoted,
            strip_tabs=hd.strip,
            raw=raw,
            body=body,
            unresolved=unres,
            line=self.pos(hd.op)[0],
            body_line=self.pos(hd.body_start)[0] if hd.body_start >= 0 else self.pos(hd.op)[0],
            terminated=hd.terminated,
        )
        if not self.dry:
            self.hd_made[hd.op] = out
            self.heredocs.append(out)
        return out
