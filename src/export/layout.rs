//! Where everything lives in a dataset directory, and how our files are named.
//!
//! ```text
//! OUT/events/source_kind=agent/date=2026-08-06/<host>_<key>_<serial>.parquet
//! OUT/generations/source_kind=agent/date=.../...      OUT/sessions/source_kind=session/date=.../...
//! OUT/_agentlog/<host>/<key>.state   the export state of one source; lock: one export per host
//! ```
//!
//! A part is written as `.<name>.tmp` beside its final name and renamed when committed: engines
//! skip names that start with `.` or `_` (Spark, Trino's Hive connector) and a `*.parquet` glob
//! (DuckDB) does not match `.tmp`, so an uncommitted part is never read. File names carry the
//! host and the source's key, so hosts writing into one dataset never collide.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::ExportError;
use super::source::SourceKind;

/// The partition value of rows without a date (Hive's name for null, which engines read as
/// NULL).
pub const NO_DATE: &str = "__HIVE_DEFAULT_PARTITION__";

/// The directory of export states, at the top of the dataset.
pub const STATE_DIR: &str = "_agentlog";

/// The three tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Table {
    /// One row per event.
    Events,
    /// One row per generation.
    Generations,
    /// One row per session or transcript.
    Sessions,
}

impl Table {
    /// The table's directory name.
    pub fn as_str(self) -> &'static str {
        match self {
            Table::Events => "events",
            Table::Generations => "generations",
            Table::Sessions => "sessions",
        }
    }

    /// Every table.
    pub const ALL: [Table; 3] = [Table::Events, Table::Generations, Table::Sessions];
}

/// The partition directory of `table` for a source kind and a UTC date (`None`: no date).
pub fn partition_dir(out: &Path, table: Table, kind: SourceKind, date: Option<&str>) -> PathBuf {
    out.join(table.as_str())
        .join(format!("source_kind={}", kind.as_str()))
        .join(format!("date={}", date.unwrap_or(NO_DATE)))
}

/// The UTC date (`YYYY-MM-DD`) of a time in microseconds since the epoch.
pub fn utc_date(micros: i64) -> Option<String> {
    let ts = jiff::Timestamp::from_microsecond(micros).ok()?;
    Some(jiff::tz::TimeZone::UTC.to_datetime(ts).date().to_string())
}

/// Whether `date` is a date as [`utc_date`] writes it.
pub fn is_date(date: &str) -> bool {
    date.len() == 10
        && date
            .parse::<jiff::civil::Date>()
            .is_ok_and(|d| d.to_string() == date)
}

/// The final file name of part `serial` of the source `key` on `host`.
pub fn part_name(host: &str, key: &str, serial: u64) -> String {
    format!("{host}_{key}_{serial:010}.parquet")
}

/// The name a part is written under until it is committed.
pub fn temp_name(final_name: &str) -> String {
    format!(".{final_name}.tmp")
}

/// A file of ours found in a partition directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// Its path.
    pub path: PathBuf,
    /// The source key in its name.
    pub key: String,
    /// The serial in its name.
    pub serial: u64,
    /// Whether it still has its temporary name.
    pub temp: bool,
}

/// Parses one of our part names (final or temporary) written for `host`.
pub fn parse_name(name: &str, host: &str) -> Option<(String, u64, bool)> {
    let (name, temp) = match name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) {
        Some(inner) => (inner, true),
        None => (name, false),
    };
    let rest = name.strip_suffix(".parquet")?.strip_prefix(host)?;
    let rest = rest.strip_prefix('_')?;
    let (key, serial) = rest.split_once('_')?;
    let is_key = key.len() == 16 && key.bytes().all(|b| b.is_ascii_hexdigit());
    let serial_ok = serial.len() == 10 && serial.bytes().all(|b| b.is_ascii_digit());
    if !(is_key && serial_ok) {
        return None;
    }
    Some((key.to_owned(), serial.parse().ok()?, temp))
}

/// Every file of ours (`host`'s, final or temporary) in every partition of the dataset.
pub fn list_ours(out: &Path, host: &str) -> Result<Vec<Found>, ExportError> {
    let mut found = Vec::new();
    for table in Table::ALL {
        let table_dir = out.join(table.as_str());
        for kind_dir in subdirs(&table_dir, "source_kind=")? {
            for date_dir in subdirs(&kind_dir, "date=")? {
                let entries = match std::fs::read_dir(&date_dir) {
                    Ok(entries) => entries,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(ExportError::io("list", &date_dir, e)),
                };
                for entry in entries {
                    let entry = entry.map_err(|e| ExportError::io("list", &date_dir, e))?;
                    let name = entry.file_name();
                    let Some(name) = name.to_str() else { continue };
                    if let Some((key, serial, temp)) = parse_name(name, host) {
                        found.push(Found {
                            path: entry.path(),
                            key,
                            serial,
                            temp,
                        });
                    }
                }
            }
        }
    }
    Ok(found)
}

/// Subdirectories of `dir` whose names start with `prefix` (none if `dir` is absent).
fn subdirs(dir: &Path, prefix: &str) -> Result<Vec<PathBuf>, ExportError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ExportError::io("list", dir, e)),
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| ExportError::io("list", dir, e))?;
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir
            && entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(prefix))
        {
            dirs.push(entry.path());
        }
    }
    Ok(dirs)
}

/// Checks a `--host` name: 1 to 63 of `A-Z a-z 0-9 . -`, not starting with `.` or `-` (a
/// leading `.` would hide our files from every engine; `_` separates the parts of a name).
pub fn validate_host(host: &str) -> Result<(), ExportError> {
    let reason = if host.is_empty() || host.len() > 63 {
        Some("it must be 1 to 63 characters")
    } else if !host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
    {
        Some("only letters, digits, '.' and '-' are allowed")
    } else if host.starts_with(['.', '-']) {
        Some("it must not start with '.' or '-'")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(ExportError::InvalidHost {
            host: host.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

/// This machine's host name, made valid for [`validate_host`] (`localhost` if unknown).
pub fn default_host() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    let cleaned: String = raw
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    let cleaned = cleaned.trim_start_matches(['.', '-']);
    if cleaned.is_empty() {
        "localhost".to_owned()
    } else {
        cleaned.to_owned()
    }
}

/// The directory of `host`'s export states.
pub fn state_dir(out: &Path, host: &str) -> PathBuf {
    out.join(STATE_DIR).join(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_foreign_names_are_not_ours() {
        let name = part_name("box-1", "0123456789abcdef", 42);
        assert_eq!(name, "box-1_0123456789abcdef_0000000042.parquet");
        assert_eq!(
            parse_name(&name, "box-1"),
            Some(("0123456789abcdef".to_owned(), 42, false))
        );
        let temp = temp_name(&name);
        assert!(temp.starts_with('.') && !temp.ends_with(".parquet"));
        assert_eq!(
            parse_name(&temp, "box-1"),
            Some(("0123456789abcdef".to_owned(), 42, true))
        );
        assert_eq!(parse_name(&name, "box"), None);
        assert_eq!(parse_name("box-1_0123_0000000042.parquet", "box-1"), None);
        assert_eq!(parse_name("part-0.parquet", "box-1"), None);
    }

    #[test]
    fn hosts_are_checked_and_dates_are_utc() {
        assert!(validate_host("ci-runner.7").is_ok());
        for bad in ["", ".hidden", "-x", "a_b", "a/b", &"x".repeat(64)] {
            assert!(validate_host(bad).is_err(), "{bad}");
        }
        assert!(validate_host(&default_host()).is_ok());
        assert_eq!(utc_date(0).as_deref(), Some("1970-01-01"));
        assert_eq!(utc_date(-1).as_deref(), Some("1969-12-31"));
        assert!(is_date("2026-08-06") && !is_date("2026-8-6") && !is_date("2026-02-30"));
    }
}
