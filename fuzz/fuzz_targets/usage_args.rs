//! Arbitrary text as a usage report's arguments (`--since`/`--until`, `--timezone`, `--cost`,
//! `--by`, and the same from MCP and Python): parsing must never panic; an accepted day prints
//! as a day that parses back to itself, and an accepted cost mode or grouping is named by the
//! text itself.
#![no_main]

use agentlog::transcript::{parse_cost_mode, parse_day, parse_group_by, parse_timezone};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(day) = parse_day(text) {
        // What is printed (in a report's `since`) parses back to the same day.
        assert_eq!(parse_day(&day.to_string()).ok(), Some(day), "{text:?}");
    }
    // Zone names come from the system's database; a name is looked up, never a path opened
    // outside it, and a refusal is an error value.
    let _ = parse_timezone(Some(text));
    if let Ok(mode) = parse_cost_mode(text) {
        assert_eq!(mode.name(), text);
    }
    if let Ok(by) = parse_group_by(text) {
        assert_eq!(by.name(), text);
    }
});
