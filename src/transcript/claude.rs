//! Claude Code: usage from the top-level `message.usage` of assistant lines, one message per
//! `(message.id, requestId)`, compaction boundaries. The rules, and why: docs/TRANSCRIPTS.md,
//! "Claude Code".

use std::path::PathBuf;
use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::Deserialize;

use super::fold::{BoundaryKind, Fold, Message, Recall, RecallError};
use super::format::{Format, Probe, has};
use super::json::{Flag, Obj, Text, TokenValue};
use super::reader::{Env, LineFacts, Rules, Step};
use super::tally::{Money, Tally};
use super::tokens::Usage;

/// Every usage line holds this key; the copies inside `progress` lines do too, and are
/// parsed only to be refused.
static USAGE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"usage\""));
/// In `compact_boundary` (and `microcompact_boundary`) and in `isCompactSummary`.
static COMPACT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"ompact"));

/// Line types only Claude Code writes.
const TYPES: [&str; 10] = [
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

/// The fields of a line the rules read.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase", bound(deserialize = "'de: 'a"))]
pub(crate) struct Line<'a> {
    #[serde(rename = "type")]
    kind: Text<'a>,
    subtype: Text<'a>,
    is_sidechain: Flag,
    is_compact_summary: Flag,
    request_id: Text<'a>,
    uuid: Text<'a>,
    timestamp: Text<'a>,
    cwd: Text<'a>,
    message: Obj<MessageField<'a>>,
    compact_metadata: Obj<CompactMetadata<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "'de: 'a"))]
struct MessageField<'a> {
    id: Text<'a>,
    model: Text<'a>,
    usage: Obj<UsageField>,
}

// The fields are the format's own key names.
#[allow(clippy::struct_field_names)]
#[derive(Deserialize, Default)]
#[serde(default)]
struct UsageField {
    input_tokens: TokenValue,
    output_tokens: TokenValue,
    cache_creation_input_tokens: TokenValue,
    cache_read_input_tokens: TokenValue,
    cache_creation: Obj<CacheCreation>,
}

/// `usage.cache_creation`: the cache writes by how long they are kept (newer versions).
#[derive(Deserialize, Default)]
#[serde(default)]
struct CacheCreation {
    ephemeral_1h_input_tokens: TokenValue,
}

#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "'de: 'a"))]
struct CompactMetadata<'a> {
    trigger: Text<'a>,
    #[serde(rename = "preTokens")]
    pre_tokens: TokenValue,
}

/// The Claude Code reader.
pub(crate) struct ClaudeCode;

impl Rules for ClaudeCode {
    const FORMAT: Format = Format::ClaudeCode;
    const BOUNDARY_KINDS: &'static [BoundaryKind] = &[
        BoundaryKind::CompactBoundary,
        BoundaryKind::CompactSummaryWithoutBoundary,
    ];
    type Line<'a> = Line<'a>;

    fn shows(probe: &Probe<'_>) -> bool {
        probe.kind_in(&TYPES).is_some_and(|kind| {
            has(&probe.session_id)
                || has(&probe.parent_uuid)
                || has(&probe.uuid)
                || matches!(kind, "summary" | "file-history-snapshot")
        })
    }

    /// Usage lines hold `"usage"` (so do the copies inside `progress` lines, parsed only to
    /// be refused); boundaries hold `ompact` (`compact_boundary`, `isCompactSummary`).
    fn may_matter(bytes: &[u8]) -> bool {
        USAGE.find(bytes).is_some() || COMPACT.find(bytes).is_some()
    }

    fn roots(env: &Env) -> Vec<PathBuf> {
        let mut roots: Vec<PathBuf> = env
            .dirs("CLAUDE_CONFIG_DIR")
            .into_iter()
            .map(|d| d.join("projects"))
            .collect();
        if let Some(home) = &env.home {
            roots.push(home.join(".claude").join("projects"));
            roots.push(home.join(".config").join("claude").join("projects"));
        }
        roots
    }

    fn fold(step: &mut Step<'_>, line: &Line<'_>) -> Result<(), RecallError> {
        match line.kind.as_str() {
            Some("system") if line.subtype.is("compact_boundary") => compact_boundary(step, line),
            Some("user") if line.is_compact_summary.0 => compact_summary(step, line),
            Some("assistant") => assistant(step.fold, line, step.recall),
            _ => Ok(()),
        }
    }

    fn facts(line: Self::Line<'_>) -> LineFacts<'_> {
        let mut facts = LineFacts::new(line.kind, line.timestamp);
        facts.request_id = line.request_id.into_cow();
        facts.cwd = line.cwd.into_cow();
        if let Obj::Is(message) = line.message {
            if let Some(u) = message.usage.get() {
                facts.usage(fields(u));
            }
            facts.message_id = message.id.into_cow();
        }
        facts
    }
}

/// Whether a boundary line was seen before (a replay re-appends it with its uuid): it starts
/// no new generation. Remembers the uuid otherwise.
fn replayed(step: &mut Step<'_>, line: &Line<'_>) -> Result<bool, RecallError> {
    let Some(uuid) = line.uuid.non_empty() else {
        return Ok(false);
    };
    let fold = &mut *step.fold;
    if fold.dedup.marks.contains(uuid) || step.recall.marked(uuid)? {
        fold.summary.diagnostics.replayed_boundaries += 1;
        return Ok(true);
    }
    fold.dedup.marks.insert(uuid.to_owned());
    fold.summary.marks += 1;
    Ok(false)
}

fn compact_boundary(step: &mut Step<'_>, line: &Line<'_>) -> Result<(), RecallError> {
    // Even a replayed boundary line says nothing was sent since.
    step.fold.context(0);
    if replayed(step, line)? {
        return Ok(());
    }
    let meta = line.compact_metadata.get();
    let fold = &mut *step.fold;
    fold.boundary(
        step.at,
        BoundaryKind::CompactBoundary,
        meta.and_then(|m| m.trigger.as_str()),
        meta.and_then(|m| m.pre_tokens.known()),
    );
    fold.summary.carry.pairable = true;
    Ok(())
}

/// A compact summary belongs to the boundary line before it when no message was counted
/// since that line; otherwise (older versions wrote no boundary line) it marks one itself.
fn compact_summary(step: &mut Step<'_>, line: &Line<'_>) -> Result<(), RecallError> {
    if replayed(step, line)? {
        return Ok(());
    }
    let fold = &mut *step.fold;
    if fold.summary.carry.pairable {
        fold.summary.carry.pairable = false;
        return Ok(());
    }
    fold.boundary(
        step.at,
        BoundaryKind::CompactSummaryWithoutBoundary,
        None,
        None,
    );
    Ok(())
}

/// Whether line `new` wins over the message's current winner `old`: a main-chain line over
/// a sidechain one, else more tokens; the earlier line on a tie.
fn wins(new: (&Usage, bool), old: (&Usage, bool)) -> bool {
    match (new.1, old.1) {
        (false, true) => true,
        (true, false) => false,
        _ => new.0.total() > old.0.total(),
    }
}

/// The usage object's fields, in the order [`Fold::usage`] takes them.
fn fields(u: &UsageField) -> [TokenValue; 4] {
    [
        u.input_tokens,
        u.output_tokens,
        u.cache_creation_input_tokens,
        u.cache_read_input_tokens,
    ]
}

/// The usage of a line's usage object: the format's fields as they are, the 1-hour part of
/// the cache writes (newer versions) cut to them.
fn normalised(fold: &mut Fold, u: &UsageField) -> Usage {
    let mut usage = fold.usage(fields(u));
    // An optional breakdown: absent is not a missing field.
    let one_hour = match u.cache_creation.get().map(|c| c.ephemeral_1h_input_tokens) {
        Some(TokenValue::Missing) | None => 0,
        Some(v) => fold.value(v),
    };
    usage.cache_creation_1h = fold.part_of(one_hour, usage.cache_creation);
    usage
}

fn assistant(fold: &mut Fold, line: &Line<'_>, recall: &mut dyn Recall) -> Result<(), RecallError> {
    let message = line.message.get();
    let Some((message, u)) = fold.usage_object(message.and_then(|m| Some((m, m.usage.get()?))))
    else {
        return Ok(());
    };
    let usage = normalised(fold, u);
    if line.request_id.was_other() {
        fold.summary.diagnostics.invalid_values += 1;
    }
    let sidechain = line.is_sidechain.0;
    if !sidechain {
        fold.context(usage.prompt());
    }
    let generation = fold.summary.generation();
    let Some(id) = message.id.non_empty() else {
        let bucket = fold.bucket(line.timestamp.as_str(), message.model.as_str());
        let tally = tally_of(&usage);
        fold.unkeyed(&tally);
        fold.summary.carry.pairable = false;
        return fold.count(generation, bucket, &tally, recall);
    };
    let request = line.request_id.non_empty().map(str::to_owned);
    let entries = fold.messages_of(id, recall)?;
    let found = entries
        .iter()
        .position(|m| m.requests.contains(&request))
        .or_else(|| {
            // A sidechain line replaying a main-chain message under a new requestId (and a
            // main-chain line for a message so far seen only on a sidechain) is that message.
            entries.iter().position(|m| sidechain || m.sidechain)
        });
    if let Some(message) = found.and_then(|i| entries.get_mut(i)) {
        if !message.requests.contains(&request) {
            message.requests.push(request);
        }
        let (first, bucket) = (message.generation, message.bucket);
        let old = message.usage;
        let replaced = wins((&usage, sidechain), (&old, message.sidechain));
        if replaced {
            message.usage = usage;
            message.sidechain = sidechain;
        }
        let d = &mut fold.summary.diagnostics;
        if first < generation {
            d.replayed_lines += 1;
        } else {
            d.duplicate_lines += 1;
        }
        if replaced {
            let (old, new) = (tally_of(&old), tally_of(&usage));
            fold.recount(first, bucket, (&old, &new), recall)?;
        }
        Ok(())
    } else {
        let bucket = fold.bucket(line.timestamp.as_str(), message.model.as_str());
        fold.dedup
            .messages
            .entry(id.to_owned())
            .or_default()
            .push(Message {
                requests: vec![request],
                generation,
                usage,
                sidechain,
                bucket,
            });
        fold.summary.carry.pairable = false;
        fold.count(generation, bucket, &tally_of(&usage), recall)
    }
}

/// The tally of one message's winning line.
pub(crate) fn tally_of(usage: &Usage) -> Tally {
    Tally::message(*usage, Money::default())
}

/// Merges `message`, read from another file of the same session, into the messages filed
/// under its id, by the rules lines follow: the same message as one that shares a request id
/// (or, by the sidechain rule, any when either is a sidechain message), its winning line then
/// competing with that message's as a line would; otherwise a message of its own.
pub(crate) fn merge_message(entries: &mut Vec<Message>, message: &Message) {
    let found = entries
        .iter()
        .position(|e| e.requests.iter().any(|r| message.requests.contains(r)))
        .or_else(|| {
            entries
                .iter()
                .position(|e| message.sidechain || e.sidechain)
        });
    let Some(existing) = found.and_then(|i| entries.get_mut(i)) else {
        entries.push(message.clone());
        return;
    };
    for request in &message.requests {
        if !existing.requests.contains(request) {
            existing.requests.push(request.clone());
        }
    }
    if wins(
        (&message.usage, message.sidechain),
        (&existing.usage, existing.sidechain),
    ) {
        existing.usage = message.usage;
        existing.sidechain = message.sidechain;
    }
}
