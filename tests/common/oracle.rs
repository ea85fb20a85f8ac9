//! A naive full-scan oracle, written independently of the implementation: whole lines split
//! on `\n`, parsed with `serde_json::Value`, the coercion rule re-derived from its statement in
//! docs/TOKENS.md, "The coercion rule". Every aggregate the engine computes is checked against it.
#![allow(dead_code)]

use serde_json::Value;

/// The latest boundary as the oracle sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OBoundary {
    pub offset: u64,
    pub molt_count: Option<u64>,
    pub initiator: String,
}

/// Token totals: input, output, cached, thinking, `api_calls`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OTotals {
    pub input: u128,
    pub output: u128,
    pub cached: u128,
    pub thinking: u128,
    pub calls: u64,
}

impl OTotals {
    /// The totals of several generations together.
    pub fn sum(generations: &[OTotals]) -> OTotals {
        generations.iter().fold(OTotals::default(), |a, g| OTotals {
            input: a.input + g.input,
            output: a.output + g.output,
            cached: a.cached + g.cached,
            thinking: a.thinking + g.thinking,
            calls: a.calls + g.calls,
        })
    }
}

/// One event line as the oracle sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OEvent {
    pub offset: u64,
    /// Without the `\n`.
    pub len: u64,
    /// `seq` if a JSON integer >= 0, else the line ordinal (every complete line but a header).
    pub seq: u64,
    /// `type` if a string, else `event` if a string.
    pub kind: Option<String>,
    /// Lifetime totals of the token events before this line.
    pub totals_before: OTotals,
}

#[derive(Clone, Debug, Default)]
pub struct Oracle {
    /// Every event in file order.
    pub event_lines: Vec<OEvent>,
    /// Every boundary in file order.
    pub boundaries: Vec<OBoundary>,
    /// Totals per generation (index 0 is before the first boundary).
    pub generations: Vec<OTotals>,
    pub invalid_lines: u64,
    pub events: u64,
}

pub const MAX_TOKEN: u64 = 1 << 53;
pub const MAX_LINE: usize = 64 << 20;

/// The rule: integers in 0..=2^53 as is; floats and plain decimal strings truncated toward
/// zero if the result is in range; everything else 0.
pub fn coerce(value: Option<&Value>) -> u64 {
    match value {
        Some(Value::Number(n)) => {
            if let Some(u) = n.as_u64() {
                if u <= MAX_TOKEN { u } else { 0 }
            } else if n.as_i64().is_some() {
                0
            } else {
                let f = n.as_f64().unwrap_or(-1.0);
                // 2^53 is exact in an f64, and a whole number in 0..=2^53 is exact in a u64.
                #[allow(
                    clippy::cast_precision_loss,
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss
                )]
                if f >= 0.0 && f.trunc() <= MAX_TOKEN as f64 {
                    f.trunc() as u64
                } else {
                    0
                }
            }
        }
        Some(Value::String(s)) => {
            let (whole, frac) = match s.split_once('.') {
                Some((w, f)) => (w, Some(f)),
                None => (s.as_str(), None),
            };
            let digits = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_digit());
            if !digits(whole) || frac.is_some_and(|f| !digits(f)) {
                return 0;
            }
            match whole.parse::<u128>() {
                Ok(v) if v <= u128::from(MAX_TOKEN) => u64::try_from(v).unwrap_or(0),
                _ => 0,
            }
        }
        _ => 0,
    }
}

fn string(value: Option<&Value>) -> Option<&str> {
    value.and_then(Value::as_str)
}

impl Oracle {
    /// Reads the complete lines of `bytes` (a final line without `\n` is ignored).
    pub fn of(bytes: &[u8]) -> Oracle {
        Oracle::with_max_line(bytes, MAX_LINE)
    }

    pub fn with_max_line(bytes: &[u8], max_line: usize) -> Oracle {
        let mut oracle = Oracle {
            generations: vec![OTotals::default()],
            ..Oracle::default()
        };
        let mut offset = 0u64;
        let complete = match bytes.iter().rposition(|&b| b == b'\n') {
            Some(last) => &bytes[..=last],
            None => &bytes[..0],
        };
        let mut ordinal = 0u64;
        for raw in complete.split_inclusive(|&b| b == b'\n') {
            let line = &raw[..raw.len() - 1];
            let at = offset;
            offset += raw.len() as u64;
            let line_ordinal = ordinal;
            ordinal += 1;
            // The limit comes first: a too-long line is invalid even if it is only whitespace.
            let parsed = if line.len() > max_line {
                None
            } else if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            } else {
                serde_json::from_slice::<Value>(line).ok()
            };
            let Some(Value::Object(object)) = parsed else {
                oracle.invalid_lines += 1;
                continue;
            };
            let kind = string(object.get("type")).or_else(|| string(object.get("event")));
            if at == 0 && kind == Some("session") {
                // A header takes no ordinal.
                ordinal -= 1;
                continue;
            }
            oracle.events += 1;
            oracle.event_lines.push(OEvent {
                offset: at,
                len: line.len() as u64,
                seq: object
                    .get("seq")
                    .and_then(Value::as_u64)
                    .unwrap_or(line_ordinal),
                kind: kind.map(str::to_owned),
                totals_before: oracle.lifetime(),
            });
            match kind {
                Some("llm_response") => {
                    let current = oracle.generations.last_mut().expect("generation 0 exists");
                    current.input += u128::from(coerce(object.get("input_tokens")));
                    current.output += u128::from(coerce(object.get("output_tokens")));
                    current.cached += u128::from(coerce(object.get("cached_tokens")));
                    current.thinking += u128::from(coerce(object.get("thinking_tokens")));
                    current.calls += 1;
                }
                Some("psyche_molt") => {
                    let initiator = match string(object.get("initiator")) {
                        Some(s) if !s.is_empty() => s.to_owned(),
                        _ => "agent".to_owned(),
                    };
                    oracle.boundaries.push(OBoundary {
                        offset: at,
                        molt_count: object.get("molt_count").and_then(Value::as_u64),
                        initiator,
                    });
                    oracle.generations.push(OTotals::default());
                }
                _ => {}
            }
        }
        oracle
    }

    pub fn latest(&self) -> Option<&OBoundary> {
        self.boundaries.last()
    }

    /// Totals since the latest boundary.
    pub fn since(&self) -> OTotals {
        *self.generations.last().expect("generation 0 exists")
    }

    pub fn lifetime(&self) -> OTotals {
        OTotals::sum(&self.generations)
    }

    /// (seq, offset) of the first event with each seq, in seq order.
    pub fn seq_offsets(&self) -> Vec<(u64, u64)> {
        let mut first = std::collections::BTreeMap::new();
        for event in &self.event_lines {
            first.entry(event.seq).or_insert(event.offset);
        }
        first.into_iter().collect()
    }

    /// The distinct event types of the log, sorted.
    pub fn kinds(&self) -> Vec<&str> {
        let mut kinds: Vec<&str> = self
            .event_lines
            .iter()
            .filter_map(|e| e.kind.as_deref())
            .collect();
        kinds.sort_unstable();
        kinds.dedup();
        kinds
    }

    /// Offsets of the events of type `name`, in file order.
    pub fn offsets_of_type(&self, name: &str) -> Vec<u64> {
        self.event_lines
            .iter()
            .filter(|e| e.kind.as_deref() == Some(name))
            .map(|e| e.offset)
            .collect()
    }

    /// What a generation request must give: `Ok(label)` or `Err(found)` for a mismatch,
    /// restated from the labelling rule (docs/TOKENS.md, "The labelling rule").
    pub fn expect(
        &self,
        expected: Option<u64>,
        trust_unverifiable: bool,
    ) -> Result<Option<u64>, Option<u64>> {
        match (expected, self.latest()) {
            (None | Some(0), None) => Ok(Some(0)),
            (None, Some(b)) => Ok(b.molt_count),
            (Some(_), None) => Err(None),
            (Some(n), Some(b)) => match b.molt_count {
                Some(m) if m == n => Ok(Some(n)),
                Some(m) => Err(Some(m)),
                None if trust_unverifiable => Ok(Some(n)),
                None => Err(None),
            },
        }
    }
}

impl From<agentlog::event::Totals> for OTotals {
    fn from(t: agentlog::event::Totals) -> OTotals {
        OTotals {
            input: t.input_tokens,
            output: t.output_tokens,
            cached: t.cached_tokens,
            thinking: t.thinking_tokens,
            calls: t.api_calls,
        }
    }
}
