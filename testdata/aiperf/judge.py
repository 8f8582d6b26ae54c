"""AIPerf's own code as the judge of llmtap's AIPerf-named files.

Usage: python3 judge.py DIR [DIR ...]

Runs NVIDIA AIPerf's export models and its CsvExporter, vendored unchanged from
github.com/ai-dynamo/aiperf at db4f6397 (see README.md), on the files in each DIR:

- profile_export.jsonl: every line through MetricRecordInfo.model_validate_json;
- profile_export_aiperf.json: through JsonExportData.model_validate_json (its input_config
  through UserConfig and its validators);
- profile_export_aiperf.csv: AIPerf's CsvExporter writes the CSV again from the JSON summary's
  figures (the same data), and the file must be the same, byte for byte;
- inputs.json: through InputsFile.model_validate_json.

It also counts the lines as AIPerf's records manager counts them (a line is an error when its
metrics have error_request_count, whether or not its error is null; error_summary counts the
lines whose error is not null) and checks the summary against those counts, the units against
AIPerf's MetricRegistry, and session_num against conversation_id.

Prints one JSON object: {DIR: {counts..., "problems": [...]}}; exits 1 when any DIR has a
problem, 2 when AIPerf's code cannot be imported (no pydantic 2).
"""

import difflib
import importlib.abc
import importlib.machinery
import json
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "db4f6397")

try:
    import pydantic

    if not pydantic.VERSION.startswith("2."):
        raise ImportError("pydantic " + pydantic.VERSION + " is not 2.x")
except ImportError as e:  # the Go test skips, saying why
    print(json.dumps({"unavailable": str(e)}))
    sys.exit(2)

# --- Shims: third-party packages the vendored modules import but the checks never call
# (cyclopts' CLI metadata, ruamel's YAML loader, numpy's arrays of the aggregation, aiofiles,
# zmq, rich, textual). Each becomes a permissive stub. ---

_STUBBED = {"cyclopts", "ruamel", "numpy", "aiofiles", "zmq", "rich", "textual", "uvloop", "psutil"}


class _Stub:
    def __init__(self, *a, **k):
        pass

    def __call__(self, *a, **k):
        return _Stub()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stub()

    def __mro_entries__(self, bases):
        return (_Stub,)


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stub()


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in _STUBBED:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        m = _StubModule(spec.name)
        m.__path__ = []
        return m

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _StubFinder())
sys.path.insert(0, SRC)


def _module(name, path=None, **attrs):
    m = types.ModuleType(name)
    if path is not None:
        m.__path__ = [path]
    m.__dict__.update(attrs)
    sys.modules[name] = m


class _Logger:
    def __init__(self, **kwargs):
        pass

    def debug(self, *a, **k):
        pass

    info = warning = error = debug


class _Factory:
    @staticmethod
    def register(*a, **k):
        return lambda c: c


# aiperf/exporters/__init__.py imports every exporter (console, rich); only csv_exporter is
# vendored, so the package is made here without its __init__. csv_exporter's service plumbing
# (logger mixin, factory registration, protocol checks, exporter config) is not what it writes.
_module("aiperf.exporters", os.path.join(SRC, "aiperf", "exporters"))
_module("aiperf.common.mixins", AIPerfLoggerMixin=_Logger)
_module("aiperf.common.factories", DataExporterFactory=_Factory)
_module("aiperf.common.protocols", DataExporterProtocol=object)
_module("aiperf.common.decorators", implements_protocol=lambda p: (lambda c: c))
_module("aiperf.exporters.exporter_config", ExporterConfig=object, FileExportInfo=object)

from aiperf.common.models.dataset_models import InputsFile  # noqa: E402
from aiperf.common.models.export_models import JsonExportData  # noqa: E402
from aiperf.common.models.record_models import MetricRecordInfo, MetricResult  # noqa: E402
from aiperf.common.constants import STAT_KEYS  # noqa: E402
from aiperf.exporters.csv_exporter import CsvExporter  # noqa: E402
from aiperf.metrics.metric_registry import MetricRegistry  # noqa: E402

REGISTRY = set(MetricRegistry.all_tags())


def display_unit(tag):
    cls = MetricRegistry.get_class(tag)
    return str(cls.display_unit or cls.unit)


def csv_from_summary(summary):
    """AIPerf's CsvExporter on the summary's figures: a MetricResult per metric AIPerf's
    registry has, in its display unit (the JSON's figures are), so the exporter's conversion
    step is the identity. AIPerf's aggregation holds record metrics in float64 arrays, so
    their min and max are floats; counters are floats once in MetricResult.avg."""
    exporter = CsvExporter.__new__(CsvExporter)
    exporter._percentile_keys = [k for k in STAT_KEYS if k[0] == "p" and k[1:].isdigit()]
    records = {}
    for tag, value in summary.items():
        if tag not in REGISTRY or not isinstance(value, dict) or "unit" not in value:
            continue
        cls = MetricRegistry.get_class(tag)
        stats = {k: (float(value[k]) if value.get(k) is not None else None) for k in STAT_KEYS}
        records[tag] = MetricResult(tag=tag, header=cls.header, unit=display_unit(tag), count=value.get("count"), **stats)
    return exporter._generate_csv_content(records)


def judge(d):
    out = {"problems": []}
    problems = out["problems"]
    jsonl = os.path.join(d, "profile_export.jsonl")
    lines = []
    if os.path.exists(jsonl):
        with open(jsonl, encoding="utf-8") as f:
            for i, raw in enumerate(f, 1):
                try:
                    lines.append(MetricRecordInfo.model_validate_json(raw))
                except pydantic.ValidationError as e:
                    problems.append(f"profile_export.jsonl line {i}: {e}")
        prof = [l for l in lines if str(l.metadata.benchmark_phase) == "profiling"]
        out["lines"] = len(prof)
        out["valid"] = sum(1 for l in prof if "request_count" in l.metrics)
        out["errors"] = sum(1 for l in prof if "error_request_count" in l.metrics)
        out["errors_with_details"] = sum(1 for l in prof if l.error is not None)
        out["errors_without_details"] = sum(1 for l in prof if l.error is None and "error_request_count" in l.metrics)
        out["error_isl"] = [l.metrics["error_isl"].value for l in prof if "error_isl" in l.metrics]
        for i, l in enumerate(prof, 1):
            if ("request_count" in l.metrics) == ("error_request_count" in l.metrics):
                problems.append(f"line {i}: neither or both of request_count and error_request_count")
            if l.error is not None and "error_request_count" not in l.metrics:
                problems.append(f"line {i}: an error without error_request_count")
            for tag, mv in l.metrics.items():
                if tag in REGISTRY and mv.unit != display_unit(tag):
                    problems.append(f"line {i}: {tag} in {mv.unit}, AIPerf's display unit is {display_unit(tag)}")
        # session_num: the conversation's index, the same for its turns, distinct across them.
        by_conv, sessions = {}, {}
        for l in prof:
            cid = l.metadata.conversation_id or l.metadata.x_request_id
            by_conv.setdefault(cid, set()).add(l.metadata.session_num)
            sessions.setdefault(l.metadata.session_num, set()).add(cid)
        for cid, nums in by_conv.items():
            if len(nums) != 1:
                problems.append(f"conversation {cid} has session_num {sorted(nums)}: AIPerf gives its turns one")
        for num, cids in sessions.items():
            if len(cids) != 1:
                problems.append(f"session_num {num} names {len(cids)} conversations")
        out["conversations"] = len(by_conv)

    summary_path = os.path.join(d, "profile_export_aiperf.json")
    if os.path.exists(summary_path):
        with open(summary_path, encoding="utf-8") as f:
            text = f.read()
        try:
            data = JsonExportData.model_validate_json(text)
            out["input_config"] = data.input_config is not None
        except pydantic.ValidationError as e:
            problems.append(f"profile_export_aiperf.json: {e}")
        summary = json.loads(text)
        for k in ("input_config", "was_cancelled", "error_summary", "start_time", "end_time"):
            if k not in summary:
                problems.append(f"profile_export_aiperf.json has no {k}")
        for tag, v in summary.items():
            if tag in REGISTRY and isinstance(v, dict) and v.get("unit") != display_unit(tag):
                problems.append(f"summary {tag} in {v.get('unit')}, AIPerf's display unit is {display_unit(tag)}")

        def avg(tag):
            v = summary.get(tag)
            return v.get("avg") if isinstance(v, dict) else None

        out["summary_valid"] = avg("request_count")
        out["summary_errors"] = avg("error_request_count")
        out["error_summary_total"] = sum(e.get("count", 0) for e in summary.get("error_summary") or [])
        if lines:
            if (avg("request_count") or 0) != out["valid"]:
                problems.append(f"request_count {avg('request_count')}, {out['valid']} valid lines")
            if (avg("error_request_count") or 0) != out["errors"]:
                problems.append(f"error_request_count {avg('error_request_count')}, {out['errors']} error lines")
            if out["error_summary_total"] != out["errors_with_details"]:
                problems.append(f"error_summary counts {out['error_summary_total']}, {out['errors_with_details']} lines have error details")
            if out["error_isl"]:
                if (summary.get("error_isl") or {}).get("count") != len(out["error_isl"]):
                    problems.append(f"error_isl count {(summary.get('error_isl') or {}).get('count')}, {len(out['error_isl'])} lines")
                if avg("total_error_isl") != sum(out["error_isl"]):
                    problems.append(f"total_error_isl {avg('total_error_isl')}, lines sum {sum(out['error_isl'])}")

        csv_path = os.path.join(d, "profile_export_aiperf.csv")
        if os.path.exists(csv_path):
            with open(csv_path, encoding="utf-8", newline="") as f:
                got = f.read()
            try:
                want = csv_from_summary(summary)
            except Exception as e:  # a tag the registry lacks, a value it cannot take
                want = None
                problems.append(f"AIPerf's CsvExporter fails on the summary: {e!r}")
            out["csv_identical"] = got == want
            if want is not None and got != want:
                diff = difflib.unified_diff(want.splitlines(True), got.splitlines(True), "AIPerf's CsvExporter", "profile_export_aiperf.csv")
                problems.append("profile_export_aiperf.csv is not AIPerf's:\n" + "".join(repr(x)[1:-1] + "\n" for x in diff))

    inputs_path = os.path.join(d, "inputs.json")
    if os.path.exists(inputs_path):
        with open(inputs_path, encoding="utf-8") as f:
            text = f.read()
        try:
            inputs = InputsFile.model_validate_json(text)
            out["input_sessions"] = len(inputs.data)
            out["input_payloads"] = sum(len(s.payloads) for s in inputs.data)
            ids = {s.session_id for s in inputs.data}
            convs = {l.metadata.conversation_id for l in lines if l.metadata.conversation_id}
            if convs - ids:
                problems.append(f"{len(convs - ids)} conversation ids of profile_export.jsonl are not in inputs.json")
        except pydantic.ValidationError as e:
            problems.append(f"inputs.json: {e}")
    return out


def main(dirs):
    result = {d: judge(d) for d in dirs}
    print(json.dumps(result, indent=1))
    return 1 if any(r["problems"] for r in result.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
