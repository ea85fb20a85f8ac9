//! The demo's second part: generated Claude Code and Codex transcripts (with compactions) in
//! the demo directory, and `usage`, `statusline`, `search --transcripts` and `transcript` on
//! them, each after the command a user would type. Every answer is checked against what the
//! generator wrote (summed here directly), and any disagreement fails the demo.

use std::path::{Path, PathBuf};

use jiff::Timestamp;

use agentlog::search::{MatchMode, SearchConfig, TranscriptSearch, TranscriptSearchRequest};
use agentlog::synth::{NEEDLE, SynthTranscript, TranscriptSynth, synth_transcript};
use agentlog::transcript::{
    CostMode, Format, GroupBy, Money, OpenOptions, PriceTable, ReportOptions, StatusOptions, Tally,
    Usage, UsageOptions, parse_status_input, read_report, statusline, usage,
};

use super::{EXIT_FAILURE, Failure, display};

/// The most seconds a generated turn takes (prompt gap, reply gap), and a compaction.
const TURN_SECONDS: i64 = 190;

/// One generated transcript: where it is and what it holds.
pub(super) struct Written {
    /// The file.
    pub path: PathBuf,
    /// What the generator wrote into it.
    pub synth: SynthTranscript,
}

/// The transcripts the demo writes under `DIR/transcripts`, ending before `now`: two Claude
/// Code sessions of one project (the first with compactions) and a Codex session with one.
pub(super) fn write_transcripts(dir: &Path, now: Timestamp) -> Result<Vec<Written>, Failure> {
    let project = dir.join("transcripts/claude/-home-you-shop");
    let codex = dir.join("transcripts/codex/2026/12/06");
    let plan = [
        (
            Format::ClaudeCode,
            &project,
            "3f1c2a9e-5b7d-4c11-9a0e-6d2b8f4e1a01",
            "claude-opus-4-6",
            60,
            20,
        ),
        (
            Format::ClaudeCode,
            &project,
            "7a2e4b10-c3d5-4f6a-8b9c-0d1e2f3a4b02",
            "claude-sonnet-4-5-20250929",
            24,
            0,
        ),
        (
            Format::Codex,
            &codex,
            "019c8a4c-ed82-79a1-aa28-7738fc5ab603",
            "gpt-5.3-codex",
            40,
            15,
        ),
    ];
    let mut out = Vec::new();
    for (seed, (format, place, session, model, turns, compact_every)) in (1..).zip(plan) {
        std::fs::create_dir_all(place).map_err(io("cannot create a transcript directory"))?;
        let span = TURN_SECONDS * i64::try_from(turns + 2).unwrap_or(i64::MAX / TURN_SECONDS / 2);
        let options = TranscriptSynth {
            format,
            seed,
            turns,
            compact_every,
            start: Timestamp::from_second(now.as_second() - span).unwrap_or(now),
            session: session.to_owned(),
            cwd: "/home/you/shop".to_owned(),
            model: model.to_owned(),
        };
        let synth = synth_transcript(&options);
        let name = match format {
            Format::Codex => format!("rollout-2026-12-06T01-00-00-{session}.jsonl"),
            _ => format!("{session}.jsonl"),
        };
        let path = place.join(name);
        std::fs::write(&path, &synth.bytes).map_err(io("cannot write a transcript"))?;
        out.push(Written { path, synth });
    }
    Ok(out)
}

fn io(context: &str) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |e| Failure::new("io_error", EXIT_FAILURE, format!("{context}: {e}"))
}

/// The usage of `messages`, added up directly.
fn sum(messages: &[&agentlog::synth::SynthMessage]) -> (Usage, u64) {
    let mut u = Usage::default();
    for m in messages {
        u.add(&m.usage);
    }
    (u, messages.len() as u64)
}

/// What `messages` cost by the embedded prices, each message priced alone.
fn cost(messages: &[&agentlog::synth::SynthMessage], table: &PriceTable) -> Option<Money> {
    let mut total = Money::default();
    for m in messages {
        let price = table.lookup(&m.model)?;
        total = total.plus(price.cost(&Tally::message(m.usage, Money::default())));
    }
    Some(total)
}

/// Disagreements so far, by section.
#[derive(Default)]
pub(super) struct Checks(Vec<String>);

impl Checks {
    fn expect<T: PartialEq + Copy + std::fmt::Debug>(&mut self, what: &str, answer: T, direct: T) {
        if answer != direct {
            self.0.push(format!(
                "{what}: answered {answer:?}, direct count {direct:?}"
            ));
        }
    }

    /// `Ok` when every answer agreed; else the failure naming each disagreement.
    pub(super) fn finish(self) -> Result<(), Failure> {
        if self.0.is_empty() {
            return Ok(());
        }
        Err(Failure::new(
            "demo_disagrees",
            EXIT_FAILURE,
            format!(
                "the engine's answers disagree with the generated transcripts: {}",
                self.0.join("; ")
            ),
        ))
    }
}

/// Shows `usage`, `statusline`, `search --transcripts` and `transcript` on `written` (under
/// `DIR/transcripts`, indexes in `DIR/index`), checking each against the generator's record.
pub(super) fn show(dir: &Path, written: &[Written], now: Timestamp) -> Result<Checks, Failure> {
    let mut checks = Checks::default();
    let transcripts = dir.join("transcripts");
    let index = dir.join("index");
    let d = |p: &Path| display(p);
    let table = PriceTable::embedded();
    let all: Vec<_> = written.iter().flat_map(|w| &w.synth.messages).collect();

    outln!(
        "\n$ agentlog usage {} --timezone UTC --index-dir {}",
        d(&transcripts),
        d(&index)
    );
    let options = UsageOptions {
        open: OpenOptions {
            index_dir: Some(index.clone()),
            ..OpenOptions::default()
        },
        by: GroupBy::Day,
        timezone: jiff::tz::TimeZone::UTC,
        cost: CostMode::Auto,
        prices: table.clone(),
        ..UsageOptions::default()
    };
    let report = usage(std::slice::from_ref(&transcripts), &options, &|_, _| {});
    out!("{}", super::usage::human(&report));
    let (tokens, messages) = sum(&all);
    checks.expect("usage tokens", report.totals.usage, tokens);
    checks.expect("usage messages", report.totals.messages, messages);
    checks.expect("usage cost", report.cost.cost, cost(&all, &table));
    checks.expect("usage skipped", report.skipped.len(), 0);

    let main = written
        .first()
        .ok_or_else(|| Failure::new("internal", EXIT_FAILURE, "no transcript"))?;
    let input = dir.join("statusline-input.json");
    let given = format!(
        r#"{{"session_id":"demo","transcript_path":{},"cwd":"/home/you/shop","model":{{"id":"claude-opus-4-6","display_name":"Opus"}},"context_window":{{"context_window_size":200000}}}}"#,
        serde_json::to_string(&d(&main.path)).unwrap_or_default()
    );
    std::fs::write(&input, &given).map_err(io("cannot write the status-line input"))?;
    outln!(
        "\n$ agentlog statusline --index-dir {} < {}   (what Claude Code runs, with this JSON on stdin)",
        d(&index),
        d(&input)
    );
    let parsed = parse_status_input(given.as_bytes())
        .map_err(|e| Failure::new("internal", EXIT_FAILURE, e.to_string()))?;
    let line = statusline(
        &parsed,
        &StatusOptions {
            index_dir: Some(index.clone()),
            now: Some(now),
            // The demo's own check counts UTC days.
            timezone: Some(jiff::tz::TimeZone::UTC),
            prices: Some(table.clone()),
        },
    )?;
    outln!("{}", line.line());
    let mine: Vec<_> = main.synth.messages.iter().collect();
    let since: Vec<_> = mine
        .iter()
        .copied()
        .skip(mine.len() - main.synth.since_compaction)
        .collect();
    checks.expect(
        "statusline session tokens",
        line.session_total_tokens,
        sum(&mine).0.total(),
    );
    checks.expect(
        "statusline since compaction",
        line.since_compaction.tally.usage,
        sum(&since).0,
    );
    checks.expect(
        "statusline context",
        line.context_tokens,
        mine.last().map(|m| m.usage.prompt()),
    );
    let day_start = now.as_second().div_euclid(86_400) * 86_400;
    let project = main.path.parent();
    let today: Vec<_> = written
        .iter()
        .filter(|w| w.path.parent() == project)
        .flat_map(|w| &w.synth.messages)
        .filter(|m| m.time.as_second() >= day_start)
        .collect();
    checks.expect(
        "statusline today",
        line.today_total_tokens,
        sum(&today).0.total(),
    );
    checks.expect(
        "statusline session cost",
        line.session_cost_usd.map(|c| (c * 1e6).round()),
        cost(&mine, &table).map(|c| (c.dollars() * 1e6).round()),
    );

    let search_dir = dir.join("search-index");
    outln!(
        "\n$ agentlog search --transcripts --index-dir {} --limit {} {NEEDLE} {}",
        d(&search_dir),
        agentlog::search::MAX_LIMIT,
        d(&transcripts)
    );
    let mut search = TranscriptSearch::new(Some(search_dir), SearchConfig::default())?;
    let page = search.search(&TranscriptSearchRequest {
        query: NEEDLE.to_owned(),
        paths: vec![transcripts.clone()],
        limit: Some(agentlog::search::MAX_LIMIT),
        cursor: None,
        mode: MatchMode::Phrase,
    })?;
    let shown: Vec<_> = page.hits.iter().take(5).cloned().collect();
    super::search::print_transcript_hits(&shown, super::search::Highlight::for_stdout(), None);
    outln!("({} hits in all)", page.hits.len());
    let needles: u64 = written.iter().map(|w| w.synth.needles).sum();
    checks.expect("search hits", page.hits.len() as u64, needles);

    outln!(
        "\n$ agentlog transcript --index-dir {} {}",
        d(&index),
        d(&main.path)
    );
    let report = read_report(
        &main.path,
        &ReportOptions {
            open: OpenOptions {
                index_dir: Some(index),
                ..OpenOptions::default()
            },
            subagents: false,
        },
    )?;
    out!("{}", super::transcript::human(&report));
    checks.expect(
        "transcript boundaries",
        report.boundaries.len() as u64,
        main.synth.compactions,
    );
    checks.expect(
        "transcript lifetime",
        report.lifetime.tally.usage,
        sum(&mine).0,
    );
    checks.expect(
        "transcript since compaction",
        report.since_compaction.tally.usage,
        sum(&since).0,
    );
    Ok(checks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answers_agree_and_a_wrong_record_fails() {
        let dir = tempfile::tempdir().unwrap();
        let now = Timestamp::now();
        let Ok(written) = write_transcripts(dir.path(), now) else {
            panic!("cannot write the transcripts")
        };
        assert!(written.iter().any(|w| w.synth.compactions > 0));
        let Ok(checks) = show(dir.path(), &written, now) else {
            panic!("the demo failed")
        };
        assert!(checks.0.is_empty(), "{:?}", checks.0);
        // A record that says one reply less: every section that counts it disagrees.
        let mut wrong = written;
        wrong[0].synth.messages.pop();
        wrong[0].synth.since_compaction -= 1;
        let Ok(checks) = show(dir.path(), &wrong, now) else {
            panic!("the demo failed")
        };
        let Err(failure) = checks.finish() else {
            panic!("a wrong record was not noticed")
        };
        let message = failure.message;
        for section in [
            "usage tokens",
            "statusline session tokens",
            "transcript lifetime",
        ] {
            assert!(message.contains(section), "{message}");
        }
    }
}
