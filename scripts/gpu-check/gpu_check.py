#!/usr/bin/env python3
"""The logic of scripts/gpu-check.sh: logit parity with stated bounds, reading the profile and
bench files, the one JSON and the summary. Standard library only, so it runs on a bare GPU box.

    gpu_check.py compare --ref CPU.json --got DEVICE.json --dtype f32|f16|bf16
    gpu_check.py assemble --work DIR --out gpu-check.json

`compare` prints one JSON object (the parity record) and exits 1 when the bound is exceeded.
`assemble` reads what gpu-check.sh left in DIR (steps/*.json, parity/*.json, profile-*/report.json,
bench-*.json, torch-*.json), writes the one JSON, prints the summary, and exits 1 when a
required check failed. The unit tests are in test_gpu_check.py next to this file.
"""
import argparse
import json
import math
import os
import sys

SCHEMA = "gpu-check/1"

# Logit parity bounds, against CPU f32 logits of the same weights and ids. f32 on CUDA must
# agree to 1e-3 absolute (cuBLAS f32 without TF32, different summation order). Half precision
# rounds every activation: f16 keeps 11 significant bits, bf16 8, so their bound is relative to
# the logits' scale, max(1, max |CPU logit|), with room for rounding that accumulates over 12
# layers: 2e-2 for f16, 1e-1 for bf16 (about ten times the error expected from their epsilons).
BOUNDS = {
    "f32": {"metric": "max_abs_err", "limit": 1e-3},
    "f16": {"metric": "scaled_max_err", "limit": 2e-2},
    "bf16": {"metric": "scaled_max_err", "limit": 1e-1},
}

# Steps whose failure fails the whole check; PyTorch's are extras (a skipped step never fails).
REQUIRED_STEPS = ("preflight", "parity", "profile", "bench", "exercise")


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
    if not isinstance(report, dict) or report.get("schema") != "profiler-report/1":
        raise CheckError(f"{path}: not a profiler-report/1 file")
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
        "device": report.get("device"),
        "timing": timing,
        "active_steps": steps,
        "wall_us_total": totals["wall_us"],
        "wall_ms_per_step": totals["wall_us"] / steps / 1e3,
        "self_cuda_us_total": totals.get("self_cuda_us"),
        "device_ms_per_step": totals["self_cuda_us"] / steps / 1e3 if on_device else None,
        "ranked_by": key,
        "top": [
            {"name": r["name"], "self_us": r.get(key), "share_pct": 100.0 * (r.get(key) or 0.0) / total_key if total_key else None, "calls": r.get("calls")}
            for r in ops[:5]
        ],
    }


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
    expected = "CUDA" if device_mode == "cuda" else "CPU"
    wrong = []
    if not record["passed"]:
        wrong.append(f"exercise {number} did not pass grading: {record['points']}/{record['max_points']} {'; '.join(record['problems'])}".rstrip())
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

    for mode in ("events", "sync"):
        path = os.path.join(work, f"profile-{mode}", "report.json")
        if os.path.isfile(path):
            result["profile"][mode] = profile_summary(read_json(path, "gpt2 profile's report"), path)
            result["profile"][mode]["table"] = log_text(work, f"profile-{mode}")
    ev, sy = result["profile"].get("events"), result["profile"].get("sync")
    if ev and sy and ev["wall_us_total"] > 0:
        result["profile"]["sync_over_events_wall"] = sy["wall_us_total"] / ev["wall_us_total"]

    gradebook = os.path.join(work, "grades", "gradebook.json")
    if os.path.isfile(gradebook):
        record, wrong = graded_exercise(read_json(gradebook, "course grade's gradebook"), gradebook, meta.get("device_mode"))
        result["exercise"] = record
        failures.extend(wrong)

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
        if ev and ev.get("self_cuda_us_total") and (tp.get("totals") or {}).get("self_cuda_us"):
            ours_step = ev["self_cuda_us_total"] / ev["active_steps"]
            theirs_step = tp["totals"]["self_cuda_us"] / max(int(tp.get("active_steps", 1)), 1)
            torch["profile_device_ms_per_step"] = {"gpt2": ours_step / 1e3, "torch": theirs_step / 1e3, "ratio_gpt2_over_torch": ours_step / theirs_step}

    result["failures"] = failures
    result["passed"] = not failures
    return result


def fmt(x, digits=3):
    return "-" if x is None else f"{x:.{digits}g}"


def summary(result):
    lines = [f"gpu-check ({result.get('device_mode')}): {result.get('gpu') or 'no GPU'}"]
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
            lines.append(
                f"profile {mode:<6}: wall {pr['wall_us_total'] / 1e3:.2f} ms over {pr['active_steps']} steps "
                f"({pr['wall_ms_per_step']:.3f} ms/step), device {fmt(pr['device_ms_per_step'])} ms/step; top: {top}"
            )
    if "sync_over_events_wall" in result["profile"]:
        lines.append(f"  sync mode wall / events mode wall = {result['profile']['sync_over_events_wall']:.2f}")
    if result.get("exercise"):
        e = result["exercise"]
        lines.append(f"exercise 3 graded by course grade: {'passed' if e['passed'] else 'NOT passed'}, {e['points']}/{e['max_points']}, ranked as a {e['device']} run")
    for dtype, report in result["bench"].items():
        cases = "  ".join(f"{r['name']} {r['median_ms']:.3f}" for r in report["results"])
        lines.append(f"bench {dtype} (median ms): {cases}")
    torch = result["torch"]
    if torch.get("available") is False:
        lines.append(f"torch: not run ({torch.get('reason')})")
    for dtype, r in (torch.get("bench_ratio_gpt2_over_torch") or {}).items():
        lines.append(f"gpt2 / torch {dtype}: " + "  ".join(f"{k} {v:.2f}x" for k, v in r.items()))
    if torch.get("profile_device_ms_per_step"):
        p = torch["profile_device_ms_per_step"]
        lines.append(f"device time per forward: gpt2 {p['gpt2']:.3f} ms, torch {p['torch']:.3f} ms ({p['ratio_gpt2_over_torch']:.2f}x)")
    if result["passed"]:
        lines.append("PASSED")
    else:
        lines.append("FAILED:")
        lines.extend(f"  {f}" for f in result["failures"])
    return "\n".join(lines)


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
    args = ap.parse_args(argv)
    try:
        if args.command == "compare":
            record = compare(logit_rows(read_json(args.ref, "CPU logits"), args.ref), logit_rows(read_json(args.got, "device logits"), args.got), args.dtype)
            record = {"model": args.model, **record}
            text = json.dumps(record, indent=2)
            if args.out:
                with open(args.out, "w", encoding="utf-8") as f:
                    f.write(text + "\n")
            print(text)
            return 0 if record["pass"] else 1
        result = assemble(args.work)
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
        print(summary(result))
        print(f"wrote {args.out}")
        return 0 if result["passed"] else 1
    except CheckError as e:
        print(f"gpu-check: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
