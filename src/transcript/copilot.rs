//! GitHub Copilot CLI: usage from the per-process totals of `session.shutdown` events, summed
//! over a resumed session's processes; the output of a process that left no shutdown (its
//! `assistant.message` `outputTokens` and its compaction call) counted with its input unknown;
//! a `session.compaction_complete` event marks a boundary. The rules, and why:
//! docs/TRANSCRIPTS.md, "GitHub Copilot CLI".

use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};

use super::fold::{BoundaryKind, Fold, Pending, RecallError, UNKNOWN_MODEL};
use super::format::{Format, Probe};
use super::json::{Obj, Text, TokenValue};
use super::native::Slot;
use super::reader::{Env, LineFacts, Rules, Step};
use super::tally::{Money, Tally};
use super::tokens::Usage;

/// In every event type the rules read but `assistant.message` (`"session.shutdown"`, ...).
static SESSION: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"session."));
/// In every `assistant.message` (those before 1.0 have no `outputTokens`: counted as missing).
static ASSISTANT: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(b"\"assistant.message\""));

/// The namespaces of the event types Copilot CLI writes (`session.start`, `tool.execution_start`...).
const NAMESPACES: [&str; 8] = [
    "session.",
    "assistant.",
    "user.",
    "system.",
    "tool.",
    "hook.",
    "subagent.",
    "skill.",
];

/// The fields of a line the rules read.
#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "'de: 'a"))]
pub(crate) struct Line<'a> {
    #[serde(rename = "type")]
    kind: Text<'a>,
    id: Text<'a>,
    timestamp: Text<'a>,
    data: Obj<Data<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase", bound(deserialize = "'de: 'a"))]
struct Data<'a> {
    output_tokens: TokenValue,
    new_model: Text<'a>,
    selected_model: Text<'a>,
    context: Obj<Context<'a>>,
    model_metrics: Obj<Metrics<'a>>,
    #[serde(rename = "compactionTokensUsed")]
    compaction: Obj<CompactionUsage<'a>>,
    pre_compaction_tokens: TokenValue,
    current_tokens: TokenValue,
}

#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "'de: 'a"))]
struct Context<'a> {
    cwd: Text<'a>,
}

/// `modelMetrics`: each model's figures, in file order; a model named twice keeps its last
/// figures (as a JSON object's repeated key does).
#[derive(Default)]
struct Metrics<'a>(Vec<(Text<'a>, Obj<Metric>)>);

impl<'de: 'a, 'a> Deserialize<'de> for Metrics<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Metrics<'a>, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Metrics<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of models")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Metrics<'a>, A::Error> {
                let mut out: Vec<(Text<'a>, Obj<Metric>)> = Vec::new();
                while let Some((model, metric)) = map.next_entry::<Text<'a>, Obj<Metric>>()? {
                    out.retain(|(m, _)| m.as_str() != model.as_str());
                    out.push((model, metric));
                }
                Ok(Metrics(out))
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Metric {
    requests: Obj<Requests>,
    usage: Obj<UsageField>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Requests {
    count: TokenValue,
}

// The fields are the format's own key names.
#[allow(clippy::struct_field_names)]
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct UsageField {
    input_tokens: TokenValue,
    output_tokens: TokenValue,
    cache_read_tokens: TokenValue,
    cache_write_tokens: TokenValue,
    reasoning_tokens: TokenValue,
}

/// `compactionTokensUsed`: `{input, output, cachedInput}`, or in later versions the usage
/// names of `modelMetrics` and the model.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase", bound(deserialize = "'de: 'a"))]
struct CompactionUsage<'a> {
    input: TokenValue,
    output: TokenValue,
    cached_input: TokenValue,
    input_tokens: TokenValue,
    output_tokens: TokenValue,
    cache_read_tokens: TokenValue,
    cache_write_tokens: TokenValue,
    model: Text<'a>,
}

/// The GitHub Copilot CLI reader.
pub(crate) struct Copilot;

impl Rules for Copilot {
    const FORMAT: Format = Format::Copilot;
    const BOUNDARY_KINDS: &'static [BoundaryKind] = &[BoundaryKind::CompactionComplete];
    type Line<'a> = Line<'a>;

    fn shows(probe: &Probe<'_>) -> bool {
        matches!(probe.data, Obj::Is(_))
            && probe
                .kind
                .as_str()
                .is_some_and(|k| NAMESPACES.iter().any(|n| k.starts_with(n)))
    }

    fn may_matter(bytes: &[u8]) -> bool {
        SESSION.find(bytes).is_some() || ASSISTANT.find(bytes).is_some()
    }

    fn roots(env: &Env) -> Vec<PathBuf> {
        env.data_dirs("COPILOT_HOME", ".copilot", "session-state")
    }

    /// The session is the directory of `events.jsonl` (or, before 1.0, the file's stem), in
    /// project `copilot`.
    fn session(path: &Path) -> (String, String) {
        let name = |p: Option<&std::ffi::OsStr>| {
            p.map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        };
        let session = if path.file_name().is_some_and(|n| n == "events.jsonl") {
            name(path.parent().and_then(Path::file_name))
        } else {
            name(path.file_stem())
        };
        (session, "copilot".to_owned())
    }

    fn fold(step: &mut Step<'_>, line: &Line<'_>) -> Result<(), RecallError> {
        let Some(kind) = line.kind.as_str() else {
            return Ok(());
        };
        let data = line.data.get();
        match kind {
            // A new process: what the one before counted stays counted.
            "session.start" | "session.resume" => {
                step.fold.summary.carry.pending.clear();
                if let Some(model) = data.and_then(|d| d.selected_model.non_empty()) {
                    set_model(step.fold, model);
                }
            }
            "session.model_change" => {
                if let Some(model) = data.and_then(|d| d.new_model.non_empty()) {
                    set_model(step.fold, model);
                }
            }
            "assistant.message" => {
                let output = data.map_or(TokenValue::Missing, |d| d.output_tokens);
                if matches!(output, TokenValue::Missing) {
                    // Before 1.0 (or a message of no request): no token field.
                    step.fold.missing_usage();
                    return Ok(());
                }
                let output = step.fold.value(output);
                let usage = Usage {
                    output,
                    ..Usage::default()
                };
                provisional(step, line, None, usage)?;
            }
            "session.compaction_complete" => {
                if let Some(c) = data.and_then(|d| d.compaction.get()) {
                    let usage = compaction_usage(step.fold, c);
                    provisional(step, line, c.model.non_empty(), usage)?;
                }
                let pre_tokens = data.and_then(|d| d.pre_compaction_tokens.known());
                let kind = BoundaryKind::CompactionComplete;
                step.fold.boundary(step.at, kind, None, pre_tokens);
            }
            "session.shutdown" => shutdown(step, line, data)?,
            _ => {}
        }
        Ok(())
    }

    fn facts(line: Self::Line<'_>) -> LineFacts<'_> {
        let mut facts = LineFacts::new(line.kind, line.timestamp);
        facts.message_id = line.id.into_cow();
        let Obj::Is(data) = line.data else {
            return facts;
        };
        facts.cwd = match data.context {
            Obj::Is(c) => c.cwd.into_cow(),
            _ => None,
        };
        facts.set(Slot::Output, data.output_tokens.known());
        if let Some(metrics) = data.model_metrics.get() {
            // The line's own figures: every model's, added.
            let mut sums: [Option<u64>; 6] = [None; 6];
            for (_, metric) in &metrics.0 {
                let Some(u) = metric.get().and_then(|m| m.usage.get()) else {
                    continue;
                };
                let requests = metric
                    .get()
                    .and_then(|m| m.requests.get())
                    .and_then(|r| r.count.known());
                let values = [
                    u.input_tokens.known(),
                    u.output_tokens.known(),
                    u.cache_read_tokens.known(),
                    u.cache_write_tokens.known(),
                    u.reasoning_tokens.known(),
                    requests,
                ];
                for (sum, v) in sums.iter_mut().zip(values) {
                    if let Some(v) = v {
                        *sum = Some(sum.unwrap_or(0).saturating_add(v));
                    }
                }
            }
            let slots = [
                Slot::InputWithCacheRead,
                Slot::Output,
                Slot::CacheRead,
                Slot::CacheCreation,
                Slot::Reasoning,
                Slot::Messages,
            ];
            for (slot, v) in slots.into_iter().zip(sums) {
                facts.set(slot, v);
            }
        }
        facts
    }
}

fn set_model(fold: &mut Fold, model: &str) {
    let id = fold.model(Some(model));
    fold.summary.carry.model = Some(id);
}

/// The compaction call's usage: its input includes its cached input, which is the cache read.
fn compaction_usage(fold: &mut Fold, c: &CompactionUsage<'_>) -> Usage {
    let pick = |a: TokenValue, b: TokenValue| {
        if matches!(a, TokenValue::Missing) {
            b
        } else {
            a
        }
    };
    let input = fold.value(pick(c.input, c.input_tokens));
    let cached = fold.value(pick(c.cached_input, c.cache_read_tokens));
    let output = fold.value(pick(c.output, c.output_tokens));
    let cache_creation = match c.cache_write_tokens {
        TokenValue::Missing => 0,
        v => fold.value(v),
    };
    let cache_read = fold.part_of(cached, input);
    Usage {
        input: input - cache_read,
        output,
        cache_read,
        cache_creation,
        ..Usage::default()
    }
}

/// Counts what a process spent before its shutdown (a message's output, a compaction call),
/// remembering it so that the shutdown's totals, which include it, replace it.
fn provisional(
    step: &mut Step<'_>,
    line: &Line<'_>,
    model: Option<&str>,
    usage: Usage,
) -> Result<(), RecallError> {
    let fold = &mut *step.fold;
    let model = match model {
        Some(m) => fold.model(Some(m)),
        None => fold.summary.carry.model.unwrap_or(UNKNOWN_MODEL),
    };
    let bucket = (fold.quarter(line.timestamp.as_str()), model);
    let generation = fold.summary.generation();
    let tally = Tally {
        usage,
        long_prompt: Usage::default(),
        cost: Money::default(),
        messages: 1,
    };
    fold.summary.diagnostics.input_unknown += 1;
    let pending = &mut fold.summary.carry.pending;
    match pending
        .iter_mut()
        .find(|p| p.generation == generation && p.bucket == bucket)
    {
        Some(p) => p.tally.add(&tally),
        None => pending.push(Pending {
            generation,
            bucket,
            tally,
        }),
    }
    fold.count(generation, bucket, &tally, step.recall)
}

/// A process's own totals, by model: what it counted before is taken back, and each model's
/// totals are counted at the shutdown line, in its generation.
fn shutdown(
    step: &mut Step<'_>,
    line: &Line<'_>,
    data: Option<&Data<'_>>,
) -> Result<(), RecallError> {
    let fold = &mut *step.fold;
    for p in std::mem::take(&mut fold.summary.carry.pending) {
        let d = &mut fold.summary.diagnostics;
        d.input_unknown = d.input_unknown.saturating_sub(p.tally.messages);
        fold.change(p.generation, p.bucket, step.recall, |t| t.sub(&p.tally))?;
    }
    let Some(data) = data else {
        fold.missing_usage();
        return Ok(());
    };
    let Some(metrics) = data.model_metrics.get() else {
        fold.missing_usage();
        return Ok(());
    };
    let quarter = fold.quarter(line.timestamp.as_str());
    let generation = fold.summary.generation();
    for (model, metric) in &metrics.0 {
        let Some(metric) = metric.get() else {
            fold.missing_usage();
            continue;
        };
        let Some(u) = metric.usage.get() else {
            fold.missing_usage();
            continue;
        };
        let usage = normalised(fold, u);
        let requests = metric.requests.get().map_or(0, |r| fold.value(r.count));
        let tally = Tally {
            usage,
            long_prompt: Usage::default(),
            cost: Money::default(),
            messages: requests,
        };
        let bucket = (quarter, fold.model(model.as_str()));
        fold.count(generation, bucket, &tally, step.recall)?;
    }
    if let Some(current) = data.current_tokens.known() {
        fold.context(current);
    }
    Ok(())
}

/// One model's totals in the normalised fields: Copilot's input includes its cache read; its
/// output includes its reasoning.
fn normalised(fold: &mut Fold, u: &UsageField) -> Usage {
    let input = fold.value(u.input_tokens);
    let output = fold.value(u.output_tokens);
    let cache_read = fold.value(u.cache_read_tokens);
    let cache_read = fold.part_of(cache_read, input);
    let reasoning = fold.value(u.reasoning_tokens);
    Usage {
        input: input - cache_read,
        output,
        cache_read,
        cache_creation: fold.value(u.cache_write_tokens),
        reasoning: fold.part_of(reasoning, output),
        ..Usage::default()
    }
}
