"""``python -m tests.fakeapi BUNDLE_DIR_OR_TGZ [--port N] [--latency-ms N] [--kubeconfig OUT]``."""

from __future__ import annotations

import argparse
import signal
import sys
import time

from .server import FakeKube


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fakeapi",
                                     description="Serve a bundle as a fake Kubernetes API server.")
    parser.add_argument("bundle", help="bundle directory or .tar.gz")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--latency-ms", type=int, default=0, help="delay added to every request")
    parser.add_argument("--kubeconfig", metavar="OUT", help="write a kubeconfig pointing at the server")
    args = parser.parse_args(argv)

    fake = FakeKube(port=args.port, latency_ms=args.latency_ms)
    added = fake.load_bundle(args.bundle)
    url = fake.start()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # clean up extracted bundles on kill too
    try:  # from the moment the URL can be known: a Ctrl-C right after it is printed still exits 0
        namespaces = sorted({tj["metadata"]["namespace"] for tj in fake.objects("trainjobs")})
        if args.kubeconfig:
            fake.kubeconfig(args.kubeconfig, namespace=namespaces[0] if len(namespaces) == 1 else "default")
        print(url, flush=True)
        print(f"{added} objects loaded" + (f", kubeconfig {args.kubeconfig}" if args.kubeconfig else ""),
              file=sys.stderr)
        for reason in fake.skipped:
            print(f"skipped {reason}", file=sys.stderr)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
