"""Unit tests of gpu_check.py and of gpu-check.sh's --pack and --out layout (run:
python3 -B -m unittest discover -s scripts/gpu-check)."""
import contextlib
import io
import json
import os
import subprocess
import tarfile
import tempfile
import unittest

import gpu_check
import serve_check

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "gpu-check.sh")
# A report.json that `gpt2 profile --device cpu` wrote (tiny fixture, 2 active steps): what a
# CUDA check must refuse, and what a CPU one reads.
RECORDED_CPU_REPORT = os.path.join(HERE, "fixtures", "gpt2-profile-cpu.json")


def write(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f)


def profile_report(device, wall_us, cuda_rows=None, warnings=()):
    """A small report.json as `gpt2 profile` writes it (two active steps)."""
    rows = [
        {"name": "matmul", "calls": 4, "self_cpu_us": 0.6 * wall_us, "self_cuda_us": cuda_rows and cuda_rows[0]},
        {"name": "ProfilerStep*", "calls": 2, "self_cpu_us": 0.1 * wall_us, "self_cuda_us": cuda_rows and cuda_rows[2]},
        {"name": "gelu", "calls": 2, "self_cpu_us": 0.3 * wall_us, "self_cuda_us": cuda_rows and cuda_rows[1]},
    ]
    return {
        "schema": "profiler-report/3",
        "device": device,
        "active_steps": 2,
        "environment": {"timing": "cuda-events" if device == "cuda" else "host"},
        "totals": {"self_cpu_us": wall_us, "self_cuda_us": sum(cuda_rows) if cuda_rows else None,
                   "cuda_time_basis": "stream" if cuda_rows else None, "wall_us": wall_us},
        "warnings": list(warnings),
        "rows": rows,
    }


def bench_report(scale):
    return {"device": "Cuda", "dtype": "f32", "results": [{"name": "forward_b1_t8", "median_ms": 2.0 * scale}, {"name": "decode_b8_ctx32", "median_ms": 4.0 * scale}]}


def gradebook(device, passed):
    """`course grade`'s gradebook.json for one student, as much of it as gpu-check reads."""
    questions = [{"id": "top_ops.0.name", "outcome": "right", "points": 1.0, "max_points": 1.0},
                 {"id": "plan.mechanism", "outcome": "right" if passed else "unanswered", "points": 3.0 if passed else 0.0, "max_points": 3.0}]
    reports = [{"exercise": 1, "device": None, "points": 0.0, "max_points": 6.0, "passed": False, "problems": []},
               {"exercise": 3, "device": device, "points": 9.0 if passed else 3.0, "max_points": 9.0, "passed": passed, "questions": questions,
                "problems": [] if passed else [{"message": "row 1 of a CUDA run has no self CUDA time"}]}]
    return [{"student": "gpu-check", "reports": reports}]


class Compare(unittest.TestCase):
    ref = [[0.5, -1.25, 2.0], [3.0, 0.0, -0.5]]

    def test_identical_logits_pass_every_bound(self):
        for dtype in gpu_check.BOUNDS:
            r = gpu_check.compare(self.ref, self.ref, dtype)
            self.assertTrue(r["pass"], dtype)
            self.assertEqual(r["max_abs_err"], 0.0)
            self.assertEqual(r["top1_agreement"], 1.0)

    def test_f32_bound_is_absolute_1e3(self):
        near = [[0.5 + 9e-4, -1.25, 2.0], [3.0, 0.0, -0.5]]
        far = [[0.5 + 2e-3, -1.25, 2.0], [3.0, 0.0, -0.5]]
        self.assertTrue(gpu_check.compare(self.ref, near, "f32")["pass"])
        r = gpu_check.compare(self.ref, far, "f32")
        self.assertFalse(r["pass"])
        self.assertAlmostEqual(r["max_abs_err"], 2e-3)

    def test_half_precision_bounds_scale_with_the_largest_logit(self):
        # Largest |logit| is 3, so bf16 allows 0.3 and f16 0.06 of absolute error.
        got = [[0.5 + 0.2, -1.25, 2.0], [3.0, 0.0, -0.5]]
        bf16 = gpu_check.compare(self.ref, got, "bf16")
        self.assertTrue(bf16["pass"])
        self.assertAlmostEqual(bf16["scaled_max_err"], 0.2 / 3.0)
        self.assertFalse(gpu_check.compare(self.ref, got, "f16")["pass"])

    def test_quantized_files_allow_two_activation_roundings(self):
        # Largest |logit| is 3: q8_0 and q4_0 allow 0.15 of absolute error, not 0.2.
        near = [[0.5 + 0.12, -1.25, 2.0], [3.0, 0.0, -0.5]]
        far = [[0.5 + 0.2, -1.25, 2.0], [3.0, 0.0, -0.5]]
        for dtype in ("q8_0", "q4_0"):
            self.assertTrue(gpu_check.compare(self.ref, near, dtype)["pass"], dtype)
            self.assertFalse(gpu_check.compare(self.ref, far, dtype)["pass"], dtype)

    def test_small_logits_use_a_scale_of_one(self):
        ref = [[0.01, 0.02]]
        got = [[0.01, 0.02 + 0.05]]
        r = gpu_check.compare(ref, got, "bf16")
        self.assertAlmostEqual(r["scaled_max_err"], 0.05)
        self.assertTrue(r["pass"])

    def test_nan_or_inf_fails_even_when_the_rest_agrees(self):
        got = [[float("nan"), -1.25, 2.0], [3.0, float("inf"), -0.5]]
        r = gpu_check.compare(self.ref, got, "bf16")
        self.assertEqual(r["non_finite"], 2)
        self.assertFalse(r["pass"])

    def test_null_from_serde_json_counts_as_non_finite(self):
        got = gpu_check.logit_rows([[None, -1.25, 2.0], [3.0, 0.0, -0.5]], "got.json")
        r = gpu_check.compare(self.ref, got, "f32")
        self.assertEqual((r["non_finite"], r["pass"]), (1, False))

    def test_top1_agreement_counts_positions(self):
        got = [[0.5, -1.25, 2.0], [-3.0, 0.0, -0.5]]
        self.assertEqual(gpu_check.compare(self.ref, got, "bf16")["top1_agreement"], 0.5)

    def test_shape_mismatch_and_bad_files_are_named(self):
        with self.assertRaisesRegex(gpu_check.CheckError, "shapes differ"):
            gpu_check.compare(self.ref, [[1.0, 2.0]], "f32")
        with self.assertRaisesRegex(gpu_check.CheckError, "x.json: position 1 has 1 logits"):
            gpu_check.logit_rows([[1.0, 2.0], [1.0]], "x.json")
        with self.assertRaisesRegex(gpu_check.CheckError, "not a number"):
            gpu_check.logit_rows([[1.0, "2"]], "x.json")
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.json")
            with open(bad, "w") as f:
                f.write("[[1.0,\n oops]]")
            with self.assertRaisesRegex(gpu_check.CheckError, r"bad.json:2:\d+: not JSON"):
                gpu_check.read_json(bad, "device logits")

    def test_command_line_exit_codes(self):
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            ref, got, out = (os.path.join(d, n) for n in ("ref.json", "got.json", "rec.json"))
            write(ref, self.ref)
            write(got, [[0.5 + 0.01, -1.25, 2.0], [3.0, 0.0, -0.5]])
            self.assertEqual(gpu_check.main(["compare", "--ref", ref, "--got", got, "--dtype", "f16", "--model", "m", "--out", out]), 0)
            with open(out) as f:
                self.assertEqual(json.load(f)["model"], "m")
            self.assertEqual(gpu_check.main(["compare", "--ref", ref, "--got", got, "--dtype", "f32"]), 1)
            self.assertEqual(gpu_check.main(["compare", "--ref", ref, "--got", os.path.join(d, "none.json"), "--dtype", "f32"]), 2)


class Assemble(unittest.TestCase):
    def work(self, d, *, parity_pass=True, bench_failed=False, torch=True):
        write(os.path.join(d, "meta.json"), {"device_mode": "cuda", "gpu": "Test GPU, 580.00, 1 MiB"})
        steps = [("preflight", "preflight", "ok"), ("parity-tiny-f32", "parity", "ok"), ("bench-f32", "bench", "failed" if bench_failed else "ok"), ("torch-reference-f32", "torch", "failed")]
        for i, (name, group, status) in enumerate(steps):
            write(os.path.join(d, "steps", f"{i:02d}-{name}.json"), {"order": i, "name": name, "group": group, "status": status, "seconds": 1.5, "rc": 0 if status == "ok" else 1, "message": "" if status == "ok" else "exit 1", "log": f"{name}.log"})
        ref = [[1.0, 2.0]]
        got = [[1.0, 2.0]] if parity_pass else [[1.0, 2.5]]
        write(os.path.join(d, "parity", "tiny-f32.json"), {"model": "tiny", **gpu_check.compare(ref, got, "f32")})
        write(os.path.join(d, "profile-events", "report.json"), profile_report("cuda", 1000.0, [600.0, 300.0, 100.0]))
        write(os.path.join(d, "profile-sync", "report.json"), profile_report("cuda", 3000.0, [600.0, 300.0, 100.0]))
        write(os.path.join(d, "bench-f32.json"), bench_report(1.0))
        write(os.path.join(d, "grades", "gradebook.json"), gradebook("CUDA", True))
        write(os.path.join(d, "serve.json"), {"device": "cuda", "model": "synthetic", "prompts": 6, "alone_s": 1.2,
                                              "together_s": 0.4, "problems": [], "pass": True})
        os.makedirs(os.path.join(d, "logs"), exist_ok=True)
        with open(os.path.join(d, "logs", "profile-events.log"), "w") as f:
            f.write("Name  Self CUDA %\nmatmul  60.00%\n" + "x" * 9000)
        if torch:
            write(os.path.join(d, "torch-status.json"), {"available": True, "version": "2.11.0"})
            write(os.path.join(d, "torch-reference-f32.json"), bench_report(0.5))
            write(os.path.join(d, "torch-profile.json"), {"active_steps": 5, "totals": {"self_cuda_us": 2500.0}})
        else:
            write(os.path.join(d, "torch-status.json"), {"available": False, "reason": "no torch"})

    def test_a_good_run_passes_with_ratios_and_profile_totals(self):
        with tempfile.TemporaryDirectory() as d:
            self.work(d)
            r = gpu_check.assemble(d)
            self.assertTrue(r["passed"], r["failures"])
            self.assertEqual(r["schema"], "gpu-check/2")
            self.assertEqual(r["profile"]["sync_over_events_wall"], 3.0)
            ev = r["profile"]["events"]
            self.assertEqual(ev["ranked_by"], "self_cuda_us")
            self.assertEqual([o["name"] for o in ev["top"]], ["matmul", "gelu"])
            self.assertAlmostEqual(ev["top"][0]["share_pct"], 60.0)
            self.assertAlmostEqual(ev["self_cuda_ms_per_step"], 0.5)
            self.assertEqual((ev["cuda_time_basis"], ev["timing_problems"]), ("stream", []))
            # The printed table travels in the JSON, its end kept when it is long.
            self.assertTrue(ev["table"].startswith("...\n") and ev["table"].endswith("x" * 100))
            self.assertIsNone(r["profile"]["sync"]["table"])
            self.assertEqual(r["torch"]["bench_ratio_gpt2_over_torch"]["f32"], {"forward_b1_t8": 2.0, "decode_b8_ctx32": 2.0})
            # Stream time and CUPTI kernel time side by side, never divided.
            p = r["torch"]["profile_ms_per_step"]
            self.assertEqual((p["gpt2_self_cuda_ms"], p["torch_self_cuda_ms"]), (0.5, 0.5))
            self.assertFalse([k for k in p if "ratio" in k], p)
            text = gpu_check.summary(r)
            self.assertIn("gpt2 0.500 ms of stream time, torch 0.500 ms of kernel time (not the same quantity, so not divided", text)
            self.assertIn("self CUDA (stream time) 0.5 ms/step", text)
            self.assertIn("sync mode wall / events mode wall = 3.00", text)
            self.assertIn("serve synthetic on cuda: 6 prompts alone 1.2 s, together 0.4 s; each batched completion is its alone one", text)
            self.assertIn("PASSED", text)
            self.assertIn("exercise 3 graded by course grade: passed, 9.0/9.0, ranked as a CUDA run", text)
            # A failed optional step (PyTorch) is shown but does not fail the check.
            self.assertIn("failed   torch-reference-f32", text)

    def test_failed_parity_or_required_step_fails_the_check(self):
        with tempfile.TemporaryDirectory() as d:
            self.work(d, parity_pass=False, bench_failed=True, torch=False)
            r = gpu_check.assemble(d)
            self.assertFalse(r["passed"])
            self.assertEqual(len(r["failures"]), 2, r["failures"])
            self.assertTrue(any("parity tiny f32: max_abs_err 0.5 > 0.001" in f for f in r["failures"]), r["failures"])
            text = gpu_check.summary(r)
            self.assertIn("torch: not run (no torch)", text)
            self.assertIn("FAILED", text)

    def test_the_graded_exercise_must_pass_in_the_devices_column(self):
        ok, wrong = gpu_check.graded_exercise(gradebook("CUDA", True), "g.json", "cuda")
        self.assertEqual((ok["passed"], ok["device"], wrong), (True, "CUDA", []))
        _, wrong = gpu_check.graded_exercise(gradebook("CPU", True), "g.json", "cuda")
        self.assertEqual(wrong, ["exercise 3 was graded as a CPU run, expected CUDA"])
        _, wrong = gpu_check.graded_exercise(gradebook("CUDA", False), "g.json", "cuda")
        self.assertIn("did not pass grading: 3.0/9.0 row 1 of a CUDA run has no self CUDA time lost: plan.mechanism (unanswered)", wrong[0])
        with self.assertRaisesRegex(gpu_check.CheckError, "no exercise 3 report"):
            gpu_check.graded_exercise([{"reports": []}], "g.json", "cuda")

    def test_report_versions_come_from_the_committed_schema(self):
        schemas = gpu_check.report_schema()
        with open(gpu_check.REPORT_SCHEMA_PATH) as f:
            schema = json.load(f)
        self.assertEqual(schemas[-1], schema["properties"]["schema"]["const"])
        self.assertIn("profiler-report/1", schemas)
        # A schema that no longer describes a field this script reads is refused, by name.
        del schema["$defs"]["Totals"]["properties"]["wall_us"]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "report.schema.json")
            with open(path, "w") as f:
                json.dump(schema, f)
            with self.assertRaisesRegex(gpu_check.CheckError, "Totals no longer has wall_us"):
                gpu_check.report_schema(path)
        # A report of a version the schema does not list is refused.
        newer = profile_report("cpu", 1000.0)
        newer["schema"] = "profiler-report/999"
        with self.assertRaisesRegex(gpu_check.CheckError, "not a gpt2 profile report"):
            gpu_check.profile_summary(newer, "report.json")

    def test_cpu_profile_ranks_by_self_cpu(self):
        s = gpu_check.profile_summary(profile_report("cpu", 1000.0), "report.json")
        self.assertEqual(s["ranked_by"], "self_cpu_us")
        self.assertIsNone(s["self_cuda_ms_per_step"])
        self.assertIsNone(s["cuda_time_basis"])
        self.assertEqual(s["top"][0]["name"], "matmul")
        with self.assertRaisesRegex(gpu_check.CheckError, "not a gpt2 profile report"):
            gpu_check.profile_summary({"schema": "x"}, "report.json")
        # Reports from before the warnings and the time basis still read.
        old = profile_report("cpu", 1000.0)
        old["schema"] = "profiler-report/1"
        del old["warnings"]
        self.assertEqual(gpu_check.profile_summary(old, "report.json")["warnings"], [])

    def test_assemble_writes_one_json(self):
        with tempfile.TemporaryDirectory() as d:
            self.work(d)
            out = os.path.join(d, "gpu-check.json")
            with contextlib.redirect_stdout(io.StringIO()) as printed:
                self.assertEqual(gpu_check.main(["assemble", "--work", d, "--out", out]), 0)
            self.assertIn("PASSED", printed.getvalue())
            with open(out) as f:
                self.assertTrue(json.load(f)["passed"])



def completion(text, tokens=4, finish="length"):
    return {"choices": [{"text": text, "finish_reason": finish}], "usage": {"completion_tokens": tokens}}


class ServeJudge(unittest.TestCase):
    def test_the_same_completions_alone_and_batched_pass(self):
        alone = [completion(" a b"), completion(" c", 1, "stop")]
        self.assertEqual(serve_check.judge(alone, [dict(c) for c in alone]), [])

    def test_a_changed_text_or_finish_reason_is_named_by_its_prompt(self):
        alone = [completion(" a b"), completion(" c d")]
        problems = serve_check.judge(alone, [completion(" a b"), completion(" c e")])
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("prompt 1: batched ' c e' (length) but alone ' c d' (length)", problems[0])
        problems = serve_check.judge(alone, [completion(" a b", finish="stop"), completion(" c d")])
        self.assertIn("prompt 0", problems[0])

    def test_nothing_generated_is_no_evidence(self):
        # Two empty completions agree, and prove nothing about the batch.
        problems = serve_check.judge([completion("", 0, "stop")], [completion("", 0, "stop")])
        self.assertEqual(problems, ["prompt 0: no tokens generated alone"])

    def test_a_missing_answer_fails(self):
        self.assertIn("2 answers alone but 1 batched", serve_check.judge([completion("a")] * 2, [completion("a")]))


class DeviceTiming(unittest.TestCase):
    """The profile step's rule: a CUDA check needs a CUDA report with 0 < self CUDA <= 1.1 x wall."""

    def recorded_cpu_report(self):
        return gpu_check.read_json(RECORDED_CPU_REPORT, "a recorded CPU report")

    def summary(self, report):
        return gpu_check.profile_summary(report, "report.json")

    def test_a_recorded_cpu_report_fails_a_cuda_check(self):
        problems = gpu_check.device_timing_problems(self.summary(self.recorded_cpu_report()), "cuda")
        self.assertEqual(problems, ["a cpu report, not a CUDA one", "no self CUDA times (device timing did not run or failed)"])

    def test_the_same_report_is_what_a_cpu_check_expects(self):
        self.assertEqual(gpu_check.device_timing_problems(self.summary(self.recorded_cpu_report()), "cpu"), [])
        self.assertEqual(gpu_check.device_timing_problems(self.summary(profile_report("cuda", 10.0, [1.0, 1.0, 1.0])), "cpu"),
                         ["a cuda report from a --device cpu run"])

    def test_failed_event_timing_fails_and_quotes_the_warning(self):
        report = profile_report("cuda", 1000.0, None, warnings=["cuda events: CUDA_ERROR_INVALID_HANDLE; no CUDA times"])
        problems = gpu_check.device_timing_problems(self.summary(report), "cuda")
        self.assertEqual(problems[0], "no self CUDA times (device timing did not run or failed)")
        self.assertIn("CUDA_ERROR_INVALID_HANDLE", problems[-1])

    def test_the_total_must_be_positive_and_within_1_1_times_the_wall(self):
        def problems(cuda_total):
            return gpu_check.device_timing_problems(self.summary(profile_report("cuda", 1000.0, [cuda_total, 0.0, 0.0])), "cuda")
        self.assertEqual(problems(1000.0), [])
        self.assertEqual(problems(1099.0), [])
        self.assertIn("1.20x the wall time", problems(1200.0)[0])
        self.assertIn("not positive", problems(-1.0)[0])
        report = profile_report("cuda", 1000.0, [0.0, 0.0, 0.0])
        report["totals"]["self_cuda_us"] = 0.0
        self.assertIn("self CUDA total 0 us is not positive", gpu_check.device_timing_problems(self.summary(report), "cuda")[0])

    def test_assemble_fails_the_profile_step_of_a_cuda_run_given_a_cpu_report(self):
        with tempfile.TemporaryDirectory() as d:
            Assemble().work(d)
            write(os.path.join(d, "steps", "09-profile-events.json"), {"order": 9, "name": "profile-events", "group": "profile", "status": "ok", "seconds": 1.0, "rc": 0, "message": "", "log": "logs/profile-events.log"})
            with open(RECORDED_CPU_REPORT) as f, open(os.path.join(d, "profile-events", "report.json"), "w") as g:
                g.write(f.read())
            r = gpu_check.assemble(d)
            self.assertFalse(r["passed"])
            step = next(s for s in r["steps"] if s["name"] == "profile-events")
            self.assertEqual(step["status"], "failed")
            self.assertEqual(r["failures"], ["step profile-events: failed (report.json: a cpu report, not a CUDA one; "
                                             "no self CUDA times (device timing did not run or failed))"])
            self.assertIn("FAILED", gpu_check.summary(r))


class Preflight(unittest.TestCase):
    def test_driver_versions_parse(self):
        self.assertEqual(gpu_check.parse_driver_version("580.65.06"), (580, 65, 6))
        self.assertEqual(gpu_check.parse_driver_version(" 575.57 "), (575, 57))
        self.assertEqual(gpu_check.parse_driver_version("590"), (590,))
        self.assertIsNone(gpu_check.parse_driver_version("[N/A]"))
        self.assertEqual(gpu_check.parse_compute_cap("9.0"), 90)
        self.assertEqual(gpu_check.parse_compute_cap("10.0"), 100)
        self.assertIsNone(gpu_check.parse_compute_cap("[N/A]"))

    def test_an_h200_with_driver_580_runs_the_sm_90a_build(self):
        r = gpu_check.preflight("NVIDIA H200, 580.65.06, 9.0, 143771 MiB", "sm_90a")
        self.assertTrue(r["pass"], r["problems"])
        self.assertEqual((r["gpu"], r["driver_version"], r["compute_cap"]), ("NVIDIA H200", [580, 65, 6], 90))

    def test_an_older_driver_is_named_with_the_version_it_needs(self):
        r = gpu_check.preflight("NVIDIA H100 80GB HBM3, 570.133.20, 9.0, 81559 MiB", "sm_90a")
        self.assertFalse(r["pass"])
        self.assertEqual(r["problems"], ["NVIDIA driver 570.133.20 is too old: the binaries are built with CUDA 13.0, whose PTX "
                                         "needs driver 580 or newer (update the driver, or rebuild with an older CUDA)"])

    def test_sm_90a_loads_on_hopper_only(self):
        a100 = gpu_check.preflight("NVIDIA A100-SXM4-80GB, 580.82.07, 8.0, 81920 MiB", "sm_90a")
        self.assertFalse(a100["pass"])
        self.assertIn("NVIDIA A100-SXM4-80GB is Ampere (A100, A30), but the kernels are built for sm_90a (Hopper (H100, H200) only)", a100["problems"][0])
        self.assertIn("scripts/build-cuda.sh --arch sm_80", a100["problems"][0])
        b200 = gpu_check.preflight("NVIDIA B200, 580.82.07, 10.0, 183359 MiB", "sm_90a")
        self.assertIn("--arch sm_100a", b200["problems"][0])
        # Plain PTX is compiled by the driver for newer GPUs.
        self.assertTrue(gpu_check.preflight("NVIDIA H200, 580.65.06, 9.0, 143771 MiB", "sm_80")["pass"])
        self.assertFalse(gpu_check.preflight("Tesla T4, 580.65.06, 7.5, 15360 MiB", "sm_80")["pass"])

    def test_unreadable_answers_are_errors(self):
        with self.assertRaisesRegex(gpu_check.CheckError, "cannot read nvidia-smi's answer"):
            gpu_check.preflight("No devices were found", "sm_90a")
        with self.assertRaisesRegex(gpu_check.CheckError, "not of the form sm_90a"):
            gpu_check.preflight("NVIDIA H200, 580.65.06, 9.0, 1 MiB", "90")
        r = gpu_check.preflight("NVIDIA H200, 580.65.06, [N/A], 1 MiB", "sm_90a")
        self.assertIn("no compute capability", r["problems"][0])


LIBTEST_OK = """
running 7 tests
test fused::tests::a_bias_of_the_wrong_width_is_an_error ... ok
test fused::tests::half_precision_on_cuda_rounds_only_the_result ... ok
test fused::tests::keeps_the_shape ... ok
test fused::tests::matches_the_unfused_ops_within_1e_5 ... ok
test fused::tests::matches_the_unfused_ops_within_1e_5_on_cuda ... ok
test fused::tests::saturates_like_gelu ... ok
test tests::other ... ok

test result: ok. 7 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.52s
"""


class RustTests(unittest.TestCase):
    def test_all_passed_on_cuda(self):
        r = gpu_check.rust_tests(LIBTEST_OK)
        self.assertTrue(r["pass"], r["problems"])
        self.assertEqual((r["passed"], r["failed"]), (7, 0))
        self.assertIn("fused::tests::matches_the_unfused_ops_within_1e_5_on_cuda", r["tests"])

    def test_a_cuda_test_that_found_no_gpu_is_a_failure_though_libtest_says_ok(self):
        log = LIBTEST_OK.replace(
            "test fused::tests::half_precision_on_cuda_rounds_only_the_result ... ok",
            "test fused::tests::half_precision_on_cuda_rounds_only_the_result ... half_precision_on_cuda_rounds_only_the_result: "
            "SKIPPED on CUDA, CUDA was not available (no device); only the CPU op was checked\nok")
        r = gpu_check.rust_tests(log)
        self.assertFalse(r["pass"])
        self.assertEqual(r["problems"], ["half_precision_on_cuda_rounds_only_the_result skipped its CUDA part (no GPU answered)"])

    def test_failures_a_crash_and_a_cpu_test_binary_fail(self):
        failed = LIBTEST_OK.replace("_on_cuda ... ok", "_on_cuda ... FAILED").replace("ok. 7 passed; 0 failed", "FAILED. 6 passed; 1 failed")
        self.assertEqual(gpu_check.rust_tests(failed)["problems"], ["1 test(s) failed"])
        self.assertIn("did not finish", gpu_check.rust_tests("running 7 tests\nSegmentation fault")["problems"][0])
        cpu_only = "\n".join(l for l in LIBTEST_OK.splitlines() if "_on_cuda" not in l).replace("7 passed", "5 passed")
        self.assertEqual(gpu_check.rust_tests(cpu_only)["problems"], ["no *_on_cuda test ran: is this the --features cuda test binary?"])


NCU_LOG = """==PROF== Connected to process 4242 (/tmp/gpu-check-bin/solution-5-tests)
running 1 test
==PROF== Profiling "fused_bias_gelu_f32" - 0: 0%....50%....100% - 9 passes
test fused::tests::matches_the_unfused_ops_within_1e_5_on_cuda ... ok
==PROF== Disconnected from process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","solution-5-tests","127.0.0.1","fused_bias_gelu_f32","1","13","(256, 1, 1)","(768, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes.sum","byte","1,572,864"
"0","4242","solution-5-tests","127.0.0.1","fused_bias_gelu_f32","1","13","(256, 1, 1)","(768, 1, 1)","0","9.0","Command line profiler metrics","gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed","%","21.5"
"0","4242","solution-5-tests","127.0.0.1","fused_bias_gelu_f32","1","13","(256, 1, 1)","(768, 1, 1)","0","9.0","Command line profiler metrics","sm__warps_active.avg.pct_of_peak_sustained_active","%","61.25"
"0","4242","solution-5-tests","127.0.0.1","fused_bias_gelu_f32","1","13","(256, 1, 1)","(768, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","4,128"
"""


class Ncu(unittest.TestCase):
    # Made-up numbers in ncu's CSV layout: they test the parsing only.
    def test_the_first_kernel_is_summarised_from_mixed_output(self):
        r = gpu_check.ncu_summary(NCU_LOG)
        self.assertEqual((r["kernel"], r["grid_size"], r["block_size"], r["cc"]), ("fused_bias_gelu_f32", "(768, 1, 1)", "(256, 1, 1)", "9.0"))
        m = r["metrics"]
        self.assertEqual(m["memory_throughput_pct_of_peak"], {"value": 21.5, "unit": "%"})
        self.assertEqual(m["achieved_occupancy_pct"]["value"], 61.25)
        self.assertEqual(m["dram_bytes"]["value"], 1572864.0)
        self.assertEqual(m["duration"], {"value": 4128.0, "unit": "nsecond"})

    def test_no_table_says_why(self):
        with self.assertRaisesRegex(gpu_check.CheckError, "ERR_NVGPUCTRPERM"):
            gpu_check.ncu_summary("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters")
        header = NCU_LOG.splitlines()[5]
        with self.assertRaisesRegex(gpu_check.CheckError, "no rows"):
            gpu_check.ncu_summary(header + "\n")
        only_dram = "\n".join(NCU_LOG.splitlines()[:7])
        with self.assertRaisesRegex(gpu_check.CheckError, "lacks memory_throughput_pct_of_peak, achieved_occupancy_pct"):
            gpu_check.ncu_summary(only_dram)


class Archive(unittest.TestCase):
    def test_the_folder_ends_with_the_json_and_one_archive_of_the_rest(self):
        with tempfile.TemporaryDirectory() as d:
            Assemble().work(d)
            write(os.path.join(d, gpu_check.RESULT_NAME), {"passed": True})
            before = sorted(os.path.relpath(os.path.join(root, f), d) for root, _, files in os.walk(d) for f in files)
            members = gpu_check.archive(d)
            self.assertEqual(sorted(os.listdir(d)), [gpu_check.ARCHIVE_NAME, gpu_check.RESULT_NAME])
            with tarfile.open(os.path.join(d, gpu_check.ARCHIVE_NAME)) as tar:
                files = sorted(m.name for m in tar.getmembers() if m.isfile())
                self.assertIn("logs/profile-events.log", members)
                self.assertEqual(files, [f for f in before if f != gpu_check.RESULT_NAME])
                self.assertTrue(tar.extractfile("logs/profile-events.log").read().startswith(b"Name  Self CUDA %"))


def run_script(*args, env=None):
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run(["bash", SCRIPT, *args], capture_output=True, text=True, env=full_env, timeout=120)


def fake_binary(path, body="echo fake"):
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\n{body}\n")
    os.chmod(path, 0o755)


class Bundle(unittest.TestCase):
    def test_pack_carries_solution_5_and_its_cuda_tests_and_says_the_size(self):
        with tempfile.TemporaryDirectory() as d:
            bins, pack = os.path.join(d, "bin"), os.path.join(d, "bundle")
            os.makedirs(bins)
            for name in ("gpt2", "solution-3", "course", "exercise-3", "solution-5", "solution-5-tests"):
                fake_binary(os.path.join(bins, name), f"echo {name}")
            with open(os.path.join(bins, "cuda-build.txt"), "w") as f:
                f.write("arch=sm_90a\n")
            run = run_script("--pack", pack, "--bin-dir", bins, env={"GPU_CHECK_CPU_BUILD": os.path.join(d, "none")})
            self.assertEqual(run.returncode, 0, run.stderr)
            record = gpu_check.read_json(os.path.join(pack, "bundle.json"), "the bundle listing")
            self.assertEqual(sorted(record["files"]), ["course.xz", "cuda-build.txt", "exercise-3.xz", "gpt2.xz", "solution-3.xz",
                                                       "solution-5-tests.xz", "solution-5.xz"])
            self.assertEqual(record["bundle_bytes"], sum(os.path.getsize(os.path.join(pack, n)) for n in record["files"]))
            self.assertTrue(record["fits"])
            self.assertIn("solution-5-tests.xz", run.stdout)
            self.assertRegex(run.stdout, r"bundle +\d+\.\d MiB")

    def test_pack_refuses_a_build_without_exercise_5s_test_binary(self):
        with tempfile.TemporaryDirectory() as d:
            bins = os.path.join(d, "bin")
            os.makedirs(bins)
            for name in ("gpt2", "solution-3", "course", "solution-5"):
                fake_binary(os.path.join(bins, name))
            run = run_script("--pack", os.path.join(d, "bundle"), "--bin-dir", bins, env={"GPU_CHECK_CPU_BUILD": os.path.join(d, "none")})
            self.assertEqual(run.returncode, 2)
            self.assertIn("solution-5-tests", run.stderr)

    def test_an_oversized_bundle_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            for name in gpu_check.BUNDLE_REQUIRED:
                with open(os.path.join(d, name), "wb") as f:
                    f.write(b"x" * 1024)
            self.assertEqual(gpu_check.bundle(d, 0)["bundle_bytes"], 5 * 1024)
            with self.assertRaisesRegex(gpu_check.CheckError, "over the 64.0 MiB a device machine carries"):
                gpu_check.bundle(d, gpu_check.CARRY_LIMIT_BYTES - 1024)
            os.remove(os.path.join(d, "solution-5-tests.xz"))
            with self.assertRaisesRegex(gpu_check.CheckError, "solution-5-tests.xz missing"):
                gpu_check.bundle(d, 0)


class OutLayout(unittest.TestCase):
    def test_a_preflight_failure_still_ends_with_the_json_and_the_archive_holding_the_diagnostics(self):
        with tempfile.TemporaryDirectory() as d:
            bins, out = os.path.join(d, "bin"), os.path.join(d, "out")
            os.makedirs(bins)
            fake_binary(os.path.join(bins, "gpt2"), "echo 'error: this gpt2 cannot start' >&2; exit 3")
            run = run_script("--device", "cpu", "--bin-dir", bins, "--out", out, "--no-torch")
            self.assertEqual(run.returncode, 2, run.stderr)
            self.assertEqual(sorted(os.listdir(out)), [gpu_check.ARCHIVE_NAME, gpu_check.RESULT_NAME])
            result = gpu_check.read_json(os.path.join(out, gpu_check.RESULT_NAME), "the result")
            self.assertFalse(result["passed"])
            self.assertIn("error: this gpt2 cannot start", " ".join(result["failures"]))
            with tarfile.open(os.path.join(out, gpu_check.ARCHIVE_NAME)) as tar:
                names = tar.getnames()
                self.assertIn("logs/preflight.log", names)
                diagnostics = tar.extractfile("logs/preflight-diagnostics.log").read().decode()
            for part in ("ldd " + os.path.join(bins, "gpt2"), "LD_LIBRARY_PATH=", "nvidia-smi"):
                self.assertIn(part, diagnostics)
            # A second run into the same folder clears the first one's files.
            again = run_script("--device", "cpu", "--bin-dir", bins, "--out", out, "--no-torch")
            self.assertEqual(again.returncode, 2, again.stderr)
            self.assertEqual(sorted(os.listdir(out)), [gpu_check.ARCHIVE_NAME, gpu_check.RESULT_NAME])

    def test_a_cuda_preflight_refuses_a_gpu_the_build_cannot_run_on_and_says_why(self):
        # A stand-in nvidia-smi on PATH: an A100 with a recent driver, sm_90a binaries.
        with tempfile.TemporaryDirectory() as d:
            bins, out, tools = (os.path.join(d, n) for n in ("bin", "out", "tools"))
            os.makedirs(bins)
            os.makedirs(tools)
            fake_binary(os.path.join(bins, "gpt2"), "echo 'gpt2 must not run: the preflight stops first' >&2; exit 9")
            with open(os.path.join(bins, "cuda-build.txt"), "w") as f:
                f.write("arch=sm_90a\ncompute_cap=90\n")
            fake_binary(os.path.join(tools, "nvidia-smi"),
                        'case "$1" in --query-gpu=*) echo "NVIDIA A100-SXM4-80GB, 580.82.07, 8.0, 81920 MiB" ;; *) echo "fake nvidia-smi table" ;; esac')
            run = run_script("--bin-dir", bins, "--out", out, "--no-torch", env={"PATH": tools + os.pathsep + os.environ["PATH"]})
            self.assertEqual(run.returncode, 2, run.stderr)
            self.assertIn("Ampere (A100, A30), but the kernels are built for sm_90a", run.stderr)
            self.assertEqual(sorted(os.listdir(out)), [gpu_check.ARCHIVE_NAME, gpu_check.RESULT_NAME])
            result = gpu_check.read_json(os.path.join(out, gpu_check.RESULT_NAME), "the result")
            self.assertEqual(result["preflight"]["compute_cap"], 80)
            self.assertEqual([s["name"] for s in result["steps"]], ["preflight-gpu"])
            self.assertIn("preflight: driver 580.82.07, compute capability 8.0, binaries for sm_90a (CUDA 13.0): NOT usable", run.stdout)
            with tarfile.open(os.path.join(out, gpu_check.ARCHIVE_NAME)) as tar:
                diagnostics = tar.extractfile("logs/preflight-diagnostics.log").read().decode()
            self.assertIn("fake nvidia-smi table", diagnostics)

    def test_a_folder_of_other_files_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "precious.txt"), "w") as f:
                f.write("keep me")
            run = run_script("--device", "cpu", "--bin-dir", d, "--out", d)
            self.assertEqual(run.returncode, 2)
            self.assertIn("is not empty and holds no earlier gpu-check run", run.stderr)
            self.assertTrue(os.path.exists(os.path.join(d, "precious.txt")))


if __name__ == "__main__":
    unittest.main()
