//! Plain aligned tables and number formatting for human output.

use std::fmt::Write as _;

/// Formats an integer with thousands separators: 12345678 → "12,345,678".
pub fn thousands(value: impl Into<u128>) -> String {
    let digits = value.into().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A header row for [`render`]: the column names as cells.
pub fn header(names: &[&str]) -> Vec<String> {
    names.iter().map(|&name| name.to_owned()).collect()
}

/// Renders rows as columns; the first row is the header. Numeric-looking cells align right.
pub fn render(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let width = widths.get(c).copied().unwrap_or(0);
            let numeric = cell.chars().next().is_some_and(|ch| ch.is_ascii_digit());
            if c > 0 {
                line.push_str("  ");
            }
            // Writing to a String cannot fail.
            let _ = if numeric {
                write!(line, "{cell:>width$}")
            } else {
                write!(line, "{cell:<width$}")
            };
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A cost cell: dollars to the cent, `-` when nothing is priced, `*` when part is unpriced.
pub fn money(cost: &agentlog::transcript::RowCost) -> String {
    let mark = if cost.unpriced_models.is_empty() {
        ""
    } else {
        "*"
    };
    cost.usd()
        .map_or_else(|| format!("-{mark}"), |d| format!("${d:.2}{mark}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0u64), "0");
        assert_eq!(thousands(999u64), "999");
        assert_eq!(thousands(1_000u64), "1,000");
        assert_eq!(thousands(12_345_678u64), "12,345,678");
    }
}
