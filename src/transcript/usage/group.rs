//! Adding tallies up into a report's rows: by UTC day, session, project or model, within the
//! report's day range.

use std::collections::BTreeMap;

use jiff::civil::Date;

use super::{GroupBy, UsageOptions, UsageReport, UsageRow};
use crate::transcript::fold::UNKNOWN_QUARTER;
use crate::transcript::tally::Tally;

/// The UTC day of a quarter-hour (`None` for [`UNKNOWN_QUARTER`]).
pub fn day_of(quarter: i64) -> Option<Date> {
    if quarter == UNKNOWN_QUARTER {
        return None;
    }
    let ts = jiff::Timestamp::from_second(quarter.checked_mul(900)?).ok()?;
    Some(jiff::tz::Offset::UTC.to_datetime(ts).date())
}

/// Adds tallies up into a report's rows, by the report's grouping and day range.
pub(crate) struct Grouper<'a> {
    options: &'a UsageOptions,
    groups: BTreeMap<String, UsageRow>,
    totals: Tally,
}

impl<'a> Grouper<'a> {
    pub(crate) fn new(options: &'a UsageOptions) -> Grouper<'a> {
        Grouper {
            options,
            groups: BTreeMap::new(),
            totals: Tally::default(),
        }
    }

    /// Adds a bucket's tally of a file of `session` in `project` (an empty tally adds no
    /// row); `quarter` is any quarter-hour of the bucket's day.
    pub(crate) fn add(
        &mut self,
        (session, project): (&str, &str),
        quarter: i64,
        model_name: impl FnOnce() -> String,
        tally: &Tally,
    ) {
        let options = self.options;
        if tally.is_empty() {
            return;
        }
        let day = day_of(quarter);
        let outside = match day {
            Some(d) => options.since.is_some_and(|s| d < s) || options.until.is_some_and(|u| d > u),
            None => options.since.is_some() || options.until.is_some(),
        };
        if outside {
            return;
        }
        let (key, project) = match options.by {
            GroupBy::Day => (
                day.map_or_else(|| "unknown".to_owned(), |d| d.to_string()),
                None,
            ),
            GroupBy::Session => (session.to_owned(), Some(project.to_owned())),
            GroupBy::Project => (project.to_owned(), None),
            GroupBy::Model => (model_name(), None),
        };
        let group_key = match &project {
            Some(p) => format!("{p}\u{0}{key}"),
            None => key.clone(),
        };
        self.groups
            .entry(group_key)
            .or_insert_with(|| UsageRow {
                by: options.by,
                key,
                project,
                tally: Tally::default(),
            })
            .tally
            .add(tally);
        self.totals.add(tally);
    }

    /// Puts the rows and totals in `report`.
    pub(crate) fn finish(self, report: &mut UsageReport) {
        report.rows = self.groups.into_values().collect();
        report.totals = self.totals;
    }
}
