//! A naive oracle for transcripts: every complete line parsed whole with `serde_json::Value`,
//! the rules of docs/TRANSCRIPTS.md applied as plainly as possible, totals added up at the end
//! from each message's final winning line. Written apart from the readers, so the two can
//! disagree.
#![allow(dead_code)]
// A helper that fails fails its test; token counts stay at or below 2^48, exact in f64.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use std::collections::{BTreeMap, HashSet};

use agentlog::transcript::{Format, Summary, Tally, UNKNOWN_QUARTER};
use serde_json::Value;

/// (offset, line, kind, trigger, `pre_tokens`) of a boundary.
pub type BoundaryRow = (u64, u64, String, Option<String>, Option<u64>);

/// What the oracle says a transcript adds up to.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    /// (offset, line, kind, trigger, `pre_tokens`) of each boundary.
    pub boundaries: Vec<BoundaryRow>,
    pub generations: Vec<Tally>,
    pub lifetime: Tally,
    /// By (quarter-hour, model name).
    pub buckets: BTreeMap<(i64, Option<String>), Tally>,
}

const MAX: u64 = 1 << 48;

/// A token count as the rules read it; `None` when it is not one.
fn count(v: Option<&Value>) -> Option<u64> {
    let v = v?;
    if let Some(n) = v.as_u64() {
        return (n <= MAX).then_some(n);
    }
    if let Some(i) = v.as_i64() {
        return u64::try_from(i).ok();
    }
    let x = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => {
            if let Ok(n) = s.trim().parse::<u64>()
                && n <= MAX
            {
                return Some(n);
            }
            s.trim().parse::<f64>().ok()?
        }
        _ => return None,
    };
    (x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x <= MAX as f64).then_some(x as u64)
}

fn n(v: Option<&Value>) -> u64 {
    count(v).unwrap_or(0)
}

fn amount(v: Option<&Value>) -> f64 {
    let x = match v {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    x.filter(|x| x.is_finite() && *x >= 0.0).unwrap_or(0.0)
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn quarter(v: Option<&Value>) -> i64 {
    v.and_then(Value::as_str)
        .and_then(|s| s.trim().parse::<jiff::Timestamp>().ok())
        .map_or(UNKNOWN_QUARTER, |t| t.as_second().div_euclid(900))
}

/// Complete lines with their offsets and 1-based numbers, parsed.
fn lines(bytes: &[u8]) -> Vec<(u64, u64, Option<Value>)> {
    let mut out = Vec::new();
    let mut offset = 0u64;
    for (i, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        let Some(body) = line.strip_suffix(b"\n") else {
            break;
        };
        let value = serde_json::from_slice::<Value>(body)
            .ok()
            .filter(Value::is_object);
        out.push((offset, i as u64 + 1, value));
        offset += line.len() as u64;
    }
    out
}

struct Acc {
    boundaries: Vec<BoundaryRow>,
    generations: Vec<Tally>,
    lifetime: Tally,
    buckets: BTreeMap<(i64, Option<String>), Tally>,
}

impl Acc {
    fn new() -> Acc {
        Acc {
            boundaries: Vec::new(),
            generations: vec![Tally::default()],
            lifetime: Tally::default(),
            buckets: BTreeMap::new(),
        }
    }

    fn boundary(
        &mut self,
        offset: u64,
        line: u64,
        kind: &str,
        trigger: Option<String>,
        pre: Option<u64>,
    ) {
        self.boundaries
            .push((offset, line, kind.to_owned(), trigger, pre));
        self.generations.push(Tally::default());
    }

    fn add(&mut self, generation: usize, bucket: (i64, Option<String>), t: Tally) {
        self.generations[generation].add(&t);
        self.lifetime.add(&t);
        self.buckets.entry(bucket).or_default().add(&t);
    }

    fn done(self) -> Expected {
        Expected {
            boundaries: self.boundaries,
            generations: self.generations,
            lifetime: self.lifetime,
            buckets: self.buckets,
        }
    }
}

/// The oracle's answer for a whole transcript.
pub fn expected(format: Format, bytes: &[u8]) -> Expected {
    match format {
        Format::ClaudeCode => claude(bytes),
        Format::Codex => codex(bytes),
        Format::Pi => pi(bytes),
    }
}

struct Msg {
    id: Option<String>,
    requests: Vec<Option<String>>,
    generation: usize,
    usage: [u64; 4],
    sidechain: bool,
    bucket: (i64, Option<String>),
}

fn claude(bytes: &[u8]) -> Expected {
    let mut acc = Acc::new();
    let mut msgs: Vec<Msg> = Vec::new();
    let mut uuids: HashSet<String> = HashSet::new();
    let mut pairable = false;
    for (offset, line, v) in lines(bytes) {
        let Some(v) = v else { continue };
        let kind = v.get("type").and_then(Value::as_str);
        let boundary_line = (kind == Some("system")
            && v.get("subtype").and_then(Value::as_str) == Some("compact_boundary"))
            || (kind == Some("user") && v.get("isCompactSummary") == Some(&Value::Bool(true)));
        if boundary_line {
            if let Some(uuid) = text(v.get("uuid"))
                && !uuids.insert(uuid)
            {
                continue;
            }
            if kind == Some("system") {
                let meta = v.get("compactMetadata");
                let trigger = meta.and_then(|m| m.get("trigger")).and_then(Value::as_str);
                let pre = count(meta.and_then(|m| m.get("preTokens")));
                acc.boundary(
                    offset,
                    line,
                    "compact_boundary",
                    trigger.map(str::to_owned),
                    pre,
                );
                pairable = true;
            } else if pairable {
                pairable = false;
            } else {
                acc.boundary(offset, line, "compact_summary_without_boundary", None, None);
            }
            continue;
        }
        if kind != Some("assistant") {
            continue;
        }
        let Some(message) = v.get("message").filter(|m| m.is_object()) else {
            continue;
        };
        let Some(usage) = message.get("usage").filter(|u| u.is_object()) else {
            continue;
        };
        let usage = [
            n(usage.get("input_tokens")),
            n(usage.get("output_tokens")),
            n(usage.get("cache_creation_input_tokens")),
            n(usage.get("cache_read_input_tokens")),
        ];
        let sidechain = v.get("isSidechain") == Some(&Value::Bool(true));
        let id = text(message.get("id"));
        let request = text(v.get("requestId"));
        let generation = acc.boundaries.len();
        let existing = id.as_ref().and_then(|id| {
            let same: Vec<usize> = (0..msgs.len())
                .filter(|&i| msgs[i].id.as_ref() == Some(id))
                .collect();
            same.iter()
                .copied()
                .find(|&i| msgs[i].requests.contains(&request))
                .or_else(|| {
                    same.iter()
                        .copied()
                        .find(|&i| sidechain || msgs[i].sidechain)
                })
        });
        if let Some(i) = existing {
            let m = &mut msgs[i];
            if !m.requests.contains(&request) {
                m.requests.push(request);
            }
            let total = |u: &[u64; 4]| u.iter().sum::<u64>();
            let better = if m.sidechain == sidechain {
                total(&usage) > total(&m.usage)
            } else {
                m.sidechain
            };
            if better {
                m.usage = usage;
                m.sidechain = sidechain;
            }
        } else {
            let model = text(message.get("model"));
            msgs.push(Msg {
                id,
                requests: vec![request],
                generation,
                usage,
                sidechain,
                bucket: (quarter(v.get("timestamp")), model),
            });
            pairable = false;
        }
    }
    for m in msgs {
        let u = m.usage;
        let t = Tally {
            tokens: [u[0], u[1], u[2], u[3], u.iter().sum()],
            cost: 0.0,
            events: 1,
        };
        acc.add(m.generation, m.bucket, t);
    }
    acc.done()
}

fn codex(bytes: &[u8]) -> Expected {
    let mut acc = Acc::new();
    let mut prev: Option<[u64; 5]> = None;
    let mut model: Option<String> = None;
    let mut pairable = false;
    for (offset, line, v) in lines(bytes) {
        let Some(v) = v else { continue };
        let payload = v.get("payload").filter(|p| p.is_object());
        match v.get("type").and_then(Value::as_str) {
            Some("compacted") => {
                acc.boundary(offset, line, "compacted", None, None);
                pairable = true;
            }
            Some("turn_context") => {
                if let Some(m) = text(payload.and_then(|p| p.get("model"))) {
                    model = Some(m);
                }
            }
            Some("event_msg") => {
                let Some(p) = payload else { continue };
                match p.get("type").and_then(Value::as_str) {
                    Some("context_compacted") => {
                        let pre = count(p.get("tokens_before"));
                        if pairable {
                            pairable = false;
                            if let Some(last) = acc.boundaries.last_mut() {
                                last.4 = last.4.or(pre);
                            }
                        } else {
                            acc.boundary(offset, line, "context_compacted", None, pre);
                        }
                    }
                    Some("token_count") => {
                        let Some(t) = p
                            .get("info")
                            .filter(|i| i.is_object())
                            .and_then(|i| i.get("total_token_usage"))
                            .filter(|t| t.is_object())
                        else {
                            continue;
                        };
                        let now = [
                            n(t.get("input_tokens")),
                            n(t.get("cached_input_tokens")),
                            n(t.get("output_tokens")),
                            n(t.get("reasoning_output_tokens")),
                            n(t.get("total_tokens")),
                        ];
                        let delta = match prev {
                            Some(before) if now[4] >= before[4] => {
                                std::array::from_fn(|i| now[i].saturating_sub(before[i]))
                            }
                            _ => now,
                        };
                        prev = Some(now);
                        if delta == [0; 5] {
                            continue;
                        }
                        pairable = false;
                        let generation = acc.boundaries.len();
                        let t = Tally {
                            tokens: delta,
                            cost: 0.0,
                            events: 1,
                        };
                        acc.add(generation, (quarter(v.get("timestamp")), model.clone()), t);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    acc.done()
}

fn pi(bytes: &[u8]) -> Expected {
    pi_files(&[bytes])
}

/// pi files read one after the other, as `usage` reads them in path order: in a file, an entry
/// id counts once; across files, an assistant entry counts once when an earlier file holds one
/// with the same id, quarter-hour, model and usage (a copy). Only the buckets and lifetime
/// mean something across files (generations and boundaries follow one another).
pub fn pi_files(files: &[&[u8]]) -> Expected {
    /// (id, quarter-hour, model, tokens, cost bits): what makes an entry a copy of another.
    type Same = (String, i64, Option<String>, [u64; 5], u64);
    let mut acc = Acc::new();
    let mut copies: HashSet<Same> = HashSet::new();
    for bytes in files {
        let mut seen: HashSet<String> = HashSet::new();
        for (offset, line, v) in lines(bytes) {
            let Some(v) = v else { continue };
            let id = text(v.get("id"));
            match v.get("type").and_then(Value::as_str) {
                Some("compaction") => {
                    if id.is_some_and(|id| !seen.insert(id)) {
                        continue;
                    }
                    acc.boundary(
                        offset,
                        line,
                        "compaction",
                        None,
                        count(v.get("tokensBefore")),
                    );
                }
                Some("message") => {
                    let Some(m) = v.get("message").filter(|m| m.is_object()) else {
                        continue;
                    };
                    if m.get("role").and_then(Value::as_str) != Some("assistant") {
                        continue;
                    }
                    let Some(u) = m.get("usage").filter(|u| u.is_object()) else {
                        continue;
                    };
                    if id.as_ref().is_some_and(|id| !seen.insert(id.clone())) {
                        continue;
                    }
                    let cost = amount(
                        u.get("cost")
                            .filter(|c| c.is_object())
                            .and_then(|c| c.get("total")),
                    );
                    let t = Tally {
                        tokens: [
                            n(u.get("input")),
                            n(u.get("output")),
                            n(u.get("cacheRead")),
                            n(u.get("cacheWrite")),
                            n(u.get("totalTokens")),
                        ],
                        cost,
                        events: 1,
                    };
                    let bucket = (quarter(v.get("timestamp")), text(m.get("model")));
                    if let Some(id) = id {
                        let key = (id, bucket.0, bucket.1.clone(), t.tokens, cost.to_bits());
                        if !copies.insert(key) {
                            continue;
                        }
                    }
                    let generation = acc.boundaries.len();
                    acc.add(generation, bucket, t);
                }
                _ => {}
            }
        }
    }
    acc.done()
}

/// What a summary and its buckets say, in the oracle's terms.
pub fn observed(
    summary: &Summary,
    buckets: impl IntoIterator<Item = ((i64, u32), Tally)>,
) -> Expected {
    let mut by_name = BTreeMap::new();
    for ((quarter, model), tally) in buckets {
        if tally.is_empty() {
            continue;
        }
        let name = summary.models.get(model as usize).cloned();
        by_name
            .entry((quarter, name))
            .or_insert_with(Tally::default)
            .add(&tally);
    }
    Expected {
        boundaries: summary
            .boundaries
            .iter()
            .map(|b| {
                (
                    b.offset,
                    b.line,
                    b.kind.name().to_owned(),
                    b.trigger.clone(),
                    b.pre_tokens,
                )
            })
            .collect(),
        generations: summary.generations.clone(),
        lifetime: summary.lifetime,
        buckets: by_name,
    }
}
