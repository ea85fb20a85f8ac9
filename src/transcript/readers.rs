//! The table of readers, above them: a format's reader, every reader in the order detection
//! tries them, and what goes through the table (format detection, a format's boundary
//! kinds). The readers themselves import only what is below them
//! ([`reader`](super::reader), the fold, the formats), never this table.

use super::fold::BoundaryKind;
use super::format::{Format, Probe, has};
use super::json::parse_line;
use super::opencode::rules::OpenCode;
use super::reader::Reader;
use super::{claude, codex, copilot, gemini, kimi, pi, qwen};

/// Every reader, in the order detection tries them (Qwen Code's records look like Claude
/// Code's but for their message's `parts`: it goes first).
const READERS: [&dyn Reader; 8] = [
    &codex::Codex,
    &qwen::Qwen,
    &claude::ClaudeCode,
    &pi::Pi,
    &gemini::Gemini,
    &copilot::Copilot,
    &kimi::Kimi,
    &OpenCode,
];

/// Every reader.
pub(crate) fn readers() -> &'static [&'static dyn Reader] {
    &READERS
}

/// The reader of a format.
pub(crate) fn reader(format: Format) -> &'static dyn Reader {
    match format {
        Format::ClaudeCode => &claude::ClaudeCode,
        Format::Codex => &codex::Codex,
        Format::Pi => &pi::Pi,
        Format::Copilot => &copilot::Copilot,
        Format::Gemini => &gemini::Gemini,
        Format::Qwen => &qwen::Qwen,
        Format::OpenCode => &OpenCode,
        Format::Kimi => &kimi::Kimi,
    }
}

impl Format {
    /// The kinds of compaction boundary this format's transcripts mark.
    pub fn boundary_kinds(self) -> &'static [BoundaryKind] {
        reader(self).boundary_kinds()
    }
}

/// The format one line shows, if it shows one.
pub(crate) fn line_format(line: &[u8]) -> Option<Format> {
    let probe: Probe = parse_line(line)?;
    // Every line that shows a format has a `type`, but Gemini CLI's first (metadata) line.
    if probe.kind.as_str().is_none() && !has(&probe.project_hash) {
        return None;
    }
    readers()
        .iter()
        .find(|r| r.detect(&probe))
        .map(|r| r.format())
}

/// The format of a transcript from its first complete lines: the first line that shows one
/// decides. `None` if none of them does.
pub fn detect_format<'a>(lines: impl IntoIterator<Item = &'a [u8]>) -> Option<Format> {
    lines.into_iter().find_map(line_format)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_holds_each_format_once_and_each_boundary_kind_once() {
        let mut kinds = Vec::new();
        for f in Format::ALL {
            assert_eq!(reader(f).format(), f);
            assert_eq!(readers().iter().filter(|r| r.format() == f).count(), 1);
            kinds.extend_from_slice(reader(f).boundary_kinds());
        }
        let n = kinds.len();
        kinds.sort_by_key(|k| k.name());
        kinds.dedup();
        assert_eq!(kinds.len(), n, "a boundary kind claimed by two readers");
    }

    #[test]
    fn first_lines_tell_the_formats_apart() {
        let claude = br#"{"type":"file-history-snapshot","messageId":"x","snapshot":{}}"#;
        let claude_user = br#"{"parentUuid":null,"type":"user","sessionId":"s","uuid":"u"}"#;
        let codex = br#"{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}"#;
        let pi = br#"{"type":"session","version":3,"id":"x","cwd":"/"}"#;
        let pi_entry = br#"{"type":"model_change","id":"a","parentId":null}"#;
        assert_eq!(detect_format([&claude[..]]), Some(Format::ClaudeCode));
        assert_eq!(detect_format([&claude_user[..]]), Some(Format::ClaudeCode));
        assert_eq!(detect_format([&codex[..]]), Some(Format::Codex));
        assert_eq!(detect_format([&pi[..]]), Some(Format::Pi));
        assert_eq!(detect_format([&pi_entry[..]]), Some(Format::Pi));
        let copilot =
            br#"{"type":"session.start","data":{"sessionId":"s"},"id":"a","parentId":null}"#;
        assert_eq!(detect_format([&copilot[..]]), Some(Format::Copilot));
        let gemini = br#"{"sessionId":"s","projectHash":"h","startTime":"t","kind":"main"}"#;
        let gemini_record = br#"{"id":"a","timestamp":"t","type":"user","content":[]}"#;
        let qwen = br#"{"uuid":"u","parentUuid":null,"sessionId":"s","type":"user","message":{"role":"user","parts":[{"text":"hi"}]}}"#;
        assert_eq!(detect_format([&gemini[..]]), Some(Format::Gemini));
        assert_eq!(detect_format([&gemini_record[..]]), Some(Format::Gemini));
        assert_eq!(detect_format([&qwen[..]]), Some(Format::Qwen));
        let untyped = br#"{"sessionId":"s","startTime":"t"}"#;
        assert_eq!(detect_format([&untyped[..]]), None);
        let kimi = br#"{"type":"metadata","protocol_version":"1.4","created_at":1}"#;
        assert_eq!(detect_format([&kimi[..]]), Some(Format::Kimi));
        assert_eq!(detect_format([&br#"{"type":"metadata"}"#[..]]), None);
        let noise: [&[u8]; 4] = [b"", b"not json", br#"{"type":"user"}"#, b"[1,2]"];
        assert_eq!(detect_format(noise), None);
        assert_eq!(
            detect_format([&b"garbage"[..], &codex[..]]),
            Some(Format::Codex)
        );
    }
}
