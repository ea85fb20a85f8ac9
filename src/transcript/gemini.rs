//! Gemini CLI: usage from the `tokens` of `type: "gemini"` records, one count per record `id`
//! (the last record of an id that carries tokens wins: a message is re-appended whole each time
//! it changes); a `$set` of `messages` (the history compressed and rewritten) marks a boundary.
//! The older single-JSON sessions (`session-*.json`, `{..., messages: [...]}`) are read as a
//! document, each message folded as a line. The rules, and why: docs/TRANSCRIPTS.md, "Gemini
//! CLI".

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::Deserialize;
use serde::de::IgnoredAny;

use super::fold::{BoundaryKind, Fold, Message, RecallError};
use super::format::{Format, Probe, has};
use super::json::{Obj, Text, TokenValue};
use super::reader::{Env, LineFacts, Rules, Step};
use super::tally::{Money, Tally};
use super::tokens::Usage;

/// Every record with usage holds this key.
static TOKENS: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"tokens\""));
/// A history rewrite is a `$set` holding this key.
static MESSAGES: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"messages\""));

/// Record types Gemini CLI writes.
const TYPES: [&str; 5] = ["user", "gemini", "info", "error", "warning"];

/// The fields of a line the rules read.
#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "'de: 'a"))]
pub(crate) struct Line<'a> {
    #[serde(rename = "type")]
    kind: Text<'a>,
    id: Text<'a>,
    timestamp: Text<'a>,
    model: Text<'a>,
    tokens: Obj<Tokens>,
    #[serde(rename = "$set")]
    set: Obj<SetField>,
}

/// A record's `tokens`: `input` includes `cached`; `thoughts` and `tool` are outside
/// `output` and `input`; `total = input + output + thoughts + tool`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Tokens {
    input: TokenValue,
    output: TokenValue,
    cached: TokenValue,
    thoughts: TokenValue,
    tool: TokenValue,
    total: TokenValue,
}

/// A `$set` line's object: metadata updates, or `messages` (a rewrite of the history).
#[derive(Deserialize, Default)]
#[serde(default)]
struct SetField {
    messages: Obj<IgnoredAny>,
}

/// The Gemini CLI reader.
pub(crate) struct Gemini;

impl Rules for Gemini {
    const FORMAT: Format = Format::Gemini;
    const BOUNDARY_KINDS: &'static [BoundaryKind] = &[BoundaryKind::HistoryRewrite];
    type Line<'a> = Line<'a>;

    /// The metadata line (`sessionId` and `projectHash`, no `type`), or a record of a Gemini
    /// type with an `id` and none of Claude Code's or Qwen Code's keys.
    fn shows(probe: &Probe<'_>) -> bool {
        match probe.kind.as_str() {
            None => has(&probe.project_hash) && has(&probe.session_id),
            Some(kind) => {
                TYPES.contains(&kind)
                    && has(&probe.id)
                    && !has(&probe.uuid)
                    && !has(&probe.session_id)
                    && !has(&probe.parent_id)
            }
        }
    }

    fn may_matter(bytes: &[u8]) -> bool {
        TOKENS.find(bytes).is_some() || MESSAGES.find(bytes).is_some()
    }

    fn roots(env: &Env) -> Vec<PathBuf> {
        env.data_dirs("GEMINI_DATA_DIR", ".gemini", "tmp")
    }

    /// A main session's key is the first 8 hex digits of its id (the end of
    /// `session-<time>-<id8>`), so that a subagent's `chats/<parent id>/<id>.jsonl` (whose
    /// directory is the parent's whole id) and a resumed `.json`/`.jsonl` pair fall in it; the
    /// project is the directory holding `chats`.
    fn session(path: &Path) -> (String, String) {
        let name = |p: Option<&Path>| {
            p.and_then(Path::file_name)
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        };
        let parent = path.parent();
        let grand = parent.and_then(Path::parent);
        if name(grand) == "chats" {
            let parent_id = name(parent);
            let key = parent_id.get(..8).unwrap_or(&parent_id).to_owned();
            return (key, name(grand.and_then(Path::parent)));
        }
        let stem = path
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        let key = match stem
            .strip_prefix("session-")
            .and_then(|s| s.rsplit_once('-'))
        {
            Some((_, id8)) if !id8.is_empty() => id8.to_owned(),
            _ => stem,
        };
        let project = if name(parent) == "chats" {
            name(grand)
        } else {
            name(parent)
        };
        (key, project)
    }

    fn fold(step: &mut Step<'_>, line: &Line<'_>) -> Result<(), RecallError> {
        if let Some(set) = line.set.get() {
            if has(&set.messages) {
                step.fold
                    .boundary(step.at, BoundaryKind::HistoryRewrite, None, None);
            }
            return Ok(());
        }
        if !line.kind.is("gemini") {
            return Ok(());
        }
        // An aborted or rewritten record (no tokens): nothing spent that it can say.
        let Some(tokens) = step.fold.usage_object(line.tokens.get()) else {
            return Ok(());
        };
        record(step, line, tokens)
    }

    fn facts(line: Self::Line<'_>) -> LineFacts<'_> {
        let mut facts = LineFacts::new(line.kind, line.timestamp);
        facts.message_id = line.id.into_cow();
        if let Some(t) = line.tokens.get() {
            let (input, tool) = (t.input.known(), t.tool.known());
            let output = t.output.known();
            let thoughts = t.thoughts.known();
            let plus = |a: Option<u64>, b: Option<u64>| match (a, b) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
            };
            facts.usage_with_cached_input([
                plus(input, tool),
                t.cached.known(),
                plus(output, thoughts),
                thoughts,
                t.total.known(),
            ]);
        }
        facts
    }
}

/// A record's tokens in the normalised fields: input without the cached part, plus the tool
/// prompt tokens (input too); output with the thoughts (billed as output).
fn normalised(fold: &mut Fold, t: &Tokens) -> Usage {
    let input = fold.value(t.input);
    let cached = fold.value(t.cached);
    let cached = fold.part_of(cached, input);
    let tool = fold.value(t.tool);
    let thoughts = fold.value(t.thoughts);
    let output = fold.value(t.output);
    let usage = Usage {
        input: (input - cached).saturating_add(tool),
        output: output.saturating_add(thoughts),
        cache_read: cached,
        reasoning: thoughts,
        ..Usage::default()
    };
    fold.value(t.total);
    fold.check_total(t.total.known(), &usage);
    usage
}

/// Counts a record with tokens: a new id once; a later record of a known id replaces what the
/// id counted (its tokens and its model, in the generation it was first seen).
fn record(step: &mut Step<'_>, line: &Line<'_>, tokens: &Tokens) -> Result<(), RecallError> {
    let fold = &mut *step.fold;
    let usage = normalised(fold, tokens);
    fold.context(usage.prompt());
    let generation = fold.summary.generation();
    let bucket = fold.bucket(line.timestamp.as_str(), line.model.as_str());
    let tally = Tally::message(usage, Money::default());
    let Some(id) = line.id.non_empty() else {
        fold.unkeyed(&tally);
        return fold.count(generation, bucket, &tally, step.recall);
    };
    let entries = fold.messages_of(id, step.recall)?;
    let Some(old) = entries.first_mut() else {
        entries.push(Message {
            requests: vec![None],
            generation,
            usage,
            sidechain: false,
            bucket,
        });
        return fold.count(generation, bucket, &tally, step.recall);
    };
    let (first, old_usage, old_bucket) = (old.generation, old.usage, old.bucket);
    old.usage = usage;
    old.bucket = bucket;
    fold.summary.diagnostics.duplicate_lines += 1;
    let old = Tally::message(old_usage, Money::default());
    fold.replace_message(first, (old_bucket, &old), (bucket, &tally), step.recall)
}

/// Whether a path is an older single-JSON Gemini CLI session (read as a document, not as
/// lines): its name ends in `.json`.
pub(crate) fn is_document(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}

/// Whether a file found in a directory walk is an older single-JSON session: a
/// `session-*.json` in a `chats` directory (other `.json` files there are the CLI's own).
pub(crate) fn is_session_document(path: &Path) -> bool {
    is_document(path)
        && path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("session-"))
        && path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "chats")
}

/// A single-JSON session: the messages are what counts, each borrowed as its own text.
#[derive(Deserialize)]
struct Document<'a> {
    #[serde(default, borrow)]
    messages: Vec<&'a serde_json::value::RawValue>,
}

/// The messages of a single-JSON session, each the bytes of one JSON object as the document
/// holds it (the rules then read them as they read lines: JSON's whitespace, the document's
/// newlines and indents among it, is no matter to them); an error if it is not such a
/// document. Borrowed, not built as values and written out again.
pub(crate) fn document_lines(bytes: &[u8]) -> Result<Vec<&[u8]>, String> {
    let doc: Document<'_> = serde_json::from_slice(bytes)
        .map_err(|e| format!("not a Gemini CLI session document: {e}"))?;
    Ok(doc.messages.iter().map(|m| m.get().as_bytes()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_group_main_subagent_and_legacy_files() {
        let main = Path::new("/h/.gemini/tmp/proj/chats/session-2026-04-28T15-09-887ba529.jsonl");
        let legacy = Path::new("/h/.gemini/tmp/proj/chats/session-2026-04-28T15-09-887ba529.json");
        let sub = Path::new("/h/.gemini/tmp/proj/chats/887ba529-0020-4f9f/abcdef12-9.jsonl");
        let want = ("887ba529".to_owned(), "proj".to_owned());
        assert_eq!(Gemini::session(main), want);
        assert_eq!(Gemini::session(legacy), want);
        assert_eq!(Gemini::session(sub), want);
        let other = Path::new("/x/dir/gemini.jsonl");
        assert_eq!(Gemini::session(other), ("gemini".into(), "dir".into()));
    }

    #[test]
    fn a_document_is_its_messages() {
        let doc = br#"{"sessionId":"s","messages":[{"id":"a","type":"user"},{"id":"b"}]}"#;
        let lines = document_lines(doc).unwrap();
        assert_eq!(
            lines,
            [&br#"{"id":"a","type":"user"}"#[..], br#"{"id":"b"}"#]
        );
        // Pretty-printed, as Gemini CLI writes it: each message's text as it stands.
        let pretty = b"{\n  \"messages\": [\n    {\n      \"id\": \"a\"\n    }\n  ]\n}\n";
        let lines = document_lines(pretty).unwrap();
        assert_eq!(lines, [&b"{\n      \"id\": \"a\"\n    }"[..]]);
        assert!(document_lines(b"{\"messages\":").is_err());
        assert!(document_lines(b"[1]").is_err());
    }
}
