//! A usage report's arguments spelled as text (a day, a time zone, a cost mode, a grouping, an
//! agent),
//! parsed once here for every front end: the CLI, the MCP server and the Python package.

use jiff::civil::Date;
use jiff::tz::TimeZone;

use super::zone::{system_zone, zone_named};
use super::{GroupBy, UnknownGroupBy};
use crate::transcript::format::{Format, UnknownFormat};
use crate::transcript::price::CostMode;

/// An argument of a usage report that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsageArgError {
    /// A day that is neither `YYYY-MM-DD` nor `YYYYMMDD`, or no such day.
    #[error("{text:?} is not a day (YYYY-MM-DD or YYYYMMDD): {reason}")]
    Day {
        /// What was given.
        text: String,
        /// Why it is not a day.
        reason: String,
    },
    /// A time zone name the system's zone database does not hold.
    #[error("{name:?} is not a time zone (an IANA name such as Europe/Paris): {reason}")]
    Timezone {
        /// What was given.
        name: String,
        /// Why it is not a zone.
        reason: String,
    },
    /// A cost mode other than `auto`, `calculate` or `recorded`.
    #[error("unknown cost mode {0:?} (expected one of: auto, calculate, recorded)")]
    CostMode(String),
    /// A grouping other than [`GroupBy::ALL`].
    #[error(transparent)]
    GroupBy(#[from] UnknownGroupBy),
    /// An agent name other than [`Format::ALL`]'s.
    #[error(transparent)]
    Agent(#[from] UnknownFormat),
}

/// A day: `YYYY-MM-DD` or `YYYYMMDD`.
///
/// # Errors
/// [`UsageArgError::Day`] when `text` is neither, or names no day.
pub fn parse_day(text: &str) -> Result<Date, UsageArgError> {
    let bad = |reason: String| UsageArgError::Day {
        text: text.to_owned(),
        reason,
    };
    let spelled = match (text.get(0..4), text.get(4..6), text.get(6..8)) {
        (Some(y), Some(m), Some(d))
            if text.len() == 8 && text.bytes().all(|b| b.is_ascii_digit()) =>
        {
            format!("{y}-{m}-{d}")
        }
        _ => text.to_owned(),
    };
    spelled.parse::<Date>().map_err(|e| bad(e.to_string()))
}

/// The zone `name` names (IANA), or the system's (`TZ`, else `/etc/localtime`) when `None`.
///
/// # Errors
/// [`UsageArgError::Timezone`] when the zone database has no such zone.
pub fn parse_timezone(name: Option<&str>) -> Result<TimeZone, UsageArgError> {
    match name {
        None => Ok(system_zone()),
        Some(name) => zone_named(name).map_err(|e| UsageArgError::Timezone {
            name: name.to_owned(),
            reason: e.to_string(),
        }),
    }
}

/// A cost mode by its name (`auto`, `calculate`, `recorded`).
///
/// # Errors
/// [`UsageArgError::CostMode`] for any other name.
pub fn parse_cost_mode(name: &str) -> Result<CostMode, UsageArgError> {
    [CostMode::Auto, CostMode::Calculate, CostMode::Recorded]
        .into_iter()
        .find(|m| m.name() == name)
        .ok_or_else(|| UsageArgError::CostMode(name.to_owned()))
}

/// A grouping by its name ([`GroupBy::name`]).
///
/// # Errors
/// [`UsageArgError::GroupBy`] for any other name.
pub fn parse_group_by(name: &str) -> Result<GroupBy, UsageArgError> {
    Ok(name.parse::<GroupBy>()?)
}

/// An agent by its name ([`Format::name`]), as `--agent` takes it.
///
/// # Errors
/// [`UsageArgError::Agent`] for any other name.
pub fn parse_agent(name: &str) -> Result<Format, UsageArgError> {
    Ok(name.parse::<Format>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_in_both_spellings_and_bad_ones_refused() {
        let d = Date::new(2026, 2, 23).unwrap();
        assert_eq!(parse_day("2026-02-23").unwrap(), d);
        assert_eq!(parse_day("20260223").unwrap(), d);
        for bad in [
            "2026-02-30",
            "20260230",
            "2026223",
            "yesterday",
            "",
            "２０２６0223",
        ] {
            assert!(
                matches!(parse_day(bad), Err(UsageArgError::Day { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn zones_modes_and_groupings_by_name() {
        assert_eq!(
            parse_timezone(Some("Europe/Paris")).unwrap().iana_name(),
            Some("Europe/Paris")
        );
        assert!(matches!(
            parse_timezone(Some("Mars/Olympus")),
            Err(UsageArgError::Timezone { .. })
        ));
        for m in [CostMode::Auto, CostMode::Calculate, CostMode::Recorded] {
            assert_eq!(parse_cost_mode(m.name()).unwrap(), m);
        }
        assert_eq!(
            parse_cost_mode("free"),
            Err(UsageArgError::CostMode("free".into()))
        );
        for g in GroupBy::ALL {
            assert_eq!(parse_group_by(g.name()).unwrap(), g);
        }
        assert!(matches!(
            parse_group_by("year"),
            Err(UsageArgError::GroupBy(_))
        ));
    }
}
