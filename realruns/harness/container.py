"""Run one command the way a container runtime would: its own PID namespace (the trainer is PID 1, so a
SIGTERM it has no handler for is ignored, as in a pod) and its own mount namespace, where the run's
work folders are bind-mounted at the image's paths (/workspace, /mnt/checkpoints).

    python container.py STATUS_FILE WORKDIR MOUNT_SRC:MOUNT_DST ... -- COMMAND...

The caller's stdout/stderr/stdin are the container's. The host pid of the container's PID 1 and, when
it ends, its wait status go to STATUS_FILE as JSON lines (a side channel: nothing reaches the log).
Killing that pid with SIGKILL ends every process of the container, as the runtime does.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000


def note(path: str, **kv: object) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, (json.dumps(kv) + "\n").encode())
    os.close(fd)


libc = ctypes.CDLL(None, use_errno=True)


def main() -> int:
    status_file, workdir, *rest = sys.argv[1:]
    sep = rest.index("--")
    mounts, cmd = rest[:sep], rest[sep + 1 :]
    # mounts first (a subprocess after CLONE_NEWPID would become the namespace's PID 1 and end it)
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)
    for m in mounts:
        src, dst = m.split(":", 1)
        os.makedirs(dst, exist_ok=True)
        subprocess.run(["mount", "--bind", src, dst], check=True)
    if libc.unshare(CLONE_NEWPID) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWPID)")
    # the shim ignores the signals a runtime's shim would not pass on; only the container gets them
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    pid = os.fork()
    if pid == 0:  # PID 1 of the new namespace
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, signal.SIG_DFL)
        libc.mount(b"proc", b"/proc", b"proc", 0, None)  # this namespace's /proc, as a runtime mounts it
        os.chdir(workdir)
        try:
            os.execvp(cmd[0], cmd)
        except OSError as e:
            os.write(2, f"exec {cmd[0]}: {e.strerror}\n".encode())
            os._exit(127)
    note(status_file, event="container_start", host_pid=pid)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        note(status_file, event="container_exit", signal=signal.Signals(sig).name, exit_code=128 + sig)
        return 128 + sig
    code = os.WEXITSTATUS(status)
    note(status_file, event="container_exit", signal=None, exit_code=code)
    return code


if __name__ == "__main__":
    sys.exit(main())
