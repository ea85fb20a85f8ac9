//! pi: usage from assistant `message` entries, on every branch in file order, an entry id
//! counted once; a `compaction` entry marks a boundary. The rules, and why:
//! docs/TRANSCRIPTS.md, "pi".

use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::Deserialize;

use super::fold::{At, Boundary, BoundaryKind, Entry, Fold, Recall, RecallError};
use super::json::{Amount, Count, Obj, Text};
use super::tally::Tally;

static USAGE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"usage\""));
static COMPACTION: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"compaction"));

#[derive(Deserialize, Default)]
#[serde(default)]
struct Line<'a> {
    #[serde(borrow, rename = "type")]
    kind: Text<'a>,
    #[serde(borrow)]
    id: Text<'a>,
    #[serde(borrow)]
    timestamp: Text<'a>,
    #[serde(borrow)]
    message: Obj<MessageField<'a>>,
    #[serde(rename = "tokensBefore")]
    tokens_before: Count,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct MessageField<'a> {
    #[serde(borrow)]
    role: Text<'a>,
    #[serde(borrow)]
    model: Text<'a>,
    usage: Obj<Usage>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Usage {
    input: Count,
    output: Count,
    #[serde(rename = "cacheRead")]
    cache_read: Count,
    #[serde(rename = "cacheWrite")]
    cache_write: Count,
    #[serde(rename = "totalTokens")]
    total_tokens: Count,
    cost: Obj<Cost>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Cost {
    total: Amount,
}

fn may_matter(bytes: &[u8]) -> bool {
    USAGE.find(bytes).is_some() || COMPACTION.find(bytes).is_some()
}

/// Folds one pi line.
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
        Some("compaction") => {
            if seen_before(fold, &line, recall)? {
                return Ok(());
            }
            remember(fold, &line, Entry::Compaction);
            fold.boundary(Boundary {
                offset: at.offset,
                line: at.line,
                kind: BoundaryKind::Compaction,
                trigger: None,
                pre_tokens: line.tokens_before.known(),
            });
            Ok(())
        }
        Some("message") => match line.message.get() {
            Some(m) if m.role.is("assistant") => assistant(fold, &line, m, recall),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Whether the entry's id was seen before (a cloned entry): it counts once. Entries without an
/// id are never taken for one another.
fn seen_before(
    fold: &mut Fold,
    line: &Line<'_>,
    recall: &mut dyn Recall,
) -> Result<bool, RecallError> {
    let Some(id) = line.id.non_empty() else {
        return Ok(false);
    };
    if fold.dedup.entries.contains_key(id) || recall.seen(id)? {
        fold.summary.diagnostics.duplicate_lines += 1;
        if line.kind.is("compaction") {
            fold.summary.diagnostics.replayed_boundaries += 1;
        }
        return Ok(true);
    }
    Ok(false)
}

/// Remembers a new entry under its id (an entry without one is not remembered).
fn remember(fold: &mut Fold, line: &Line<'_>, entry: Entry) {
    if let Some(id) = line.id.non_empty() {
        fold.dedup.entries.insert(id.to_owned(), entry);
        fold.summary.keys += 1;
    }
}

fn assistant(
    fold: &mut Fold,
    line: &Line<'_>,
    message: &MessageField<'_>,
    recall: &mut dyn Recall,
) -> Result<(), RecallError> {
    let Some(usage) = message.usage.get() else {
        fold.summary.diagnostics.missing_usage += 1;
        return Ok(());
    };
    if seen_before(fold, line, recall)? {
        return Ok(());
    }
    let tokens = [
        fold.count_value(usage.input),
        fold.count_value(usage.output),
        fold.count_value(usage.cache_read),
        fold.count_value(usage.cache_write),
        fold.count_value(usage.total_tokens),
    ];
    let cost = match usage.cost.get().map(|c| c.total) {
        Some(Amount::Exact(x)) => x,
        Some(Amount::Coerced(x)) => {
            fold.summary.diagnostics.coerced_values += 1;
            x
        }
        Some(Amount::Invalid) => {
            fold.summary.diagnostics.invalid_values += 1;
            0.0
        }
        Some(Amount::Missing | Amount::Null) | None => {
            fold.summary.diagnostics.missing_fields += 1;
            0.0
        }
    };
    let bucket = (
        fold.quarter(line.timestamp.as_str()),
        fold.model(message.model.as_str()),
    );
    let generation = fold.summary.generation();
    let tally = Tally {
        tokens,
        cost,
        events: 1,
    };
    remember(fold, line, Entry::Message { tally, bucket });
    fold.count(generation, bucket, &tally, recall)
}
