//! Billing blocks: 5-hour windows as ccusage defines them. A block starts at its first
//! message's time floored to the hour; a message more than 5 hours after the block's start,
//! or more than 5 hours after the previous message, starts a new block, and a gap of more
//! than 5 hours between messages is reported as a gap block (from 5 hours after the last
//! message to the next). Usage is kept by quarter-hour, so the times of a block's messages are
//! known to the quarter-hour: block starts and ends are exact (a block starts on the hour), a
//! gap's edges, the last activity and the burn rate are at quarter-hour resolution
//! (docs/COST.md, "Billing blocks").

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::Serialize;
use serde::ser::Serializer;

use super::{GroupBy, UsageOptions, UsageRow, insert_agent};
use crate::transcript::fold::QUARTER_SECONDS;
use crate::transcript::format::Format;
use crate::transcript::price::RowCost;
use crate::transcript::tally::Tally;

/// A block's length: 5 hours.
pub const BLOCK_SECONDS: i64 = 5 * 3600;

/// What a quarter-hour adds up to.
#[derive(Clone, Debug, Default)]
pub(crate) struct Slot {
    pub(crate) tally: Tally,
    pub(crate) cost: RowCost,
    /// The agents whose usage it holds, in name order.
    pub(crate) agents: Vec<Format>,
}

/// A billing block's times and, for the active one, its pace. In JSON beside the row's
/// usage: `start`, `end`, `last_activity` (RFC 3339, UTC), `is_active`, `is_gap`,
/// `burn_rate`, `projection`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Block {
    /// The block's start (a gap's: 5 hours after the last message before it).
    #[serde(serialize_with = "rfc3339")]
    pub start: Timestamp,
    /// The block's end: start + 5 hours (a gap's: the next message's quarter-hour).
    #[serde(serialize_with = "rfc3339")]
    pub end: Timestamp,
    /// The end of the last quarter-hour with usage in the block (at most now).
    #[serde(serialize_with = "rfc3339")]
    pub last_activity: Timestamp,
    /// Whether the block is still running: less than 5 hours since its last activity, and
    /// before its end.
    pub is_active: bool,
    /// Whether this is a gap between blocks (no usage).
    pub is_gap: bool,
    /// The active block's pace.
    pub burn_rate: Option<BurnRate>,
    /// The active block's usage projected to its end at that pace.
    pub projection: Option<Projection>,
}

/// How fast a block is spending: over the time from its first to its last activity.
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

/// A timestamp `seconds` after the epoch (the epoch itself when out of range).
fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(seconds).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// A block being built.
struct Open {
    start: i64,
    first: i64,
    last_quarter: i64,
    slot: Slot,
}

/// The block rows of `quarters` (quarter-hour -> usage, in time order), oldest first.
pub(crate) fn blocks(quarters: &BTreeMap<i64, Slot>, options: &UsageOptions) -> Vec<UsageRow> {
    let now = options.now.unwrap_or_else(Timestamp::now).as_second();
    let mut rows = Vec::new();
    let mut open: Option<Open> = None;
    for (&quarter, slot) in quarters {
        let t = quarter.saturating_mul(QUARTER_SECONDS);
        if let Some(b) = open.take() {
            let last = b.last_quarter.saturating_mul(QUARTER_SECONDS);
            // A quarter starting 5 h or more after the block's start (on the hour) holds only
            // messages more than 5 h after it; a gap of more than 20 quarter-hours between the
            // quarters is more than 5 h between the messages.
            let gap = t.saturating_sub(last) > BLOCK_SECONDS;
            if t.saturating_sub(b.start) >= BLOCK_SECONDS || gap {
                rows.push(row(b, now));
                if gap {
                    rows.push(gap_row(last + QUARTER_SECONDS + BLOCK_SECONDS, t));
                }
            } else {
                let mut b = b;
                b.last_quarter = quarter;
                b.slot.tally.add(&slot.tally);
                b.slot.cost.merge(&slot.cost);
                for &agent in &slot.agents {
                    insert_agent(&mut b.slot.agents, agent);
                }
                open = Some(b);
                continue;
            }
        }
        open = Some(Open {
            start: t.div_euclid(3600).saturating_mul(3600),
            first: t,
            last_quarter: quarter,
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
    let end = b.start.saturating_add(BLOCK_SECONDS);
    let last = b
        .last_quarter
        .saturating_mul(QUARTER_SECONDS)
        .saturating_add(QUARTER_SECONDS)
        .min(now.max(b.first));
    let is_active = now.saturating_sub(last) < BLOCK_SECONDS && now < end;
    let (mut burn_rate, mut projection) = (None, None);
    let minutes = (last - b.first) as f64 / 60.0;
    if is_active && minutes > 0.0 {
        let tokens = b.slot.tally.usage.total();
        let usd = b.slot.cost.usd();
        let rate = BurnRate {
            tokens_per_minute: tokens as f64 / minutes,
            cost_usd_per_hour: usd.map(|c| c / minutes * 60.0),
        };
        let remaining = (end.saturating_sub(now)).max(0) as f64 / 60.0;
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
        last_activity: at(last),
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

    fn options(now: i64) -> UsageOptions {
        UsageOptions {
            now: Some(at(now)),
            ..UsageOptions::default()
        }
    }

    fn slot(tokens: u64) -> Slot {
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
        }
    }

    /// ccusage's rule, applied to messages one second into their quarter-hours: (start, end,
    /// tokens) of each block and (start, end) of each gap.
    fn naive(messages: &[(i64, u64)]) -> Vec<(i64, i64, u64, bool)> {
        let mut out = Vec::new();
        let mut block: Option<(i64, i64, u64)> = None; // start, last message, tokens
        for &(quarter, tokens) in messages {
            let t = quarter * 900 + 1;
            if let Some((start, last, sum)) = block {
                if t - start > BLOCK_SECONDS || t - last > BLOCK_SECONDS {
                    out.push((start, start + BLOCK_SECONDS, sum, false));
                    if t - last > BLOCK_SECONDS {
                        // At quarter-hour resolution: the gap from the end of the last
                        // message's quarter-hour + 5 h to the next one's start.
                        out.push((last - 1 + 900 + BLOCK_SECONDS, t - 1, 0, true));
                    }
                } else {
                    block = Some((start, t, sum + tokens));
                    continue;
                }
            }
            block = Some((t - t.rem_euclid(3600), t, tokens));
        }
        if let Some((start, _, sum)) = block {
            out.push((start, start + BLOCK_SECONDS, sum, false));
        }
        out
    }

    proptest::proptest! {
        /// Blocks equal ccusage's rule on any sequence of quarter-hours, and their tokens and
        /// costs add up to the whole.
        #[test]
        fn blocks_follow_ccusages_rule(steps in proptest::collection::vec((1i64..40, 1u64..1000), 1..60)) {
            let mut quarters = BTreeMap::new();
            let mut q = 1_900_000;
            let mut messages = Vec::new();
            for (step, tokens) in steps {
                q += step;
                quarters.insert(q, slot(tokens));
                messages.push((q, tokens));
            }
            let rows = blocks(&quarters, &options(0));
            let got: Vec<(i64, i64, u64, bool)> = rows
                .iter()
                .map(|r| {
                    let b = r.block.as_ref().unwrap();
                    (b.start.as_second(), b.end.as_second(), r.tally.usage.input, b.is_gap)
                })
                .collect();
            proptest::prop_assert_eq!(got, naive(&messages));
            let total: u64 = messages.iter().map(|m| m.1).sum();
            let cost: u64 = rows.iter().filter_map(|r| r.cost.cost).map(Money::picodollars).sum();
            proptest::prop_assert_eq!(cost, total);
        }
    }

    #[test]
    fn the_active_block_has_a_burn_rate_and_a_projection() {
        // Usage at 10:00 and 10:30 (quarters); now 11:00, the block runs to 15:00.
        let base: i64 = 1_900_000 * 900; // on the hour
        let q = base / 900;
        let quarters: BTreeMap<i64, Slot> = [(q, slot(600)), (q + 2, slot(600))].into();
        let rows = blocks(&quarters, &options(base + 3600));
        let b = rows[0].block.as_ref().unwrap();
        assert!(b.is_active && !b.is_gap);
        // From 10:00 to the end of the 10:30 quarter (10:45): 1200 tokens in 45 minutes.
        let rate = b.burn_rate.unwrap();
        assert!((rate.tokens_per_minute - 1200.0 / 45.0).abs() < 1e-9);
        let p = b.projection.unwrap();
        assert_eq!(p.remaining_minutes, 240);
        // 1200 + 1200 / 45 * 240 = 7600
        assert_eq!(p.total_tokens, 7600);
        let later = blocks(&quarters, &options(base + 6 * 3600));
        assert!(!later[0].block.as_ref().unwrap().is_active);
        assert!(later[0].block.as_ref().unwrap().burn_rate.is_none());
    }
}
