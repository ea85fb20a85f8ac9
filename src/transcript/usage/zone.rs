//! Time zones read straight from their `TZif` file. jiff's zone database lists the whole
//! zoneinfo directory (about 600 files in 60 directories) the first time it is used, which
//! costs a short-lived process such as a status line a fifth of a millisecond or more; a zone
//! named plainly (`TZ=Europe/Paris`, `/etc/localtime` linked into the zoneinfo directory,
//! `--timezone Europe/Paris`) needs only its own file. Anything else (a POSIX rule, a path, a
//! name in another case, an alias the file system lacks) is jiff's to read, as before.

use jiff::tz::TimeZone;

/// The zoneinfo directory jiff reads first (`TZDIR` overrides it, for jiff too).
const ZONEINFO: &str = "/usr/share/zoneinfo";

/// The system's zone as [`TimeZone::system`] finds it: `TZ` (empty: UTC), else the zone
/// `/etc/localtime` links to.
#[must_use]
pub fn system_zone() -> TimeZone {
    plain_system_zone().unwrap_or_else(TimeZone::system)
}

/// The zone `name` names, as [`TimeZone::get`] finds it.
///
/// # Errors
/// jiff's, when its database has no zone of that name either.
pub fn zone_named(name: &str) -> Result<TimeZone, jiff::Error> {
    plain_zone(name).map_or_else(|| TimeZone::get(name), Ok)
}

/// `TZ` when it is empty or a plain name, else `/etc/localtime`'s link when `TZ` is unset.
fn plain_system_zone() -> Option<TimeZone> {
    match std::env::var_os("TZ") {
        Some(tz) if tz.is_empty() => Some(TimeZone::UTC),
        // A POSIX rule such as `EST5EDT` is read as a rule by jiff, even where a file of
        // that name exists.
        Some(tz) => tz
            .to_str()
            .filter(|tz| TimeZone::posix(tz).is_err())
            .and_then(plain_zone),
        None => {
            const NEEDLE: &str = "zoneinfo/";
            let target = std::fs::read_link("/etc/localtime").ok()?;
            let target = target.to_str()?;
            let at = target.rfind(NEEDLE)? + NEEDLE.len();
            plain_zone(target.get(at..)?)
        }
    }
}

/// The zone of the `TZif` file `name` names in the zoneinfo directory, if `name` is a plain
/// relative name (letters, digits, `_+-`, `/` between parts) and the file is there.
fn plain_zone(name: &str) -> Option<TimeZone> {
    if name.eq_ignore_ascii_case("utc") {
        return Some(TimeZone::UTC);
    }
    let plain = !name.is_empty()
        && name.split('/').all(|part| {
            !part.is_empty()
                && part != "."
                && part != ".."
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_+-.".contains(&b))
        });
    if !plain {
        return None;
    }
    let dir = std::env::var_os("TZDIR").unwrap_or_else(|| ZONEINFO.into());
    let bytes = std::fs::read(std::path::Path::new(&dir).join(name)).ok()?;
    TimeZone::tzif(name, &bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::Timestamp;

    #[test]
    fn a_named_zone_is_the_one_jiff_finds() {
        for name in [
            "Europe/Paris",
            "America/New_York",
            "Australia/Lord_Howe",
            "Etc/GMT+5",
        ] {
            let (ours, theirs) = (zone_named(name).unwrap(), TimeZone::get(name).unwrap());
            assert_eq!(ours.iana_name(), theirs.iana_name(), "{name}");
            for second in [
                0,
                1_700_000_000,
                1_711_846_800,
                1_729_990_800,
                2_000_000_000,
            ] {
                let t = Timestamp::from_second(second).unwrap();
                assert_eq!(ours.to_offset(t), theirs.to_offset(t), "{name} at {t}");
            }
        }
    }

    #[test]
    fn anything_but_a_plain_name_goes_to_jiff() {
        assert_eq!(zone_named("UTC").unwrap(), TimeZone::UTC);
        assert_eq!(zone_named("utc").unwrap(), TimeZone::UTC);
        for name in [
            "../etc/passwd",
            "/etc/localtime",
            "Europe//Paris",
            "",
            "Europe/Paris/",
        ] {
            assert!(plain_zone(name).is_none(), "{name}");
        }
        // Another case: jiff's database matches it (the file system does not).
        assert_eq!(
            zone_named("europe/paris").unwrap().iana_name(),
            TimeZone::get("europe/paris").unwrap().iana_name()
        );
        assert!(zone_named("Not/A_Zone").is_err());
    }
}
