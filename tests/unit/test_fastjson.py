"""orjson on the request path, the stdlib for what orjson refuses."""

import json

from core import fastjson


def test_fastjson_writes_back_what_only_the_stdlib_reads() -> None:
    text = '{"v": "a\\ud800b", "n": 123456789012345678901234567890}'
    value = json.loads(text)
    assert fastjson.loads(text)["v"] == value["v"]
    assert json.loads(fastjson.dumps(value)) == value
