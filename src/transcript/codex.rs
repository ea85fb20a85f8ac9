//! Codex CLI: usage as the successive differences of the cumulative
//! `info.total_token_usage` of `token_count` events; a `compacted` line marks a boundary. The
//! rules, and why: docs/TRANSCRIPTS.md, "Codex".

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::Deserialize;

use super::fold::{At, BoundaryKind, Fold, Recall, RecallError, UNKNOWN_MODEL};
use super::format::{Format, Probe};
use super::json::{Obj, Text, TokenValue};
use super::reader::{Env, LineFacts, Rules, Step};
use super::tally::{Money, Tally};
use super::tokens::Usage;

static TOKEN_COUNT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"token_count"));
/// In `"compacted"` and in `context_compacted`.
static COMPACTED: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"compacted"));
static TURN_CONTEXT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"turn_context"));

/// Line types (`RolloutItem` variants) only Codex writes, each with a `payload`.
const TYPES: [&str; 9] = [
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
    "world_state",
    "inter_agent_communication",
    "inter_agent_communication_metadata",
    "security_risk_score",
];

/// The fields of a line the rules read.
#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "'de: 'a"))]
pub(crate) struct Line<'a> {
    #[serde(rename = "type")]
    kind: Text<'a>,
    timestamp: Text<'a>,
    cwd: Text<'a>,
    payload: Obj<Payload<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "'de: 'a"))]
struct Payload<'a> {
    #[serde(rename = "type")]
    kind: Text<'a>,
    info: Obj<Info>,
    model: Text<'a>,
    cwd: Text<'a>,
    tokens_before: TokenValue,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Info {
    total_token_usage: Obj<UsageField>,
    last_token_usage: Obj<UsageField>,
}

// The fields are the format's own key names.
#[allow(clippy::struct_field_names)]
#[derive(Deserialize, Default)]
#[serde(default)]
struct UsageField {
    input_tokens: TokenValue,
    cached_input_tokens: TokenValue,
    output_tokens: TokenValue,
    reasoning_output_tokens: TokenValue,
    total_tokens: TokenValue,
}

impl UsageField {
    /// Its figures: input (cached input included), cached input, output (reasoning
    /// included), reasoning, total.
    fn figures(&self) -> [TokenValue; 5] {
        [
            self.input_tokens,
            self.cached_input_tokens,
            self.output_tokens,
            self.reasoning_output_tokens,
            self.total_tokens,
        ]
    }
}

/// The Codex reader.
pub(crate) struct Codex;

impl Rules for Codex {
    const FORMAT: Format = Format::Codex;
    const BOUNDARY_KINDS: &'static [BoundaryKind] =
        &[BoundaryKind::Compacted, BoundaryKind::ContextCompacted];
    type Line<'a> = Line<'a>;

    fn shows(probe: &Probe<'_>) -> bool {
        matches!(probe.payload, Obj::Is(_)) && probe.kind_in(&TYPES).is_some()
    }

    fn may_matter(bytes: &[u8]) -> bool {
        TOKEN_COUNT.find(bytes).is_some()
            || COMPACTED.find(bytes).is_some()
            || TURN_CONTEXT.find(bytes).is_some()
    }

    fn roots(env: &Env) -> Vec<PathBuf> {
        env.data_dirs("CODEX_HOME", ".codex", "sessions")
    }

    /// A rollout is a session of its own, in project `codex`.
    fn session(path: &Path) -> (String, String) {
        let stem = path
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        (stem, "codex".to_owned())
    }

    fn fold(step: &mut Step<'_>, line: &Line<'_>) -> Result<(), RecallError> {
        let Step { fold, at, recall } = step;
        let payload = line.payload.get();
        match line.kind.as_str() {
            Some("compacted") => {
                fold.boundary(*at, BoundaryKind::Compacted, None, None);
                fold.summary.carry.pairable = true;
            }
            Some("turn_context") => {
                if let Some(model) = payload.and_then(|p| p.model.non_empty()) {
                    let id = fold.model(Some(model));
                    fold.summary.carry.model = Some(id);
                }
            }
            Some("event_msg") => match payload {
                Some(p) if p.kind.is("token_count") => {
                    return token_count(fold, line, p, *recall);
                }
                Some(p) if p.kind.is("context_compacted") => context_compacted(fold, *at, p),
                _ => {}
            },
            _ => {}
        }
        Ok(())
    }

    fn facts(line: Self::Line<'_>) -> LineFacts<'_> {
        let mut facts = LineFacts::new(line.kind, line.timestamp);
        facts.cwd = line.cwd.into_cow();
        if let Obj::Is(payload) = line.payload {
            if let Some(u) = payload.info.get().and_then(|i| i.last_token_usage.get()) {
                facts.usage_with_cached_input(u.figures().map(TokenValue::known));
            }
            if facts.cwd.is_none() {
                facts.cwd = payload.cwd.into_cow();
            }
        }
        facts
    }
}

/// The event after a `compacted` line is the same boundary (it may say how large the
/// context was); alone, it marks one.
fn context_compacted(fold: &mut Fold, at: At, payload: &Payload<'_>) {
    let pre_tokens = payload.tokens_before.known();
    if fold.summary.carry.pairable {
        fold.summary.carry.pairable = false;
        if let Some(last) = fold.summary.boundaries.last_mut() {
            last.pre_tokens = last.pre_tokens.or(pre_tokens);
        }
        return;
    }
    fold.boundary(at, BoundaryKind::ContextCompacted, None, pre_tokens);
}

/// One usage event in the normalised fields: Codex's input includes its cached input, which
/// is the cache read; its output includes its reasoning.
fn normalised(fold: &mut Fold, [input, cached, output, reasoning, total]: [u64; 5]) -> Usage {
    let cache_read = fold.part_of(cached, input);
    let usage = Usage {
        input: input - cache_read,
        output,
        cache_read,
        reasoning: fold.part_of(reasoning, output),
        ..Usage::default()
    };
    fold.check_total(Some(total), &usage);
    usage
}

fn token_count(
    fold: &mut Fold,
    line: &Line<'_>,
    payload: &Payload<'_>,
    recall: &mut dyn Recall,
) -> Result<(), RecallError> {
    let info = match &payload.info {
        Obj::Is(info) => info,
        Obj::Null | Obj::Missing => {
            fold.summary.diagnostics.null_info += 1;
            return Ok(());
        }
        Obj::Other => {
            fold.missing_usage();
            return Ok(());
        }
    };
    if let Some(last) = info.last_token_usage.get() {
        fold.context(last.input_tokens.count());
    }
    let Some(usage) = info.total_token_usage.get() else {
        fold.missing_usage();
        return Ok(());
    };
    let totals = usage.figures().map(|v| fold.value(v));
    let delta = match fold.summary.carry.totals {
        None => totals,
        Some(before) if totals[4] < before[4] => {
            // The counter restarted (a new process on the same rollout): all of it is new.
            fold.summary.diagnostics.counter_resets += 1;
            totals
        }
        Some(before) => {
            let mut delta = [0; 5];
            for (d, (now, then)) in delta.iter_mut().zip(totals.iter().zip(before)) {
                if *now < then {
                    fold.summary.diagnostics.counter_decreases += 1;
                }
                *d = now.saturating_sub(then);
            }
            delta
        }
    };
    fold.summary.carry.totals = Some(totals);
    if delta == [0; 5] {
        return Ok(());
    }
    fold.summary.carry.pairable = false;
    let model = fold.summary.carry.model.unwrap_or(UNKNOWN_MODEL);
    let bucket = (fold.quarter(line.timestamp.as_str()), model);
    let generation = fold.summary.generation();
    let tally = Tally::message(normalised(fold, delta), Money::default());
    fold.count(generation, bucket, &tally, recall)
}
