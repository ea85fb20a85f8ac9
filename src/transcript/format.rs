//! The transcript formats agentlog reads, and telling them apart from a file's first lines.

use std::fmt;
use std::str::FromStr;

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

use super::json::{Obj, Text};

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
    /// GitHub Copilot CLI sessions (`~/.copilot/session-state/<session>/events.jsonl`).
    Copilot,
    /// Gemini CLI sessions (`~/.gemini/tmp/<project>/chats/session-*.jsonl`, and the older
    /// single-JSON `session-*.json`).
    Gemini,
    /// Qwen Code sessions (`~/.qwen/projects/<project>/chats/<session>.jsonl`).
    Qwen,
    /// `OpenCode` sessions: an SQLite database (`~/.local/share/opencode/opencode.db`, read with
    /// its `-wal`) or the older JSON storage (`storage/message/<session>/msg_*.json`).
    #[serde(rename = "opencode")]
    OpenCode,
    /// Kimi Code CLI wire logs (`~/.kimi/sessions/<group>/<session>/wire.jsonl`).
    Kimi,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 8] = [
        Format::ClaudeCode,
        Format::Codex,
        Format::Pi,
        Format::Gemini,
        Format::Qwen,
        Format::Copilot,
        Format::OpenCode,
        Format::Kimi,
    ];

    /// The stable name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::Pi => "pi",
            Format::Copilot => "copilot",
            Format::Gemini => "gemini",
            Format::Qwen => "qwen",
            Format::OpenCode => "opencode",
            Format::Kimi => "kimi",
        }
    }
}

impl Format {
    /// Whether its transcripts are files of JSON lines (all but `OpenCode`'s database).
    pub fn is_lines(self) -> bool {
        self != Format::OpenCode
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is not one of [`Format::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown transcript format {0:?} (expected claude-code, codex, pi, gemini, qwen, copilot, kimi or opencode)"
)]
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

/// The fields of a line that tell the formats apart: each reader's
/// [`detect`](super::reader::Reader::detect) looks at them.
#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "'de: 'a"))]
pub(crate) struct Probe<'a> {
    #[serde(rename = "type")]
    pub(crate) kind: Text<'a>,
    pub(crate) payload: Obj<IgnoredAny>,
    pub(crate) data: Obj<IgnoredAny>,
    #[serde(rename = "sessionId")]
    pub(crate) session_id: Obj<IgnoredAny>,
    #[serde(rename = "parentUuid")]
    pub(crate) parent_uuid: Obj<IgnoredAny>,
    #[serde(rename = "parentId")]
    pub(crate) parent_id: Obj<IgnoredAny>,
    pub(crate) uuid: Obj<IgnoredAny>,
    pub(crate) version: Obj<IgnoredAny>,
    pub(crate) id: Obj<IgnoredAny>,
    #[serde(rename = "projectHash")]
    pub(crate) project_hash: Obj<IgnoredAny>,
    pub(crate) message: Obj<ProbeMessage>,
    pub(crate) protocol_version: Obj<IgnoredAny>,
}

/// The part of a line's `message` that tells the formats apart (Qwen Code's Gemini API
/// `parts`, where Claude Code has `content`).
#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct ProbeMessage {
    pub(crate) parts: Obj<IgnoredAny>,
}

impl Probe<'_> {
    /// The line's `type`, if it is one of `types` (the types only one format writes).
    pub(crate) fn kind_in(&self, types: &[&str]) -> Option<&str> {
        self.kind.as_str().filter(|kind| types.contains(kind))
    }
}

/// Whether a probed field is there at all, null included (a root entry's parent is null).
pub(crate) fn has(field: &Obj<IgnoredAny>) -> bool {
    !matches!(field, Obj::Missing)
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
}
