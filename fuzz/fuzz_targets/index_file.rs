//! Arbitrary bytes as the index file (`events.index.redb`) beside a fixed small valid log.
//!
//! Input: the first byte picks a mode; the rest is
//! * mode 0: the whole index file, raw;
//! * modes 1-3: patches applied to a real index file, so the fuzzer reaches redb's and
//!   agentlog's validation past the file header: 1 = the index of this very log (valid),
//!   2 = the index of a prefix of the log (catch-up), 3 = the index of another log (head
//!   changed). Each patch is 4 bytes: a 24-bit little-endian offset (modulo the file size, or
//!   modulo 4096 when the top bit of the 4th byte is set, to aim at headers) and a byte to XOR
//!   in; a patch whose byte is 0 truncates the file at its offset instead.
//!
//! Checks: `Index::open` never panics and succeeds with `Fresh`, `CaughtUp`, `Created`,
//! `Rebuilt` or, for an index a small tail behind the log, `ReadOnly { SmallTail }` (never
//! another `ReadOnly`: nothing else holds the index); its state (totals since the latest boundary, lifetime
//! totals, latest boundary, counts) and its boundary rows equal the oracle on the log; the
//! index tier of `current_generation_at` answers exactly as the oracle; an open that commits any
//! tail then equals the oracle too; and a second open of the index just written is Fresh and
//! still equals the oracle. Type filters on the index as it then stands answer only what is
//! true of the log (exactly the oracle's answer on an index built from scratch), or an error.
//! Before all that, `verify --deep`'s comparison with a rebuild runs on a read-only open of
//! the file as given: it never panics and leaves the file byte for byte as it was. After an
//! open that built the index from scratch, every table equals a rebuild.
#![no_main]

use std::sync::OnceLock;

use agentlog::generation::Tier;
use agentlog::index::{Index, IndexOptions, IndexOutcome, ReadOnlyReason};
use agentlog::log::LogPaths;
use agentlog::synth::{SynthOptions, write_lingtai_log};
use libfuzzer_sys::fuzz_target;

#[path = "../common/mod.rs"]
mod common;
#[path = "../../tests/common/oracle.rs"]
mod oracle;

use oracle::Oracle;

struct Fixture {
    log: Vec<u8>,
    oracle: Oracle,
    /// Index files: of this log, of a prefix of it, of another log.
    bases: [Vec<u8>; 3],
}

/// A small lingtai log with a few boundaries, odd token values, an invalid line, a blank line
/// and a torn tail.
fn fixed_log(seed: u64) -> Vec<u8> {
    let mut log = Vec::new();
    let options = SynthOptions {
        seed,
        responses: 6,
        molt_every: (2, 3),
        ..SynthOptions::default()
    };
    write_lingtai_log(&mut log, &options).unwrap();
    log.extend_from_slice(b"not json at all\n\n");
    log.extend_from_slice(
        br#"{"type": "llm_response", "input_tokens": "12.5", "output_tokens": 3.9, "cached_tokens": null, "thinking_tokens": -4}"#,
    );
    log.push(b'\n');
    log.extend_from_slice(br#"{"type": "llm_resp"#);
    log
}

/// Builds the index of `log` in a directory of its own and returns the index file's bytes.
fn index_of(name: &str, log: &[u8]) -> Vec<u8> {
    let dir = common::workdir().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let paths = LogPaths::for_log_file(dir.join("events.jsonl"));
    std::fs::write(&paths.log, log).unwrap();
    let _ = std::fs::remove_file(&paths.index);
    Index::open(&paths, &IndexOptions::default()).expect("building a base index");
    std::fs::read(&paths.index).unwrap()
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        common::install_panic_filter();
        let log = fixed_log(7);
        let oracle = Oracle::of(&log);
        assert!(oracle.boundaries.len() >= 2, "the fixed log should molt");
        let cut = log[..log.len() / 2]
            .iter()
            .rposition(|&b| b == b'\n')
            .unwrap()
            + 1;
        let bases = [
            index_of("base-same", &log),
            index_of("base-prefix", &log[..cut]),
            index_of("base-other", &fixed_log(8)),
        ];
        Fixture { log, oracle, bases }
    })
}

fn index_bytes(data: &[u8], fixture: &Fixture) -> Vec<u8> {
    let Some((&mode, rest)) = data.split_first() else {
        return Vec::new();
    };
    let mode = mode % 4;
    if mode == 0 {
        return rest.to_vec();
    }
    let mut bytes = fixture.bases[usize::from(mode - 1)].clone();
    for patch in rest.chunks_exact(4) {
        if bytes.is_empty() {
            break;
        }
        let raw = u32::from(patch[0]) | u32::from(patch[1]) << 8 | u32::from(patch[2]) << 16;
        let modulus = if patch[3] & 0x80 != 0 {
            bytes.len().min(4096)
        } else {
            bytes.len()
        };
        let offset = raw as usize % modulus;
        let value = patch[3] & 0x7f;
        if value == 0 {
            bytes.truncate(offset);
        } else {
            bytes[offset] ^= value;
        }
    }
    bytes
}

fuzz_target!(|data: &[u8]| {
    let fixture = fixture();
    let paths = common::paths();
    common::reset(&paths);
    std::fs::write(&paths.log, &fixture.log).unwrap();
    let index = index_bytes(data, fixture);
    std::fs::write(&paths.index, &index).unwrap();
    if let Some(dir) = std::env::var_os("AGENTLOG_FUZZ_DUMP") {
        // Keep the exact files of this input, to reproduce it without the fuzz harness.
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("events.jsonl"), &fixture.log).unwrap();
        std::fs::write(dir.join("events.index.redb"), &index).unwrap();
    }
    check(&paths, fixture);
});

fn check(paths: &LogPaths, fixture: &Fixture) {
    let paths = paths.clone();
    verify_read_only(&paths);
    let options = IndexOptions::default();

    let outcome = common::check_index_open(&paths, &fixture.oracle, &options);
    assert!(
        matches!(
            outcome,
            IndexOutcome::Fresh
                | IndexOutcome::CaughtUp { .. }
                | IndexOutcome::Created { .. }
                | IndexOutcome::Rebuilt { .. }
                | IndexOutcome::ReadOnly {
                    why: ReadOnlyReason::SmallTail,
                    ..
                }
        ),
        "unexpected outcome {outcome:?}"
    );
    for expected in common::expectations(&fixture.oracle) {
        let request = common::request(Tier::Index, expected, false, 1 << 20, &options);
        common::check_generation(&paths, &fixture.oracle, &request, true);
    }
    // Committing the small tail a reader may have folded in memory.
    let options = IndexOptions {
        max_memory_tail: 0,
        ..IndexOptions::default()
    };
    let committed = common::check_index_open(&paths, &fixture.oracle, &options);
    assert!(
        matches!(
            committed,
            IndexOutcome::Fresh | IndexOutcome::CaughtUp { .. } | IndexOutcome::Rebuilt { .. }
        ),
        "unexpected outcome {committed:?} after {outcome:?}"
    );
    let mut again = common::check_index_open(&paths, &fixture.oracle, &options);
    if matches!(again, IndexOutcome::Rebuilt { .. })
        && matches!(committed, IndexOutcome::CaughtUp { .. })
    {
        // A catch-up wrote on top of damage no open had seen (e.g. a flipped key, which no row
        // checksum covers), and the structure check after it saw it: rebuilt once, as a
        // query's open would have done in the flow before small tails were folded in memory.
        again = common::check_index_open(&paths, &fixture.oracle, &options);
    }
    assert_eq!(
        again,
        IndexOutcome::Fresh,
        "second open after {outcome:?}, {committed:?}"
    );
    let rebuilt = |o: &IndexOutcome| {
        matches!(
            o,
            IndexOutcome::Created { .. } | IndexOutcome::Rebuilt { .. }
        )
    };
    let exact = rebuilt(&outcome) || rebuilt(&committed);
    common::check_type_filters(&paths, &fixture.oracle, &options, exact);
    if rebuilt(&outcome) {
        // Nothing of the damaged file survived: the index is exactly a rebuild.
        let index = Index::open(&paths, &options).expect("reopen");
        for table in index
            .compare_with_rebuild()
            .expect("compare with a rebuild")
        {
            assert!(table.matches(), "{table:?} after {outcome:?}");
        }
    }
}

/// What `verify --deep` does with the file as given: a read-only open and, if it opens, the
/// comparison of every table with a rebuild. Whatever it finds, it writes nothing.
fn verify_read_only(paths: &LogPaths) {
    let before = std::fs::read(&paths.index).unwrap();
    let options = IndexOptions {
        read_only: true,
        ..IndexOptions::default()
    };
    if let Ok(index) = Index::open(paths, &options) {
        let _ = index.compare_with_rebuild();
    }
    let after = std::fs::read(&paths.index).unwrap();
    assert!(before == after, "a read-only comparison changed the index");
}
