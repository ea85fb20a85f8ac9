//! Adding tallies up into a report's rows: by day, ISO week or month in the report's time
//! zone, by session, project, model, or 5-hour billing block ([`super::blocks`]), within the
//! report's day range; each bucket priced as it is added.

use std::collections::{BTreeMap, HashMap};

use jiff::civil::Date;
use jiff::tz::TimeZone;

use super::blocks::{Slot, blocks};
use super::{GroupBy, UsageOptions, UsageReport, UsageRow, insert_agent};
use crate::transcript::fold::{QUARTER_SECONDS, Span, UNKNOWN_QUARTER, widen_span};
use crate::transcript::format::Format;
use crate::transcript::price::{Pricer, RowCost};
use crate::transcript::tally::{Money, Tally};

/// The UTC day of a quarter-hour (`None` for [`UNKNOWN_QUARTER`]).
pub fn day_of(quarter: i64) -> Option<Date> {
    day_in(quarter, &TimeZone::UTC)
}

/// The day of a quarter-hour in `zone` (`None` for [`UNKNOWN_QUARTER`]). Every zone's offset
/// in use is a whole number of quarter-hours, so a quarter-hour lies in one day.
pub fn day_in(quarter: i64, zone: &TimeZone) -> Option<Date> {
    if quarter == UNKNOWN_QUARTER {
        return None;
    }
    let ts = jiff::Timestamp::from_second(quarter.checked_mul(QUARTER_SECONDS)?).ok()?;
    Some(zone.to_datetime(ts).date())
}

/// The Monday that starts `day`'s ISO week.
fn monday_of(day: Date) -> Date {
    let back = i64::from(day.weekday().to_monday_zero_offset());
    day.checked_sub(jiff::Span::new().days(back)).unwrap_or(day)
}

/// The quarter-hours `from..to` lie in `day`, whose row key (by day, week or month) is `key`.
struct DaySpan {
    from: i64,
    to: i64,
    day: Date,
    key: String,
}

/// The quarter-hours of `day` in `zone` (`None` where a midnight is missing or off the
/// quarter-hours, as in some zones' old local mean times).
fn quarters_of(day: Date, zone: &TimeZone) -> Option<(i64, i64)> {
    let start = |d: Date| -> Option<i64> {
        let ts = zone
            .to_timestamp(d.to_datetime(jiff::civil::Time::midnight()))
            .ok()?;
        let second = ts.as_second();
        (second.rem_euclid(QUARTER_SECONDS) == 0).then(|| second.div_euclid(QUARTER_SECONDS))
    };
    Some((start(day)?, start(day.tomorrow().ok()?)?))
}

/// Adds tallies up into a report's rows, by the report's grouping and day range.
pub(crate) struct Grouper<'a> {
    options: &'a UsageOptions,
    pricer: Pricer,
    groups: BTreeMap<String, UsageRow>,
    /// With `split_by_model`: row key -> model -> that model's part of the row.
    by_model: BTreeMap<String, BTreeMap<String, UsageRow>>,
    /// By quarter-hour, for blocks.
    quarters: BTreeMap<i64, Slot>,
    /// The span of each quarter-hour's message times, for blocks.
    spans: HashMap<i64, Span>,
    totals: Tally,
    cost: RowCost,
    /// The day of the last quarter-hour added: buckets come in time order, file by file, so
    /// most fall in the day before them.
    last_day: Option<DaySpan>,
}

impl<'a> Grouper<'a> {
    pub(crate) fn new(options: &'a UsageOptions) -> Grouper<'a> {
        Grouper {
            options,
            pricer: Pricer::new(options.prices.clone(), options.cost),
            groups: BTreeMap::new(),
            by_model: BTreeMap::new(),
            quarters: BTreeMap::new(),
            spans: HashMap::new(),
            totals: Tally::default(),
            cost: RowCost::default(),
            last_day: None,
        }
    }

    /// The day of `quarter` in the report's zone (`None` for [`UNKNOWN_QUARTER`]), kept in
    /// `last_day` with its row key (by day, week or month).
    fn cached_day(&mut self, quarter: i64) -> Option<Date> {
        let fresh = !self
            .last_day
            .as_ref()
            .is_some_and(|d| (d.from..d.to).contains(&quarter));
        if fresh {
            let zone = &self.options.timezone;
            let day = day_in(quarter, zone)?;
            // A day whose midnights are off the quarter-hours is kept for this one alone.
            let (from, to) = quarters_of(day, zone).unwrap_or((quarter, quarter.saturating_add(1)));
            let key = match self.options.by {
                GroupBy::Week => monday_of(day).to_string(),
                GroupBy::Month => format!("{:04}-{:02}", day.year(), day.month()),
                _ => day.to_string(),
            };
            self.last_day = Some(DaySpan { from, to, day, key });
        }
        self.last_day.as_ref().map(|d| d.day)
    }

    /// Adds a bucket's tally (of `model`, in a file of `format` of `session` in `project`;
    /// an empty tally adds no row).
    pub(crate) fn add(
        &mut self,
        (session, project): (&str, &str),
        format: Format,
        (quarter, model): (i64, &str),
        tally: &Tally,
    ) {
        let options = self.options;
        if tally.is_empty() || !(options.agents.is_empty() || options.agents.contains(&format)) {
            return;
        }
        let day = self.cached_day(quarter);
        let outside = match day {
            Some(d) => options.since.is_some_and(|s| d < s) || options.until.is_some_and(|u| d > u),
            None => options.since.is_some() || options.until.is_some(),
        };
        if outside {
            return;
        }
        let cost = self.pricer.cost(format, model, tally);
        self.totals.add(tally);
        self.cost.add(model, cost);
        // The day's key is borrowed from the cache: most buckets add to a row that exists,
        // and allocate nothing.
        let day_key = self.last_day.as_ref().filter(|_| day.is_some());
        let (key, project): (&str, Option<&str>) = match options.by {
            GroupBy::Day | GroupBy::Week | GroupBy::Month => {
                (day_key.map_or("unknown", |d| d.key.as_str()), None)
            }
            GroupBy::Session => (session, Some(project)),
            GroupBy::Project => (project, None),
            GroupBy::Model => (model, None),
            GroupBy::Agent => (format.name(), None),
            GroupBy::Block if quarter != UNKNOWN_QUARTER => {
                let slot = self.quarters.entry(quarter).or_default();
                insert_agent(&mut slot.agents, format);
                slot.tally.add(tally);
                slot.cost.add(model, cost);
                return;
            }
            GroupBy::Block => ("unknown", None),
        };
        let end = (quarter != UNKNOWN_QUARTER)
            .then(|| quarter.saturating_add(1).saturating_mul(QUARTER_SECONDS))
            .and_then(|end| jiff::Timestamp::from_second(end).ok());
        if options.split_by_model && !matches!(options.by, GroupBy::Session | GroupBy::Block) {
            let part = self
                .by_model
                .entry(key.to_owned())
                .or_default()
                .entry(model.to_owned())
                .or_insert_with(|| empty_row(GroupBy::Model, model.to_owned(), None));
            add_to(part, format, (model, cost), tally, end);
        }
        let group_key = match project {
            Some(p) => std::borrow::Cow::Owned(format!("{p}\u{0}{key}")),
            None => std::borrow::Cow::Borrowed(key),
        };
        if !self.groups.contains_key(group_key.as_ref()) {
            let row = empty_row(options.by, key.to_owned(), project.map(str::to_owned));
            self.groups.insert(group_key.clone().into_owned(), row);
        }
        if let Some(row) = self.groups.get_mut(group_key.as_ref()) {
            add_to(row, format, (model, cost), tally, end);
        }
    }

    /// Adds the span of a quarter-hour's message times in a file of `format` (for blocks; the
    /// agents filtered out are left out).
    pub(crate) fn add_spans<'s>(
        &mut self,
        format: Format,
        spans: impl IntoIterator<Item = (&'s i64, &'s Span)>,
    ) {
        let options = self.options;
        if options.by != GroupBy::Block
            || !(options.agents.is_empty() || options.agents.contains(&format))
        {
            return;
        }
        for (&quarter, &span) in spans {
            widen_span(&mut self.spans, quarter, span);
        }
    }

    /// Adds the usage read beside the line transcripts: each bucket of each session.
    pub(crate) fn add_extra(&mut self, extra: super::Extra<'_>) {
        for s in extra {
            for ((quarter, model, _), tally) in &s.buckets {
                let at = (*quarter, model.as_str());
                self.add((&s.session, &s.project), Format::OpenCode, at, tally);
            }
        }
    }

    /// Puts the rows and totals in `report`.
    pub(crate) fn finish(mut self, report: &mut UsageReport) {
        for (quarter, slot) in &mut self.quarters {
            slot.span = self.spans.get(quarter).copied();
        }
        let now = self.options.now.unwrap_or_else(jiff::Timestamp::now);
        let mut rows = blocks(&self.quarters, now);
        rows.extend(self.groups.into_values());
        report.rows = rows;
        report.by_model = self
            .by_model
            .into_iter()
            .map(|(key, models)| (key, models.into_values().collect()))
            .collect();
        report.totals = self.totals;
        report.cost = self.cost;
    }
}

/// A row of `key` with nothing added yet.
fn empty_row(by: GroupBy, key: String, project: Option<String>) -> UsageRow {
    UsageRow {
        by,
        key,
        project,
        agents: Vec::new(),
        tally: Tally::default(),
        cost: RowCost::default(),
        block: None,
        last_activity: None,
    }
}

/// Adds a bucket (of `model`, costing `cost`, in a file of `format`, its quarter-hour ending
/// at `end`) to `row`.
fn add_to(
    row: &mut UsageRow,
    format: Format,
    (model, cost): (&str, Option<Money>),
    tally: &Tally,
    end: Option<jiff::Timestamp>,
) {
    insert_agent(&mut row.agents, format);
    row.tally.add(tally);
    row.cost.add(model, cost);
    row.last_activity = row.last_activity.max(end);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_cut_in_the_zone_across_a_dst_change() {
        let ny = TimeZone::get("America/New_York").unwrap();
        let quarter = |s: &str| s.parse::<jiff::Timestamp>().unwrap().as_second() / 900;
        // 2026-03-08: clocks go from 02:00 EST to 03:00 EDT.
        for (utc, day) in [
            ("2026-03-08T04:45:00Z", "2026-03-07"), // 23:45 EST
            ("2026-03-08T05:00:00Z", "2026-03-08"), // 00:00 EST
            ("2026-03-09T03:45:00Z", "2026-03-08"), // 23:45 EDT
            ("2026-03-09T04:00:00Z", "2026-03-09"), // 00:00 EDT
        ] {
            assert_eq!(day_in(quarter(utc), &ny).unwrap().to_string(), day, "{utc}");
        }
        assert_eq!(day_in(UNKNOWN_QUARTER, &ny), None);
        let d: Date = "2026-03-08".parse().unwrap(); // a Sunday
        assert_eq!(monday_of(d).to_string(), "2026-03-02");
        assert_eq!(monday_of(monday_of(d)), monday_of(d));
    }

    #[test]
    fn the_day_cache_gives_every_quarter_hour_its_own_day() {
        for zone in [
            "America/New_York",
            "Australia/Lord_Howe",
            "Asia/Kathmandu",
            "UTC",
        ] {
            let options = UsageOptions {
                timezone: TimeZone::get(zone).unwrap(),
                ..UsageOptions::default()
            };
            let mut grouper = Grouper::new(&options);
            // Around both DST changes of 2026, and a stretch of 1890 (local mean times).
            let quarter = |s: &str| s.parse::<jiff::Timestamp>().unwrap().as_second() / 900;
            let mut quarters: Vec<i64> = Vec::new();
            for from in [
                "2026-03-06T00:00:00Z",
                "2026-10-02T00:00:00Z",
                "1890-01-01T00:00:00Z",
            ] {
                quarters.extend(quarter(from)..quarter(from) + 4 * 24 * 8);
            }
            // In order, and jumping back and forth.
            let jumps: Vec<i64> = quarters.iter().rev().step_by(7).copied().collect();
            for q in quarters.into_iter().chain(jumps) {
                let want = day_in(q, &options.timezone);
                assert_eq!(grouper.cached_day(q), want, "{zone} {q}");
                let key = grouper.last_day.as_ref().map(|d| d.key.clone());
                assert_eq!(key, want.map(|d| d.to_string()), "{zone} {q}");
            }
            assert_eq!(grouper.cached_day(UNKNOWN_QUARTER), None);
        }
    }
}
