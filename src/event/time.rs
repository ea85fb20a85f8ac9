//! Event timestamps: `ts` as epoch seconds (number or numeric string) or an ISO-8601 string, or
//! `time` as epoch milliseconds.
//!
//! Timestamps are informational: "latest" and "since" are decided by file order, never by time,
//! so a clock that goes backwards cannot change an answer. A timestamp we cannot read is reported
//! as a diagnostic and stored as absent.

use serde::{Deserialize, Serialize};

/// A point in time, in whole microseconds since the Unix epoch (UTC).
///
/// Only years 0001 to 9999 are representable; anything outside counts as an unreadable timestamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Timestamp(i64);

/// 0001-01-01T00:00:00Z in seconds since the epoch.
const MIN_SECONDS: f64 = -62_135_596_800.0;
/// 9999-12-31T23:59:59Z in seconds since the epoch.
const MAX_SECONDS: f64 = 253_402_300_799.0;

impl Timestamp {
    /// Builds a timestamp from whole microseconds since the epoch, if in range.
    #[expect(
        clippy::cast_precision_loss,
        reason = "whole seconds of an i64 of microseconds are below 2^53, exact in an f64"
    )]
    pub fn from_micros(micros: i64) -> Option<Timestamp> {
        let seconds = micros.div_euclid(1_000_000) as f64;
        (MIN_SECONDS..=MAX_SECONDS)
            .contains(&seconds)
            .then_some(Timestamp(micros))
    }

    /// Whole microseconds since the epoch.
    pub fn micros(self) -> i64 {
        self.0
    }

    /// Builds a timestamp from (fractional) epoch seconds; `None` for NaN, infinities and
    /// out-of-range values.
    pub fn from_seconds(seconds: f64) -> Option<Timestamp> {
        if !seconds.is_finite() || !(MIN_SECONDS..=MAX_SECONDS).contains(&seconds) {
            return None;
        }
        // In range, so the product fits an i64 comfortably (|x| < 2.6e17).
        #[expect(clippy::cast_possible_truncation, reason = "in range: see above")]
        Some(Timestamp((seconds * 1_000_000.0).round() as i64))
    }

    /// Builds a timestamp from (fractional) epoch milliseconds.
    pub fn from_millis(millis: f64) -> Option<Timestamp> {
        Timestamp::from_seconds(millis / 1000.0)
    }

    /// Parses an ISO-8601 / RFC 3339 date-time (`2026-08-08T09:00:00Z`, with an optional
    /// fraction and offset), or a plain decimal number of epoch seconds. A date-time without an
    /// offset is taken as UTC, as the lingtai sidecar does.
    pub fn parse(text: &str) -> Option<Timestamp> {
        if let Ok(seconds) = text.parse::<f64>() {
            // `f64::from_str` also accepts "inf" and "NaN"; `from_seconds` rejects those.
            return Timestamp::from_seconds(seconds);
        }
        if let Ok(ts) = text.parse::<jiff::Timestamp>() {
            return Timestamp::from_micros(ts.as_microsecond());
        }
        let civil = text.parse::<jiff::civil::DateTime>().ok()?;
        let ts = jiff::tz::TimeZone::UTC.to_timestamp(civil).ok()?;
        Timestamp::from_micros(ts.as_microsecond())
    }

    /// Whole microseconds since the epoch.
    pub fn as_micros(self) -> i64 {
        self.0
    }

    /// Fractional seconds since the epoch (the form lingtai writes in `ts`).
    #[expect(
        clippy::cast_precision_loss,
        reason = "an f64 of seconds is the form wanted; it holds every microsecond until 2255"
    )]
    pub fn as_seconds(self) -> f64 {
        self.0 as f64 / 1_000_000.0
    }

    /// The RFC 3339 form in UTC, e.g. `2026-08-06T07:08:40.5Z`.
    pub fn to_rfc3339(self) -> String {
        match jiff::Timestamp::from_microsecond(self.0) {
            Ok(ts) => ts.to_string(),
            // Unreachable for values built by the constructors above; keep a readable fallback.
            Err(_) => format!("{}us", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_seconds_keep_microseconds() {
        let ts = Timestamp::from_seconds(1_786_000_004.512).unwrap();
        assert_eq!(ts.as_micros(), 1_786_000_004_512_000);
    }

    #[test]
    fn iso_with_zulu_and_naive_iso_are_utc() {
        let zulu = Timestamp::parse("2026-08-08T09:00:00Z").unwrap();
        let naive = Timestamp::parse("2026-08-08T09:00:00").unwrap();
        assert_eq!(zulu, naive);
        assert_eq!(zulu.as_micros(), 1_786_179_600_000_000);
        let offset = Timestamp::parse("2026-08-08T11:00:00+02:00").unwrap();
        assert_eq!(offset, zulu);
    }

    #[test]
    fn iso_fraction_is_kept() {
        let ts = Timestamp::parse("2026-08-06T07:08:40.500000Z").unwrap();
        assert_eq!(ts.as_micros() % 1_000_000, 500_000);
        assert_eq!(ts.to_rfc3339(), "2026-08-06T07:08:40.5Z");
    }

    #[test]
    fn numeric_strings_are_epoch_seconds() {
        assert_eq!(
            Timestamp::parse("1786000120.5"),
            Timestamp::from_seconds(1_786_000_120.5)
        );
    }

    #[test]
    fn nan_infinity_garbage_and_out_of_range_are_rejected() {
        for text in [
            "NaN",
            "inf",
            "-inf",
            "yesterday",
            "",
            "2026-13-01T00:00:00Z",
            "1e300",
        ] {
            assert_eq!(Timestamp::parse(text), None, "{text}");
        }
        assert_eq!(Timestamp::from_seconds(f64::NAN), None);
        assert_eq!(Timestamp::from_seconds(f64::INFINITY), None);
        assert_eq!(Timestamp::from_millis(1e20), None);
        assert_eq!(Timestamp::from_micros(i64::MAX), None);
        assert_eq!(Timestamp::from_micros(i64::MIN), None);
    }
}
