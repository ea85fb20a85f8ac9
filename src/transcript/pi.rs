//! pi: usage from assistant `message` entries, on every branch in file order, an entry id
//! counted once; a `compaction` entry marks a boundary. The rules, and why:
//! docs/TRANSCRIPTS.md, "pi".

use std::path::PathBuf;
use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::Deserialize;

use super::fold::{BoundaryKind, Fold, RecallError};
use super::format::{Format, Probe, has};
use super::json::{Amount, Obj, Text, TokenValue};
use super::native::Slot;
use super::reader::{Env, LineFacts, Rules, Step};
use super::tally::{Money, Tally};
use super::tokens::Usage;

static USAGE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"usage\""));
static COMPACTION: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"compaction"));

/// Entry types only pi writes.
const TYPES: [&str; 10] = [
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

/// The fields of a line the rules read.
#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "'de: 'a"))]
pub(crate) struct Line<'a> {
    #[serde(rename = "type")]
    kind: Text<'a>,
    id: Text<'a>,
    timestamp: Text<'a>,
    cwd: Text<'a>,
    message: Obj<MessageField<'a>>,
    #[serde(rename = "tokensBefore")]
    tokens_before: TokenValue,
}

#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "'de: 'a"))]
struct MessageField<'a> {
    role: Text<'a>,
    model: Text<'a>,
    usage: Obj<UsageField>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct UsageField {
    input: TokenValue,
    output: TokenValue,
    cache_read: TokenValue,
    cache_write: TokenValue,
    total_tokens: TokenValue,
    cost: Obj<Cost>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Cost {
    total: Amount,
}

/// The pi reader.
pub(crate) struct Pi;

impl Rules for Pi {
    const FORMAT: Format = Format::Pi;
    const BOUNDARY_KINDS: &'static [BoundaryKind] = &[BoundaryKind::Compaction];
    type Line<'a> = Line<'a>;

    /// An entry of a pi type with a `parentId`, or the `session` header with its `version`.
    fn shows(probe: &Probe<'_>) -> bool {
        probe
            .kind_in(&TYPES)
            .is_some_and(|kind| has(&probe.parent_id) || (kind == "session" && has(&probe.version)))
    }

    fn may_matter(bytes: &[u8]) -> bool {
        USAGE.find(bytes).is_some() || COMPACTION.find(bytes).is_some()
    }

    fn roots(env: &Env) -> Vec<PathBuf> {
        env.home
            .iter()
            .map(|home| home.join(".pi").join("agent").join("sessions"))
            .collect()
    }

    fn fold(step: &mut Step<'_>, line: &Line<'_>) -> Result<(), RecallError> {
        match line.kind.as_str() {
            Some("compaction") => step.fold.entry_boundary(
                (step.at, line.id.non_empty()),
                BoundaryKind::Compaction,
                line.tokens_before.known(),
                step.recall,
            ),
            Some("message") => match line.message.get() {
                Some(m) if m.role.is("assistant") => assistant(step, line, m),
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }

    fn facts(line: Self::Line<'_>) -> LineFacts<'_> {
        let mut facts = LineFacts::new(line.kind, line.timestamp);
        facts.message_id = line.id.into_cow();
        facts.cwd = line.cwd.into_cow();
        if let Some(u) = line.message.get().and_then(|m| m.usage.get()) {
            facts.usage([u.input, u.output, u.cache_write, u.cache_read]);
            facts.set(Slot::Total, u.total_tokens.known());
            facts.cost = u.cost.get().and_then(|c| c.total.known());
        }
        facts
    }
}

/// The recorded cost, counting what was odd about it.
fn cost(fold: &mut Fold, amount: Option<Amount>) -> Money {
    let d = &mut fold.summary.diagnostics;
    let dollars = match amount {
        Some(Amount::Exact(x)) => x,
        Some(Amount::Coerced(x)) => {
            d.coerced_values += 1;
            x
        }
        Some(Amount::Invalid | Amount::Null) => {
            d.invalid_values += 1;
            return Money::default();
        }
        Some(Amount::Missing) | None => {
            d.missing_fields += 1;
            return Money::default();
        }
    };
    Money::from_dollars(dollars).unwrap_or_else(|| {
        d.invalid_values += 1;
        Money::default()
    })
}

/// pi's fields are the normalised ones: its input excludes what was read from the cache.
fn normalised(fold: &mut Fold, u: &UsageField) -> Usage {
    let usage = fold.usage([u.input, u.output, u.cache_write, u.cache_read]);
    fold.value(u.total_tokens);
    fold.check_total(u.total_tokens.known(), &usage);
    usage
}

/// An assistant message's usage, counted once by its entry id (a cloned entry is a copy).
fn assistant(
    step: &mut Step<'_>,
    line: &Line<'_>,
    message: &MessageField<'_>,
) -> Result<(), RecallError> {
    let Some(u) = step.fold.usage_object(message.usage.get()) else {
        return Ok(());
    };
    let id = line.id.non_empty();
    if step.fold.entry_seen(id, false, step.recall)? {
        return Ok(());
    }
    let fold = &mut *step.fold;
    let usage = normalised(fold, u);
    let cost = cost(fold, u.cost.get().map(|c| c.total));
    let bucket = fold.bucket(line.timestamp.as_str(), message.model.as_str());
    fold.count_entry(id, bucket, Tally::message(usage, cost), step.recall)
}
