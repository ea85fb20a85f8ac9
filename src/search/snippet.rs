//! Snippets: a bounded, single-line excerpt around an event's first match
//! (docs/SEARCH.md, "Snippets").
//!
//! The input is the document's text with each match wrapped in U+FDD0 ... U+FDD1 (the index's
//! highlight markers, which documents can never contain). Whitespace runs become one space, the
//! excerpt starts a third of the budget before the first match, and an ellipsis marks each cut
//! side; the result never exceeds the budget in code points.

use crate::search::request::is_js_space;

/// The default snippet budget, in code points.
pub const DEFAULT_SNIPPET_CHARS: usize = 240;

/// Opens a highlighted match in marked text.
pub const MARK_OPEN: char = '\u{FDD0}';
/// Closes a highlighted match in marked text.
pub const MARK_CLOSE: char = '\u{FDD1}';

const ELLIPSIS: char = '…';

/// An excerpt and where the matches are in it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snippet {
    /// The excerpt.
    pub text: String,
    /// The highlighted ranges of `text`, as code point offsets `[start, end)`, ascending.
    pub marks: Vec<(usize, usize)>,
}

/// The snippet of `marked` within `max` code points.
pub fn make_snippet(marked: &str, max: usize) -> Snippet {
    snippet_and_rest(marked, max, 0).0
}

/// The snippet of `marked` within `max` code points, and how many words of the text follow
/// its window (runs of non-space holding an ASCII letter or digit, each at least one index
/// token; 0 when the snippet runs to the text's end). The text is read only until more than
/// `need` words follow the farthest the window can reach, so the count is then a lower bound
/// above `need`.
pub(crate) fn snippet_and_rest(marked: &str, max: usize, need: usize) -> (Snippet, usize) {
    // One pass: markers dropped (the first one's position kept), whitespace collapsed.
    let mut chars: Vec<char> = Vec::with_capacity(marked.len().min(4 * max + 1024));
    let mut lit: Vec<bool> = Vec::with_capacity(chars.capacity());
    let mut match_start: Option<usize> = None;
    let mut open = false;
    // Words past the window's farthest end (the first match + `max`): the window, and so the
    // snippet, is the same however much text follows them.
    let (mut word_start, mut word_counts, mut words_after) = (0, false, 0);
    for c in marked.chars() {
        match c {
            MARK_OPEN => {
                match_start.get_or_insert(chars.len());
                open = true;
            }
            MARK_CLOSE => open = false,
            c if is_js_space(c) => {
                if chars.last().is_some_and(|last| *last != ' ') {
                    let beyond = match_start.is_some_and(|m| word_start > m + max + 1);
                    if beyond && word_counts {
                        words_after += 1;
                        if words_after > need {
                            break;
                        }
                    }
                    chars.push(' ');
                    lit.push(open);
                }
            }
            c => {
                if chars.last().is_none_or(|last| *last == ' ') {
                    word_start = chars.len();
                    word_counts = false;
                }
                word_counts |= c.is_ascii_alphanumeric();
                chars.push(c);
                lit.push(open);
            }
        }
    }
    if chars.last() == Some(&' ') {
        chars.pop();
        lit.pop();
    }
    let len = chars.len();
    if len <= max {
        return (build(&chars, &lit, 0, len, "", ""), 0);
    }
    if max <= 1 {
        let snippet = Snippet {
            text: if max == 1 {
                ELLIPSIS.to_string()
            } else {
                String::new()
            },
            marks: Vec::new(),
        };
        return (snippet, 0);
    }
    let m = match_start.unwrap_or(0).min(len - 1);
    let mut start = m.saturating_sub(max / 3);
    let prefix = if start > 0 { "…" } else { "" };
    let mut suffix = "…";
    let width = |s: &str| s.chars().count();
    let mut content = max.saturating_sub(width(prefix) + width(suffix));
    if content < 1 {
        start = m;
        suffix = "";
        content = max.saturating_sub(width(prefix));
    } else if m >= start + content {
        start = m + 1 - content;
    }
    let end = len.min(start + content);
    if end == len {
        suffix = "";
        content = max.saturating_sub(width(prefix));
        start = end.saturating_sub(content);
    }
    let end = len.min(start + content);
    let rest = chars
        .get(end..)
        .unwrap_or_default()
        .split(|c| *c == ' ')
        .filter(|word| word.iter().any(char::is_ascii_alphanumeric))
        .count();
    (build(&chars, &lit, start, end, prefix, suffix), rest)
}

fn build(
    chars: &[char],
    lit: &[bool],
    start: usize,
    end: usize,
    prefix: &str,
    suffix: &str,
) -> Snippet {
    let body = chars.get(start..end).unwrap_or_default();
    let flags = lit.get(start..end).unwrap_or_default();
    let mut text = String::with_capacity(body.len() + 8);
    text.push_str(prefix);
    text.extend(body);
    text.push_str(suffix);
    let offset = prefix.chars().count();
    let mut marks = Vec::new();
    let mut run: Option<usize> = None;
    for (i, on) in flags.iter().chain(std::iter::once(&false)).enumerate() {
        match (run, *on) {
            (None, true) => run = Some(i),
            (Some(s), false) => {
                marks.push((offset + s, offset + i));
                run = None;
            }
            _ => {}
        }
    }
    Snippet { text, marks }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(before: &str, hit: &str, after: &str) -> String {
        format!("{before}{MARK_OPEN}{hit}{MARK_CLOSE}{after}")
    }

    #[test]
    fn short_text_is_whole_on_one_line() {
        let s = make_snippet(&marked("  say\n\n", "hello", "  world \t"), 240);
        assert_eq!(s.text, "say hello world");
        assert_eq!(s.marks, vec![(4, 9)]);
    }

    #[test]
    fn long_text_starts_a_third_before_the_match_and_marks_cuts() {
        let text = marked(&"a".repeat(300), "needle", &"b".repeat(300));
        let s = make_snippet(&text, 30);
        assert_eq!(s.text.chars().count(), 30);
        assert!(s.text.starts_with('…') && s.text.ends_with('…'));
        // The match starts max/3 code points into the cut text, after the ellipsis.
        assert_eq!(s.text.chars().position(|c| c == 'n'), Some(11));
        assert_eq!(s.marks, vec![(11, 17)]);
    }

    #[test]
    fn a_match_near_the_end_pulls_the_window_back() {
        let text = marked(&"a".repeat(100), "end", "");
        let s = make_snippet(&text, 20);
        assert_eq!(s.text, format!("…{}end", "a".repeat(16)));
        assert_eq!(s.marks, vec![(17, 20)]);
    }

    #[test]
    fn a_match_at_the_start_keeps_no_prefix() {
        let text = marked("", "start", &" x".repeat(100));
        let s = make_snippet(&text, 10);
        assert_eq!(s.text, "start x x…");
        assert_eq!(make_snippet(&text, 1).text, "…");
        assert!(make_snippet(&text, 2).text.chars().count() <= 2);
    }

    #[test]
    fn the_rest_counts_the_words_after_the_window() {
        let text = marked("", "start", &" x".repeat(100));
        let (s, rest) = snippet_and_rest(&text, 10, 1_000);
        assert_eq!(s.text, "start x x…");
        // "start x x" is the window (the ellipsis takes the tenth place): 98 x's follow.
        assert_eq!(rest, 98);
        assert_eq!(snippet_and_rest(&marked("a ", "b", " c"), 240, 0).1, 0);
        let (_, rest) = snippet_and_rest(&marked("", "go", " -- ;; é y 1"), 3, 9);
        assert_eq!(
            rest, 2,
            "words without an ASCII letter or digit are not counted"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Reading only until enough words follow the window gives the snippet of reading the
        /// whole text (the oracle: `need` never met).
        #[test]
        fn stopping_early_changes_nothing(
            parts in proptest::collection::vec((0usize..6, 0usize..4, proptest::bool::weighted(0.1)), 0..400),
            max in 0usize..120,
            need in 0usize..20,
        ) {
            const WORDS: [&str; 6] = ["a", "bb", "--", "é", "x1", "ccc"];
            const GAPS: [&str; 4] = [" ", "\n\t", "", "  "];
            let mut text = String::new();
            for (w, g, hit) in parts {
                if hit {
                    text.push(MARK_OPEN);
                    text.push_str(WORDS[w]);
                    text.push(MARK_CLOSE);
                } else {
                    text.push_str(WORDS[w]);
                }
                text.push_str(GAPS[g]);
            }
            let (whole, all) = snippet_and_rest(&text, max, usize::MAX);
            let (early, rest) = snippet_and_rest(&text, max, need);
            proptest::prop_assert_eq!(&early, &whole);
            proptest::prop_assert_eq!(make_snippet(&text, max), whole);
            proptest::prop_assert!(rest == all || (rest > need && all > need), "{} {}", rest, all);
        }
    }

    #[test]
    fn the_budget_is_never_exceeded() {
        for max in 0..40 {
            for at in [0, 5, 50, 99] {
                let text = format!(
                    "{}{MARK_OPEN}x{MARK_CLOSE}{}",
                    "y ".repeat(at),
                    " z".repeat(60)
                );
                let s = make_snippet(&text, max);
                assert!(s.text.chars().count() <= max, "max {max} at {at}");
            }
        }
    }
}
