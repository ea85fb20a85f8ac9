//! Synthetic lingtai-shaped logs, for the demo, benchmarks and tests; synthetic Claude Code and
//! Codex transcripts for the demo ([`synth_transcript`]).
//!
//! The lines follow the shapes the lingtai kernel writes: Python's `", "`/`": "` separators, the
//! envelope keys
//! (`type`, `address`, `agent_name`, `ts`, `kernel_*` identity), `llm_call`/`llm_response` pairs,
//! tool calls and results of realistic sizes, and `psyche_molt` boundaries every few hundred to
//! few thousand responses, started by the agent (no `initiator` key) or the system. The output
//! is a pure function of the options, so a benchmark or test can regenerate it exactly.

mod transcripts;

pub use transcripts::{NEEDLE, SynthMessage, SynthTranscript, TranscriptSynth, synth_transcript};

use std::fmt::Write as _;
use std::io::{self, Write};

/// What to generate.
#[derive(Clone, Debug)]
pub struct SynthOptions {
    /// Seed of the deterministic generator.
    pub seed: u64,
    /// Number of `llm_response` events (API calls).
    pub responses: u64,
    /// The agent molts after a random number of responses in this range (inclusive)...
    pub molt_every: (u64, u64),
    /// ...unless its context reaches this many tokens first: then the system forces a molt
    /// (lingtai's warning ladder).
    pub context_ceiling: u64,
    /// The agent's name (also its directory name in `address`).
    pub agent: String,
}

impl Default for SynthOptions {
    fn default() -> SynthOptions {
        SynthOptions {
            seed: 42,
            responses: 5_000,
            molt_every: (300, 3_000),
            context_ceiling: 190_000,
            agent: "alice".to_owned(),
        }
    }
}

/// What was generated: enough to check an answer without scanning.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SynthSummary {
    /// Lines written.
    pub lines: u64,
    /// Bytes written.
    pub bytes: u64,
    /// `molt_count` of the last boundary (0 if none): what `.agent.json` should say.
    pub molt_count: u64,
    /// API calls since the last boundary.
    pub api_calls_since_molt: u64,
    /// Input tokens since the last boundary.
    pub input_tokens_since_molt: u64,
}

/// splitmix64: a tiny, fast, deterministic generator, good enough for test data (and used by
/// the crash harness so a failing seed replays).
pub struct Rng(pub u64);

impl Rng {
    /// The next pseudo-random value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi.saturating_sub(lo) + 1)
    }

    /// A whole number of milliseconds in `lo..=hi`, in seconds.
    fn millis(&mut self, lo: u32, hi: u32) -> f64 {
        let ms = self.range(u64::from(lo), u64::from(hi));
        f64::from(u32::try_from(ms).unwrap_or(hi)) / 1000.0
    }

    /// One of `items`, each as likely.
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        let at = self.range(0, (items.len() as u64).saturating_sub(1));
        usize::try_from(at)
            .ok()
            .and_then(|at| items.get(at))
            .copied()
            .unwrap_or_default()
    }

    fn hex(&mut self, digits: usize) -> String {
        let value = self.next_u64();
        format!("{value:016x}")[..digits.min(16)].to_owned()
    }
}

const WORDS: &[&str] = &[
    "the",
    "agent",
    "reads",
    "file",
    "config",
    "migration",
    "failed",
    "retry",
    "cache",
    "index",
    "token",
    "session",
    "tool",
    "result",
    "shell",
    "grep",
    "build",
    "test",
    "passed",
    "error",
];

/// Writes a synthetic log to `out`, one event per line.
pub fn write_lingtai_log(out: &mut impl Write, options: &SynthOptions) -> io::Result<SynthSummary> {
    let mut rng = Rng(options.seed ^ 0x5EED);
    let mut summary = SynthSummary::default();
    let mut ts = 1_786_000_000.0_f64;
    let mut next_molt = rng.range(options.molt_every.0, options.molt_every.1);
    let mut context = 9_000u64;
    // Context after a molt: the kept summary and recent turns.
    let fresh_context = |rng: &mut Rng| rng.range(5_000, 12_000);
    let envelope = |kind: &str, ts: f64| {
        format!(
            "{{\"type\": \"{kind}\", \"address\": \"agent-{a}\", \"agent_name\": \"{a}\", \"ts\": {ts:.3}, \"kernel_version\": \"0.19.5\", \"kernel_runtime_stamp\": \"0.19.5\", \"kernel_runtime\": {{\"version\": \"0.19.5\", \"stamp\": \"0.19.5\", \"mode\": \"package\", \"source\": \"package\", \"installed_version\": \"0.19.5\"}}",
            a = options.agent
        )
    };
    let mut line = String::with_capacity(8192);
    let emit = |line: &mut String, summary: &mut SynthSummary, out: &mut dyn Write| {
        line.push_str("}\n");
        summary.lines += 1;
        summary.bytes += line.len() as u64;
        let result = out.write_all(line.as_bytes());
        line.clear();
        result
    };
    for response in 0..options.responses {
        ts += rng.millis(1, 4_000);
        if rng.range(0, 9) == 0 {
            line.push_str(&envelope("agent_state", ts));
            line.push_str(", \"old\": \"idle\", \"new\": \"active\", \"reason\": \"mail\"");
            emit(&mut line, &mut summary, out)?;
        }
        let call = rng.hex(12);
        line.push_str(&envelope("llm_call", ts));
        let _ = write!(
            line,
            ", \"model\": \"gpt-5.5\", \"api_call_id\": \"api_{call}\""
        );
        emit(&mut line, &mut summary, out)?;
        ts += rng.millis(500, 9_000);
        context += rng.range(20, 160);
        let input = context;
        let cached = input * rng.range(50, 95) / 100;
        let output = rng.range(20, 2_000);
        let thinking = if rng.range(0, 2) == 0 {
            0
        } else {
            rng.range(0, 1_500)
        };
        line.push_str(&envelope("llm_response", ts));
        let _ = write!(
            line,
            ", \"input_tokens\": {input}, \"output_tokens\": {output}, \"thinking_tokens\": {thinking}, \"cached_tokens\": {cached}, \"estimated\": false, \"api_call_id\": \"api_{call}\", \"prompt_build_ms\": {}, \"tool_schema_build_ms\": {}, \"provider_wait_ms\": {}, \"usage_track_ms\": 0",
            rng.range(1, 9),
            rng.range(0, 3),
            rng.range(300, 9_000)
        );
        emit(&mut line, &mut summary, out)?;
        summary.api_calls_since_molt += 1;
        summary.input_tokens_since_molt += input;
        if rng.range(0, 2) > 0 {
            let tool = rng.pick(&["shell", "read", "grep", "write", "email"]);
            line.push_str(&envelope("tool_call", ts));
            let _ = write!(
                line,
                ", \"tool\": \"{tool}\", \"call_id\": \"call_{}\"",
                rng.hex(10)
            );
            emit(&mut line, &mut summary, out)?;
            ts += rng.millis(10, 3_000);
            line.push_str(&envelope("tool_result", ts));
            let _ = write!(
                line,
                ", \"tool\": \"{tool}\", \"ok\": true, \"preview\": \""
            );
            // Most results are short; one in twenty is a long file dump.
            let longest = if rng.range(0, 19) == 0 { 2_000 } else { 120 };
            let words = rng.range(8, longest);
            for i in 0..words {
                if i > 0 {
                    line.push(' ');
                }
                line.push_str(rng.pick(WORDS));
            }
            line.push('"');
            emit(&mut line, &mut summary, out)?;
        }
        let forced = context >= options.context_ceiling;
        if (forced || response + 1 == next_molt) && response + 1 < options.responses {
            summary.molt_count += 1;
            let after = fresh_context(&mut rng);
            line.push_str(&envelope("psyche_molt", ts));
            let _ = write!(
                line,
                ", \"before_tokens\": {context}, \"after_tokens\": {after}, \"molt_count\": {}",
                summary.molt_count
            );
            if forced {
                line.push_str(", \"kept_tool_calls\": 0, \"kept_last\": 0, \"initiator\": \"system\", \"source\": \"warning_ladder\"");
            } else {
                let _ = write!(
                    line,
                    ", \"kept_tool_calls\": {}, \"kept_last\": 0, \"session_journal_path\": \"knowledge/session-journal/{}/KNOWLEDGE.md\"",
                    rng.range(0, 3),
                    rng.hex(8)
                );
            }
            emit(&mut line, &mut summary, out)?;
            context = after;
            summary.api_calls_since_molt = 0;
            summary.input_tokens_since_molt = 0;
            next_molt = response + 1 + rng.range(options.molt_every.0, options.molt_every.1);
        }
    }
    Ok(summary)
}

/// Responses needed for a log of about `bytes` bytes (for benchmarks).
pub fn responses_for_bytes(bytes: u64) -> u64 {
    // The default mix writes about this much log per response.
    (bytes / 1_600).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_deterministic_and_summarised() {
        let options = SynthOptions {
            responses: 2_000,
            ..SynthOptions::default()
        };
        let mut a = Vec::new();
        let sa = write_lingtai_log(&mut a, &options).unwrap();
        let mut b = Vec::new();
        let sb = write_lingtai_log(&mut b, &options).unwrap();
        assert_eq!(a, b);
        assert_eq!(sa, sb);
        assert_eq!(sa.bytes, a.len() as u64);
        assert!(sa.molt_count >= 1);
        for line in a.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let value: serde_json::Value = serde_json::from_slice(line).unwrap();
            assert!(value.is_object());
        }
    }
}
