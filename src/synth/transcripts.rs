//! Synthetic Claude Code and Codex transcripts, for the demo: user prompts, assistant replies
//! with token usage as each agent writes it, and compactions (a `compact_boundary` with its
//! summary; a `compacted` line with its `context_compacted` event). Beside the bytes, the
//! generator returns what it wrote (every message's usage, normalised, and where the
//! compactions are), so a caller can check an answer against it without reading the file.

use std::fmt::Write as _;

use jiff::Timestamp;

use super::Rng;
use crate::transcript::{Format, Usage};

/// Words the prompts are made of; [`NEEDLE`] is planted in some of them.
const WORDS: [&str; 16] = [
    "refactor",
    "the",
    "parser",
    "tests",
    "index",
    "cache",
    "fix",
    "flaky",
    "build",
    "add",
    "docs",
    "benchmark",
    "release",
    "notes",
    "error",
    "path",
];

/// A word that only the prompts the generator marks contain (to search for).
pub const NEEDLE: &str = "kestrel";

/// What to generate.
#[derive(Clone, Debug)]
pub struct TranscriptSynth {
    /// Which agent's format.
    pub format: Format,
    /// The seed of the generator.
    pub seed: u64,
    /// How many prompt and reply pairs.
    pub turns: u64,
    /// A compaction after every this many turns (0: none).
    pub compact_every: u64,
    /// The first line's time; turns follow a minute or two apart.
    pub start: Timestamp,
    /// The session id (Claude Code's `sessionId`, Codex's `session_meta.id`).
    pub session: String,
    /// The working directory the agent ran in.
    pub cwd: String,
    /// The model the replies name.
    pub model: String,
}

/// One counted reply: when, which model, its usage as the readers normalise it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SynthMessage {
    /// The reply's time.
    pub time: Timestamp,
    /// Its model.
    pub model: String,
    /// Its usage (input without cached input, output with reasoning).
    pub usage: Usage,
}

/// A generated transcript and what is in it.
#[derive(Clone, Debug, Default)]
pub struct SynthTranscript {
    /// The file's bytes (whole lines).
    pub bytes: Vec<u8>,
    /// Every counted reply, in file order.
    pub messages: Vec<SynthMessage>,
    /// How many compactions.
    pub compactions: u64,
    /// How many of `messages` come after the last compaction.
    pub since_compaction: usize,
    /// How many prompts contain [`NEEDLE`].
    pub needles: u64,
}

/// A JSON string literal.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A prompt of a few words, with [`NEEDLE`] when `needle`.
fn prompt(rng: &mut Rng, needle: bool) -> String {
    let n = rng.range(4, 10);
    let mut words: Vec<&str> = (0..n)
        .map(|_| {
            WORDS
                .get(usize::try_from(rng.range(0, 15)).unwrap_or(0))
                .copied()
                .unwrap_or("the")
        })
        .collect();
    if needle {
        words.push(NEEDLE);
    }
    words.join(" ")
}

/// Generates a transcript as `options` say.
pub fn synth_transcript(options: &TranscriptSynth) -> SynthTranscript {
    let mut rng = Rng(options.seed);
    let mut out = SynthTranscript::default();
    let mut lines: Vec<String> = Vec::new();
    let mut second = options.start.as_second();
    let time = |s: i64| Timestamp::from_second(s).unwrap_or(Timestamp::UNIX_EPOCH);
    let codex = options.format == Format::Codex;
    // Codex's cumulative totals: input (cached included), cached, output, reasoning, total.
    let mut totals = [0u64; 5];
    let mut context = 8_000;
    if codex {
        lines.push(format!(
            r#"{{"timestamp":"{}","type":"session_meta","payload":{{"id":{},"cwd":{},"cli_version":"0.98.0","originator":"codex_cli_rs"}}}}"#,
            time(second),
            quoted(&options.session),
            quoted(&options.cwd)
        ));
        lines.push(format!(
            r#"{{"timestamp":"{}","type":"turn_context","payload":{{"cwd":{},"model":{}}}}}"#,
            time(second),
            quoted(&options.cwd),
            quoted(&options.model)
        ));
    }
    let mut parent = String::from("null");
    for turn in 0..options.turns {
        second += i64::try_from(rng.range(40, 150)).unwrap_or(60);
        let needle = rng.range(0, 4) == 0;
        out.needles += u64::from(needle);
        let text = prompt(&mut rng, needle);
        let user_uuid = format!("{:08x}-u{turn}", options.seed);
        if codex {
            lines.push(format!(
                r#"{{"timestamp":"{}","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":{}}}]}}}}"#,
                time(second),
                quoted(&text)
            ));
        } else {
            lines.push(format!(
                r#"{{"parentUuid":{parent},"isSidechain":false,"userType":"external","cwd":{},"sessionId":{},"version":"2.0.30","type":"user","message":{{"role":"user","content":{}}},"uuid":"{user_uuid}","timestamp":"{}"}}"#,
                quoted(&options.cwd),
                quoted(&options.session),
                quoted(&text),
                time(second)
            ));
        }
        second += i64::try_from(rng.range(5, 40)).unwrap_or(10);
        // The prompt grows with the conversation; most of it is read from the cache.
        context += rng.range(500, 6_000);
        let output = rng.range(50, 1_500);
        let reply = format!("Done: {} files changed, tests pass.", rng.range(1, 9));
        let usage = if codex {
            let cached = context * 9 / 10;
            let input = context;
            let reasoning = rng.range(0, output / 2 + 1);
            let add = [input, cached, output, reasoning, input + output];
            for (t, a) in totals.iter_mut().zip(add) {
                *t += a;
            }
            lines.push(format!(
                r#"{{"timestamp":"{}","type":"response_item","payload":{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":{}}}]}}}}"#,
                time(second),
                quoted(&reply)
            ));
            lines.push(format!(
                r#"{{"timestamp":"{}","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{},"cached_input_tokens":{},"output_tokens":{},"reasoning_output_tokens":{},"total_tokens":{}}},"last_token_usage":{{"input_tokens":{input},"cached_input_tokens":{cached},"output_tokens":{output},"reasoning_output_tokens":{reasoning},"total_tokens":{}}},"model_context_window":258400}}}}}}"#,
                time(second),
                totals[0],
                totals[1],
                totals[2],
                totals[3],
                totals[4],
                input + output
            ));
            Usage {
                input: input - cached,
                output,
                cache_creation: 0,
                cache_read: cached,
                reasoning,
                cache_creation_1h: 0,
            }
        } else {
            let creation = rng.range(200, 3_000).min(context);
            let input = rng.range(1, 10);
            let read = context - creation;
            let uuid = format!("{:08x}-a{turn}", options.seed);
            lines.push(format!(
                r#"{{"parentUuid":"{user_uuid}","isSidechain":false,"userType":"external","cwd":{},"sessionId":{},"version":"2.0.30","message":{{"id":"msg_{:08x}{turn:04}","type":"message","role":"assistant","model":{},"content":[{{"type":"text","text":{}}}],"stop_reason":"end_turn","usage":{{"input_tokens":{input},"cache_creation_input_tokens":{creation},"cache_read_input_tokens":{read},"cache_creation":{{"ephemeral_5m_input_tokens":{creation},"ephemeral_1h_input_tokens":0}},"output_tokens":{output},"service_tier":"standard"}}}},"requestId":"req_{:08x}{turn:04}","type":"assistant","uuid":"{uuid}","timestamp":"{}"}}"#,
                quoted(&options.cwd),
                quoted(&options.session),
                options.seed,
                quoted(&options.model),
                quoted(&reply),
                options.seed,
                time(second)
            ));
            parent = format!("\"{uuid}\"");
            Usage {
                input,
                output,
                cache_creation: creation,
                cache_read: read,
                reasoning: 0,
                cache_creation_1h: 0,
            }
        };
        out.messages.push(SynthMessage {
            time: time(second),
            model: options.model.clone(),
            usage,
        });
        out.since_compaction += 1;
        if options.compact_every > 0
            && (turn + 1) % options.compact_every == 0
            && turn + 1 < options.turns
        {
            second += 30;
            out.compactions += 1;
            out.since_compaction = 0;
            let pre = context;
            context = rng.range(3_000, 9_000);
            if codex {
                lines.push(format!(
                    r#"{{"timestamp":"{}","type":"compacted","payload":{{"message":"","replacement_history":[{{"type":"message","role":"user","content":[{{"type":"input_text","text":"summary of the work so far"}}]}}]}}}}"#,
                    time(second)
                ));
                lines.push(format!(
                    r#"{{"timestamp":"{}","type":"event_msg","payload":{{"type":"context_compacted"}}}}"#,
                    time(second)
                ));
            } else {
                let boundary = format!("{:08x}-b{turn}", options.seed);
                lines.push(format!(
                    r#"{{"parentUuid":null,"logicalParentUuid":{parent},"isSidechain":false,"userType":"external","cwd":{},"sessionId":{},"version":"2.0.30","type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,"timestamp":"{}","uuid":"{boundary}","level":"info","compactMetadata":{{"trigger":"auto","preTokens":{pre}}}}}"#,
                    quoted(&options.cwd),
                    quoted(&options.session),
                    time(second)
                ));
                let summary = format!("{:08x}-s{turn}", options.seed);
                lines.push(format!(
                    r#"{{"parentUuid":"{boundary}","isSidechain":false,"userType":"external","cwd":{},"sessionId":{},"version":"2.0.30","type":"user","message":{{"role":"user","content":"This session is being continued from a previous conversation. Summary: work on the parser and its tests."}},"isCompactSummary":true,"uuid":"{summary}","timestamp":"{}"}}"#,
                    quoted(&options.cwd),
                    quoted(&options.session),
                    time(second)
                ));
                parent = format!("\"{summary}\"");
            }
        }
    }
    for line in lines {
        out.bytes.extend_from_slice(line.as_bytes());
        out.bytes.push(b'\n');
    }
    out
}
