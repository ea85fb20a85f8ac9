//! Claude Code: usage from the top-level `message.usage` of assistant lines, one message per
//! `(message.id, requestId)`, compaction boundaries. The rules, and why: docs/TRANSCRIPTS.md,
//! "Claude Code".

use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::Deserialize;

use super::fold::{At, Boundary, BoundaryKind, Fold, Message, Recall, RecallError};
use super::json::{Count, Flag, Obj, Text};
use super::tally::Tally;

/// Every usage line holds this key; the copies inside `progress` lines do too, and are
/// parsed only to be refused.
static USAGE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"usage\""));
/// In `compact_boundary` (and `microcompact_boundary`) and in `isCompactSummary`.
static COMPACT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"ompact"));

#[derive(Deserialize, Default)]
#[serde(default)]
struct Line<'a> {
    #[serde(borrow, rename = "type")]
    kind: Text<'a>,
    #[serde(borrow)]
    subtype: Text<'a>,
    #[serde(rename = "isSidechain")]
    is_sidechain: Flag,
    #[serde(rename = "isCompactSummary")]
    is_compact_summary: Flag,
    #[serde(borrow, rename = "requestId")]
    request_id: Text<'a>,
    #[serde(borrow)]
    uuid: Text<'a>,
    #[serde(borrow)]
    timestamp: Text<'a>,
    #[serde(borrow)]
    message: Obj<MessageField<'a>>,
    #[serde(borrow, rename = "compactMetadata")]
    compact_metadata: Obj<CompactMetadata<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct MessageField<'a> {
    #[serde(borrow)]
    id: Text<'a>,
    #[serde(borrow)]
    model: Text<'a>,
    usage: Obj<Usage>,
}

// The fields are the format's own key names.
#[allow(clippy::struct_field_names)]
#[derive(Deserialize, Default)]
#[serde(default)]
struct Usage {
    input_tokens: Count,
    output_tokens: Count,
    cache_creation_input_tokens: Count,
    cache_read_input_tokens: Count,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CompactMetadata<'a> {
    #[serde(borrow)]
    trigger: Text<'a>,
    #[serde(rename = "preTokens")]
    pre_tokens: Count,
}

/// Whether a line can carry usage or a boundary; any other line need not be parsed.
fn may_matter(bytes: &[u8]) -> bool {
    USAGE.find(bytes).is_some() || COMPACT.find(bytes).is_some()
}

/// Folds one Claude Code line.
pub(crate) fn fold_line(
    fold: &mut Fold,
    at: At,
    bytes: &[u8],
    recall: &mut dyn Recall,
) -> Result<(), RecallError> {
    let Some(line) = fold.parse::<Line>(bytes, may_matter) else {
        return Ok(());
    };
    match line.kind.as_str() {
        Some("system") if line.subtype.is("compact_boundary") => {
            compact_boundary(fold, at, &line, recall)
        }
        Some("user") if line.is_compact_summary.0 => compact_summary(fold, at, &line, recall),
        Some("assistant") => assistant(fold, &line, recall),
        _ => Ok(()),
    }
}

/// Whether a boundary line was seen before (a replay re-appends it with its uuid): it starts
/// no new generation. Remembers the uuid otherwise.
fn replayed(
    fold: &mut Fold,
    line: &Line<'_>,
    recall: &mut dyn Recall,
) -> Result<bool, RecallError> {
    let Some(uuid) = line.uuid.non_empty() else {
        return Ok(false);
    };
    if fold.dedup.marks.contains(uuid) || recall.marked(uuid)? {
        fold.summary.diagnostics.replayed_boundaries += 1;
        return Ok(true);
    }
    fold.dedup.marks.insert(uuid.to_owned());
    fold.summary.marks += 1;
    Ok(false)
}

fn compact_boundary(
    fold: &mut Fold,
    at: At,
    line: &Line<'_>,
    recall: &mut dyn Recall,
) -> Result<(), RecallError> {
    if replayed(fold, line, recall)? {
        return Ok(());
    }
    let meta = line.compact_metadata.get();
    fold.boundary(Boundary {
        offset: at.offset,
        line: at.line,
        kind: BoundaryKind::CompactBoundary,
        trigger: meta.and_then(|m| m.trigger.as_str()).map(str::to_owned),
        pre_tokens: meta.and_then(|m| m.pre_tokens.known()),
    });
    fold.summary.carry.pairable = true;
    Ok(())
}

/// A compact summary belongs to the boundary line before it when no message was counted
/// since that line; otherwise (older versions wrote no boundary line) it marks one itself.
fn compact_summary(
    fold: &mut Fold,
    at: At,
    line: &Line<'_>,
    recall: &mut dyn Recall,
) -> Result<(), RecallError> {
    if replayed(fold, line, recall)? {
        return Ok(());
    }
    if fold.summary.carry.pairable {
        fold.summary.carry.pairable = false;
        return Ok(());
    }
    fold.boundary(Boundary {
        offset: at.offset,
        line: at.line,
        kind: BoundaryKind::CompactSummaryWithoutBoundary,
        trigger: None,
        pre_tokens: None,
    });
    Ok(())
}

/// Whether line `new` wins over the message's current winner `old`: a main-chain line over
/// a sidechain one, else more tokens; the earlier line on a tie.
fn wins(new: ([u64; 4], bool), old: ([u64; 4], bool)) -> bool {
    match (new.1, old.1) {
        (false, true) => true,
        (true, false) => false,
        _ => sum(&new.0) > sum(&old.0),
    }
}

fn sum(usage: &[u64; 4]) -> u64 {
    usage.iter().fold(0u64, |a, b| a.saturating_add(*b))
}

/// The tally of one message's winning line.
pub(crate) fn tally_of(usage: &[u64; 4], events: u64) -> Tally {
    Tally {
        tokens: [usage[0], usage[1], usage[2], usage[3], sum(usage)],
        cost: 0.0,
        events,
    }
}

fn assistant(fold: &mut Fold, line: &Line<'_>, recall: &mut dyn Recall) -> Result<(), RecallError> {
    let Some(message) = line.message.get() else {
        fold.summary.diagnostics.missing_usage += 1;
        return Ok(());
    };
    let Some(usage) = message.usage.get() else {
        fold.summary.diagnostics.missing_usage += 1;
        return Ok(());
    };
    let tokens = [
        fold.count_value(usage.input_tokens),
        fold.count_value(usage.output_tokens),
        fold.count_value(usage.cache_creation_input_tokens),
        fold.count_value(usage.cache_read_input_tokens),
    ];
    if line.request_id.was_other() {
        fold.summary.diagnostics.invalid_values += 1;
    }
    let sidechain = line.is_sidechain.0;
    let generation = fold.summary.generation();
    let Some(id) = message.id.non_empty() else {
        fold.summary.diagnostics.messages_without_id += 1;
        let bucket = (
            fold.quarter(line.timestamp.as_str()),
            fold.model(message.model.as_str()),
        );
        let tally = tally_of(&tokens, 1);
        fold.summary.unkeyed.add(&tally);
        fold.summary.carry.pairable = false;
        return fold.count(generation, bucket, &tally, recall);
    };
    let request = line.request_id.non_empty().map(str::to_owned);
    if !fold.dedup.messages.contains_key(id) {
        let known = recall.messages(id)?;
        if known.is_none() {
            fold.summary.keys += 1;
        }
        fold.dedup
            .messages
            .insert(id.to_owned(), known.unwrap_or_default());
    }
    let entries = fold.dedup.messages.entry(id.to_owned()).or_default();
    let found = entries
        .iter()
        .position(|m| m.requests.contains(&request))
        .or_else(|| {
            // A sidechain line replaying a main-chain message under a new requestId (and a
            // main-chain line for a message so far seen only on a sidechain) is that message.
            entries.iter().position(|m| sidechain || m.sidechain)
        });
    if let Some(i) = found {
        let Some(message) = entries.get_mut(i) else {
            return Ok(());
        };
        if !message.requests.contains(&request) {
            message.requests.push(request);
        }
        let (first, bucket) = (message.generation, message.bucket);
        let old = (message.usage, message.sidechain);
        let replaced = wins((tokens, sidechain), old);
        if replaced {
            message.usage = tokens;
            message.sidechain = sidechain;
        }
        let d = &mut fold.summary.diagnostics;
        if first < generation {
            d.replayed_lines += 1;
        } else {
            d.duplicate_lines += 1;
        }
        if replaced {
            let (old, new) = (tally_of(&old.0, 0), tally_of(&tokens, 0));
            fold.recount(first, bucket, (&old, &new), recall)?;
        }
        Ok(())
    } else {
        let bucket = (
            fold.quarter(line.timestamp.as_str()),
            fold.model(message.model.as_str()),
        );
        fold.dedup
            .messages
            .entry(id.to_owned())
            .or_default()
            .push(Message {
                requests: vec![request],
                generation,
                usage: tokens,
                sidechain,
                bucket,
            });
        fold.summary.carry.pairable = false;
        fold.count(generation, bucket, &tally_of(&tokens, 1), recall)
    }
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
        (message.usage, message.sidechain),
        (existing.usage, existing.sidechain),
    ) {
        existing.usage = message.usage;
        existing.sidechain = message.sidechain;
    }
}
