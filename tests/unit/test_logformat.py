"""Every line the process writes to stderr is JSON, warnings and thread crashes included."""

import json
import subprocess
import sys
import textwrap

from tests.server import PROJECT_DIR

_PROGRAM = textwrap.dedent(
    """
    import logging, threading, warnings
    from core.logformat import JsonFormatter, log_stray_output

    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    logging.basicConfig(handlers=[handler], level=logging.INFO)
    log_stray_output()
    warnings.warn("probe warning", RuntimeWarning)

    def crash():
        raise ValueError("probe crash")

    thread = threading.Thread(target=crash, name="prober")
    thread.start()
    thread.join()
    """
)


def test_log_stray_output_turns_warnings_and_thread_crashes_into_json_lines() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _PROGRAM],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert [line["logger"] for line in lines] == ["py.warnings", "gateway.threads"]
    assert "probe warning" in lines[0]["message"]
    assert lines[1]["message"] == "exception in thread prober"
    assert "ValueError: probe crash" in lines[1]["exception"]
