//! Arbitrary bytes as a source's export state (`OUT/_agentlog/<host>/<key>.state`).
//!
//! Input: the first byte picks the source (below 3: a lingtai agent's log; else a Claude Code
//! transcript with a compaction, whose state carries a transcript's generations and sessions
//! row) and a mode (the byte modulo 3); the rest is
//! * mode 0: the whole state file, raw;
//! * mode 1: the state's body, behind a header with the right length and checksum, so serde
//!   and the consistency checks see it;
//! * mode 2: 4-byte patches to the body of the real state of the fixed log (a 24-bit
//!   little-endian offset modulo the body's size and a byte to XOR in; a 0 byte truncates
//!   there), header recomputed: a state that decodes but lies.
//!
//! Checks: `SourceState::decode` never panics, and what it accepts re-encodes to itself. An
//! export over a dataset whose state was replaced by the input never panics and succeeds;
//! afterwards no row is visible twice, and when the state was refused the dataset holds exactly
//! the log's events (a clean re-export of the source: for the transcript, one row per line).
#![no_main]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use agentlog::export::{ExportOptions, STATE_MAGIC, STATE_VERSION, SourceState, export};
use agentlog::synth::{SynthOptions, write_lingtai_log};
use libfuzzer_sys::fuzz_target;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;

struct Fixture {
    /// The agent directory or the transcript file exported.
    source: PathBuf,
    /// Keeps the source (and the transcript's index) alive.
    _dirs: Vec<tempfile::TempDir>,
    events: u64,
    /// The dataset of the first export of the log, copied for each input.
    dataset: tempfile::TempDir,
    /// The body of the state that export wrote.
    body: Vec<u8>,
}

const HOST: &str = "fuzz";

fn fixture(transcript: bool) -> &'static Fixture {
    static AGENT: OnceLock<Fixture> = OnceLock::new();
    static TRANSCRIPT: OnceLock<Fixture> = OnceLock::new();
    if transcript {
        TRANSCRIPT.get_or_init(transcript_fixture)
    } else {
        AGENT.get_or_init(agent_fixture)
    }
}

fn agent_fixture() -> Fixture {
    let agent = scratch();
    std::fs::create_dir_all(agent.path().join("logs")).unwrap();
    let mut log = Vec::new();
    let options = SynthOptions {
        seed: 5,
        responses: 8,
        molt_every: (2, 4),
        ..SynthOptions::default()
    };
    write_lingtai_log(&mut log, &options).unwrap();
    log.extend_from_slice(b"not json\n{\"type\": \"note\"}\n");
    std::fs::write(agent.path().join("logs/events.jsonl"), &log).unwrap();
    let source = agent.path().to_path_buf();
    first_export(source, vec![agent])
}

fn transcript_fixture() -> Fixture {
    let dir = scratch();
    let vendored = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/transcripts/claude-code/agentlogs-compact.jsonl");
    let source = dir.path().join("session.jsonl");
    std::fs::copy(vendored, &source).unwrap();
    first_export(source, vec![dir])
}

fn first_export(source: PathBuf, mut dirs: Vec<tempfile::TempDir>) -> Fixture {
    let dataset = scratch();
    let index = scratch();
    let report = export(
        std::slice::from_ref(&source),
        &options_for(dataset.path(), index.path()),
        &mut |_| {},
    )
    .unwrap();
    let bytes = std::fs::read(state_path(dataset.path())).unwrap();
    let body = bytes[bytes.iter().position(|&b| b == b'\n').unwrap() + 1..].to_vec();
    dirs.push(index);
    Fixture {
        source,
        _dirs: dirs,
        events: report.rows,
        dataset,
        body,
    }
}

/// A scratch directory, in memory where the machine has one: an export fsyncs every file and
/// directory it writes, which on a disk would cost most of each run.
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn options_for(out: &Path, index: &Path) -> ExportOptions {
    ExportOptions {
        host: HOST.to_owned(),
        transcript_index_dir: Some(index.to_path_buf()),
        ..ExportOptions::new(out)
    }
}

fn state_path(out: &Path) -> PathBuf {
    let dir = out.join("_agentlog").join(HOST);
    std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "state"))
        .unwrap()
}

fn with_header(body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "{STATE_MAGIC} {STATE_VERSION} {} {:08x}\n",
        body.len(),
        crc32fast::hash(body)
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn state_bytes(data: &[u8], fixture: &Fixture) -> Vec<u8> {
    let (mode, rest) = data.split_first().unwrap_or((&0, &[]));
    match mode % 3 {
        0 => rest.to_vec(),
        1 => with_header(rest),
        _ => {
            let mut body = fixture.body.clone();
            for patch in rest.chunks_exact(4) {
                if body.is_empty() {
                    break;
                }
                let at = (usize::from(patch[0])
                    | usize::from(patch[1]) << 8
                    | usize::from(patch[2]) << 16)
                    % body.len();
                if patch[3] == 0 {
                    body.truncate(at);
                } else {
                    body[at] ^= patch[3];
                }
            }
            with_header(&body)
        }
    }
}

/// Offsets of the event rows an engine would read.
fn visible_offsets(out: &Path) -> Vec<i64> {
    let mut offsets = Vec::new();
    let mut stack = vec![out.join("events")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                stack.push(path);
            } else if !name.starts_with('.') && name.ends_with(".parquet") {
                let reader =
                    SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
                for row in reader.get_row_iter(None).unwrap() {
                    for (name, field) in row.unwrap().into_columns() {
                        if let ("offset", Field::Long(v)) = (name.as_str(), field) {
                            offsets.push(v);
                        }
                    }
                }
            }
        }
    }
    offsets
}

fuzz_target!(|data: &[u8]| {
    let fixture = fixture(data.first().is_some_and(|&m| m % 6 >= 3));
    let bytes = state_bytes(data, fixture);
    let decoded = SourceState::decode(&bytes);
    if let Ok(state) = &decoded {
        assert_eq!(SourceState::decode(&state.encode()).as_ref(), Ok(state));
    }
    let out = scratch();
    let index = scratch();
    let sources = [fixture.source.clone()];
    copy_dir(fixture.dataset.path(), out.path());
    std::fs::write(state_path(out.path()), &bytes).unwrap();
    export(
        &sources,
        &options_for(out.path(), index.path()),
        &mut |_| {},
    )
    .unwrap();
    let offsets = visible_offsets(out.path());
    let unique: BTreeSet<i64> = offsets.iter().copied().collect();
    assert_eq!(unique.len(), offsets.len(), "a row is visible twice");
    if decoded.is_err() {
        assert_eq!(
            offsets.len() as u64,
            fixture.events,
            "a refused state re-exports the source whole"
        );
    }
});
