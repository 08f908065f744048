#!/usr/bin/env python3
"""Write crates/bench/tests/fixtures/stats-reference.json: reference statistics from numpy.

Run once (the output is committed); the bench crate's tests check its percentiles, mean, std,
min, max and Tukey outlier flags against these values.

    python3 -m venv target/venv-bench && target/venv-bench/bin/pip install numpy
    target/venv-bench/bin/python scripts/make-stats-fixture.py
"""
import json
import pathlib

import numpy as np

PERCENTILES = [0, 1, 2.5, 5, 10, 25, 33.3, 50, 66.7, 75, 90, 95, 97.5, 99, 99.9, 100]


def case(name, samples):
    a = np.asarray(samples, dtype=np.float64)
    q1, q3 = np.percentile(a, [25, 75])
    iqr = q3 - q1
    low, high = q1 - 1.5 * iqr, q3 + 1.5 * iqr
    return {
        "name": name,
        "samples": a.tolist(),
        "percentiles": {repr(p): float(np.percentile(a, p)) for p in PERCENTILES},
        "mean": float(np.mean(a)),
        "std": float(np.std(a)),  # ddof=0, numpy's default
        "min": float(np.min(a)),
        "max": float(np.max(a)),
        "tukey_low_fence": float(low),
        "tukey_high_fence": float(high),
        "outliers_low": [int(i) for i in np.nonzero(a < low)[0]],
        "outliers_high": [int(i) for i in np.nonzero(a > high)[0]],
    }


def main():
    rng = np.random.default_rng(20261129)
    cases = [
        case("single", [42.0]),
        case("two", [1.0, 3.0]),
        case("small_unsorted", [5.0, 1.0, 4.0, 2.0, 3.0, 10.0, 7.5]),
        case("ties", [2.0, 2.0, 2.0, 3.0, 3.0, 9.0, 9.0, 9.0, 9.0, 100.0]),
        case("negative_and_zero", [-3.5, 0.0, -1.25, 2.0, 0.0, -7.0, 4.5, 1.0]),
        # Latency-like: log-normal body with a few slow requests in the tail.
        case("lognormal_with_tail", np.concatenate([
            rng.lognormal(mean=3.0, sigma=0.3, size=200), [250.0, 300.0, 900.0]]).tolist()),
        case("uniform_300", rng.uniform(10.0, 20.0, size=300).tolist()),
    ]
    out = pathlib.Path(__file__).resolve().parent.parent / "crates/bench/tests/fixtures/stats-reference.json"
    out.write_text(json.dumps({
        "generator": "scripts/make-stats-fixture.py",
        "numpy_version": np.__version__,
        "cases": cases,
    }, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
