//! What a Claude Code status line shows: from the JSON Claude Code passes to a `statusLine`
//! command ([`StatusInput`]; its transcript may be of any line format, detected), the model, the context and its share of the window, the tokens
//! since the latest compaction, the session's and the day's totals ([`StatusLine`]). The
//! decisions: docs/TRANSCRIPTS.md, "The status line".

mod input;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use jiff::tz::TimeZone;
use serde::Serialize;

pub use input::{
    MAX_STATUS_INPUT, RateLimit, StatusInput, StatusInputError, context_window, parse_status_input,
};

use super::error::TranscriptError;
use super::fold::{QUARTER_SECONDS, UNKNOWN_QUARTER};
use super::format::Format;
use super::price::{CostMode, PriceTable, Pricer, RowCost};
use super::report::UsageFigures;
use super::store::{OpenOptions, Transcript, open};
use super::usage::{BLOCK_SECONDS, Slot, UsageRow, blocks, system_zone, zone_name};

/// New transcript bytes up to this many are folded in memory instead of written to the index.
const MEMORY_TAIL: u64 = 1 << 20;
/// Seconds in a day.
const DAY: i64 = 86_400;
/// How far back the active billing block is looked for: it started at most 5 hours ago, and
/// the 5 hours before its start tell whether a gap opened it.
const BLOCK_HORIZON: i64 = 2 * BLOCK_SECONDS;

/// How the status line reads.
#[derive(Clone, Debug, Default)]
pub struct StatusOptions {
    /// Where index files go (default: the cache directory).
    pub index_dir: Option<PathBuf>,
    /// The time "today" is the day of (default: now).
    pub now: Option<jiff::Timestamp>,
    /// The zone whose day "today" is (default: the system's, as `usage`'s days).
    pub timezone: Option<TimeZone>,
    /// The prices (default: the embedded snapshot).
    pub prices: Option<Arc<PriceTable>>,
}

/// The figures of a status line: `agentlog statusline --json` prints them as they serialize,
/// and [`StatusLine::line`] is the line itself.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StatusLine {
    /// `context_tokens` as a percentage of `context_window`.
    pub context_percent: Option<f64>,
    /// The context: the prompt of the session's latest main-chain request, 0 after a later
    /// compaction; `None` before any.
    pub context_tokens: Option<u64>,
    /// The model's context window: Claude Code's `context_window.context_window_size` when it
    /// passes one, else guessed from the model ([`context_window`]).
    pub context_window: u64,
    /// The plan's 5-hour limit used, in percent, as Claude Code passes it (`rate_limits`).
    pub five_hour_used_percent: Option<f64>,
    /// When the 5-hour limit resets, as Claude Code passes it.
    pub five_hour_resets_at: Option<String>,
    /// The plan's 7-day limit used, in percent, as Claude Code passes it.
    pub seven_day_used_percent: Option<f64>,
    /// When the 7-day limit resets, as Claude Code passes it.
    pub seven_day_resets_at: Option<String>,
    /// The model's display name, else its id, else `?`.
    pub model: String,
    /// The session id Claude Code passed.
    pub session_id: Option<String>,
    /// The session transcript's total tokens (its subagents not added).
    pub session_total_tokens: u64,
    /// The session's usage since its latest compaction.
    pub since_compaction: UsageFigures,
    /// What the session transcript cost (`null` when none of its models has a price).
    pub session_cost_usd: Option<f64>,
    /// What today's usage in the session's project cost (`null` when nothing has a price).
    pub today_cost_usd: Option<f64>,
    /// Total tokens in the active 5-hour billing block of the session's project, as
    /// `usage --by block` finds blocks (`null` when no block is active).
    pub block_total_tokens: Option<u64>,
    /// What the active block cost (`null` when none is active or nothing in it has a price).
    pub block_cost_usd: Option<f64>,
    /// When the active block ends (RFC 3339, UTC).
    pub block_end: Option<String>,
    /// Models seen in the session and today without a price (left out of the costs).
    pub unpriced_models: Vec<String>,
    /// The time zone of `today`: its IANA name, else its offset.
    pub timezone: String,
    /// Total tokens today in the session's project: its transcript and the other transcripts
    /// beside it written today.
    pub today_total_tokens: u64,
    /// How many transcripts `today_total_tokens` was read from.
    pub today_transcripts: u64,
    /// The session's transcript.
    #[serde(serialize_with = "display")]
    pub transcript_path: PathBuf,
}

fn display<S: serde::Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&path.display())
}

impl StatusLine {
    /// The line: `Opus | ctx 77.3k (39%) | since compact 3.0M | session 15.2M $4.10 | today
    /// 21.4M $6.02 | block 4.1M $1.20`, the block while one is active, then the plan's limits
    /// when Claude Code passes them.
    pub fn line(&self) -> String {
        let context = match (self.context_tokens, self.context_percent) {
            (Some(c), Some(p)) => format!("{} ({p:.0}%)", short(c)),
            _ => "-".to_owned(),
        };
        let usd = |c: Option<f64>| c.map(|d| format!(" ${d:.2}")).unwrap_or_default();
        let limits = match (self.five_hour_used_percent, self.seven_day_used_percent) {
            (None, None) => String::new(),
            (five, seven) => {
                let p = |x: Option<f64>| x.map_or_else(|| "-".to_owned(), |x| format!("{x:.0}%"));
                format!(" | 5h {} 7d {}", p(five), p(seven))
            }
        };
        let block = self
            .block_total_tokens
            .map(|t| format!(" | block {}{}", short(t), usd(self.block_cost_usd)))
            .unwrap_or_default();
        format!(
            "{} | ctx {context} | since compact {} | session {}{} | today {}{}{block}{limits}",
            self.model,
            short(self.since_compaction.tally.usage.total()),
            short(self.session_total_tokens),
            usd(self.session_cost_usd),
            short(self.today_total_tokens),
            usd(self.today_cost_usd)
        )
    }

    /// `template` with each `{name}` replaced by the field of that name in the JSON form
    /// (numbers as they serialize, money to the cent, `null` as `-`); an unknown name is left
    /// as written.
    pub fn format(&self, template: &str) -> String {
        let json = serde_json::to_value(self).unwrap_or_default();
        let mut out = String::with_capacity(template.len());
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let (before, after) = rest.split_at(open);
            out.push_str(before);
            let Some(close) = after.find('}') else {
                out.push_str(after);
                return out;
            };
            let name = after.get(1..close).unwrap_or_default();
            match json.get(name) {
                Some(serde_json::Value::String(s)) => out.push_str(s),
                Some(serde_json::Value::Null) => out.push('-'),
                Some(serde_json::Value::Number(n)) if name.ends_with("_usd") => {
                    let _ = write!(out, "{:.2}", n.as_f64().unwrap_or_default());
                }
                Some(serde_json::Value::Number(n)) if name.ends_with("_percent") => {
                    let _ = write!(out, "{:.0}", n.as_f64().unwrap_or_default());
                }
                Some(v) => out.push_str(&v.to_string()),
                None => out.push_str(after.get(..=close).unwrap_or_default()),
            }
            rest = after.get(close + 1..).unwrap_or_default();
        }
        out.push_str(rest);
        out
    }
}

/// The name a bucket's model goes by when the transcript names none.
const UNKNOWN_MODEL: &str = "unknown";

/// The status line of the session `input` names: its transcript read through its index (a
/// tail up to 1 MiB folded in memory, so a status line seldom writes), and today's usage and
/// the active billing block of its project's transcripts written today or in the last 10
/// hours. A transcript that does not exist yet, or holds no complete line, counts nothing; any
/// other failure to read it is an error.
pub fn statusline(
    input: &StatusInput,
    options: &StatusOptions,
) -> Result<StatusLine, TranscriptError> {
    let zone = options.timezone.clone().unwrap_or_else(system_zone);
    let now = options.now.unwrap_or_else(jiff::Timestamp::now);
    let day_start = day_start(now, &zone);
    let horizon = day_start.min(now.as_second().saturating_sub(BLOCK_HORIZON));
    // Usage is kept by UTC quarter-hour; every zone's midnight in use today falls on one.
    let from = day_start.div_euclid(QUARTER_SECONDS);
    let from_horizon = horizon.div_euclid(QUARTER_SECONDS);
    let mut open_options = OpenOptions {
        index_dir: options.index_dir.clone(),
        max_memory_tail: MEMORY_TAIL,
        buckets_from: Some(from_horizon),
        ..OpenOptions::default()
    };
    let path = &input.transcript_path;
    let main = open_session(path, &open_options)?;
    // The format the session's lines show (Claude Code's, whose hook this is, until one does):
    // the files beside it are its agent's too.
    let format = main.as_ref().map_or(Format::ClaudeCode, |t| t.format);
    open_options.format = Some(format);
    // The other transcripts since the horizon, opened before pricing: the embedded table is
    // read for the models they and the session use, not whole. With each, whether it was
    // written today (then it is one of `today_transcripts`).
    let others: Vec<(Transcript, bool)> = written_since(path, horizon)
        .iter()
        .filter_map(|(other, written)| {
            let t = open(other, &open_options).ok()?;
            Some((t, *written >= day_start))
        })
        .collect();
    let table = options.prices.clone().unwrap_or_else(|| {
        let names = main
            .iter()
            .chain(others.iter().map(|(t, _)| t))
            .flat_map(|t| t.summary.models.iter().map(String::as_str))
            .chain([UNKNOWN_MODEL]);
        Arc::new(PriceTable::embedded_for(names))
    });
    let mut pricer = Pricer::new(table, CostMode::Auto);
    let (mut session_cost, mut today_cost) = (RowCost::default(), RowCost::default());
    // The quarter-hours since the horizon, as `usage --by block` keeps them.
    let mut quarters: BTreeMap<i64, Slot> = BTreeMap::new();
    let mut today_of = |t: &Transcript, session: Option<&mut RowCost>| -> u64 {
        let buckets = t.buckets().unwrap_or_default();
        let mut session = session;
        let mut sum = 0u64;
        for ((q, model), tally) in &buckets {
            let name = t
                .summary
                .models
                .get(*model as usize)
                .map_or(UNKNOWN_MODEL, String::as_str);
            let cost = pricer.cost(t.format, name, tally);
            if let Some(s) = session.as_deref_mut() {
                s.add(name, cost);
            }
            if *q >= from {
                sum = sum.saturating_add(tally.usage.total());
                today_cost.add(name, cost);
            }
            if *q >= from_horizon {
                let slot = quarters.entry(*q).or_default();
                slot.tally.add(tally);
                slot.cost.add(name, cost);
            }
        }
        let spans = t.dedup.iter().flat_map(|d| &d.spans);
        for (q, span) in spans.filter(|(q, _)| **q >= from_horizon) {
            if let Some(slot) = quarters.get_mut(q) {
                slot.span.get_or_insert(*span).widen(*span);
            }
        }
        sum
    };
    let mut today = main
        .as_ref()
        .map_or(0, |t| today_of(t, Some(&mut session_cost)));
    let mut today_transcripts = u64::from(main.is_some());
    for (t, written_today) in &others {
        today = today.saturating_add(today_of(t, None));
        today_transcripts += u64::from(*written_today);
    }
    let block = active_block(&quarters, now);
    let block_cost = block.as_ref().map(|b| &b.cost);
    let mut unpriced: Vec<String> = session_cost
        .unpriced_models
        .iter()
        .chain(&today_cost.unpriced_models)
        .chain(block_cost.iter().flat_map(|c| &c.unpriced_models))
        .cloned()
        .collect();
    unpriced.sort();
    unpriced.dedup();
    let window = input
        .context_window_size
        .unwrap_or_else(|| context_window(input.model_id.as_deref(), input.model_name.as_deref()));
    let used = |l: &Option<RateLimit>| l.as_ref().and_then(|l| l.used_percentage);
    let resets = |l: &Option<RateLimit>| l.as_ref().and_then(|l| l.resets_at.clone());
    let context = main.as_ref().and_then(|t| t.summary.context);
    Ok(StatusLine {
        context_percent: context.map(|c| percent(c, window)),
        context_tokens: context,
        context_window: window,
        five_hour_used_percent: used(&input.five_hour),
        five_hour_resets_at: resets(&input.five_hour),
        seven_day_used_percent: used(&input.seven_day),
        seven_day_resets_at: resets(&input.seven_day),
        model: input
            .model_name
            .clone()
            .or_else(|| input.model_id.clone())
            .or_else(|| main.as_ref().and_then(|t| t.summary.models.last().cloned()))
            .unwrap_or_else(|| "?".to_owned()),
        session_id: input.session_id.clone(),
        session_total_tokens: main.as_ref().map_or(0, |t| t.lifetime().usage.total()),
        since_compaction: UsageFigures::new(
            format,
            main.as_ref()
                .map(Transcript::since_compaction)
                .unwrap_or_default(),
        ),
        session_cost_usd: session_cost.usd(),
        today_cost_usd: today_cost.usd(),
        block_total_tokens: block.as_ref().map(|b| b.tally.usage.total()),
        block_cost_usd: block_cost.and_then(RowCost::usd),
        block_end: block
            .as_ref()
            .and_then(|b| b.block.as_ref())
            .map(|b| b.end.to_string()),
        unpriced_models: unpriced,
        timezone: zone_name(&zone),
        today_total_tokens: today,
        today_transcripts,
        transcript_path: path.clone(),
    })
}

/// The block of `quarters` active at `now`, if one is: only the last can be.
fn active_block(quarters: &BTreeMap<i64, Slot>, now: jiff::Timestamp) -> Option<UsageRow> {
    blocks(quarters, now)
        .pop()
        .filter(|row| row.block.as_ref().is_some_and(|b| b.is_active))
}

/// The session's transcript, with all its buckets (its cost): of the format its lines show,
/// any line format; read as Claude Code's while no line shows one yet (the hook is Claude
/// Code's, and its first lines may not tell). `None` for a transcript not written yet.
fn open_session(path: &Path, options: &OpenOptions) -> Result<Option<Transcript>, TranscriptError> {
    let options = OpenOptions {
        buckets_from: Some(UNKNOWN_QUARTER),
        ..options.clone()
    };
    let opened = match open(path, &options) {
        Err(TranscriptError::UnknownFormat { .. }) => open(
            path,
            &OpenOptions {
                format: Some(Format::ClaudeCode),
                ..options
            },
        ),
        other => other,
    };
    match opened {
        Ok(t) => Ok(Some(t)),
        // A session that has not written its transcript yet: nothing counted so far.
        Err(TranscriptError::NotFound { .. } | TranscriptError::Empty { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The first second of `now`'s day in `zone` (of its UTC day if the zone has no such
/// instant, which no zone in use has).
fn day_start(now: jiff::Timestamp, zone: &TimeZone) -> i64 {
    zone.to_timestamp(zone.to_datetime(now).start_of_day())
        .map_or_else(
            |_| now.as_second().div_euclid(DAY) * DAY,
            jiff::Timestamp::as_second,
        )
}

/// The other `*.jsonl` files beside `path` (its project's sessions) written since `start`
/// (seconds since the epoch), each with when it was last written: a file last written before
/// then holds no usage since.
fn written_since(path: &Path, start: i64) -> Vec<(PathBuf, i64)> {
    let Some(dir) = path.parent() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, i64)> = entries
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            if p.extension().is_none_or(|x| x != "jsonl") || p.file_name() == path.file_name() {
                return None;
            }
            let written = e.metadata().ok()?.modified().ok()?;
            let written = jiff::Timestamp::try_from(written).ok()?.as_second();
            (written >= start).then_some((p, written))
        })
        .collect();
    out.sort();
    out
}

// Token counts are far below 2^52: the conversion is exact.
#[allow(clippy::cast_precision_loss)]
fn percent(tokens: u64, window: u64) -> f64 {
    tokens as f64 * 100.0 / window.max(1) as f64
}

/// 950, 12.3k, 1.2M.
#[allow(clippy::cast_precision_loss)]
fn short(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::tally::Tally;

    #[test]
    fn a_template_picks_fields_by_their_json_names() {
        let line = StatusLine {
            context_percent: Some(38.6),
            context_tokens: Some(77_300),
            context_window: 200_000,
            five_hour_used_percent: Some(42.4),
            five_hour_resets_at: Some("1767225600".to_owned()),
            seven_day_used_percent: None,
            seven_day_resets_at: None,
            model: "Opus".to_owned(),
            session_id: None,
            session_total_tokens: 15,
            since_compaction: UsageFigures::new(Format::ClaudeCode, Tally::default()),
            session_cost_usd: Some(4.104),
            today_cost_usd: None,
            block_total_tokens: None,
            block_cost_usd: None,
            block_end: None,
            unpriced_models: Vec::new(),
            timezone: "UTC".to_owned(),
            today_total_tokens: 21,
            today_transcripts: 1,
            transcript_path: PathBuf::from("t.jsonl"),
        };
        assert_eq!(
            line.format("{model} {context_percent}% {session_cost_usd} {today_cost_usd} {nope} {"),
            "Opus 39% 4.10 - {nope} {"
        );
        assert_eq!(
            line.format("{session_total_tokens}/{context_window}"),
            "15/200000"
        );
    }

    #[test]
    fn short_numbers_read_as_people_write_them() {
        assert_eq!(short(950), "950");
        assert_eq!(short(12_345), "12.3k");
        assert_eq!(short(1_250_000), "1.2M");
        assert!((percent(50_000, 200_000) - 25.0).abs() < 1e-12);
    }
}
