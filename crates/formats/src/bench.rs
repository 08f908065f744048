//! `bench.json`, the load client's file: its schema and the versions it replaced.
