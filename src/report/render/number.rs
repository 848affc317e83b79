//! Numbers as the report prints them.

/// `v` with `decimals` decimals; a value that rounds to zero prints as `0`, never `-0`
/// (sums of nothing, `-0.0` from the wire, and tiny negatives all land there).
pub fn fixed(v: f64, decimals: usize) -> String {
    let text = format!("{v:.decimals$}");
    match text.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::fixed;

    #[test]
    fn zero_of_either_sign_and_tiny_negatives_print_without_a_minus() {
        assert_eq!(fixed(-0.0, 0), "0");
        assert_eq!(fixed(-0.0, 4), "0.0000");
        assert_eq!(fixed(-0.3, 0), "0");
        assert_eq!(fixed(-0.00004, 4), "0.0000");
        assert_eq!(fixed(0.0, 1), "0.0");
    }

    #[test]
    fn real_negatives_and_positives_keep_their_digits() {
        assert_eq!(fixed(-0.6, 0), "-1");
        assert_eq!(fixed(-12.346, 2), "-12.35");
        assert_eq!(fixed(3.0, 0), "3");
        assert_eq!(fixed(f64::NAN, 1), "NaN");
    }
}
