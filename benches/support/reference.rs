//! The reference's plain scans (its reverse and full scan tiers), written as
//! plainly as the Python does them, but in Rust: a full `serde_json::Value` per line, the
//! 8 MiB tail read in one `read()`, lossy decoding and `splitlines()`. Compiled Rust, so these
//! are a lower bound on what the Python kernel pays.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

/// `DEFAULT_MAX_SCAN_BYTES`.
pub const MAX_SCAN_BYTES: u64 = 8 * 1024 * 1024;

/// What a reference tier returns (the `CurrentGeneration` fields that matter here).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RefGeneration {
    pub api_calls: u64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cached_tokens: i64,
    pub thinking_tokens: i64,
    pub found_boundary: bool,
    pub scanned: u64,
}

/// `_int(value)`: `None` → 0, else `int(value)`, `TypeError`/`ValueError` → 0.
fn py_int(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::Bool(b)) => i64::from(*b),
        // Python's `int()` of a float; `as` saturates where Python would grow (not seen in logs).
        #[allow(clippy::cast_possible_truncation)]
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f.trunc() as i64))
            .unwrap_or(0),
        Some(Value::String(s)) => s.trim().parse::<i64>().unwrap_or(0),
        None | Some(_) => 0,
    }
}

/// `ev.get("type") or ev.get("event")` (Python truthiness).
fn event_type(ev: &serde_json::Map<String, Value>) -> Option<&str> {
    fn truthy(v: Option<&Value>) -> Option<&str> {
        match v {
            None | Some(Value::Null | Value::Bool(false)) => None,
            Some(Value::String(s)) if s.is_empty() => None,
            Some(v) => Some(v.as_str().unwrap_or("")),
        }
    }
    truthy(ev.get("type")).or_else(|| truthy(ev.get("event")))
}

fn accumulate(s: &mut RefGeneration, ev: &serde_json::Map<String, Value>) {
    s.api_calls += 1;
    s.input_tokens += py_int(ev.get("input_tokens"));
    s.output_tokens += py_int(ev.get("output_tokens"));
    s.cached_tokens += py_int(ev.get("cached_tokens"));
    s.thinking_tokens += py_int(ev.get("thinking_tokens"));
}

/// `_rebuild_via_reverse_scan` + `_read_tail_lines`: `None` defers to the full scan.
pub fn reverse_scan(path: &Path, max_bytes: u64) -> Option<RefGeneration> {
    let mut f = File::open(path).ok()?;
    let size = f.seek(SeekFrom::End(0)).ok()?;
    let start = size.saturating_sub(max_bytes);
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut data = Vec::new();
    f.read_to_end(&mut data).ok()?;
    let hit_start = start == 0;
    let text = String::from_utf8_lossy(&data);
    let mut lines: Vec<&str> = text.lines().collect();
    if !hit_start && !lines.is_empty() {
        lines.remove(0);
    }
    let mut s = RefGeneration::default();
    for line in lines.iter().rev() {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(Value::Object(ev)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        s.scanned += 1;
        match event_type(&ev) {
            Some("psyche_molt") => {
                s.found_boundary = true;
                break;
            }
            Some("llm_response") => accumulate(&mut s, &ev),
            _ => {}
        }
    }
    if !s.found_boundary && !hit_start {
        return None;
    }
    Some(s)
}

/// `_rebuild_via_full_scan`: forward, line by line, resetting at each boundary.
pub fn full_scan(path: &Path) -> RefGeneration {
    let mut s = RefGeneration::default();
    let Ok(f) = File::open(path) else { return s };
    for line in BufReader::new(f).lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let Ok(Value::Object(ev)) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        s.scanned += 1;
        match event_type(&ev) {
            Some("psyche_molt") => {
                let scanned = s.scanned;
                s = RefGeneration {
                    found_boundary: true,
                    scanned,
                    ..RefGeneration::default()
                };
            }
            Some("llm_response") => accumulate(&mut s, &ev),
            _ => {}
        }
    }
    s
}

/// What Tier 1's two statements mean, computed by a plain pass instead of SQL: the
/// `psyche_molt` with the greatest `ts` is the boundary, and every `llm_response` with
/// `ts >= boundary_ts` counts, wherever it is in the file. This is the sidecar's oracle; it
/// differs from the truth (file order, which the full scan follows) when a response shares
/// the molt's millisecond or the clock steps back.
pub fn by_wall_clock(path: &Path) -> RefGeneration {
    // Two passes over the file, so that memory stays flat at 1 GB.
    let events = || {
        File::open(path).into_iter().flat_map(|f| {
            BufReader::new(f)
                .lines()
                .map_while(Result::ok)
                .filter_map(|line| match serde_json::from_str::<Value>(&line) {
                    Ok(Value::Object(ev)) => Some(ev),
                    _ => None,
                })
        })
    };
    let ts = |ev: &serde_json::Map<String, Value>| ev.get("ts").and_then(Value::as_f64);
    // `ORDER BY ts DESC LIMIT 1`; a boundary without `ts` sorts last, as NULL does.
    let boundary = events()
        .filter(|ev| event_type(ev) == Some("psyche_molt"))
        .filter_map(|ev| ts(&ev))
        .max_by(f64::total_cmp);
    let mut s = RefGeneration {
        found_boundary: boundary.is_some(),
        ..RefGeneration::default()
    };
    let since = boundary.unwrap_or(0.0);
    for ev in events() {
        s.scanned += 1;
        if event_type(&ev) == Some("llm_response") && ts(&ev).is_some_and(|t| t >= since) {
            accumulate(&mut s, &ev);
        }
    }
    s
}
