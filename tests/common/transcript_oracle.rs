//! A naive oracle for transcripts: every complete line parsed whole with `serde_json::Value`,
//! the rules of docs/TRANSCRIPTS.md (and the coercion rule of docs/TOKENS.md) applied as
//! plainly as possible, each format's fields normalised into the oracle's own [`Sum`], totals
//! added up at the end from each message's final winning line. Written apart from the readers
//! and their types, so the two can disagree.
#![allow(dead_code)]
// A helper that fails fails its test; token counts stay at or below 2^53, exact in f64.
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

#[path = "transcript_oracle/gemini_qwen.rs"]
mod gemini_qwen;
pub use gemini_qwen::{gemini, qwen};

/// (offset, line, kind, trigger, `pre_tokens`) of a boundary.
pub type BoundaryRow = (u64, u64, String, Option<String>, Option<u64>);

/// A prompt above this many tokens is long (its usage is also kept apart).
const LONG_PROMPT: u64 = 200_000;

/// Token counts in the normalised fields, with the total counted apart (never derived from
/// the fields here), the part from long prompts, the recorded cost in picodollars, and the
/// messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sum {
    pub input: u64,
    pub output: u64,
    pub cache_creation: u64,
    pub cache_read: u64,
    pub reasoning: u64,
    pub cache_creation_1h: u64,
    pub total: u64,
    /// The same seven counts of the messages whose prompt was long.
    pub long: [u64; 7],
    pub cost: u64,
    pub messages: u64,
}

impl Sum {
    fn counts(&self) -> [u64; 7] {
        [
            self.input,
            self.output,
            self.cache_creation,
            self.cache_read,
            self.reasoning,
            self.cache_creation_1h,
            self.total,
        ]
    }

    /// One message: its normalised fields, and its total as the format counts it.
    fn message(fields: [u64; 6], total: u64, cost: u64) -> Sum {
        let [
            input,
            output,
            cache_creation,
            cache_read,
            reasoning,
            cache_creation_1h,
        ] = fields;
        let mut s = Sum {
            input,
            output,
            cache_creation,
            cache_read,
            reasoning,
            cache_creation_1h,
            total,
            cost,
            messages: 1,
            ..Sum::default()
        };
        if input + cache_creation + cache_read > LONG_PROMPT {
            s.long = s.counts();
        }
        s
    }

    pub fn add(&mut self, o: &Sum) {
        self.input += o.input;
        self.output += o.output;
        self.cache_creation += o.cache_creation;
        self.cache_read += o.cache_read;
        self.reasoning += o.reasoning;
        self.cache_creation_1h += o.cache_creation_1h;
        self.total += o.total;
        for (a, b) in self.long.iter_mut().zip(o.long) {
            *a += b;
        }
        self.cost += o.cost;
        self.messages += o.messages;
    }

    pub fn is_zero(&self) -> bool {
        *self == Sum::default()
    }

    /// A library tally in the oracle's terms (its total as the library gives it).
    pub fn of(t: &Tally) -> Sum {
        let u = &t.usage;
        let l = &t.long_prompt;
        Sum {
            input: u.input,
            output: u.output,
            cache_creation: u.cache_creation,
            cache_read: u.cache_read,
            reasoning: u.reasoning,
            cache_creation_1h: u.cache_creation_1h,
            total: u.total(),
            long: [
                l.input,
                l.output,
                l.cache_creation,
                l.cache_read,
                l.reasoning,
                l.cache_creation_1h,
                l.total(),
            ],
            cost: t.cost.picodollars(),
            messages: t.messages,
        }
    }
}

/// What the oracle says a transcript adds up to.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    /// (offset, line, kind, trigger, `pre_tokens`) of each boundary.
    pub boundaries: Vec<BoundaryRow>,
    pub generations: Vec<Sum>,
    pub lifetime: Sum,
    /// By (quarter-hour, model name).
    pub buckets: BTreeMap<(i64, Option<String>), Sum>,
    /// The prompt of the latest request, 0 after a later boundary.
    pub context: Option<u64>,
}

/// The largest value the coercion rule counts: 2^53.
const MAX: u64 = 1 << 53;

/// A token value by the coercion rule (docs/TOKENS.md); `None` when it counts nothing.
pub fn count(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                return (u <= MAX).then_some(u);
            }
            if n.is_i64() {
                return None;
            }
            let x = n.as_f64()?.trunc();
            (x >= 0.0 && x <= MAX as f64).then_some(x as u64)
        }
        Value::String(s) => {
            let (whole, fraction) = s.split_once('.').unwrap_or((s, "0"));
            let digits = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_digit());
            if !(digits(whole) && digits(fraction)) {
                return None;
            }
            whole.parse::<u64>().ok().filter(|&n| n <= MAX)
        }
        _ => None,
    }
}

fn n(v: Option<&Value>) -> u64 {
    count(v).unwrap_or(0)
}

/// A recorded cost in picodollars: a number, or a plain decimal string.
fn picodollars(v: Option<&Value>) -> u64 {
    let x = match v {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => {
            let plain = s.split('.').count() <= 2
                && s.split('.')
                    .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
            if plain { s.parse::<f64>().ok() } else { None }
        }
        _ => None,
    };
    let units = x.map_or(-1.0, |x| (x * 1e12).round());
    if units.is_finite() && units >= 0.0 && units <= MAX as f64 {
        units as u64
    } else {
        0
    }
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
    generations: Vec<Sum>,
    lifetime: Sum,
    buckets: BTreeMap<(i64, Option<String>), Sum>,
    context: Option<u64>,
}

impl Acc {
    fn new() -> Acc {
        Acc {
            boundaries: Vec::new(),
            generations: vec![Sum::default()],
            lifetime: Sum::default(),
            buckets: BTreeMap::new(),
            context: None,
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
        self.generations.push(Sum::default());
        self.context = Some(0);
    }

    fn add(&mut self, generation: usize, bucket: (i64, Option<String>), t: Sum) {
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
            context: self.context,
        }
    }
}

/// The oracle's answer for a whole transcript.
pub fn expected(format: Format, bytes: &[u8]) -> Expected {
    match format {
        Format::ClaudeCode => claude(bytes),
        Format::Codex => codex(bytes),
        Format::Pi => pi(bytes),
        Format::Copilot => copilot(bytes),
        Format::Gemini => gemini(bytes),
        Format::Qwen => qwen(bytes),
        Format::OpenCode => unreachable!("an OpenCode database is not lines"),
        Format::Kimi => kimi(bytes),
    }
}

struct Msg {
    id: Option<String>,
    requests: Vec<Option<String>>,
    generation: usize,
    /// input, output, cache creation, cache read, 1-hour cache creation.
    usage: [u64; 5],
    sidechain: bool,
    bucket: (i64, Option<String>),
}

/// Claude Code: the fields as they are; the 1-hour writes cut to the writes.
fn claude_sum(u: &[u64; 5]) -> Sum {
    let [input, output, cc, cr, one_hour] = *u;
    Sum::message(
        [input, output, cc, cr, 0, one_hour.min(cc)],
        input + output + cc + cr,
        0,
    )
}

fn claude(bytes: &[u8]) -> Expected {
    let mut acc = Acc::new();
    let mut msgs: Vec<Msg> = Vec::new();
    let mut uuids: HashSet<String> = HashSet::new();
    let mut pairable = false;
    for (offset, line, v) in lines(bytes) {
        let Some(v) = v else { continue };
        let kind = v.get("type").and_then(Value::as_str);
        let compact_boundary = kind == Some("system")
            && v.get("subtype").and_then(Value::as_str) == Some("compact_boundary");
        let boundary_line = compact_boundary
            || (kind == Some("user") && v.get("isCompactSummary") == Some(&Value::Bool(true)));
        if compact_boundary {
            acc.context = Some(0);
        }
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
        let one_hour = usage
            .get("cache_creation")
            .filter(|c| c.is_object())
            .and_then(|c| c.get("ephemeral_1h_input_tokens"));
        let usage = [
            n(usage.get("input_tokens")),
            n(usage.get("output_tokens")),
            n(usage.get("cache_creation_input_tokens")),
            n(usage.get("cache_read_input_tokens")),
            n(one_hour),
        ];
        let sidechain = v.get("isSidechain") == Some(&Value::Bool(true));
        if !sidechain {
            acc.context = Some(usage[0] + usage[2] + usage[3]);
        }
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
            let total = |u: &[u64; 5]| u[..4].iter().sum::<u64>();
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
        acc.add(m.generation, m.bucket, claude_sum(&m.usage));
    }
    acc.done()
}

/// Codex: its input includes its cached input (the cache read), its output its reasoning.
fn codex_sum(delta: [u64; 5]) -> Sum {
    let [input, cached, output, reasoning, _] = delta;
    let cache_read = cached.min(input);
    Sum::message(
        [
            input - cache_read,
            output,
            0,
            cache_read,
            reasoning.min(output),
            0,
        ],
        input + output,
        0,
    )
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
                        let Some(info) = p.get("info").filter(|i| i.is_object()) else {
                            continue;
                        };
                        if let Some(last) = info.get("last_token_usage").filter(|l| l.is_object()) {
                            acc.context = Some(n(last.get("input_tokens")));
                        }
                        let Some(t) = info.get("total_token_usage").filter(|t| t.is_object())
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
                        let bucket = (quarter(v.get("timestamp")), model.clone());
                        acc.add(generation, bucket, codex_sum(delta));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    acc.done()
}

/// GitHub Copilot CLI: each `session.shutdown` is one process's own totals, by model, counted
/// at the shutdown line; a process's `assistant.message` output and compaction call count
/// only if no shutdown ends the process (a `session.start` or `session.resume` begins the
/// next one, or the file ends). Input includes the cache read; output includes reasoning.
fn copilot(bytes: &[u8]) -> Expected {
    // What the running process spent, waiting for its shutdown: (generation, bucket, sum).
    type Spent = Vec<(usize, (i64, Option<String>), Sum)>;
    let mut acc = Acc::new();
    let mut model: Option<String> = None;
    let mut pending: Spent = Vec::new();
    let flush = |acc: &mut Acc, pending: &mut Spent| {
        for (g, b, s) in pending.drain(..) {
            acc.add(g, b, s);
        }
    };
    for (offset, line, v) in lines(bytes) {
        let Some(v) = v else { continue };
        let data = v.get("data").filter(|d| d.is_object());
        let field = |k: &str| data.and_then(|d| d.get(k));
        let output_only = |output: u64| Sum {
            output,
            total: output,
            messages: 1,
            ..Sum::default()
        };
        match v.get("type").and_then(Value::as_str) {
            Some("session.start" | "session.resume") => {
                flush(&mut acc, &mut pending);
                if let Some(m) = text(field("selectedModel")) {
                    model = Some(m);
                }
            }
            Some("session.model_change") => {
                if let Some(m) = text(field("newModel")) {
                    model = Some(m);
                }
            }
            Some("assistant.message") => {
                if field("outputTokens").is_none() {
                    continue;
                }
                let bucket = (quarter(v.get("timestamp")), model.clone());
                let sum = output_only(n(field("outputTokens")));
                pending.push((acc.boundaries.len(), bucket, sum));
            }
            Some("session.compaction_complete") => {
                if let Some(c) = field("compactionTokensUsed").filter(|c| c.is_object()) {
                    let either = |a: &str, b: &str| n(c.get(a).or_else(|| c.get(b)));
                    let input = either("input", "inputTokens");
                    let cached = either("cachedInput", "cacheReadTokens").min(input);
                    let output = either("output", "outputTokens");
                    let write = n(c.get("cacheWriteTokens"));
                    let sum = Sum {
                        input: input - cached,
                        output,
                        cache_read: cached,
                        cache_creation: write,
                        total: input + output + write,
                        messages: 1,
                        ..Sum::default()
                    };
                    let m = text(c.get("model")).or_else(|| model.clone());
                    let bucket = (quarter(v.get("timestamp")), m);
                    pending.push((acc.boundaries.len(), bucket, sum));
                }
                acc.boundary(
                    offset,
                    line,
                    "compaction_complete",
                    None,
                    count(field("preCompactionTokens")),
                );
            }
            Some("session.shutdown") => {
                pending.clear();
                let Some(metrics) = field("modelMetrics").and_then(Value::as_object) else {
                    continue;
                };
                let generation = acc.boundaries.len();
                for (name, metric) in metrics {
                    let Some(u) = metric.get("usage").filter(|u| u.is_object()) else {
                        continue;
                    };
                    let [input, output, read, write, reasoning] = [
                        "inputTokens",
                        "outputTokens",
                        "cacheReadTokens",
                        "cacheWriteTokens",
                        "reasoningTokens",
                    ]
                    .map(|k| n(u.get(k)));
                    let read = read.min(input);
                    let requests = metric
                        .get("requests")
                        .filter(|r| r.is_object())
                        .map_or(0, |r| n(r.get("count")));
                    let sum = Sum {
                        input: input - read,
                        output,
                        cache_creation: write,
                        cache_read: read,
                        reasoning: reasoning.min(output),
                        total: input + output + write,
                        messages: requests,
                        ..Sum::default()
                    };
                    let name = Some(name.clone()).filter(|m| !m.is_empty());
                    if !sum.is_zero() {
                        acc.add(generation, (quarter(v.get("timestamp")), name), sum);
                    }
                }
                if let Some(current) = count(field("currentTokens")) {
                    acc.context = Some(current);
                }
            }
            _ => {}
        }
    }
    flush(&mut acc, &mut pending);
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
    /// (id, quarter-hour, model, what it counts): what makes an entry a copy of another.
    type Same = (String, i64, Option<String>, Sum);
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
                    let cost = picodollars(
                        u.get("cost")
                            .filter(|c| c.is_object())
                            .and_then(|c| c.get("total")),
                    );
                    let [input, output, cache_read, cache_write] =
                        ["input", "output", "cacheRead", "cacheWrite"].map(|k| n(u.get(k)));
                    let t = Sum::message(
                        [input, output, cache_write, cache_read, 0, 0],
                        input + output + cache_read + cache_write,
                        cost,
                    );
                    acc.context = Some(input + cache_read + cache_write);
                    let bucket = (quarter(v.get("timestamp")), text(m.get("model")));
                    if let Some(id) = id {
                        let key = (id, bucket.0, bucket.1.clone(), t);
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

/// Kimi Code: every `usage.record` with a usage object counts, its fields as they are; one
/// with `usageScope: "session"` (the compaction call) then marks a boundary. The time is epoch
/// milliseconds; `step.end` echoes count nothing.
fn kimi(bytes: &[u8]) -> Expected {
    let mut acc = Acc::new();
    for (offset, line, v) in lines(bytes) {
        let Some(v) = v else { continue };
        if v.get("type").and_then(Value::as_str) != Some("usage.record") {
            continue;
        }
        let Some(u) = v.get("usage").filter(|u| u.is_object()) else {
            continue;
        };
        let [input, output, cache_read, cache_creation] = [
            "inputOther",
            "output",
            "inputCacheRead",
            "inputCacheCreation",
        ]
        .map(|k| n(u.get(k)));
        let prompt = input + cache_read + cache_creation;
        let t = Sum::message(
            [input, output, cache_creation, cache_read, 0, 0],
            prompt + output,
            0,
        );
        let quarter =
            count(v.get("time")).map_or(UNKNOWN_QUARTER, |ms| i64::try_from(ms / 900_000).unwrap());
        let generation = acc.boundaries.len();
        acc.add(generation, (quarter, text(v.get("model"))), t);
        acc.context = Some(prompt);
        if v.get("usageScope").and_then(Value::as_str) == Some("session") {
            acc.boundary(offset, line, "session_usage_record", None, None);
        }
    }
    acc.done()
}

/// What a summary and its buckets say, in the oracle's terms.
pub fn observed(
    summary: &Summary,
    buckets: impl IntoIterator<Item = ((i64, u32), Tally)>,
) -> Expected {
    let mut by_name: BTreeMap<(i64, Option<String>), Sum> = BTreeMap::new();
    for ((quarter, model), tally) in buckets {
        if tally.is_empty() {
            continue;
        }
        let name = summary.models.get(model as usize).cloned();
        by_name
            .entry((quarter, name))
            .or_default()
            .add(&Sum::of(&tally));
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
        generations: summary.generations.iter().map(Sum::of).collect(),
        lifetime: Sum::of(&summary.lifetime),
        buckets: by_name,
        context: summary.context,
    }
}
