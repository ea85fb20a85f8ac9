//! Qwen Code: usage from the `usageMetadata` of `assistant` records (Gemini API names), each
//! record `uuid` once; telemetry lines are never counted; a `chat_compression` system record
//! marks a boundary. The rules, and why: docs/TRANSCRIPTS.md, "Qwen Code".

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::Deserialize;

use super::fold::{BoundaryKind, Fold, RecallError};
use super::format::{Format, Probe, has};
use super::json::{Obj, Text, TokenValue};
use super::reader::{Env, LineFacts, Rules, Step};
use super::tally::{Money, Tally};
use super::tokens::Usage;

/// Every record with usage holds this key.
static USAGE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"usageMetadata\""));
/// The subtype of a compression record.
static COMPRESSION: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(b"\"chat_compression\""));

/// Record types Qwen Code writes.
const TYPES: [&str; 4] = ["user", "assistant", "system", "tool_result"];

/// The fields of a line the rules read.
#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "'de: 'a"))]
pub(crate) struct Line<'a> {
    #[serde(rename = "type")]
    kind: Text<'a>,
    subtype: Text<'a>,
    uuid: Text<'a>,
    timestamp: Text<'a>,
    cwd: Text<'a>,
    model: Text<'a>,
    #[serde(rename = "usageMetadata")]
    usage: Obj<UsageMetadata>,
    #[serde(rename = "systemPayload")]
    payload: Obj<Payload>,
}

/// `usageMetadata`: `promptTokenCount` includes `cachedContentTokenCount`;
/// `candidatesTokenCount` includes `thoughtsTokenCount` (unless the total says otherwise).
// The fields are the format's own key names.
#[allow(clippy::struct_field_names)]
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct UsageMetadata {
    prompt_token_count: TokenValue,
    candidates_token_count: TokenValue,
    thoughts_token_count: TokenValue,
    cached_content_token_count: TokenValue,
    total_token_count: TokenValue,
}

/// A system record's payload; a compression's says the size before it.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Payload {
    info: Obj<CompressionInfo>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CompressionInfo {
    #[serde(rename = "originalTokenCount")]
    original_token_count: TokenValue,
}

/// The Qwen Code reader.
pub(crate) struct Qwen;

impl Rules for Qwen {
    const FORMAT: Format = Format::Qwen;
    const BOUNDARY_KINDS: &'static [BoundaryKind] = &[BoundaryKind::ChatCompression];
    type Line<'a> = Line<'a>;

    /// A record with a `uuid` and a `sessionId` whose message has Gemini API `parts` (Claude
    /// Code's has `content`), or a record only Qwen Code writes (`tool_result`, or one with a
    /// `systemPayload` or `usageMetadata`: the probe does not read those, so the first lines,
    /// a user prompt's, decide).
    fn shows(probe: &Probe<'_>) -> bool {
        probe.kind_in(&TYPES).is_some()
            && has(&probe.uuid)
            && has(&probe.session_id)
            && probe.message.get().is_some_and(|m| has(&m.parts))
    }

    fn may_matter(bytes: &[u8]) -> bool {
        USAGE.find(bytes).is_some() || COMPRESSION.find(bytes).is_some()
    }

    fn roots(env: &Env) -> Vec<PathBuf> {
        env.data_dirs("QWEN_DATA_DIR", ".qwen", "projects")
    }

    /// `<project>/chats/<session>.jsonl`: the session is the file's stem, the project the
    /// directory holding `chats`.
    fn session(path: &Path) -> (String, String) {
        let (session, project) = super::reader::session_in_project(path);
        if project == "chats" {
            let grand = path
                .parent()
                .and_then(Path::parent)
                .and_then(Path::file_name);
            let project = grand.map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            return (session, project);
        }
        (session, project)
    }

    fn fold(step: &mut Step<'_>, line: &Line<'_>) -> Result<(), RecallError> {
        match line.kind.as_str() {
            Some("system") if line.subtype.is("chat_compression") => compression(step, line),
            Some("assistant") => assistant(step, line),
            _ => Ok(()),
        }
    }

    fn facts(line: Self::Line<'_>) -> LineFacts<'_> {
        let mut facts = LineFacts::new(line.kind, line.timestamp);
        facts.message_id = line.uuid.into_cow();
        facts.cwd = line.cwd.into_cow();
        if let Some(u) = line.usage.get() {
            let figures = [
                u.prompt_token_count,
                u.cached_content_token_count,
                u.candidates_token_count,
                u.thoughts_token_count,
                u.total_token_count,
            ];
            facts.usage_with_cached_input(figures.map(TokenValue::known));
        }
        facts
    }
}

fn compression(step: &mut Step<'_>, line: &Line<'_>) -> Result<(), RecallError> {
    let pre_tokens = line
        .payload
        .get()
        .and_then(|p| p.info.get())
        .and_then(|i| i.original_token_count.known());
    step.fold.entry_boundary(
        (step.at, line.uuid.non_empty()),
        BoundaryKind::ChatCompression,
        pre_tokens,
        step.recall,
    )
}

/// The normalised fields: input without the cached part, output as recorded (thoughts inside
/// it, never added again). Should the total say the thoughts were outside the candidates
/// (`total = prompt + candidates + thoughts`, as the Gemini API counts), they are added.
fn normalised(fold: &mut Fold, u: &UsageMetadata) -> Usage {
    let prompt = fold.value(u.prompt_token_count);
    let cached = fold.value(u.cached_content_token_count);
    let cached = fold.part_of(cached, prompt);
    let candidates = fold.value(u.candidates_token_count);
    let thoughts = match u.thoughts_token_count {
        // Optional: absent is no thinking, not a missing field.
        TokenValue::Missing => 0,
        v => fold.value(v),
    };
    let total = u.total_token_count.known();
    let outside =
        thoughts > 0 && total == Some(prompt.saturating_add(candidates).saturating_add(thoughts));
    let output = if outside {
        candidates.saturating_add(thoughts)
    } else {
        candidates
    };
    let usage = Usage {
        input: prompt - cached,
        output,
        cache_read: cached,
        reasoning: fold.part_of(thoughts, output),
        ..Usage::default()
    };
    fold.value(u.total_token_count);
    fold.check_total(total, &usage);
    usage
}

/// A record's usage, counted once by its `uuid`.
fn assistant(step: &mut Step<'_>, line: &Line<'_>) -> Result<(), RecallError> {
    let Some(u) = step.fold.usage_object(line.usage.get()) else {
        return Ok(());
    };
    let id = line.uuid.non_empty();
    if step.fold.entry_seen(id, false, step.recall)? {
        return Ok(());
    }
    let fold = &mut *step.fold;
    let usage = normalised(fold, u);
    let bucket = fold.bucket(line.timestamp.as_str(), line.model.as_str());
    fold.count_entry(
        id,
        bucket,
        Tally::message(usage, Money::default()),
        step.recall,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::gemini::Gemini;

    fn var(name: &str) -> Option<std::ffi::OsString> {
        match name {
            "GEMINI_DATA_DIR" => Some("/a, /b ,".into()),
            _ => None,
        }
    }

    #[test]
    fn roots_honour_the_override_lists_else_home() {
        let env = Env {
            home: Some(PathBuf::from("/h")),
            var,
        };
        let want: Vec<PathBuf> = vec!["/a/tmp".into(), "/b/tmp".into()];
        assert_eq!(Gemini::roots(&env), want);
        assert_eq!(Qwen::roots(&env), vec![PathBuf::from("/h/.qwen/projects")]);
    }

    #[test]
    fn a_session_is_its_file_in_its_project() {
        let path = Path::new("/h/.qwen/projects/-w-app/chats/69f0814a.jsonl");
        assert_eq!(Qwen::session(path), ("69f0814a".into(), "-w-app".into()));
    }
}
