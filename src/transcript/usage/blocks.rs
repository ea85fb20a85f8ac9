//! Billing blocks: 5-hour windows as ccusage defines them. A block starts at its first
//! message's time floored to the hour; a message more than 5 hours after the block's start,
//! or more than 5 hours after the previous message, starts a new block, and a gap of more
//! than 5 hours between messages is reported as a gap block (from 5 hours after the last
//! message to the next). Usage is kept by quarter-hour with the first and last time of each
//! quarter-hour's messages ([`Span`]), to the millisecond: a quarter-hour lies wholly inside a
//! block or wholly after its 5 hours except when a message falls exactly on the 5-hour line
//! and others follow it in the same quarter-hour; that quarter-hour starts the next block
//! whole (docs/COST.md, "Billing blocks").

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::Serialize;
use serde::ser::Serializer;

use super::{GroupBy, UsageRow, insert_agent};
use crate::transcript::fold::{QUARTER_MILLIS, Span};
use crate::transcript::format::Format;
use crate::transcript::price::RowCost;
use crate::transcript::tally::Tally;

/// A block's length: 5 hours.
pub const BLOCK_SECONDS: i64 = 5 * 3600;
const BLOCK_MILLIS: i64 = BLOCK_SECONDS * 1000;
const HOUR_MILLIS: i64 = 3_600_000;

/// What a quarter-hour adds up to.
#[derive(Clone, Debug, Default)]
pub(crate) struct Slot {
    pub(crate) tally: Tally,
    pub(crate) cost: RowCost,
    /// The agents whose usage it holds, in name order.
    pub(crate) agents: Vec<Format>,
    /// The first and last time of its messages (`None`: not known, the quarter-hour's start
    /// stands for both).
    pub(crate) span: Option<Span>,
}

/// A billing block's times and, for the active one, its pace. In JSON beside the row's
/// usage: `start`, `end`, `last_activity` (RFC 3339, UTC), `is_active`, `is_gap`,
/// `burn_rate`, `projection`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Block {
    /// The block's start (a gap's: 5 hours after the last message before it).
    #[serde(serialize_with = "rfc3339")]
    pub start: Timestamp,
    /// The block's end: start + 5 hours (a gap's: the next message's time).
    #[serde(serialize_with = "rfc3339")]
    pub end: Timestamp,
    /// The time of the block's last message.
    #[serde(serialize_with = "rfc3339")]
    pub last_activity: Timestamp,
    /// Whether the block is still running: less than 5 hours since its last message, and
    /// before its end.
    pub is_active: bool,
    /// Whether this is a gap between blocks (no usage).
    pub is_gap: bool,
    /// The active block's pace.
    pub burn_rate: Option<BurnRate>,
    /// The active block's usage projected to its end at that pace.
    pub projection: Option<Projection>,
}

/// How fast a block is spending: over the time from its first to its last message.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BurnRate {
    /// Tokens (all four kinds) per minute.
    pub tokens_per_minute: f64,
    /// Dollars per hour (`null` when nothing in the block has a price).
    pub cost_usd_per_hour: Option<f64>,
}

/// A block's usage projected to its end at its burn rate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Projection {
    /// Tokens by the block's end.
    pub total_tokens: u64,
    /// Dollars by the block's end (`null` when nothing in the block has a price).
    pub cost_usd: Option<f64>,
    /// Minutes left in the block.
    pub remaining_minutes: u64,
}

fn rfc3339<S: Serializer>(t: &Timestamp, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(t)
}

/// A timestamp `millis` after the epoch (the epoch itself when out of range).
fn at(millis: i64) -> Timestamp {
    Timestamp::from_millisecond(millis).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// A block being built (times in milliseconds since the epoch).
struct Open {
    start: i64,
    first: i64,
    last: i64,
    slot: Slot,
}

/// The block rows of `quarters` (quarter-hour -> usage, in time order), oldest first; a block
/// is active as of `now`.
pub(crate) fn blocks(quarters: &BTreeMap<i64, Slot>, now: Timestamp) -> Vec<UsageRow> {
    let now = now.as_millisecond();
    let mut rows = Vec::new();
    let mut open: Option<Open> = None;
    for (&quarter, slot) in quarters {
        let span = slot
            .span
            .filter(|s| s.is_in(quarter))
            .unwrap_or_else(|| Span::at(quarter.saturating_mul(QUARTER_MILLIS)));
        if let Some(mut b) = open.take() {
            let line = b.start.saturating_add(BLOCK_MILLIS);
            let gap = span.first.saturating_sub(b.last) > BLOCK_MILLIS;
            // Every message of the quarter-hour is at most 5 h after the block's start; else
            // (the quarter-hour's messages are all past the line, or one is on it and later
            // ones past it) the quarter-hour starts the next block.
            if !gap && span.last <= line {
                b.last = b.last.max(span.last);
                b.slot.tally.add(&slot.tally);
                b.slot.cost.merge(&slot.cost);
                for &agent in &slot.agents {
                    insert_agent(&mut b.slot.agents, agent);
                }
                open = Some(b);
                continue;
            }
            let last = b.last;
            rows.push(row(b, now));
            if gap {
                rows.push(gap_row(last.saturating_add(BLOCK_MILLIS), span.first));
            }
        }
        open = Some(Open {
            start: span
                .first
                .div_euclid(HOUR_MILLIS)
                .saturating_mul(HOUR_MILLIS),
            first: span.first,
            last: span.last,
            slot: slot.clone(),
        });
    }
    if let Some(b) = open {
        rows.push(row(b, now));
    }
    rows
}

fn block_row(key: String, slot: Slot, block: Block) -> UsageRow {
    let Slot {
        tally,
        cost,
        agents,
        ..
    } = slot;
    UsageRow {
        by: GroupBy::Block,
        key,
        project: None,
        agents,
        tally,
        cost,
        last_activity: Some(block.last_activity),
        block: Some(block),
    }
}

fn gap_row(start: i64, end: i64) -> UsageRow {
    let block = Block {
        start: at(start),
        end: at(end),
        last_activity: at(start),
        is_active: false,
        is_gap: true,
        burn_rate: None,
        projection: None,
    };
    block_row(format!("gap-{}", at(start)), Slot::default(), block)
}

// Rates and projections are display figures: floats, as ccusage shows them.
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
fn row(b: Open, now: i64) -> UsageRow {
    let end = b.start.saturating_add(BLOCK_MILLIS);
    let is_active = now.saturating_sub(b.last) < BLOCK_MILLIS && now < end;
    let (mut burn_rate, mut projection) = (None, None);
    let minutes = b.last.saturating_sub(b.first) as f64 / 60_000.0;
    if is_active && minutes > 0.0 {
        let tokens = b.slot.tally.usage.total();
        let usd = b.slot.cost.usd();
        let rate = BurnRate {
            tokens_per_minute: tokens as f64 / minutes,
            cost_usd_per_hour: usd.map(|c| c / minutes * 60.0),
        };
        let remaining = end.saturating_sub(now).max(0) as f64 / 60_000.0;
        projection = Some(Projection {
            total_tokens: (tokens as f64 + rate.tokens_per_minute * remaining).round() as u64,
            cost_usd: usd.map(|c| c + c / minutes * remaining),
            remaining_minutes: remaining.round() as u64,
        });
        burn_rate = Some(rate);
    }
    let block = Block {
        start: at(b.start),
        end: at(end),
        last_activity: at(b.last),
        is_active,
        is_gap: false,
        burn_rate,
        projection,
    };
    block_row(at(b.start).to_string(), b.slot, block)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::tally::Money;
    use crate::transcript::tokens::Usage;

    fn slot(tokens: u64, span: Option<Span>) -> Slot {
        let mut cost = RowCost::default();
        cost.add("m", Some(Money::from_picodollars(tokens)));
        Slot {
            tally: Tally::message(
                Usage {
                    input: tokens,
                    ..Usage::default()
                },
                Money::default(),
            ),
            cost,
            agents: vec![Format::Kimi],
            span,
        }
    }

    /// Messages (time in ms, tokens) as the grouper keeps them: by quarter-hour, with the
    /// span of their times.
    fn quarters_of(messages: &[(i64, u64)]) -> BTreeMap<i64, Slot> {
        let mut quarters: BTreeMap<i64, Slot> = BTreeMap::new();
        for &(t, tokens) in messages {
            let one = slot(tokens, Some(Span::at(t)));
            let q = quarters.entry(t.div_euclid(QUARTER_MILLIS)).or_default();
            q.tally.add(&one.tally);
            q.cost.merge(&one.cost);
            q.agents = one.agents;
            q.span = Some(q.span.map_or(Span::at(t), |mut s| {
                s.widen(Span::at(t));
                s
            }));
        }
        quarters
    }

    /// ccusage's rule, literally: messages sorted by time; (start, end, tokens, `is_gap`) of each
    /// block and gap, in milliseconds.
    fn naive(messages: &[(i64, u64)]) -> Vec<(i64, i64, u64, bool)> {
        let mut sorted = messages.to_vec();
        sorted.sort_unstable();
        let mut out = Vec::new();
        let mut block: Option<(i64, i64, u64)> = None; // start, last message, tokens
        for (t, tokens) in sorted {
            if let Some((start, last, sum)) = block {
                if t - start > BLOCK_MILLIS || t - last > BLOCK_MILLIS {
                    out.push((start, start + BLOCK_MILLIS, sum, false));
                    if t - last > BLOCK_MILLIS {
                        out.push((last + BLOCK_MILLIS, t, 0, true));
                    }
                } else {
                    block = Some((start, t, sum + tokens));
                    continue;
                }
            }
            block = Some((t - t.rem_euclid(HOUR_MILLIS), t, tokens));
        }
        if let Some((start, _, sum)) = block {
            out.push((start, start + BLOCK_MILLIS, sum, false));
        }
        out
    }

    fn got(rows: &[UsageRow]) -> Vec<(i64, i64, u64, bool)> {
        rows.iter()
            .map(|r| {
                let b = r.block.as_ref().unwrap();
                let (start, end) = (b.start.as_millisecond(), b.end.as_millisecond());
                (start, end, r.tally.usage.input, b.is_gap)
            })
            .collect()
    }

    /// Whether a message falls exactly on a block's 5-hour line with a later one in the same
    /// quarter-hour: the one case blocks by quarter-hour cannot split (see the module's docs).
    fn on_the_line(messages: &[(i64, u64)]) -> bool {
        let rows = naive(messages);
        rows.iter().filter(|r| !r.3).any(|&(_, end, _, _)| {
            messages.iter().any(|m| m.0 == end)
                && messages
                    .iter()
                    .any(|m| m.0 > end && m.0.div_euclid(QUARTER_MILLIS) == end / QUARTER_MILLIS)
        })
    }

    /// Steps between messages: any size, and some landing next to the 5-hour marks.
    fn step() -> impl proptest::strategy::Strategy<Value = i64> {
        use proptest::prelude::*;
        prop_oneof![
            0i64..QUARTER_MILLIS,
            0i64..(2 * BLOCK_MILLIS),
            (-2000i64..2000).prop_map(|d| BLOCK_MILLIS + d),
            (-2000i64..2000).prop_map(|d| BLOCK_MILLIS - QUARTER_MILLIS + d),
            (0i64..20).prop_map(|h| h * HOUR_MILLIS),
        ]
    }

    proptest::proptest! {
        /// Blocks equal ccusage's rule on messages at any millisecond, and their tokens and
        /// costs add up to the whole.
        #[test]
        fn blocks_follow_ccusages_rule(
            steps in proptest::collection::vec((step(), 1u64..1000), 1..60),
            origin in 0i64..HOUR_MILLIS,
        ) {
            let mut t = 1_800_000_000_000 + origin;
            let mut messages = Vec::new();
            for (step, tokens) in steps {
                t += step;
                messages.push((t, tokens));
            }
            proptest::prop_assume!(!on_the_line(&messages));
            let rows = blocks(&quarters_of(&messages), at(0));
            proptest::prop_assert_eq!(got(&rows), naive(&messages));
            let total: u64 = messages.iter().map(|m| m.1).sum();
            let cost: u64 = rows.iter().filter_map(|r| r.cost.cost).map(Money::picodollars).sum();
            proptest::prop_assert_eq!(cost, total);
        }
    }

    #[test]
    fn edges_are_exact_to_the_millisecond() {
        let h = 1_800_000_000_000 / HOUR_MILLIS * HOUR_MILLIS;
        let min = 60_000;
        for messages in [
            // 5 h 13 min apart, their quarter-hours 5 h apart: two blocks and a gap.
            vec![(h + 10 * min, 1), (h + 5 * 60 * min + 23 * min, 2)],
            // Exactly 5 h after the block's start: still in it; 1 ms later: the next block.
            vec![(h, 1), (h + 4 * 60 * min, 2), (h + BLOCK_MILLIS, 4)],
            vec![(h, 1), (h + 4 * 60 * min, 2), (h + BLOCK_MILLIS + 1, 4)],
            // Exactly 5 h after the previous message: no gap; 1 ms more: a gap.
            vec![(h + 30 * min, 1), (h + 30 * min + BLOCK_MILLIS, 2)],
            vec![(h + 30 * min, 1), (h + 30 * min + BLOCK_MILLIS + 1, 2)],
        ] {
            let rows = blocks(&quarters_of(&messages), at(0));
            assert_eq!(got(&rows), naive(&messages), "{messages:?}");
        }
        let two = [(h + 10 * min, 1), (h + 5 * 60 * min + 23 * min, 2)];
        let rows = got(&blocks(&quarters_of(&two), at(0)));
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows[1],
            (
                h + 10 * min + BLOCK_MILLIS,
                h + 5 * 60 * min + 23 * min,
                0,
                true
            )
        );
    }

    #[test]
    fn a_quarter_hour_holding_the_line_and_later_messages_starts_the_next_block() {
        let h = 1_800_000_000_000 / HOUR_MILLIS * HOUR_MILLIS;
        let messages = [(h, 1), (h + BLOCK_MILLIS, 2), (h + BLOCK_MILLIS + 1, 4)];
        assert!(on_the_line(&messages));
        let rows = got(&blocks(&quarters_of(&messages), at(0)));
        // ccusage keeps the message on the line in the first block (1 + 2, then 4); the
        // quarter-hour moves whole.
        assert_eq!(
            rows,
            vec![
                (h, h + BLOCK_MILLIS, 1, false),
                (h + BLOCK_MILLIS, h + 2 * BLOCK_MILLIS, 6, false)
            ]
        );
    }

    #[test]
    fn the_active_block_has_a_burn_rate_and_a_projection() {
        // Messages at 10:00 and 10:45; now 11:00, the block runs to 15:00.
        let base: i64 = 1_900_000 * QUARTER_MILLIS; // on the hour
        let messages = [(base, 600), (base + 45 * 60_000, 600)];
        let quarters = quarters_of(&messages);
        let rows = blocks(&quarters, at(base + HOUR_MILLIS));
        let b = rows[0].block.as_ref().unwrap();
        assert!(b.is_active && !b.is_gap);
        assert_eq!(b.last_activity.as_millisecond(), base + 45 * 60_000);
        // From 10:00 to 10:45: 1200 tokens in 45 minutes.
        let rate = b.burn_rate.unwrap();
        assert!((rate.tokens_per_minute - 1200.0 / 45.0).abs() < 1e-9);
        let p = b.projection.unwrap();
        assert_eq!(p.remaining_minutes, 240);
        // 1200 + 1200 / 45 * 240 = 7600
        assert_eq!(p.total_tokens, 7600);
        let later = blocks(&quarters, at(base + 6 * HOUR_MILLIS));
        assert!(!later[0].block.as_ref().unwrap().is_active);
        assert!(later[0].block.as_ref().unwrap().burn_rate.is_none());
    }
}
