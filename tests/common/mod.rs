//! Helpers shared by the integration tests: agent directories in temp dirs, event line
//! builders, and comparison of every tier against the naive oracle.
// Each test crate uses some of the helpers; a helper that fails fails the test calling it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod oracle;

use std::io::Write;
use std::path::Path;

use agentlog::generation::{
    GenerationError, GenerationRequest, Tier, current_generation_at, generations_at,
};
use agentlog::index::{Index, IndexError, IndexOptions};
use agentlog::log::LogPaths;
use oracle::{OTotals, Oracle};

/// An agent directory in a temp dir.
pub struct Agent {
    pub dir: tempfile::TempDir,
    pub paths: LogPaths,
}

impl Agent {
    pub fn new() -> Agent {
        let dir = tempfile::tempdir().expect("temp dir");
        let paths = LogPaths::for_agent_dir(dir.path());
        std::fs::create_dir_all(dir.path().join("logs")).expect("logs dir");
        Agent { dir, paths }
    }

    pub fn with_log(bytes: &[u8]) -> Agent {
        let agent = Agent::new();
        agent.write_log(bytes);
        agent
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write_log(&self, bytes: &[u8]) {
        std::fs::write(&self.paths.log, bytes).expect("write log");
    }

    /// Appends like an external program (`>>`), no agentlog involved.
    pub fn append_raw(&self, bytes: &[u8]) {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.paths.log)
            .expect("open log");
        file.write_all(bytes).expect("append");
    }

    pub fn log(&self) -> Vec<u8> {
        std::fs::read(&self.paths.log).expect("read log")
    }

    pub fn oracle(&self) -> Oracle {
        Oracle::of(&self.log())
    }

    pub fn open_index(&self) -> Index {
        Index::open(&self.paths, &IndexOptions::default()).expect("open index")
    }

    /// Opens as a reader that commits any new lines (`max_memory_tail: 0`) instead of folding
    /// a small tail in memory: for tests of what a committing open finds and does.
    pub fn open_index_committing(&self) -> Index {
        let options = IndexOptions {
            max_memory_tail: 0,
            ..IndexOptions::default()
        };
        Index::open(&self.paths, &options).expect("open index")
    }

    pub fn write_manifest(&self, molt_count: u64) {
        std::fs::write(
            self.path().join(".agent.json"),
            format!("{{\"molt_count\": {molt_count}}}"),
        )
        .expect("manifest");
    }
}

/// `{"type":"llm_response", ...}` as the lingtai unit tests build it.
pub fn token(ts: f64, input: u64, output: u64, cached: u64) -> String {
    format!(
        "{{\"type\": \"llm_response\", \"ts\": {ts}, \"input_tokens\": {input}, \"output_tokens\": {output}, \"thinking_tokens\": 10, \"cached_tokens\": {cached}}}\n"
    )
}

/// `{"type":"psyche_molt", ...}` with an initiator.
pub fn molt(ts: f64, molt_count: u64, initiator: &str) -> String {
    format!(
        "{{\"type\": \"psyche_molt\", \"ts\": {ts}, \"molt_count\": {molt_count}, \"initiator\": \"{initiator}\"}}\n"
    )
}

/// An agent-initiated molt as the kernel writes it: no `initiator` key.
pub fn agent_molt(ts: f64, molt_count: u64) -> String {
    format!(
        "{{\"type\": \"psyche_molt\", \"ts\": {ts}, \"molt_count\": {molt_count}, \"before_tokens\": 171234, \"after_tokens\": 9120}}\n"
    )
}

/// Runs the `agentlog` binary built for these tests, with its log output off (the binary is
/// built with the `cli` feature only).
#[cfg(feature = "cli")]
pub fn agentlog(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_agentlog"))
        .args(args)
        .env("AGENTLOG_LOG", "off")
        .output()
        .expect("run agentlog")
}

/// The one JSON document a command printed on stdout.
pub fn json(output: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

pub fn lines(parts: &[String]) -> Vec<u8> {
    parts.concat().into_bytes()
}

pub fn tier_request(tier: Tier, expected: Option<u64>) -> GenerationRequest {
    let mut request = GenerationRequest::latest();
    request.expected_molt_count = expected;
    request.start_tier = tier;
    request
}

/// Asks every tier (with the given request shape) and checks each answer against the oracle:
/// the same totals and boundary, or a mismatch exactly when the oracle cannot prove the label.
pub fn assert_tiers_match_oracle(paths: &LogPaths, expected: Option<u64>, reverse_bytes: u64) {
    let bytes = std::fs::read(&paths.log).expect("read log");
    let oracle = Oracle::of(&bytes);
    for tier in [Tier::Index, Tier::ReverseScan, Tier::FullScan] {
        let mut request = tier_request(tier, expected);
        request.reverse_scan_bytes = reverse_bytes;
        let answer = current_generation_at(paths, &request);
        match (oracle.expect(expected, false), answer) {
            (Ok(label), Ok(current)) => {
                assert_eq!(current.molt_count, label, "{tier}: label");
                assert_eq!(
                    OTotals::from(current.totals),
                    oracle.since(),
                    "{tier}: totals"
                );
                assert_eq!(
                    current.boundary.as_ref().map(|b| b.offset),
                    oracle.latest().map(|b| b.offset),
                    "{tier}: boundary offset"
                );
                assert_eq!(
                    current.boundary_initiator(),
                    oracle.latest().map_or("boot", |b| b.initiator.as_str()),
                    "{tier}: initiator"
                );
                assert!(
                    current.tier >= tier,
                    "{tier}: answered by a higher tier {}",
                    current.tier
                );
            }
            (
                Err(found),
                Err(GenerationError::MoltMismatch {
                    found: got,
                    expected: e,
                    ..
                }),
            ) => {
                assert_eq!(got, found, "{tier}: mismatch found");
                assert_eq!(Some(e), expected);
            }
            (want, got) => panic!("{tier}: oracle says {want:?}, engine says {got:?}"),
        }
    }
    let generations = generations_at(paths, &GenerationRequest::latest()).expect("generations");
    let got: Vec<OTotals> = generations
        .generations
        .iter()
        .map(|g| OTotals::from(g.totals))
        .collect();
    assert_eq!(got, oracle.generations, "generations");
    assert_eq!(
        OTotals::from(generations.lifetime),
        oracle.lifetime(),
        "lifetime"
    );
}

/// Checks an open index's facts against the oracle.
pub fn assert_index_matches_oracle(index: &Index, bytes: &[u8]) {
    let oracle = Oracle::of(bytes);
    let state = index.state();
    assert_eq!(
        OTotals::from(state.since_latest()),
        oracle.since(),
        "since latest"
    );
    assert_eq!(OTotals::from(state.totals), oracle.lifetime(), "lifetime");
    assert_eq!(
        usize::try_from(state.boundaries).unwrap(),
        oracle.boundaries.len(),
        "boundaries"
    );
    assert_eq!(state.events, oracle.events, "events");
    assert_eq!(
        state.diagnostics.invalid_lines, oracle.invalid_lines,
        "invalid lines"
    );
    assert_eq!(
        state.latest.as_ref().map(|l| l.boundary.offset),
        oracle.latest().map(|b| b.offset)
    );
    let boundaries = match index.boundaries() {
        Ok(boundaries) => boundaries,
        // Row damage is found only when a row is read (the O(1) open checks meta and the
        // latest boundary); the reader that found it rebuilt the index, so a second open
        // must answer, and equal the oracle.
        Err(IndexError::Damaged { .. }) => {
            let reopened = Index::open(index.paths(), &IndexOptions::default()).expect("reopen");
            assert_eq!(
                reopened.state().events,
                oracle.events,
                "events after rebuild"
            );
            reopened.boundaries().expect("boundaries after rebuild")
        }
        Err(e) => panic!("boundaries: {e}"),
    };
    let stored: Vec<u64> = boundaries.iter().map(|b| b.boundary.offset).collect();
    let expected: Vec<u64> = oracle.boundaries.iter().map(|b| b.offset).collect();
    assert_eq!(stored, expected, "stored boundaries");
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    assert_eq!(
        state.end, complete as u64,
        "watermark at the last complete line"
    );
}

/// Every row query of `index` (a build that covers the whole log, with no in-memory tail)
/// against the oracle: each event's length, seq, type and the totals before it, the first
/// event of every seq, the events of every type, and the last event before each line.
pub fn assert_rows_match_oracle(index: &Index, bytes: &[u8]) {
    let oracle = Oracle::of(bytes);
    assert_eq!(
        index.seq_offsets(0, u64::MAX).expect("seqs"),
        oracle.seq_offsets(),
        "seq offsets"
    );
    let mut previous = None;
    for event in &oracle.event_lines {
        let row = index
            .event_at(event.offset)
            .expect("event")
            .unwrap_or_else(|| panic!("no event row at {}", event.offset));
        assert_eq!(row.len, event.len, "len at {}", event.offset);
        assert_eq!(row.seq, event.seq, "seq at {}", event.offset);
        assert_eq!(
            index.type_name(row.type_id),
            event.kind.as_deref(),
            "type at {}",
            event.offset
        );
        assert_eq!(
            OTotals::from(index.totals_before(event.offset).expect("totals")),
            event.totals_before,
            "totals before {}",
            event.offset
        );
        assert_eq!(
            index
                .last_event_before(event.offset)
                .expect("last event before")
                .map(|(at, _)| at),
            previous,
            "the event before {}",
            event.offset
        );
        assert_eq!(
            index.offset_of_seq(event.seq).expect("seq"),
            oracle
                .seq_offsets()
                .iter()
                .find(|(seq, _)| *seq == event.seq)
                .map(|&(_, at)| at)
        );
        previous = Some(event.offset);
    }
    for kind in oracle.kinds() {
        let expected = oracle.offsets_of_type(kind);
        assert_eq!(
            index.offsets_of_type(kind, 0, usize::MAX).expect("types"),
            expected,
            "offsets of {kind}"
        );
        assert_eq!(
            index.last_offset_of_type(kind).expect("last of type"),
            expected.last().copied(),
            "last of {kind}"
        );
        let lines: Vec<(u64, Vec<u8>)> = oracle
            .event_lines
            .iter()
            .filter(|e| e.kind.as_deref() == Some(kind))
            .map(|e| {
                let at = usize::try_from(e.offset).unwrap();
                let len = usize::try_from(e.len).unwrap();
                (e.offset, bytes[at..at + len].to_vec())
            })
            .collect();
        assert_eq!(
            index.lines_of_type(kind, u64::MAX).expect("lines of type"),
            lines,
            "lines of {kind}"
        );
        if let Some(&(cut, _)) = lines.get(lines.len() / 2) {
            assert_eq!(
                index.lines_of_type(kind, cut).expect("lines of type"),
                lines[..lines.len() / 2].to_vec(),
                "lines of {kind} before {cut}"
            );
        }
        // From the middle, and a limit.
        if let Some(&middle) = expected.get(expected.len() / 2) {
            let from_middle: Vec<u64> = expected
                .iter()
                .copied()
                .filter(|&o| o >= middle)
                .take(3)
                .collect();
            assert_eq!(
                index.offsets_of_type(kind, middle, 3).expect("types"),
                from_middle,
                "offsets of {kind} from {middle}"
            );
        }
    }
}

/// Runs `f` and returns what it returns with the warnings agentlog logged on this thread
/// meanwhile: a healthy index logs none, so a rebuild that heals a bug in silence (the
/// writer and catch-ups rebuild an index they fail to write) still fails the test.
pub fn with_warnings<T>(f: impl FnOnce() -> T) -> (T, String) {
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("log buffer").extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let shared = Shared::default();
    let writer = shared.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let out = tracing::subscriber::with_default(subscriber, f);
    let logged = String::from_utf8_lossy(&shared.0.lock().expect("log buffer")).into_owned();
    (out, logged)
}

/// A lingtai-shaped log from the synthetic generator.
pub fn synthetic(responses: u64, seed: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let options = agentlog::synth::SynthOptions {
        seed,
        responses,
        molt_every: (20, 200),
        context_ceiling: 16_000,
        ..agentlog::synth::SynthOptions::default()
    };
    agentlog::synth::write_lingtai_log(&mut out, &options).expect("synth");
    out
}
