//! Intentionally empty: this crate exists for its dependencies' features (see its Cargo.toml).
