//! The transcript formats agentlog reads, and telling them apart from a file's first lines.

use std::fmt;
use std::str::FromStr;

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

use super::json::{Obj, Text, parse_line};

/// A transcript format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Claude Code session files (`~/.claude/projects/<project>/<session>.jsonl`).
    ClaudeCode,
    /// `OpenAI` Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).
    Codex,
    /// pi coding agent sessions (`~/.pi/agent/sessions/<project>/*.jsonl`).
    Pi,
}

impl Format {
    /// Every format, in the order detection tries them.
    pub const ALL: [Format; 3] = [Format::ClaudeCode, Format::Codex, Format::Pi];

    /// The stable name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::Pi => "pi",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is not one of [`Format::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown transcript format {0:?} (expected claude-code, codex or pi)")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Format, UnknownFormat> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

/// The fields of a line that tell the formats apart.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Probe<'a> {
    #[serde(borrow, rename = "type")]
    kind: Text<'a>,
    payload: Obj<IgnoredAny>,
    #[serde(rename = "sessionId")]
    session_id: Obj<IgnoredAny>,
    #[serde(rename = "parentUuid")]
    parent_uuid: Obj<IgnoredAny>,
    #[serde(rename = "parentId")]
    parent_id: Obj<IgnoredAny>,
    uuid: Obj<IgnoredAny>,
    version: Obj<IgnoredAny>,
}

/// Line types only Claude Code writes.
const CLAUDE_TYPES: [&str; 10] = [
    "user",
    "assistant",
    "system",
    "summary",
    "progress",
    "file-history-snapshot",
    "queue-operation",
    "custom-title",
    "ai-title",
    "attachment",
];

/// Line types (`RolloutItem` variants) only Codex writes, each with a `payload`.
const CODEX_TYPES: [&str; 9] = [
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
    "world_state",
    "inter_agent_communication",
    "inter_agent_communication_metadata",
    "security_risk_score",
];

/// Entry types only pi writes.
const PI_TYPES: [&str; 10] = [
    "session",
    "message",
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
];

/// The format one line shows, if it shows one.
pub(crate) fn line_format(line: &[u8]) -> Option<Format> {
    let probe: Probe = parse_line(line)?;
    let kind = probe.kind.as_str()?;
    // A field that is there at all, null included (a root entry's parent is null).
    let has = |field: &Obj<IgnoredAny>| !matches!(field, Obj::Missing);
    if matches!(probe.payload, Obj::Is(_)) && CODEX_TYPES.contains(&kind) {
        return Some(Format::Codex);
    }
    if CLAUDE_TYPES.contains(&kind)
        && (has(&probe.session_id)
            || has(&probe.parent_uuid)
            || has(&probe.uuid)
            || matches!(kind, "summary" | "file-history-snapshot"))
    {
        return Some(Format::ClaudeCode);
    }
    if PI_TYPES.contains(&kind)
        && (has(&probe.parent_id) || (kind == "session" && matches!(probe.version, Obj::Is(_))))
    {
        return Some(Format::Pi);
    }
    if kind == "session" && !matches!(probe.version, Obj::Missing) {
        return Some(Format::Pi);
    }
    None
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
    fn names_round_trip() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
        }
        assert!("claude".parse::<Format>().is_err());
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
        let noise: [&[u8]; 4] = [b"", b"not json", br#"{"type":"user"}"#, b"[1,2]"];
        assert_eq!(detect_format(noise), None);
        assert_eq!(
            detect_format([&b"garbage"[..], &codex[..]]),
            Some(Format::Codex)
        );
    }
}
