//! Where a measurement was taken: the record report.json and bench.json both carry.
