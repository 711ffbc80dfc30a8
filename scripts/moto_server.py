"""Runs moto's AWS emulator (PyPI `moto[server]`) on loopback, one request at a time.

`moto_server` serves requests on parallel threads, and moto's TransactWriteItems is not
isolated between threads: it applies items one by one and, when a condition fails, restores a
copy of the whole table taken before it started, discarding whatever another request wrote
meanwhile. DynamoDB serialises conflicting transactions. Serving one request at a time makes
the emulator faithful on that point, which Hearth's concurrency tests depend on.

    .venv/bin/python scripts/moto_server.py PORT
"""

import signal
import sys

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import run_simple


def main():
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        sys.exit("usage: moto_server.py PORT")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(
        "127.0.0.1",
        int(sys.argv[1]),
        app,
        threaded=False,
        use_reloader=False,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()
