"""Starts LocalStack's runtime so that it, and everything it spawns, dies with its parent.

    python -m stepwell_localstack.launcher

LocalStack starts DynamoDB Local in a session of its own, so killing LocalStack's process
group is not enough; this launcher watches its parent (the test harness) and, when it is
gone, kills every descendant before exiting. The harness's own stop() does the same.
"""

import contextlib
import os
import runpy
import threading
import time

import psutil  # type: ignore[import-untyped]  # no stubs in LocalStack's venv

PARENT_POLL_SECONDS = 1.0


def kill_descendants_when_parent_dies() -> None:
    original_parent = os.getppid()

    def watch() -> None:
        while os.getppid() == original_parent:
            time.sleep(PARENT_POLL_SECONDS)
        for child in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                child.kill()
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


if __name__ == "__main__":
    kill_descendants_when_parent_dies()
    runpy.run_module("localstack.runtime.main", run_name="__main__", alter_sys=True)
