//! Percentiles as numpy computes them by default ("linear" interpolation), so that a figure
//! printed here can be checked against `np.percentile` digit for digit: the one definition the
//! statistics (crate::stats) and the intervals (crate::intervals) both use.

/// The `p`-th percentile (0..=100) of `samples`, interpolated linearly between the two nearest
/// ranks exactly as `numpy.percentile(samples, p)` does. `None` for an empty slice or a `p`
/// outside 0..=100. NaN samples are sorted last, as numpy does.
pub fn percentile(samples: &[f64], p: f64) -> Option<f64> {
    let sorted = sorted_copy(samples);
    percentile_sorted(&sorted, p)
}

/// [`percentile`] for a slice the caller has already sorted ascending.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let frac = rank - lo as f64;
    let (a, b) = (sorted[lo], sorted[hi]);
    // numpy's `_lerp` evaluates from the nearer end so the result never leaves [a, b].
    Some(if frac >= 0.5 {
        b - (b - a) * (1.0 - frac)
    } else {
        a + (b - a) * frac
    })
}

/// `samples` sorted ascending, by `total_cmp`.
pub(crate) fn sorted_copy(samples: &[f64]) -> Vec<f64> {
    let mut v = samples.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v
}
