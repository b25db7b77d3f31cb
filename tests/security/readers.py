"""Every reader of another process's value, with the one property each must hold for any input (issue 43): it
answers a value within range, or one sentence (its own refusal), and nothing escapes it. Used by
test_readers_property.py (a few hundred inputs each, in CI) and benchmarks/fuzz_readers.py (100,000 each).

The inputs are JSON values of every shape (deep, huge, non-finite, wrong types, lone surrogates), raw bytes, and
the project's own valid fixtures with one value replaced by such a value, which reach past the schemas into the
code that uses what they admit."""

from __future__ import annotations

import json
import logging
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from jupyter_gpumem import values
from jupyter_gpumem.budget.config import GpumemConfig, _policy_fields
from jupyter_gpumem.budget.policy import SETTINGS, PolicyError, parse_value
from jupyter_gpumem.gpu.model import Snapshot
from jupyter_gpumem.hub.prometheus_reader import QUERIES, Unusable, rows_of_answers, samples
from jupyter_gpumem.hub.rows import MAX_BYTES, rows_of_server
from jupyter_gpumem.kernel.protocol import ProtocolError, parse_request
from jupyter_gpumem.kernel.publish import _read_notice
from jupyter_gpumem.server.figures import KernelSource, make_figures
from jupyter_gpumem.server.handlers import encode
from jupyter_gpumem.server.watcher import _report
from jupyter_gpumem.wire.report import notice_beside, report_path

FIXTURES = Path(__file__).parents[1] / "fixtures"
log = logging.getLogger("jupyter_gpumem.fuzz")
log.propagate = False  # hundreds of thousands of refusals: each said once per sender, none needed here
log.addHandler(logging.NullHandler())

HOSTILE_NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([10**400, -(10**400), 2**53, 2**63, 2**64, 0, -1]),
    st.floats(allow_nan=True, allow_infinity=True),
)
TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)  # lone surrogates included
LEAVES = st.one_of(st.none(), st.booleans(), HOSTILE_NUMBERS, TEXT)
JSON_VALUES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(TEXT, inner, max_size=5)),
    max_leaves=30,
)
DEEP = st.integers(min_value=30, max_value=5000).map(lambda depth: "[" * depth + "]" * depth)


def _paths(value: Any, where: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [where]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*where, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _paths(item, (*where, i))
    return found


@st.composite
def mutated(draw: st.DrawFn, fixture: dict[str, Any]) -> Any:
    """``fixture`` (a valid message) with one of its values replaced by a hostile one, or a key dropped."""
    data = json.loads(json.dumps(fixture))
    paths = _paths(data)
    path = draw(st.sampled_from(paths))
    replacement = draw(st.one_of(JSON_VALUES, st.just("@@deep@@")))
    if not path:
        return replacement
    parent = data
    for step in path[:-1]:
        parent = parent[step]
    if isinstance(parent, dict) and draw(st.booleans()) and draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = replacement
    return data


def as_text(value: Any) -> str:
    """A Python value as the JSON another process could write, NaN, 10**400 and lone surrogates included."""
    import sys

    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        text = json.dumps(value, allow_nan=True)
    finally:
        sys.set_int_max_str_digits(old)
    return text.replace('"@@deep@@"', "[" * 2000 + "]" * 2000)


def fixture(*parts: str) -> dict[str, Any]:
    return dict(json.loads(FIXTURES.joinpath(*parts).read_text()))


REPORT = fixture("report", "report.json")
NOTICE = fixture("report", "notice.json")
BODY = fixture("api", "body.json")
CONFIGURE = {"protocol": 1, "type": "configure", "interval_s": 1.0, "history_s": 60.0}
PROMETHEUS = {
    "status": "success",
    "data": {
        "resultType": "vector",
        "result": [
            {
                "metric": {"user": "alice", "server": "", "kernel_id": "k1", "gpu_uuid": "GPU-1", "gpu_index": "0"},
                "value": [1763740800.0, "1073741824"],
            }
        ],
    },
}


def _finite_row_figures(rows: list[Any]) -> None:
    for row in rows:
        for name in ("used_bytes", "budget_bytes", "ceiling_bytes"):
            value = getattr(row, name)
            # JSON has one kind of number, and the schemas' "integer" admits 4.0 (JSON Schema 2020-12): whole, in range
            assert value is None or (isinstance(value, int | float) and value == int(value) and 0 <= value <= MAX_BYTES)
        for name in ("idle_s", "stale_since", "ceiling_fraction", "driver_stalled_since"):
            value = getattr(row, name)
            assert value is None or math.isfinite(value), (name, value)


def check_loads(raw: bytes) -> None:
    try:
        data = values.loads(raw)
    except values.Refused as refused:
        assert str(refused)
        return
    assert values.problem(data) is None


def check_report(text: str, directory: Path) -> None:
    """The server's reader of a kernel's report, then the figures and the body made from it, beside a good kernel."""
    connection = directory / "kernel-fuzz.json"
    report_path(connection).write_text(text, errors="surrogatepass")
    found = _report("fuzz", str(connection), log)
    assert found is None or isinstance(found, dict)
    now = time.time()
    good = json.loads(json.dumps(REPORT))
    good["t"] = now
    kernels = [KernelSource("good", 4242, good), KernelSource("fuzz", 4243, found)]
    figures = make_figures(Snapshot(taken_at=now, own_pid=-1), kernels, now, 30.0)
    status = {k.id: k.status for k in figures.kernels}
    assert status["good"] == "reporting"  # the other kernel is read as before
    assert (status["fuzz"] == "not_reporting") == (found is None)
    body = encode(figures, 1.0)
    json.loads(body, parse_constant=_no_constant)  # valid JSON, whatever the report said


def check_notice(text: str, directory: Path) -> None:
    path = notice_beside(report_path(directory / "kernel-fuzz.json"))
    path.write_text(text, errors="surrogatepass")
    found = _read_notice(path)
    assert found is None or isinstance(found["text"], str)


def _parsed(data: Any) -> Any:
    """As the hub reads an answer: text through values.loads (None: refused, one sentence); a value as it is."""
    if not isinstance(data, str):
        return data
    try:
        return values.loads(data.encode("utf-8", "surrogatepass"))
    except values.Refused as refused:
        assert str(refused)
        return None


def check_body(data: Any) -> None:
    data = _parsed(data)
    rows = rows_of_server("mallory", "", data, time.time())
    assert rows or data["kernels"] == []  # a server without kernels has no row; any other body has one at least
    _finite_row_figures(rows)


def check_prometheus(answer: Any) -> None:
    answer = _parsed(answer)
    try:
        found = samples(answer, 4000)
    except Unusable as unusable:
        assert str(unusable)
        return
    _finite_row_figures(rows_of_answers({query: found for query in QUERIES})[0])


def check_configure(data: Any) -> None:
    try:
        settings = parse_request(data)
    except ProtocolError as error:
        assert str(error)
        return
    assert math.isfinite(settings.interval_s) and math.isfinite(settings.history_s)


def check_setting(key: str, value: Any) -> None:
    """A %gpumem argument (text) or a configured value (any type a profile can hold)."""
    for read in (lambda: parse_value(key, str(value)), lambda: _policy_fields(key, value)):
        try:
            fields = read()
        except PolicyError as error:
            assert str(error)
            continue
        for name, field in (fields or {}).items():
            if isinstance(field, float):
                assert math.isfinite(field), (name, field)
            if name == "limit_bytes":
                assert 0 < field <= values.MAX_BYTES
            if name in ("intra_threads", "inter_threads"):
                assert 1 <= field <= 1024


def check_config(settings: dict[str, Any]) -> None:
    """A profile of any values: loading never raises, and the ceiling holds a finite value or none."""
    from traitlets.config import Config, Configurable

    from jupyter_gpumem.budget.config import load_config

    config, _ = load_config(Configurable(config=Config({"GpumemConfig": settings})))
    assert isinstance(config, GpumemConfig)
    ceiling, _ = config.ceiling()
    assert ceiling.max_fraction is None or 0 < ceiling.max_fraction <= 1
    assert ceiling.max_limit_bytes is None or 0 < ceiling.max_limit_bytes <= values.MAX_BYTES
    config.defaults()


def _no_constant(name: str) -> None:
    raise AssertionError(f"{name} in what the server emits")


def private_directory() -> tempfile.TemporaryDirectory[str]:
    """A runtime directory with its jupyter-gpumem/ folder, both 0700 (what the readers accept)."""
    folder = tempfile.TemporaryDirectory()
    Path(folder.name).chmod(0o700)
    (Path(folder.name) / "jupyter-gpumem").mkdir(mode=0o700)
    return folder


SETTING_VALUES = st.one_of(
    JSON_VALUES, TEXT.map(lambda t: t + "GiB"), st.sampled_from(["1e309GiB", "infGiB", "nan", "²", "9" * 5000])
)
CONFIG = st.dictionaries(st.sampled_from([*SETTINGS, "max_fraction", "max_limit"]), SETTING_VALUES, max_size=4)

# Each reader: its strategy and its check (the benchmark runs the same).
READERS: dict[str, tuple[Any, Any]] = {
    "json": (
        st.one_of(st.binary(max_size=200), JSON_VALUES.map(as_text).map(str.encode), DEEP.map(str.encode)),
        check_loads,
    ),
    "report": (st.one_of(mutated(REPORT).map(as_text), JSON_VALUES.map(as_text), DEEP), check_report),
    "notice": (st.one_of(mutated(NOTICE).map(as_text), JSON_VALUES.map(as_text)), check_notice),
    "body": (st.one_of(mutated(BODY), mutated(BODY).map(as_text), JSON_VALUES), check_body),
    "prometheus": (st.one_of(mutated(PROMETHEUS), mutated(PROMETHEUS).map(as_text), JSON_VALUES), check_prometheus),
    "configure": (st.one_of(mutated(CONFIGURE), JSON_VALUES), check_configure),
    "setting": (st.tuples(st.sampled_from(SETTINGS), SETTING_VALUES), lambda pair: check_setting(*pair)),
    "config": (CONFIG, check_config),
}
