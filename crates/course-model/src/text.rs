//! Positions in a file's text, as every message that names a line and column counts them.

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// A number as a message shows it: as few decimals as it needs, up to four (`4`, `10.25`);
/// very small or very large ones in exponent form (`3.1e-7`).
pub fn show(x: f64) -> String {
    if x != 0.0 && (x.abs() < 1e-3 || x.abs() >= 1e7) {
        return format!("{x:e}");
    }
    let s = format!("{x:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_show_compactly() {
        assert_eq!(show(4.0), "4");
        assert_eq!(show(10.25), "10.25");
        assert_eq!(show(3.1e-7), "3.1e-7");
        assert_eq!(show(-0.00001), "-1e-5");
        assert_eq!(show(-0.00004 * 0.0), "0");
    }

    #[test]
    fn positions_count_lines_and_characters_from_one() {
        assert_eq!(line_column("ab\ncé\nx", 6), (2, 3));
        assert_eq!(line_column("ab", 0), (1, 1));
    }
}
