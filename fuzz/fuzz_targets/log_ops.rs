//! A sequence of operations on one log and its index, redb-fuzzer style, with every tier
//! checked against the naive oracle after each operation.
//!
//! Operations: append lingtai-ish events (singly or in a batch) through `index::Writer`;
//! hand the writer arbitrary bytes (`append_json` must accept them iff they are one JSON
//! object, and write exactly the normalized line, else write nothing); append raw bytes or an
//! event with plain file I/O, as an external program would; append a torn fragment; truncate
//! the log; overwrite a byte of the log; corrupt a byte of the index file; delete the index;
//! commit, close, drop (without close) and reopen the writer. External mutations close the
//! writer first (it holds the log's lock and the index), as a real external program would have
//! to wait for it.
//!
//! After each operation: the open writer's `state()` equals the oracle; then every tier of
//! `current_generation_at` (index, reverse scan with the default and a 48-byte window, full scan;
//! expected molt counts None, 0, 1, the latest and its successor) answers as the oracle says,
//! the index tier through the read-only path while the writer is open. With no writer open,
//! `Index::open`'s state and `generations_at` (index and full scan) equal the oracle too, and
//! so do its type filters after an open that commits any tail (while no byte of the index was
//! corrupted by hand; after that, whatever they answer must be true of the log).
#![no_main]

use std::fs::OpenOptions;
use std::io::Write;
use std::time::Duration;

use agentlog::generation::{DEFAULT_REVERSE_SCAN_BYTES, Tier};
use agentlog::index::{CommitPolicy, IndexOptions, Writer, WriterOptions};
use agentlog::log::{LogPaths, SyncPolicy};
use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

#[path = "../common/mod.rs"]
mod common;
#[path = "../../tests/common/oracle.rs"]
mod oracle;

use oracle::Oracle;

const MAX_OPS: usize = 24;
const MAX_RAW: usize = 200;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Kind {
    Response,
    /// `llm_response` under the daemon's `event` key.
    ResponseAsEvent,
    Molt,
    Header,
    Other,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Tok {
    Missing,
    Int(u16),
    Big(u64),
    Float(u16, u8),
    Exp(u8),
    Str(u16),
    StrFrac(u16, u8),
    Neg(i16),
    Null,
    Bool,
    BadStr,
}

impl Tok {
    fn json(self) -> Option<String> {
        Some(match self {
            Tok::Missing => return None,
            Tok::Int(n) => n.to_string(),
            Tok::Big(n) => n.to_string(),
            Tok::Float(w, f) => format!("{w}.{f}"),
            Tok::Exp(e) => format!("1e{}", e % 20),
            Tok::Str(n) => format!("\"{n}\""),
            Tok::StrFrac(w, f) => format!("\"{w}.{f}\""),
            Tok::Neg(n) => format!("{}", -i32::from(n).abs() - 1),
            Tok::Null => "null".to_owned(),
            Tok::Bool => "true".to_owned(),
            Tok::BadStr => "\"12abc\"".to_owned(),
        })
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Molt {
    Missing,
    Int(u8),
    Neg,
    Float,
    Str,
    Null,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Init {
    Missing,
    Agent,
    System,
    Empty,
    Number,
}

#[derive(Arbitrary, Debug, Clone)]
struct Event {
    kind: Kind,
    tokens: [Tok; 4],
    molt: Molt,
    initiator: Init,
    /// Padding, so lines have various lengths (and cross the reverse-scan window).
    pad: u8,
}

impl Event {
    fn json(&self) -> String {
        let mut fields: Vec<String> = Vec::new();
        match self.kind {
            Kind::Response => fields.push(r#""type": "llm_response""#.to_owned()),
            Kind::ResponseAsEvent => fields.push(r#""event": "llm_response""#.to_owned()),
            Kind::Molt => fields.push(r#""type": "psyche_molt""#.to_owned()),
            Kind::Header => fields.push(r#""type": "session", "id": "s1""#.to_owned()),
            Kind::Other => fields.push(r#""type": "tool_call""#.to_owned()),
        }
        for (key, tok) in [
            "input_tokens",
            "output_tokens",
            "cached_tokens",
            "thinking_tokens",
        ]
        .iter()
        .zip(self.tokens)
        {
            if let Some(v) = tok.json() {
                fields.push(format!("\"{key}\": {v}"));
            }
        }
        let molt = match self.molt {
            Molt::Missing => None,
            Molt::Int(n) => Some((n % 8).to_string()),
            Molt::Neg => Some("-1".to_owned()),
            Molt::Float => Some("2.0".to_owned()),
            Molt::Str => Some("\"2\"".to_owned()),
            Molt::Null => Some("null".to_owned()),
        };
        if let Some(m) = molt {
            fields.push(format!("\"molt_count\": {m}"));
        }
        let init = match self.initiator {
            Init::Missing => None,
            Init::Agent => Some("\"agent\""),
            Init::System => Some("\"system\""),
            Init::Empty => Some("\"\""),
            Init::Number => Some("7"),
        };
        if let Some(i) = init {
            fields.push(format!("\"initiator\": {i}"));
        }
        if self.pad > 0 {
            fields.push(format!(
                "\"pad\": \"{}\"",
                "x".repeat(usize::from(self.pad % 96))
            ));
        }
        format!("{{{}}}", fields.join(", "))
    }
}

#[derive(Arbitrary, Debug)]
enum Op {
    Append(Event),
    AppendBatch(Vec<Event>),
    AppendJson(Vec<u8>),
    External(Vec<u8>),
    ExternalEvent(Event),
    Torn(Event, u8),
    Truncate(u16),
    Overwrite(u16, u8),
    CorruptIndex(u32, u8),
    DeleteIndex,
    Commit,
    CloseWriter,
    DropWriter,
    OpenWriter(u8),
}

struct World {
    paths: LogPaths,
    writer: Option<Writer>,
    commit_rows: usize,
    /// Whether a byte of the current index file was corrupted: damage no open checks for
    /// (a cleared type mask bit) may make a type filter miss an event
    /// (docs/FORMAT.md, "What the open check does not see").
    index_damaged: bool,
}

impl World {
    /// The open writer, opened first if needed (which terminates a torn fragment).
    fn open_writer(&mut self) -> &mut Writer {
        let options = WriterOptions {
            sync: SyncPolicy::None,
            index: IndexOptions::default(),
            commit: CommitPolicy {
                rows: self.commit_rows,
                bytes: 8 << 20,
                interval: Duration::from_hours(1),
            },
            index_wait: Duration::from_secs(5),
        };
        let paths = &self.paths;
        self.writer.get_or_insert_with(|| {
            Writer::open(paths, options).unwrap_or_else(|e| panic!("Writer::open failed: {e:?}"))
        })
    }

    fn close_writer(&mut self) {
        if let Some(w) = self.writer.take() {
            match w.close() {
                Ok(()) => {}
                Err(e) => panic!("Writer::close failed: {e:?}"),
            }
        }
    }

    fn log(&self) -> Vec<u8> {
        std::fs::read(&self.paths.log).unwrap_or_default()
    }

    fn append_external(&mut self, bytes: &[u8]) {
        self.close_writer();
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.paths.log)
            .unwrap();
        file.write_all(bytes).unwrap();
    }

    fn apply(&mut self, op: &Op) {
        match op {
            Op::Append(event) => {
                let line = event.json();
                if let Err(e) = self.open_writer().append_json(line.as_bytes()) {
                    panic!("append_json({line}) failed: {e:?}");
                }
            }
            Op::AppendBatch(events) => {
                let lines: Vec<String> = events.iter().take(8).map(Event::json).collect();
                let result = self.open_writer().append_batch_json(&lines);
                match result {
                    Ok(receipts) => assert_eq!(receipts.len(), lines.len(), "receipts"),
                    Err(e) => panic!("append_batch_json({lines:?}) failed: {e:?}"),
                }
            }
            Op::AppendJson(raw) => {
                let raw = &raw[..raw.len().min(MAX_RAW)];
                // Open first: opening terminates a torn fragment, which is not this append's.
                self.open_writer();
                let before = self.log();
                let result = self.open_writer().append_json(raw);
                let after = self.log();
                let trimmed = raw.trim_ascii();
                let is_object = !trimmed.is_empty()
                    && matches!(
                        serde_json::from_slice::<Value>(trimmed),
                        Ok(Value::Object(_))
                    );
                let shown = String::from_utf8_lossy(raw);
                match result {
                    Ok(_) => {
                        assert!(is_object, "append_json accepted a non-object {shown:?}");
                        let mut line: Vec<u8> = trimmed
                            .iter()
                            .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
                            .collect();
                        line.push(b'\n');
                        assert_eq!(
                            &after[..before.len().min(after.len())],
                            &before[..],
                            "append_json({shown:?}) changed earlier bytes"
                        );
                        assert_eq!(
                            &after[before.len()..],
                            &line[..],
                            "append_json({shown:?}) wrote"
                        );
                    }
                    Err(e) => {
                        assert!(
                            !is_object,
                            "append_json rejected an object {shown:?}: {e:?}"
                        );
                        assert_eq!(before, after, "rejected append_json({shown:?}) wrote bytes");
                    }
                }
            }
            Op::External(raw) => {
                let raw = raw[..raw.len().min(MAX_RAW)].to_vec();
                self.append_external(&raw);
            }
            Op::ExternalEvent(event) => {
                let line = format!("{}\n", event.json());
                self.append_external(line.as_bytes());
            }
            Op::Torn(event, cut) => {
                let line = event.json();
                let cut = usize::from(*cut) % line.len();
                self.append_external(&line.as_bytes()[..cut.max(1)]);
            }
            Op::Truncate(at) => {
                self.close_writer();
                let len = self.log().len() as u64;
                let at = u64::from(*at) % (len + 1);
                let file = OpenOptions::new()
                    .write(true)
                    .open(&self.paths.log)
                    .unwrap();
                file.set_len(at).unwrap();
            }
            Op::Overwrite(at, byte) => {
                self.close_writer();
                let mut log = self.log();
                if !log.is_empty() {
                    let at = usize::from(*at) % log.len();
                    log[at] = *byte;
                    // Rewrite in place (same inode), like an editor that writes back.
                    let mut file = OpenOptions::new()
                        .write(true)
                        .open(&self.paths.log)
                        .unwrap();
                    file.write_all(&log).unwrap();
                }
            }
            Op::CorruptIndex(at, byte) => {
                self.close_writer();
                if let Ok(mut index) = std::fs::read(&self.paths.index)
                    && !index.is_empty()
                {
                    let at = *at as usize % index.len();
                    index[at] ^= byte | 1;
                    std::fs::write(&self.paths.index, &index).unwrap();
                    self.index_damaged = true;
                }
            }
            Op::DeleteIndex => {
                self.close_writer();
                let _ = std::fs::remove_file(&self.paths.index);
                self.index_damaged = false;
            }
            Op::Commit => {
                if let Some(w) = self.writer.as_mut() {
                    match w.commit_index() {
                        Ok(()) => {}
                        Err(e) => panic!("commit_index failed: {e:?}"),
                    }
                }
            }
            Op::CloseWriter => self.close_writer(),
            Op::DropWriter => drop(self.writer.take()),
            Op::OpenWriter(rows) => {
                self.close_writer();
                self.commit_rows = usize::from(*rows % 8) + 1;
                self.open_writer();
            }
        }
    }

    /// Checks the writer's state and every tier against the oracle.
    fn check(&self, step: usize, op: &Op) {
        let log = self.log();
        let oracle = Oracle::of(&log);
        let options = IndexOptions::default();
        if let Some(w) = &self.writer {
            common::check_state(&format!("step {step} ({op:?}): writer"), w.state(), &oracle);
        }
        for expected in common::expectations(&oracle) {
            for (tier, window) in [
                (Tier::Index, 0),
                (Tier::ReverseScan, DEFAULT_REVERSE_SCAN_BYTES),
                (Tier::ReverseScan, 48),
                (Tier::FullScan, 0),
            ] {
                let request = common::request(tier, expected, false, window, &options);
                common::check_generation(&self.paths, &oracle, &request, false);
            }
        }
        if self.writer.is_none() {
            common::check_index_open(&self.paths, &oracle, &options);
            for tier in [Tier::Index, Tier::FullScan] {
                let request = common::request(tier, None, false, 0, &options);
                common::check_generations(&self.paths, &oracle, &request);
            }
            let committing = IndexOptions {
                max_memory_tail: 0,
                ..IndexOptions::default()
            };
            common::check_type_filters(&self.paths, &oracle, &committing, !self.index_damaged);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    common::install_panic_filter();
    let mut u = Unstructured::new(data);
    let mut ops = Vec::new();
    while ops.len() < MAX_OPS && !u.is_empty() {
        match Op::arbitrary(&mut u) {
            Ok(op) => ops.push(op),
            Err(_) => break,
        }
    }
    run(&ops);
});

fn run(ops: &[Op]) {
    if std::env::var_os("AGENTLOG_FUZZ_VERBOSE").is_some() {
        eprintln!("[agentlog-fuzz] ops: {ops:#?}");
    }
    let paths = common::paths();
    common::reset(&paths);
    // The agent's log exists (empty) before anything is appended.
    std::fs::write(&paths.log, b"").unwrap();
    let mut world = World {
        paths,
        writer: None,
        commit_rows: 4,
        index_damaged: false,
    };
    for (step, op) in ops.iter().enumerate() {
        world.apply(op);
        world.check(step, op);
    }
    world.close_writer();
    world.check(ops.len(), &Op::CloseWriter);
}
