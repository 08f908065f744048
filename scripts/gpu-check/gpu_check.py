#!/usr/bin/env python3
"""The logic of scripts/gpu-check.sh: logit parity with stated bounds, reading the profile and
bench files, the one JSON and the summary. Standard library only, so it runs on a bare GPU box.

    gpu_check.py compare --ref CPU.json --got DEVICE.json --dtype f32|f16|bf16
    gpu_check.py preflight --gpu "NAME, DRIVER, CAP, MEMORY" --arch sm_90a --out preflight.json
    gpu_check.py rust-tests --log TESTS.log --out tests.json
    gpu_check.py ncu --log NCU.log --out ncu.json
    gpu_check.py assemble --work DIR --out gpu-check.json
    gpu_check.py archive --work DIR
    gpu_check.py bundle --dir DIR --tree-bytes N

`compare` prints one JSON object (the parity record) and exits 1 when the bound is exceeded.
`preflight` judges the GPU against the build (driver version, compute capability) and exits 1,
saying why, on a GPU the binaries cannot run on. `rust-tests` reads a libtest run (exercise 5's
CUDA tests) and exits 1 unless every test passed and none skipped its CUDA part. `ncu` turns
Nsight Compute's CSV into a short summary. `assemble` reads what gpu-check.sh left in DIR
(steps/*.json, parity/*.json, profile-*/report.json, bench-*.json, torch-*.json, ...), writes
the one JSON, prints the summary, and exits 1 when a required check failed. `archive` then
packs everything else in DIR into one compressed file, so DIR ends with two files. `bundle`
lists what `gpu-check.sh --pack` wrote and refuses a bundle too large to carry. The unit
tests are in test_gpu_check.py next to this file.
"""
import argparse
import csv
import json
import math
import os
import re
import shutil
import sys
import tarfile

SCHEMA = "gpu-check/2"

# gpt2 profile's report.json, as the Rust types that write it describe it: the JSON Schema the
# formats crate generates and commits (`cargo run -p formats --bin write-schemas`). This script
# reads the current version (the schema's "const") and the older ones it lists
# ("x-old-schemas"): the fields read here are the same in all, and report_schema() checks they
# are still in the schema, so a bump that renames one fails here rather than reading nothing.
REPORT_SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "crates", "formats", "schema", "report.schema.json")

# The fields profile_summary reads: top-level, in `totals`, in each row, in `environment`.
REPORT_FIELDS = {
    "": ("schema", "device", "active_steps", "environment", "totals", "warnings", "rows"),
    "Totals": ("self_cpu_us", "self_cuda_us", "cuda_time_basis", "wall_us"),
    "ReportRow": ("name", "calls", "self_cpu_us", "self_cuda_us"),
    "Environment": ("timing",),
}


def report_schema(path=REPORT_SCHEMA_PATH):
    """The report.json versions this script reads, from the committed JSON Schema, after
    checking that every field it reads is still described there."""
    try:
        with open(path) as f:
            schema = json.load(f)
    except (OSError, ValueError) as e:
        raise CheckError(f"{path}: cannot read the report.json schema ({e}); regenerate it with `cargo run -p formats --bin write-schemas`")
    defs = schema.get("$defs", {})
    for name, fields in REPORT_FIELDS.items():
        props = (defs.get(name, {}) if name else schema).get("properties", {})
        missing = [f for f in fields if f not in props]
        if missing:
            where = f"$defs.{name}" if name else "the report"
            raise CheckError(f"{path}: {where} no longer has {', '.join(missing)}, which gpu_check.py reads: update profile_summary")
    current = schema.get("properties", {}).get("schema", {}).get("const")
    if not isinstance(current, str):
        raise CheckError(f"{path}: no schema identifier (properties.schema.const)")
    return tuple(schema.get("x-old-schemas", [])) + (current,)

# A CUDA report's self CUDA total is the stream's time between event pairs inside the steps,
# which the host's wall clock of the same steps encloses (each step ends with a synchronise).
# It may exceed the wall time only by the events' resolution and rounding: 10% is far more
# than either. Beyond it the events were misread; at zero or null they never ran.
MAX_CUDA_OVER_WALL = 1.1

# CUDA 13.0, which builds the PTX, is loaded by NVIDIA drivers 580 and newer only (a driver
# loads PTX up to its own CUDA version).
MIN_DRIVER_MAJOR = 580
CUDA_RELEASE = "13.0"

# What gpu-check.sh leaves in --out: this JSON and one archive of everything else.
RESULT_NAME = "gpu-check.json"
ARCHIVE_NAME = "gpu-check-files.tar.xz"

# What the device machine carries in all: the repository's tracked files and the bundle.
CARRY_LIMIT_BYTES = 64 * 1024 * 1024
# The largest file it returns (the parity logits are most of the archive: about 7 MB).
RETURN_FILE_LIMIT_BYTES = 16 * 1024 * 1024
# Files --pack must write; exercise-3.xz and cuda-build.txt come along when present.
BUNDLE_REQUIRED = ("gpt2.xz", "solution-3.xz", "course.xz", "solution-5.xz", "solution-5-tests.xz")

# Logit parity bounds, against CPU f32 logits of the same weights and ids. f32 on CUDA must
# agree to 1e-3 absolute (cuBLAS f32 without TF32, different summation order). Half precision
# rounds every activation: f16 keeps 11 significant bits, bf16 8, so their bound is relative to
# the logits' scale, max(1, max |CPU logit|), with room for rounding that accumulates over 12
# layers: 2e-2 for f16, 1e-1 for bf16 (about ten times the error expected from their epsilons).
#
# A GGUF file's quantized matrices (q8_0, q4_0) are the same bytes on both sides, but each side
# rounds the activations to 8 bits before its integer dot product: the CPU to q8_0 blocks (the
# engine's kernels), CUDA to q8_1 blocks (candle's). On the tiny GPT-2 fixtures the CPU's
# rounding alone moves the logits by 0.013 (q8_0) and 0.014 (q4_0) of the largest one
# (crates/gpt2/tests/gguf.rs, against the dequantized weights); two roundings can add, so the
# bound is 5e-2 of the scale: past it, the device read the blocks wrong.
BOUNDS = {
    "f32": {"metric": "max_abs_err", "limit": 1e-3},
    "f16": {"metric": "scaled_max_err", "limit": 2e-2},
    "bf16": {"metric": "scaled_max_err", "limit": 1e-1},
    "q8_0": {"metric": "scaled_max_err", "limit": 5e-2},
    "q4_0": {"metric": "scaled_max_err", "limit": 5e-2},
}

# Steps whose failure fails the whole check; PyTorch's are extras (a skipped step never fails).
REQUIRED_STEPS = ("preflight", "parity", "profile", "bench", "serve", "exercise")
# Nsight Compute (group "ncu") and PyTorch (group "torch") are extras.


class CheckError(Exception):
    """A file that cannot be read as expected; the message names the file and what to do."""


def read_json(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise CheckError(f"{path}: missing ({what}); the step that writes it failed, see its log next to it")
    except json.JSONDecodeError as e:
        raise CheckError(f"{path}:{e.lineno}:{e.colno}: not JSON ({what}): {e.msg}")


def logit_rows(value, path):
    """`gpt2 logits --json`: a list of positions, each a list of vocabulary logits."""
    if not isinstance(value, list) or not value or not all(isinstance(r, list) and r for r in value):
        raise CheckError(f"{path}: expected [[logit, ...], ...] from `gpt2 logits --json`")
    width = len(value[0])
    for i, row in enumerate(value):
        if len(row) != width:
            raise CheckError(f"{path}: position {i} has {len(row)} logits, position 0 has {width}")
        for j, x in enumerate(row):
            if x is None:
                # serde_json writes NaN and infinities as null: count them as non-finite.
                row[j] = math.nan
            elif not isinstance(x, (int, float)) or isinstance(x, bool):
                raise CheckError(f"{path}: position {i} holds {x!r}, not a number")
    return value


def compare(ref, got, dtype):
    """Parity of `got` (device logits) against `ref` (CPU f32 logits of the same ids)."""
    if dtype not in BOUNDS:
        raise CheckError(f"unknown dtype {dtype!r}: use one of {', '.join(BOUNDS)}")
    if len(ref) != len(got) or len(ref[0]) != len(got[0]):
        raise CheckError(f"shapes differ: reference {len(ref)}x{len(ref[0])}, device {len(got)}x{len(got[0])}")
    max_abs_err, sum_err, count, non_finite, top1_same = 0.0, 0.0, 0, 0, 0
    max_ref = 0.0
    for r_row, g_row in zip(ref, got):
        for r, g in zip(r_row, g_row):
            if not math.isfinite(g):
                non_finite += 1
                continue
            err = abs(g - r)
            max_abs_err = max(max_abs_err, err)
            sum_err += err
            count += 1
            max_ref = max(max_ref, abs(r))
        top1_same += argmax(r_row) == argmax(g_row)
    scale = max(1.0, max_ref)
    bound = BOUNDS[dtype]
    record = {
        "dtype": dtype,
        "positions": len(ref),
        "vocab": len(ref[0]),
        "max_abs_err": max_abs_err,
        "mean_abs_err": sum_err / count if count else None,
        "max_abs_ref": max_ref,
        "scaled_max_err": max_abs_err / scale,
        "non_finite": non_finite,
        # Informational: random weights give near-ties, where rounding may pick another id.
        "top1_agreement": top1_same / len(ref),
        "bound": dict(bound),
    }
    record["pass"] = non_finite == 0 and record[bound["metric"]] <= bound["limit"]
    return record


def argmax(row):
    best = 0
    for i, x in enumerate(row):
        if x > row[best]:
            best = i
    return best


def profile_summary(report, path):
    """The numbers gpu-check reports from a `gpt2 profile` report.json."""
    schemas = report_schema()
    if not isinstance(report, dict) or report.get("schema") not in schemas:
        raise CheckError(f"{path}: not a gpt2 profile report ({' or '.join(schemas)})")
    try:
        totals, steps = report["totals"], report["active_steps"]
        rows = report["rows"]
        timing = report.get("environment", {}).get("timing")
    except (KeyError, TypeError) as e:
        raise CheckError(f"{path}: missing field {e}")
    steps = max(int(steps), 1)
    on_device = totals.get("self_cuda_us") is not None
    key = "self_cuda_us" if on_device else "self_cpu_us"
    ops = [r for r in rows if not r["name"].startswith("ProfilerStep")]
    ops.sort(key=lambda r: r.get(key) or 0.0, reverse=True)
    total_key = totals.get(key) or 0.0
    return {
        "schema": report.get("schema"),
        "device": report.get("device"),
        "timing": timing,
        "active_steps": steps,
        "wall_us_total": totals["wall_us"],
        "wall_ms_per_step": totals["wall_us"] / steps / 1e3,
        "self_cuda_us_total": totals.get("self_cuda_us"),
        "self_cuda_ms_per_step": totals["self_cuda_us"] / steps / 1e3 if on_device else None,
        # What the CUDA column measures: "stream" (event pairs or synchronises: kernel time plus
        # the stream's waits for launches), as gpt2's report says; null on a CPU report.
        "cuda_time_basis": totals.get("cuda_time_basis") or ("stream" if on_device else None),
        "warnings": list(report.get("warnings") or []),
        "ranked_by": key,
        "top": [
            {"name": r["name"], "self_us": r.get(key), "share_pct": 100.0 * (r.get(key) or 0.0) / total_key if total_key else None, "calls": r.get("calls")}
            for r in ops[:5]
        ],
    }


def device_timing_problems(summary, device_mode):
    """Why a profile step's report cannot stand for a run on `device_mode`: on CUDA it must be a
    CUDA report with a positive self CUDA total of at most MAX_CUDA_OVER_WALL x its wall time
    (gpt2 profile once exited 0 with null CUDA times when event timing failed, and the summary
    fell back to CPU times). The report's warnings are quoted, since they say what failed."""
    if device_mode != "cuda":
        return [] if summary.get("device") == device_mode else [f"a {summary.get('device')} report from a --device {device_mode} run"]
    problems = []
    total, wall = summary.get("self_cuda_us_total"), summary.get("wall_us_total") or 0.0
    if summary.get("device") != "cuda":
        problems.append(f"a {summary.get('device')} report, not a CUDA one")
    if total is None:
        problems.append("no self CUDA times (device timing did not run or failed)")
    elif total <= 0:
        problems.append(f"self CUDA total {total:g} us is not positive")
    elif wall <= 0:
        problems.append(f"wall time {wall:g} us is not positive")
    elif total > MAX_CUDA_OVER_WALL * wall:
        problems.append(f"self CUDA total {total:.0f} us is {total / wall:.2f}x the wall time {wall:.0f} us "
                        f"(at most {MAX_CUDA_OVER_WALL}x): the event pairs were misread")
    if problems and summary.get("warnings"):
        problems.append("the report's warnings: " + " | ".join(summary["warnings"]))
    return problems


def parse_driver_version(text):
    """'580.65.06' -> (580, 65, 6); None when `text` holds no version."""
    m = re.search(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", text or "")
    return tuple(int(g) for g in m.groups() if g is not None) if m else None


def parse_arch(arch):
    """'sm_90a' -> (90, 'a'); 'sm_80' -> (80, ''). The form nvcc's --gpu-architecture takes."""
    m = re.fullmatch(r"sm_(\d{2,3})([af]?)", (arch or "").strip().lower())
    if not m:
        raise CheckError(f"architecture {arch!r} is not of the form sm_90a or sm_80")
    return int(m.group(1)), m.group(2)


def parse_compute_cap(text):
    """nvidia-smi's compute_cap '9.0' -> 90; None when unknown ('[N/A]', an old driver)."""
    m = re.fullmatch(r"\s*(\d+)\.(\d)\s*", text or "")
    return int(m.group(1)) * 10 + int(m.group(2)) if m else None


def arch_runs_on(arch, cap):
    """Whether code built for `arch` loads on a GPU of compute capability `cap` (90 = 9.0).
    Architecture-specific code (sm_90a) loads on that capability only; family code (sm_100f)
    on that major version; plain PTX (sm_80) is compiled by the driver for any newer GPU."""
    base, suffix = parse_arch(arch)
    if suffix == "a":
        return cap == base
    if suffix == "f":
        return cap // 10 == base // 10 and cap >= base
    return cap >= base


GPU_NAMES = {75: "Turing (T4, RTX 20xx)", 80: "Ampere (A100, A30)", 86: "Ampere (A10, A40, RTX 30xx)", 89: "Ada (L4, L40S, RTX 40xx)",
             90: "Hopper (H100, H200)", 100: "Blackwell (B200)", 120: "Blackwell (RTX 50xx)"}


def preflight(gpu_line, arch):
    """The GPU, as `nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total
    --format=csv,noheader` prints it, judged against binaries built for `arch` with CUDA 13.0."""
    fields = [f.strip() for f in (gpu_line or "").split(",")]
    if len(fields) < 3 or not fields[0]:
        raise CheckError(f"cannot read nvidia-smi's answer {gpu_line!r} (expected: name, driver_version, compute_cap, memory)")
    name, driver_text, cap_text = fields[:3]
    driver, cap = parse_driver_version(driver_text), parse_compute_cap(cap_text)
    parse_arch(arch)
    record = {"gpu": name, "driver": driver_text, "driver_version": list(driver) if driver else None, "compute_cap": cap,
              "memory": fields[3] if len(fields) > 3 else None, "arch": arch, "cuda": CUDA_RELEASE, "problems": []}
    if driver is None:
        record["problems"].append(f"driver version {driver_text!r} is not a version number")
    elif driver[0] < MIN_DRIVER_MAJOR:
        record["problems"].append(f"NVIDIA driver {driver_text} is too old: the binaries are built with CUDA {CUDA_RELEASE}, "
                                  f"whose PTX needs driver {MIN_DRIVER_MAJOR} or newer (update the driver, or rebuild with an older CUDA)")
    if cap is None:
        record["problems"].append(f"nvidia-smi gives no compute capability ({cap_text!r}); a driver {MIN_DRIVER_MAJOR}+ reports it")
    elif not arch_runs_on(arch, cap):
        base, _ = parse_arch(arch)
        here = GPU_NAMES.get(cap, f"compute capability {cap // 10}.{cap % 10}")
        built = GPU_NAMES.get(base, f"compute capability {base // 10}.{base % 10}")
        record["problems"].append(f"{name} is {here}, but the kernels are built for {arch} ({built} only): rebuild with "
                                  f"scripts/build-cuda.sh --arch sm_{cap}{'a' if cap >= 90 else ''} (or --arch sm_80, which runs on any GPU from Ampere on)")
    record["pass"] = not record["problems"]
    return record


def rust_tests(log):
    """A libtest run (`solution-5-tests --nocapture`): counts, and what is wrong with it. A CUDA
    test that finds no GPU prints 'SKIPPED on CUDA' and passes; on the GPU machine that is a
    failure, since the kernel was never run."""
    m = None
    for m in re.finditer(r"test result: (\w+)\. (\d+) passed; (\d+) failed; (\d+) ignored", log):
        pass
    record = {"result": None, "passed": 0, "failed": 0, "ignored": 0,
              # With --nocapture a test's own output may follow "test NAME ... " on its line.
              "tests": sorted(set(re.findall(r"^test (\S+) \.\.\. ", log, re.M))),
              "skipped_on_cuda": sorted(set(re.findall(r"(\w+): SKIPPED on CUDA", log)))}
    if m:
        record.update(result=m.group(1), passed=int(m.group(2)), failed=int(m.group(3)), ignored=int(m.group(4)))
    problems = []
    if m is None:
        problems.append("no 'test result:' line: the test binary did not finish")
    elif record["result"] != "ok" or record["failed"]:
        problems.append(f"{record['failed']} test(s) failed")
    elif record["passed"] == 0:
        problems.append("no test ran")
    if not any(t.endswith("_on_cuda") for t in record["tests"]) and m is not None:
        problems.append("no *_on_cuda test ran: is this the --features cuda test binary?")
    for t in record["skipped_on_cuda"]:
        problems.append(f"{t} skipped its CUDA part (no GPU answered)")
    record["problems"] = problems
    record["pass"] = not problems
    return record


# Nsight Compute metrics gpu-check asks for, and the names the summary gives them.
NCU_METRICS = {
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory_throughput_pct_of_peak",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_throughput_pct_of_peak",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical_occupancy_pct",
    "gpu__time_duration.sum": "duration",
    "dram__bytes.sum": "dram_bytes",
}


def ncu_number(text):
    """ncu prints numbers with thousands separators ('1,024.50'); None for 'n/a'."""
    try:
        return float(text.replace(",", ""))
    except (AttributeError, ValueError):
        return None


def ncu_summary(log):
    """The first profiled kernel in `ncu --csv --metrics ...` output (which may be mixed with the
    program's own output and ncu's ==PROF== lines)."""
    lines = log.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"') and "Metric Name" in line), None)
    if start is None:
        why = next((line for line in lines if "==ERROR==" in line or "ERR_NVGPUCTRPERM" in line), None)
        raise CheckError("no CSV table in ncu's output" + (f": {why.strip()}" if why else " (did the kernel run under ncu?)"))
    rows = [r for r in csv.DictReader(line for line in lines[start:] if line.startswith('"'))]
    if not rows:
        raise CheckError("ncu's CSV table has no rows: no launch matched the kernel name")
    first = rows[0].get("ID")
    kernel = [r for r in rows if r.get("ID") == first]
    head = kernel[0]
    summary = {"kernel": head.get("Kernel Name"), "block_size": head.get("Block Size"), "grid_size": head.get("Grid Size"),
               "device": head.get("Device"), "cc": head.get("CC"), "metrics": {}}
    for r in kernel:
        name = NCU_METRICS.get(r.get("Metric Name"))
        if name:
            summary["metrics"][name] = {"value": ncu_number(r.get("Metric Value")), "unit": r.get("Metric Unit")}
    missing = [n for n in ("memory_throughput_pct_of_peak", "achieved_occupancy_pct") if n not in summary["metrics"]]
    if missing:
        raise CheckError(f"ncu's table lacks {', '.join(missing)} for {summary['kernel']}")
    return summary


def bench_cases(report, path):
    """{case name: median ms} from `gpt2 bench --json` or `torch-reference.py --json`."""
    try:
        return {r["name"]: r["median_ms"] for r in report["results"]}
    except (KeyError, TypeError) as e:
        raise CheckError(f"{path}: not a bench report (missing {e})")


def ratios(ours, theirs):
    """ours / theirs for every case both have (above 1: gpt2 is slower)."""
    return {name: ours[name] / theirs[name] for name in ours if name in theirs and theirs[name] > 0}


def graded_exercise(gradebook, path, device_mode, number=3):
    """Exercise `number` of the one student in `course grade`'s gradebook.json, and what is
    wrong with it: it must pass, graded in the column of the device it ran on."""
    try:
        report = next(r for r in gradebook[0]["reports"] if r["exercise"] == number)
    except (IndexError, KeyError, TypeError, StopIteration):
        raise CheckError(f"{path}: no exercise {number} report for the submission")
    record = {k: report.get(k) for k in ("exercise", "device", "points", "max_points", "passed")}
    record["problems"] = [p.get("message", str(p)) if isinstance(p, dict) else str(p) for p in report.get("problems") or []]
    # The questions that lost points, so a failed grading says where.
    record["lost"] = [f"{q.get('id')} ({q.get('outcome')})" for q in report.get("questions") or []
                      if isinstance(q, dict) and (q.get("points") or 0) < (q.get("max_points") or 0)]
    expected = "CUDA" if device_mode == "cuda" else "CPU"
    wrong = []
    if not record["passed"]:
        lost = f" lost: {', '.join(record['lost'])}" if record["lost"] else ""
        wrong.append(f"exercise {number} did not pass grading: {record['points']}/{record['max_points']} {'; '.join(record['problems'])}".rstrip() + lost)
    if record["device"] != expected:
        wrong.append(f"exercise {number} was graded as a {record['device']} run, expected {expected}")
    return record, wrong


def log_text(work, name, limit=8000):
    """A step's printed output (a profile table, say), so the one JSON holds what was shown."""
    path = os.path.join(work, "logs", f"{name}.log")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    return text if len(text) <= limit else "...\n" + text[-limit:]


def load_steps(work):
    steps = []
    folder = os.path.join(work, "steps")
    if os.path.isdir(folder):
        for name in sorted(os.listdir(folder)):
            if name.endswith(".json"):
                steps.append(read_json(os.path.join(folder, name), "a step record"))
    steps.sort(key=lambda s: s.get("order", 0))
    return steps


def assemble(work):
    """Everything gpu-check.sh left in `work`, as one JSON object, and the list of failures."""
    meta = read_json(os.path.join(work, "meta.json"), "the run's description")
    steps = load_steps(work)
    result = {"schema": SCHEMA, **meta, "steps": steps, "parity": [], "profile": {}, "bench": {}, "torch": {}}
    failures = []
    preflight_record = os.path.join(work, "preflight.json")
    if os.path.isfile(preflight_record):
        result["preflight"] = read_json(preflight_record, "the GPU's preflight")

    # A profile step whose report has no usable device times fails, though gpt2 exited 0.
    for mode in ("events", "sync"):
        path = os.path.join(work, f"profile-{mode}", "report.json")
        if os.path.isfile(path):
            summary = profile_summary(read_json(path, "gpt2 profile's report"), path)
            summary["table"] = log_text(work, f"profile-{mode}")
            summary["timing_problems"] = device_timing_problems(summary, meta.get("device_mode"))
            result["profile"][mode] = summary
            for s in steps:
                if s["name"] == f"profile-{mode}" and s["status"] == "ok" and summary["timing_problems"]:
                    s["status"], s["message"] = "failed", "report.json: " + "; ".join(summary["timing_problems"])

    for s in steps:
        if s["status"] in ("failed", "timeout") and s["group"] in REQUIRED_STEPS:
            failures.append(f"step {s['name']}: {s['status']} ({s.get('message') or 'see ' + s.get('log', 'its log')})")

    parity_dir = os.path.join(work, "parity")
    if os.path.isdir(parity_dir):
        for name in sorted(os.listdir(parity_dir)):
            if name.endswith(".json"):
                record = read_json(os.path.join(parity_dir, name), "a parity record")
                result["parity"].append(record)
                if not record.get("pass"):
                    b = record["bound"]
                    failures.append(f"parity {record.get('model')} {record['dtype']}: {b['metric']} {record[b['metric']]:.3g} > {b['limit']:g}")

    ev, sy = result["profile"].get("events"), result["profile"].get("sync")
    if ev and sy and ev["wall_us_total"] > 0:
        result["profile"]["sync_over_events_wall"] = sy["wall_us_total"] / ev["wall_us_total"]

    gradebook = os.path.join(work, "grades", "gradebook.json")
    if os.path.isfile(gradebook):
        record, wrong = graded_exercise(read_json(gradebook, "course grade's gradebook"), gradebook, meta.get("device_mode"))
        result["exercise"] = record
        failures.extend(wrong)
    for key, name in (("exercise_5_tests", "exercise-5-tests.json"), ("ncu", "ncu.json"), ("serve", "serve.json")):
        path = os.path.join(work, name)
        if os.path.isfile(path):
            result[key] = read_json(path, f"the {key} record")

    ours_by_dtype = {}
    for name in sorted(os.listdir(work)):
        if name.startswith("bench-") and name.endswith(".json"):
            path = os.path.join(work, name)
            report = read_json(path, "gpt2 bench's report")
            dtype = name[len("bench-"):-len(".json")]
            ours_by_dtype[dtype] = bench_cases(report, path)
            result["bench"][dtype] = report

    torch = result["torch"]
    torch_status = os.path.join(work, "torch-status.json")
    if os.path.isfile(torch_status):
        torch.update(read_json(torch_status, "the PyTorch probe"))
    theirs = {}
    for name in sorted(os.listdir(work)):
        if name.startswith("torch-reference-") and name.endswith(".json"):
            path = os.path.join(work, name)
            dtype = name[len("torch-reference-"):-len(".json")]
            theirs[dtype] = bench_cases(read_json(path, "torch-reference.py's report"), path)
    if theirs:
        torch["reference"] = theirs
        torch["bench_ratio_gpt2_over_torch"] = {d: ratios(ours_by_dtype[d], theirs[d]) for d in theirs if d in ours_by_dtype}
    torch_profile = os.path.join(work, "torch-profile.json")
    if os.path.isfile(torch_profile):
        tp = read_json(torch_profile, "torch-profile.py's report")
        torch["profile"] = tp
        torch["profile_table"] = log_text(work, "torch-profile")
        # Both figures, never their ratio: gpt2's self CUDA total is stream time (event pairs:
        # kernels plus the stream's waits for launches, most of a batch-1 step on a fast GPU),
        # PyTorch's is CUPTI's sum of kernel durations. Dividing one by the other would credit
        # PyTorch with its idle stream. The like-for-like ratios are the bench's (both host-clock
        # latencies to a finished result).
        if ev and ev.get("self_cuda_us_total") and (tp.get("totals") or {}).get("self_cuda_us"):
            theirs_step = tp["totals"]["self_cuda_us"] / max(int(tp.get("active_steps", 1)), 1)
            torch["profile_ms_per_step"] = {
                "gpt2_self_cuda_ms": ev["self_cuda_us_total"] / ev["active_steps"] / 1e3,
                "gpt2_basis": "stream time: CUDA event pairs around each op (kernels plus the stream's waits for launches)",
                "torch_self_cuda_ms": theirs_step / 1e3,
                "torch_basis": "kernel time: CUPTI's sum of kernel durations (no waits)",
            }

    result["failures"] = failures
    result["passed"] = not failures
    return result


def fmt(x, digits=3):
    return "-" if x is None else f"{x:.{digits}g}"


def fmt_cap(cap):
    return "unknown" if cap is None else f"{cap // 10}.{cap % 10}"


def summary(result):
    lines = [f"gpu-check ({result.get('device_mode')}): {result.get('gpu') or 'no GPU'}"]
    pf = result.get("preflight")
    if pf:
        lines.append(f"preflight: driver {pf['driver']}, compute capability {fmt_cap(pf['compute_cap'])}, binaries for {pf['arch']} "
                     f"(CUDA {pf['cuda']}): {'ok' if pf['pass'] else 'NOT usable: ' + '; '.join(pf['problems'])}")
    for s in result["steps"]:
        lines.append(f"  {s['status']:<8} {s['name']:<28} {s.get('seconds', 0):6.1f} s  {s.get('message') or ''}".rstrip())
    if result["parity"]:
        lines.append("parity (device logits vs CPU f32 logits, same weights and ids):")
        for p in result["parity"]:
            b = p["bound"]
            lines.append(
                f"  {'ok  ' if p['pass'] else 'FAIL'} {p.get('model', '?'):<14} {p['dtype']:<5} max abs err {fmt(p['max_abs_err'])}"
                f"  scaled {fmt(p['scaled_max_err'])}  (bound: {b['metric']} <= {b['limit']:g})  top-1 agree {p['top1_agreement']:.0%}"
            )
    for mode in ("events", "sync"):
        pr = result["profile"].get(mode)
        if pr:
            top = ", ".join(f"{o['name']} {fmt(o['share_pct'])}%" for o in pr["top"][:3])
            basis = f" ({pr['cuda_time_basis']} time)" if pr.get("cuda_time_basis") else ""
            lines.append(
                f"profile {mode:<6}: wall {pr['wall_us_total'] / 1e3:.2f} ms over {pr['active_steps']} steps "
                f"({pr['wall_ms_per_step']:.3f} ms/step), self CUDA{basis} {fmt(pr['self_cuda_ms_per_step'])} ms/step; top: {top}"
            )
            lines.extend(f"  warning: {w}" for w in pr.get("warnings") or [])
    if "sync_over_events_wall" in result["profile"]:
        lines.append(f"  sync mode wall / events mode wall = {result['profile']['sync_over_events_wall']:.2f}")
    if result.get("exercise"):
        e = result["exercise"]
        lines.append(f"exercise 3 graded by course grade: {'passed' if e['passed'] else 'NOT passed'}, {e['points']}/{e['max_points']}, ranked as a {e['device']} run")
    t5 = result.get("exercise_5_tests")
    if t5:
        lines.append(f"exercise 5's tests (solution-5, --features cuda): {t5['passed']} passed, {t5['failed']} failed"
                     + ("" if t5["pass"] else "; " + "; ".join(t5["problems"])))
    sv = result.get("serve")
    if sv:
        lines.append(f"serve {sv['model']} on {sv['device']}: {sv['prompts']} prompts alone {sv['alone_s']} s, together {sv['together_s']} s; "
                     + ("each batched completion is its alone one" if sv["pass"] else "; ".join(sv["problems"])))
    nc = result.get("ncu")
    if nc:
        m = nc["metrics"]
        lines.append(f"ncu {nc['kernel']} grid {nc.get('grid_size')} block {nc.get('block_size')}: memory throughput "
                     f"{fmt(m['memory_throughput_pct_of_peak']['value'])}% of peak, achieved occupancy {fmt(m['achieved_occupancy_pct']['value'])}%")
    for dtype, report in result["bench"].items():
        cases = "  ".join(f"{r['name']} {r['median_ms']:.3f}" for r in report["results"])
        lines.append(f"bench {dtype} (median ms): {cases}")
    torch = result["torch"]
    if torch.get("available") is False:
        lines.append(f"torch: not run ({torch.get('reason')})")
    for dtype, r in (torch.get("bench_ratio_gpt2_over_torch") or {}).items():
        lines.append(f"gpt2 / torch {dtype}: " + "  ".join(f"{k} {v:.2f}x" for k, v in r.items()))
    if torch.get("profile_ms_per_step"):
        p = torch["profile_ms_per_step"]
        lines.append(f"self CUDA per forward: gpt2 {p['gpt2_self_cuda_ms']:.3f} ms of stream time, torch {p['torch_self_cuda_ms']:.3f} ms "
                     "of kernel time (not the same quantity, so not divided; the bench ratios compare like with like)")
    if result["passed"]:
        lines.append("PASSED")
    else:
        lines.append("FAILED:")
        lines.extend(f"  {f}" for f in result["failures"])
    return "\n".join(lines)


def archive(work):
    """Packs everything in `work` but the one JSON into ARCHIVE_NAME (xz-compressed tar, paths
    relative to `work`) and removes what it packed, so `work` ends with two files: a machine
    that returns only a few files from one folder brings the whole run back. Returns the
    archive's member names."""
    keep = {RESULT_NAME, ARCHIVE_NAME}
    entries = sorted(n for n in os.listdir(work) if n not in keep)
    path = os.path.join(work, ARCHIVE_NAME)
    partial = path + ".partial"
    with tarfile.open(partial, "w:xz") as tar:
        for name in entries:
            tar.add(os.path.join(work, name), arcname=name)
    os.replace(partial, path)
    for name in entries:
        full = os.path.join(work, name)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full)
        else:
            os.remove(full)
    with tarfile.open(path, "r:xz") as tar:
        return tar.getnames()


def bundle(folder, tree_bytes):
    """What `gpu-check.sh --pack` left in `folder`: each file and its size, the bundle's total,
    and whether it and the repository's tracked files (`tree_bytes`) fit what the device
    machine carries. Raises CheckError on a missing binary or an oversized bundle."""
    files = {n: os.path.getsize(os.path.join(folder, n)) for n in sorted(os.listdir(folder))
             if n != "bundle.json" and os.path.isfile(os.path.join(folder, n))}
    missing = [n for n in BUNDLE_REQUIRED if n not in files]
    if missing:
        raise CheckError(f"{folder}: {', '.join(missing)} missing from the bundle (scripts/build-cuda.sh builds them all)")
    total = sum(files.values())
    record = {"files": files, "bundle_bytes": total, "tree_bytes": tree_bytes, "limit_bytes": CARRY_LIMIT_BYTES,
              "fits": total + tree_bytes <= CARRY_LIMIT_BYTES}
    if not record["fits"]:
        raise CheckError(f"{folder}: the bundle ({mib(total)}) and the repository's files ({mib(tree_bytes)}) come to "
                         f"{mib(total + tree_bytes)}, over the {mib(CARRY_LIMIT_BYTES)} a device machine carries")
    return record


def mib(n):
    return f"{n / 1024 / 1024:.1f} MiB"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compare", help="logit parity of one device run against the CPU run")
    c.add_argument("--ref", required=True, help="CPU f32 logits (gpt2 logits --json)")
    c.add_argument("--got", required=True, help="device logits of the same ids")
    c.add_argument("--dtype", required=True, choices=sorted(BOUNDS))
    c.add_argument("--model", default="", help="label written into the record")
    c.add_argument("--out", help="also write the record here")
    a = sub.add_parser("assemble", help="one JSON and the summary from a gpu-check work folder")
    a.add_argument("--work", required=True)
    a.add_argument("--out", required=True)
    p = sub.add_parser("preflight", help="judge the GPU (nvidia-smi's answer) against the build's architecture")
    p.add_argument("--gpu", required=True, help="name, driver_version, compute_cap, memory.total (nvidia-smi --format=csv,noheader)")
    p.add_argument("--arch", required=True, help="what the kernels are built for, e.g. sm_90a")
    p.add_argument("--out", required=True)
    t = sub.add_parser("rust-tests", help="read a libtest run of exercise 5's CUDA tests")
    t.add_argument("--log", required=True)
    t.add_argument("--out", required=True)
    sub.add_parser("ncu-metrics", help="the metrics to give `ncu --metrics`, comma-separated")
    n = sub.add_parser("ncu", help="summarise `ncu --csv --metrics ...` output")
    n.add_argument("--log", required=True)
    n.add_argument("--out", required=True)
    r = sub.add_parser("archive", help="pack everything in a work folder but gpu-check.json into one archive")
    r.add_argument("--work", required=True)
    b = sub.add_parser("bundle", help="list and size-check what gpu-check.sh --pack wrote")
    b.add_argument("--dir", required=True)
    b.add_argument("--tree-bytes", type=int, required=True, help="bytes of the repository's tracked files")
    args = ap.parse_args(argv)
    try:
        if args.command == "preflight":
            record = preflight(args.gpu, args.arch)
            write_record(args.out, record)
            for problem in record["problems"]:
                print(f"gpu-check: error: {problem}", file=sys.stderr)
            return 0 if record["pass"] else 1
        if args.command == "rust-tests":
            with open(args.log, encoding="utf-8", errors="replace") as f:
                record = rust_tests(f.read())
            write_record(args.out, record)
            print(f"{record['passed']} passed, {record['failed']} failed; " + ("; ".join(record["problems"]) or "all ran on CUDA"))
            return 0 if record["pass"] else 1
        if args.command == "ncu-metrics":
            print(",".join(NCU_METRICS))
            return 0
        if args.command == "ncu":
            with open(args.log, encoding="utf-8", errors="replace") as f:
                record = ncu_summary(f.read())
            write_record(args.out, record)
            print(json.dumps(record, indent=2))
            return 0
        if args.command == "archive":
            members = archive(args.work)
            path = os.path.join(args.work, ARCHIVE_NAME)
            print(f"packed {len(members)} files and folders into {path} ({mib(os.path.getsize(path))})")
            if os.path.getsize(path) > RETURN_FILE_LIMIT_BYTES:
                print(f"gpu-check: warning: {path} is over the {mib(RETURN_FILE_LIMIT_BYTES)} a device run returns per file", file=sys.stderr)
            return 0
        if args.command == "bundle":
            record = bundle(args.dir, args.tree_bytes)
            write_record(os.path.join(args.dir, "bundle.json"), record)
            for name, size in record["files"].items():
                print(f"  {name:<24} {mib(size):>10}")
            print(f"  {'bundle':<24} {mib(record['bundle_bytes']):>10}  (+ {mib(record['tree_bytes'])} of tracked files: "
                  f"{mib(record['bundle_bytes'] + record['tree_bytes'])} of the {mib(record['limit_bytes'])} a device run carries)")
            return 0
        if args.command == "compare":
            record = compare(logit_rows(read_json(args.ref, "CPU logits"), args.ref), logit_rows(read_json(args.got, "device logits"), args.got), args.dtype)
            record = {"model": args.model, **record}
            text = json.dumps(record, indent=2)
            if args.out:
                with open(args.out, "w", encoding="utf-8") as f:
                    f.write(text + "\n")
            print(text)
            return 0 if record["pass"] else 1
        try:
            result = assemble(args.work)
        except CheckError as e:
            # Still one JSON, saying what could not be read (the archive holds the rest).
            write_record(args.out, {"schema": SCHEMA, "passed": False, "failures": [f"cannot assemble the results: {e}"]})
            raise
        write_record(args.out, result)
        print(summary(result))
        print(f"wrote {args.out}")
        return 0 if result["passed"] else 1
    except CheckError as e:
        print(f"gpu-check: error: {e}", file=sys.stderr)
        return 2


def write_record(path, record):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
