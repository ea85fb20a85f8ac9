//! Codex CLI: usage as the successive differences of the cumulative
//! `info.total_token_usage` of `token_count` events; a `compacted` line marks a boundary. The
//! rules, and why: docs/TRANSCRIPTS.md, "Codex".

use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::Deserialize;

use super::fold::{At, Boundary, BoundaryKind, Fold, Recall, RecallError};
use super::json::{Count, Obj, Text};
use super::tally::Tally;

static TOKEN_COUNT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"token_count"));
/// In `"compacted"` and in `context_compacted`.
static COMPACTED: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"compacted"));
static TURN_CONTEXT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"turn_context"));

#[derive(Deserialize, Default)]
#[serde(default)]
struct Line<'a> {
    #[serde(borrow, rename = "type")]
    kind: Text<'a>,
    #[serde(borrow)]
    timestamp: Text<'a>,
    #[serde(borrow)]
    payload: Obj<Payload<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Payload<'a> {
    #[serde(borrow, rename = "type")]
    kind: Text<'a>,
    info: Obj<Info>,
    #[serde(borrow)]
    model: Text<'a>,
    tokens_before: Count,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Info {
    total_token_usage: Obj<Usage>,
}

// The fields are the format's own key names.
#[allow(clippy::struct_field_names)]
#[derive(Deserialize, Default)]
#[serde(default)]
struct Usage {
    input_tokens: Count,
    cached_input_tokens: Count,
    output_tokens: Count,
    reasoning_output_tokens: Count,
    total_tokens: Count,
}

fn may_matter(bytes: &[u8]) -> bool {
    TOKEN_COUNT.find(bytes).is_some()
        || COMPACTED.find(bytes).is_some()
        || TURN_CONTEXT.find(bytes).is_some()
}

/// Folds one Codex line.
pub(crate) fn fold_line(
    fold: &mut Fold,
    at: At,
    bytes: &[u8],
    recall: &mut dyn Recall,
) -> Result<(), RecallError> {
    let Some(line) = fold.parse::<Line>(bytes, may_matter) else {
        return Ok(());
    };
    let payload = line.payload.get();
    match line.kind.as_str() {
        Some("compacted") => {
            fold.boundary(Boundary {
                offset: at.offset,
                line: at.line,
                kind: BoundaryKind::Compacted,
                trigger: None,
                pre_tokens: None,
            });
            fold.summary.carry.pairable = true;
        }
        Some("turn_context") => {
            if let Some(model) = payload.and_then(|p| p.model.non_empty()) {
                let id = fold.model(Some(model));
                fold.summary.carry.model = Some(id);
            }
        }
        Some("event_msg") => match payload {
            Some(p) if p.kind.is("token_count") => {
                return token_count(fold, &line, p, recall);
            }
            Some(p) if p.kind.is("context_compacted") => context_compacted(fold, at, p),
            _ => {}
        },
        _ => {}
    }
    Ok(())
}

/// The event after a `compacted` line is the same boundary (it may say how large the
/// context was); alone, it marks one.
fn context_compacted(fold: &mut Fold, at: At, payload: &Payload<'_>) {
    let pre_tokens = payload.tokens_before.known();
    if fold.summary.carry.pairable {
        fold.summary.carry.pairable = false;
        if let Some(last) = fold.summary.boundaries.last_mut() {
            last.pre_tokens = last.pre_tokens.or(pre_tokens);
        }
        return;
    }
    fold.boundary(Boundary {
        offset: at.offset,
        line: at.line,
        kind: BoundaryKind::ContextCompacted,
        trigger: None,
        pre_tokens,
    });
}

fn token_count(
    fold: &mut Fold,
    line: &Line<'_>,
    payload: &Payload<'_>,
    recall: &mut dyn Recall,
) -> Result<(), RecallError> {
    let info = match &payload.info {
        Obj::Is(info) => info,
        Obj::Null | Obj::Missing => {
            fold.summary.diagnostics.null_info += 1;
            return Ok(());
        }
        Obj::Other => {
            fold.summary.diagnostics.missing_usage += 1;
            return Ok(());
        }
    };
    let Some(usage) = info.total_token_usage.get() else {
        fold.summary.diagnostics.missing_usage += 1;
        return Ok(());
    };
    let totals = [
        fold.count_value(usage.input_tokens),
        fold.count_value(usage.cached_input_tokens),
        fold.count_value(usage.output_tokens),
        fold.count_value(usage.reasoning_output_tokens),
        fold.count_value(usage.total_tokens),
    ];
    let delta = match fold.summary.carry.totals {
        None => totals,
        Some(before) if totals[4] < before[4] => {
            // The counter restarted (a new process on the same rollout): all of it is new.
            fold.summary.diagnostics.counter_resets += 1;
            totals
        }
        Some(before) => {
            let mut delta = [0; 5];
            for (d, (now, then)) in delta.iter_mut().zip(totals.iter().zip(before)) {
                if *now < then {
                    fold.summary.diagnostics.counter_decreases += 1;
                }
                *d = now.saturating_sub(then);
            }
            delta
        }
    };
    fold.summary.carry.totals = Some(totals);
    if delta == [0; 5] {
        return Ok(());
    }
    fold.summary.carry.pairable = false;
    let model = fold
        .summary
        .carry
        .model
        .unwrap_or(super::fold::UNKNOWN_MODEL);
    let bucket = (fold.quarter(line.timestamp.as_str()), model);
    let generation = fold.summary.generation();
    let tally = Tally {
        tokens: delta,
        cost: 0.0,
        events: 1,
    };
    fold.count(generation, bucket, &tally, recall)
}
