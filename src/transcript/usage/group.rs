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
        }
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
        let day = day_in(quarter, &options.timezone);
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
        let unknown = || "unknown".to_owned();
        let (key, project) = match options.by {
            GroupBy::Day => (day.map_or_else(unknown, |d| d.to_string()), None),
            GroupBy::Week => (day.map_or_else(unknown, |d| monday_of(d).to_string()), None),
            GroupBy::Month => (
                day.map_or_else(unknown, |d| format!("{:04}-{:02}", d.year(), d.month())),
                None,
            ),
            GroupBy::Session => (session.to_owned(), Some(project.to_owned())),
            GroupBy::Project => (project.to_owned(), None),
            GroupBy::Model => (model.to_owned(), None),
            GroupBy::Agent => (format.name().to_owned(), None),
            GroupBy::Block if quarter != UNKNOWN_QUARTER => {
                let slot = self.quarters.entry(quarter).or_default();
                insert_agent(&mut slot.agents, format);
                slot.tally.add(tally);
                slot.cost.add(model, cost);
                return;
            }
            GroupBy::Block => (unknown(), None),
        };
        let end = (quarter != UNKNOWN_QUARTER)
            .then(|| quarter.saturating_add(1).saturating_mul(QUARTER_SECONDS))
            .and_then(|end| jiff::Timestamp::from_second(end).ok());
        if options.split_by_model && !matches!(options.by, GroupBy::Session | GroupBy::Block) {
            let part = self
                .by_model
                .entry(key.clone())
                .or_default()
                .entry(model.to_owned())
                .or_insert_with(|| empty_row(GroupBy::Model, model.to_owned(), None));
            add_to(part, format, (model, cost), tally, end);
        }
        let group_key = match &project {
            Some(p) => format!("{p}\u{0}{key}"),
            None => key.clone(),
        };
        let row = self
            .groups
            .entry(group_key)
            .or_insert_with(|| empty_row(options.by, key, project));
        add_to(row, format, (model, cost), tally, end);
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
}
