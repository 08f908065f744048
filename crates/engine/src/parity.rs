//! How far one model's logits are from another's: the largest absolute difference over the
//! largest absolute reference logit. One measure for every parity test of the families (a GGUF
//! file against its dequantized weights or transformers' f32, quantize-at-load against the
//! file llama.cpp wrote), so that their stated bounds compare with one another.

/// `max |got − want| / max |want|` over two equally long runs of logits (rows laid end to
/// end). Different lengths are a mistake in the comparison, not a difference: it panics.
pub fn relative_difference(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len(), "logits of different lengths");
    let (mut diff, mut scale) = (0f32, 0f32);
    for (g, w) in got.iter().zip(want) {
        diff = diff.max((g - w).abs());
        scale = scale.max(w.abs());
    }
    diff / scale
}

#[cfg(test)]
mod tests {
    use super::relative_difference;

    #[test]
    fn the_largest_difference_over_the_largest_reference_logit() {
        assert_eq!(relative_difference(&[1.0, -4.0], &[1.0, -4.0]), 0.0);
        // |Δ| 0.5 at the first logit, 1.0 at the second; the reference's largest is 4.
        assert_eq!(relative_difference(&[1.5, -3.0], &[1.0, -4.0]), 0.25);
        // The scale is the reference's, not the candidate's.
        assert_eq!(relative_difference(&[8.0, 0.0], &[4.0, 0.0]), 1.0);
    }

    #[test]
    #[should_panic(expected = "different lengths")]
    fn logits_of_different_lengths_are_refused() {
        relative_difference(&[1.0], &[1.0, 2.0]);
    }
}
