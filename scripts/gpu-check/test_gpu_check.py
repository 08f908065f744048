"""Unit tests of gpu_check.py (run: python3 -m unittest discover -s scripts/gpu-check)."""
import contextlib
import io
import json
import os
import tempfile
import unittest

import gpu_check


def write(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f)


def profile_report(device, wall_us, cuda_rows=None):
    """A small report.json as `gpt2 profile` writes it (two active steps)."""
    rows = [
        {"name": "matmul", "calls": 4, "self_cpu_us": 0.6 * wall_us, "self_cuda_us": cuda_rows and cuda_rows[0]},
        {"name": "ProfilerStep*", "calls": 2, "self_cpu_us": 0.1 * wall_us, "self_cuda_us": cuda_rows and cuda_rows[2]},
        {"name": "gelu", "calls": 2, "self_cpu_us": 0.3 * wall_us, "self_cuda_us": cuda_rows and cuda_rows[1]},
    ]
    return {
        "schema": "profiler-report/1",
        "device": device,
        "active_steps": 2,
        "environment": {"timing": "cuda-events" if cuda_rows else "host"},
        "totals": {"self_cpu_us": wall_us, "self_cuda_us": sum(cuda_rows) if cuda_rows else None, "wall_us": wall_us},
        "rows": rows,
    }


def bench_report(scale):
    return {"device": "Cuda", "dtype": "f32", "results": [{"name": "forward_b1_t8", "median_ms": 2.0 * scale}, {"name": "decode_b8_ctx32", "median_ms": 4.0 * scale}]}


def gradebook(device, passed):
    """`course grade`'s gradebook.json for one student, as much of it as gpu-check reads."""
    reports = [{"exercise": 1, "device": None, "points": 0.0, "max_points": 6.0, "passed": False, "problems": []},
               {"exercise": 3, "device": device, "points": 9.0 if passed else 3.0, "max_points": 9.0, "passed": passed,
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
            self.assertEqual(r["schema"], "gpu-check/1")
            self.assertEqual(r["profile"]["sync_over_events_wall"], 3.0)
            ev = r["profile"]["events"]
            self.assertEqual(ev["ranked_by"], "self_cuda_us")
            self.assertEqual([o["name"] for o in ev["top"]], ["matmul", "gelu"])
            self.assertAlmostEqual(ev["top"][0]["share_pct"], 60.0)
            self.assertAlmostEqual(ev["device_ms_per_step"], 0.5)
            # The printed table travels in the JSON, its end kept when it is long.
            self.assertTrue(ev["table"].startswith("...\n") and ev["table"].endswith("x" * 100))
            self.assertIsNone(r["profile"]["sync"]["table"])
            self.assertEqual(r["torch"]["bench_ratio_gpt2_over_torch"]["f32"], {"forward_b1_t8": 2.0, "decode_b8_ctx32": 2.0})
            self.assertAlmostEqual(r["torch"]["profile_device_ms_per_step"]["ratio_gpt2_over_torch"], 1.0)
            text = gpu_check.summary(r)
            self.assertIn("sync mode wall / events mode wall = 3.00", text)
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
        self.assertIn("did not pass grading: 3.0/9.0 row 1 of a CUDA run has no self CUDA time", wrong[0])
        with self.assertRaisesRegex(gpu_check.CheckError, "no exercise 3 report"):
            gpu_check.graded_exercise([{"reports": []}], "g.json", "cuda")

    def test_cpu_profile_ranks_by_self_cpu(self):
        s = gpu_check.profile_summary(profile_report("cpu", 1000.0), "report.json")
        self.assertEqual(s["ranked_by"], "self_cpu_us")
        self.assertIsNone(s["device_ms_per_step"])
        self.assertEqual(s["top"][0]["name"], "matmul")
        with self.assertRaisesRegex(gpu_check.CheckError, "not a profiler-report/1"):
            gpu_check.profile_summary({"schema": "x"}, "report.json")

    def test_assemble_writes_one_json(self):
        with tempfile.TemporaryDirectory() as d:
            self.work(d)
            out = os.path.join(d, "gpu-check.json")
            with contextlib.redirect_stdout(io.StringIO()) as printed:
                self.assertEqual(gpu_check.main(["assemble", "--work", d, "--out", out]), 0)
            self.assertIn("PASSED", printed.getvalue())
            with open(out) as f:
                self.assertTrue(json.load(f)["passed"])


if __name__ == "__main__":
    unittest.main()
