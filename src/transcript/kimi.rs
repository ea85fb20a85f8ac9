//! Kimi Code CLI: usage from `usage.record` lines only (`step.end` events echo the same
//! figures); a record with `usageScope: "session"` is the compaction call: counted, then a
//! boundary. The rules, and why: docs/TRANSCRIPTS.md, "Kimi Code".

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::Deserialize;

use super::fold::{BoundaryKind, RecallError};
use super::format::{Format, Probe, has};
use super::json::{Obj, Text, TokenValue};
use super::reader::{Env, LineFacts, Rules, Step, session_in_project};
use super::tally::{Money, Tally};

static USAGE_RECORD: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"usage.record"));

/// The name Kimi gives every wire log: the session (and the project) are its directories'.
const WIRE: &str = "wire.jsonl";

/// The fields of a line the rules read.
#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "'de: 'a"))]
pub(crate) struct Line<'a> {
    #[serde(rename = "type")]
    kind: Text<'a>,
    model: Text<'a>,
    usage: Obj<UsageField>,
    #[serde(rename = "usageScope")]
    scope: Text<'a>,
    /// Epoch milliseconds.
    time: TokenValue,
    cwd: Text<'a>,
}

// The fields are the format's own key names.
#[allow(clippy::struct_field_names)]
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct UsageField {
    input_other: TokenValue,
    output: TokenValue,
    input_cache_read: TokenValue,
    input_cache_creation: TokenValue,
}

impl UsageField {
    /// Its figures, in the order [`Fold::usage`](super::fold::Fold::usage) takes them.
    fn figures(&self) -> [TokenValue; 4] {
        [
            self.input_other,
            self.output,
            self.input_cache_creation,
            self.input_cache_read,
        ]
    }
}

/// The Kimi Code CLI reader.
pub(crate) struct Kimi;

impl Rules for Kimi {
    const FORMAT: Format = Format::Kimi;
    const BOUNDARY_KINDS: &'static [BoundaryKind] = &[BoundaryKind::SessionUsageRecord];
    type Line<'a> = Line<'a>;

    /// Line 1 of a wire log: `{"type": "metadata", "protocol_version": ...}`.
    fn shows(probe: &Probe<'_>) -> bool {
        probe.kind.is("metadata") && has(&probe.protocol_version)
    }

    fn may_matter(bytes: &[u8]) -> bool {
        USAGE_RECORD.find(bytes).is_some()
    }

    /// `${KIMI_DATA_DIR:-~/.kimi}/sessions` (each directory of the list), and Kimi Code's
    /// `~/.kimi-code/sessions`.
    fn roots(env: &Env) -> Vec<PathBuf> {
        let mut roots = env.data_dirs("KIMI_DATA_DIR", ".kimi", "sessions");
        roots.extend(
            env.home
                .iter()
                .map(|h| h.join(".kimi-code").join("sessions")),
        );
        roots
    }

    /// `<group>/<session>/wire.jsonl` is session `<session>` of project `<group>`; Kimi Code's
    /// `wd_<project>/session_<id>/agents/<agent>/wire.jsonl` (the main agent's and each
    /// subagent's) is session `<id>` of project `<project>`. Another file name is read by the
    /// layout most agents use.
    fn session(path: &Path) -> (String, String) {
        if path.file_name().is_none_or(|n| n != WIRE) {
            return session_in_project(path);
        }
        let name = |p: Option<&Path>| {
            p.and_then(Path::file_name)
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        };
        let mut session_dir = path.parent();
        let agents = session_dir.and_then(Path::parent);
        if agents
            .and_then(Path::file_name)
            .is_some_and(|n| n == "agents")
        {
            session_dir = agents.and_then(Path::parent);
        }
        let session = name(session_dir);
        let project = name(session_dir.and_then(Path::parent));
        let strip = |s: String, prefix: &str| match s.strip_prefix(prefix) {
            Some(rest) if !rest.is_empty() => rest.to_owned(),
            _ => s,
        };
        (strip(session, "session_"), strip(project, "wd_"))
    }

    /// Kimi keeps the model's context (`context.jsonl`, `context_<n>.jsonl`, ...) beside a
    /// session's `wire.jsonl`: it holds no usage the wire log does not, and no `type`.
    fn not_a_transcript(path: &Path) -> bool {
        let context = path
            .file_stem()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("context"));
        context
            && path.extension().is_some_and(|e| e == "jsonl")
            && path.with_file_name(WIRE).is_file()
    }

    fn fold(step: &mut Step<'_>, line: &Line<'_>) -> Result<(), RecallError> {
        if !line.kind.is("usage.record") {
            return Ok(());
        }
        let Some(u) = step.fold.usage_object(line.usage.get()) else {
            return Ok(());
        };
        let fold = &mut *step.fold;
        let usage = fold.usage(u.figures());
        let quarter = fold.quarter_of_millis(line.time);
        let bucket = (quarter, fold.model(line.model.as_str()));
        let generation = fold.summary.generation();
        let tally = Tally::message(usage, Money::default());
        fold.context(usage.prompt());
        fold.count(generation, bucket, &tally, step.recall)?;
        if line.scope.is("session") {
            // The compaction call read the old context: it ends its generation.
            step.fold
                .boundary(step.at, BoundaryKind::SessionUsageRecord, None, None);
        }
        Ok(())
    }

    fn facts(line: Self::Line<'_>) -> LineFacts<'_> {
        let timestamp = line
            .time
            .known()
            .and_then(|ms| i64::try_from(ms).ok())
            .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
            .map(|t| Cow::Owned(t.to_string()));
        let mut facts = LineFacts {
            kind: line.kind.into_cow(),
            timestamp,
            cwd: line.cwd.into_cow(),
            ..LineFacts::default()
        };
        if let Some(u) = line.usage.get() {
            facts.usage(u.figures());
        }
        facts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_come_from_the_directories() {
        let s = |p: &str| Kimi::session(Path::new(p));
        assert_eq!(
            s("/h/.kimi/sessions/g1/abc/wire.jsonl"),
            ("abc".to_owned(), "g1".to_owned())
        );
        let code = "/h/.kimi-code/sessions/wd_proj_1/session_42";
        for agent in ["main", "agent-0"] {
            assert_eq!(
                s(&format!("{code}/agents/{agent}/wire.jsonl")),
                ("42".to_owned(), "proj_1".to_owned())
            );
        }
        assert_eq!(
            s("/t/dir/assistant_tools.jsonl"),
            ("assistant_tools".to_owned(), "dir".to_owned())
        );
    }
}
