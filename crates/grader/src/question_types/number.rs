//! Numbers with a tolerance.

/// True when `given` is within `abs` of `expected`, or within `rel` of it relatively.
pub fn within(given: f64, expected: f64, abs: f64, rel: f64) -> bool {
    let diff = (given - expected).abs();
    diff <= abs || diff <= rel * expected.abs()
}

/// Numbers in reasons are shown as every course message shows them.
pub use course_model::text::show;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerance_is_absolute_or_relative() {
        assert!(within(4.04, 4.0, 0.05, 0.0));
        assert!(!within(4.06, 4.0, 0.05, 0.0));
        assert!(within(101.0, 100.0, 0.0, 0.02));
        assert!(!within(103.0, 100.0, 0.0, 0.02));
    }
}
