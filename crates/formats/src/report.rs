//! `report.json`, the profiler's file: its schema, the versions it replaced, and its types.
