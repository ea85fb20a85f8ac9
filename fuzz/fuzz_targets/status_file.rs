//! Arbitrary bytes as the status file (`events.index.status`) beside a fixed small log (odd
//! token values, a blank and an invalid line, no torn tail, so a right file answers) and its
//! real index.
//!
//! Input: the first byte picks a mode (mod 3); the rest is
//! * mode 0: the whole status file, raw;
//! * mode 1: 4-byte patches applied to the real status file of the log (a 24-bit
//!   little-endian offset modulo the size and a byte to XOR in; a 0 byte truncates there);
//! * mode 2: the same patches, then the header's body length and checksum made right again,
//!   so the fuzzer reaches the body's decoding and the checks against the log.
//!
//! Checks: decoding never panics, and what it accepts encodes back to a file it decodes the
//! same; `current_generation_at` never panics and is answered by the index tier. In modes 0
//! and 1 a file that is not exactly the one written is refused, and the answer equals the
//! oracle's. Mode 2 can forge a record that passes its checks (totals changed, say): like the
//! index's own meta record, it is then believed, so only the absence of panics is checked.
#![no_main]

use std::sync::OnceLock;

use agentlog::generation::{GenerationRequest, Tier, current_generation_at};
use agentlog::index::status_file::{self, HEADER_BYTES, status_path};
use agentlog::index::{Index, IndexOptions};
use agentlog::log::LogPaths;
use agentlog::synth::{SynthOptions, write_lingtai_log};
use libfuzzer_sys::fuzz_target;

#[path = "../common/mod.rs"]
mod common;
#[path = "../../tests/common/oracle.rs"]
mod oracle;

use oracle::{OTotals, Oracle};

struct Fixture {
    log: Vec<u8>,
    oracle: Oracle,
    index: Vec<u8>,
    status: Vec<u8>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        common::install_panic_filter();
        let mut log = Vec::new();
        let options = SynthOptions {
            seed: 7,
            responses: 6,
            molt_every: (2, 3),
            ..SynthOptions::default()
        };
        write_lingtai_log(&mut log, &options).unwrap();
        log.extend_from_slice(b"not json at all\n\n");
        log.extend_from_slice(
            br#"{"type": "llm_response", "input_tokens": "12.5", "output_tokens": 3.9, "thinking_tokens": -4}"#,
        );
        log.push(b'\n');
        let paths = common::paths();
        common::reset(&paths);
        std::fs::write(&paths.log, &log).unwrap();
        Index::open(&paths, &IndexOptions::default()).expect("building the index");
        let index = std::fs::read(&paths.index).unwrap();
        let status = std::fs::read(status_path(&paths.index)).expect("a status file");
        let oracle = Oracle::of(&log);
        assert!(oracle.boundaries.len() >= 2, "the fixed log should molt");
        Fixture {
            log,
            oracle,
            index,
            status,
        }
    })
}

fn status_bytes(mode: u8, rest: &[u8], fixture: &Fixture) -> Vec<u8> {
    if mode == 0 {
        return rest.to_vec();
    }
    let mut bytes = fixture.status.clone();
    for patch in rest.chunks_exact(4) {
        if bytes.is_empty() {
            break;
        }
        let at = (u32::from_le_bytes([patch[0], patch[1], patch[2], 0]) as usize) % bytes.len();
        match patch[3] {
            0 => bytes.truncate(at),
            x => bytes[at] ^= x,
        }
    }
    if mode == 2 && bytes.len() >= HEADER_BYTES {
        let body = bytes[HEADER_BYTES..].to_vec();
        let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
        bytes[12..16].copy_from_slice(&len.to_le_bytes());
        bytes[16..20].copy_from_slice(&crc32fast::hash(&body).to_le_bytes());
    }
    bytes
}

fn answer(paths: &LogPaths) -> agentlog::generation::CurrentGeneration {
    current_generation_at(paths, &GenerationRequest::latest()).expect("an answer")
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let mode = selector % 3;
    let fixture = fixture();
    let paths = common::paths();
    common::reset(&paths);
    std::fs::write(&paths.log, &fixture.log).unwrap();
    std::fs::write(&paths.index, &fixture.index).unwrap();
    let bytes = status_bytes(mode, rest, fixture);
    let decoded = status_file::decode(&bytes);
    if let Ok(meta) = &decoded {
        let again = status_file::encode(meta).expect("an accepted record fits its file");
        assert_eq!(status_file::decode(&again).as_ref(), Ok(meta));
    }
    std::fs::write(status_path(&paths.index), &bytes).unwrap();
    let current = answer(&paths);
    assert_eq!(current.tier, Tier::Index);
    if mode == 2 {
        return;
    }
    if bytes != fixture.status {
        assert!(decoded.is_err(), "a changed status file was accepted");
    }
    let oracle = &fixture.oracle;
    assert_eq!(OTotals::from(current.totals), oracle.since(), "totals");
    assert_eq!(
        current.boundary.as_ref().map(|b| b.offset),
        oracle.latest().map(|b| b.offset),
        "boundary"
    );
    assert_eq!(
        current.diagnostics.invalid_lines, oracle.invalid_lines,
        "invalid lines"
    );
});
