//! Arbitrary bytes as a transcript's index file in the cache directory, beside a fixed small
//! transcript of each format.
//!
//! Input: the first byte picks the format (mod 3) and a mode (byte / 3 mod 4); the rest is
//! * mode 0: the whole index file, raw;
//! * modes 1-3: patches applied to a real index file, so the fuzzer reaches redb's and
//!   agentlog's validation past the file header: 1 = the index of this very transcript,
//!   2 = the index of a prefix of it (a catch-up follows), 3 = the index of another
//!   transcript. Each patch is 4 bytes: a 24-bit little-endian offset (modulo the file size)
//!   and a byte to XOR in; a patch whose byte is 0 truncates the file at its offset instead.
//!
//! Checks: `Transcript::open` never panics and answers with `Fresh`, `CaughtUp`, `Created` or
//! `Rebuilt` (nothing else holds the index, and it can be written). An answer from a new or
//! rebuilt index equals one fold of the transcript, and so do its rows (read back with
//! `load_dedup`); any other answer does too, or else the deep check (`Transcript::verify`)
//! says the index is not valid, so a wrong answer is never invisible. A second open after a
//! rebuild is Fresh and equal. The rows of a damaged file are not iterated: redb can loop
//! forever iterating a tree whose pages were damaged into a cycle.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use agentlog::index::IndexOutcome;
use agentlog::transcript::{Format, OpenOptions, Transcript, fold_at_once, index_file};
use libfuzzer_sys::fuzz_target;

#[path = "../common/transcripts.rs"]
mod common;
#[path = "../../tests/common/transcript_gen.rs"]
mod generate;
#[path = "../../tests/common/transcript_oracle.rs"]
mod oracle;

struct Fixture {
    transcript: PathBuf,
    bytes: Vec<u8>,
    /// Index files: of this transcript, of a prefix of it, of another transcript.
    bases: [Vec<u8>; 3],
}

fn cache() -> PathBuf {
    common::workdir().join("cache")
}

fn options(format: Format) -> OpenOptions {
    OpenOptions {
        format: Some(format),
        index_dir: Some(cache()),
        repair_budget: std::time::Duration::from_millis(200),
        ..OpenOptions::default()
    }
}

/// Builds a real index of `bytes` at `transcript`'s index path and returns its bytes.
fn index_of(format: Format, transcript: &PathBuf, bytes: &[u8]) -> Vec<u8> {
    std::fs::write(transcript, bytes).unwrap();
    let index = index_file(&cache(), &std::fs::canonicalize(transcript).unwrap());
    let _ = std::fs::remove_file(&index);
    Transcript::open(transcript, &options(format)).unwrap();
    std::fs::read(&index).unwrap()
}

/// The formats whose transcripts are lines (`OpenCode` keeps a database, not lines).
fn line_formats() -> Vec<Format> {
    Format::ALL.into_iter().filter(|f| f.is_lines()).collect()
}

fn fixture(format: Format) -> &'static Fixture {
    static FIXTURES: OnceLock<Vec<Fixture>> = OnceLock::new();
    let all = FIXTURES.get_or_init(|| {
        line_formats()
            .into_iter()
            .map(|format| {
                let dir = common::workdir().join(format.name());
                std::fs::create_dir_all(&dir).unwrap();
                let transcript = dir.join("session.jsonl");
                let bytes = generate::transcript(format, 7, 30);
                let cut = bytes[..bytes.len() * 2 / 3]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .unwrap()
                    + 1;
                let prefix = index_of(format, &transcript, &bytes[..cut]);
                let other = index_of(format, &transcript, &generate::transcript(format, 8, 12));
                let own = index_of(format, &transcript, &bytes);
                Fixture {
                    transcript,
                    bytes,
                    bases: [own, prefix, other],
                }
            })
            .collect()
    });
    let i = line_formats()
        .iter()
        .position(|&f| f == format)
        .unwrap_or(0);
    &all[i]
}

fuzz_target!(|data: &[u8]| {
    common::install_panic_filter();
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let formats = line_formats();
    let format = formats[usize::from(selector) % formats.len()];
    let mode = (selector / 3) % 4;
    let fixture = fixture(format);
    let file = match mode {
        0 => rest.to_vec(),
        m => {
            let mut file = fixture.bases[usize::from(m - 1)].clone();
            for patch in rest.chunks_exact(4) {
                if file.is_empty() {
                    break;
                }
                let at =
                    (u32::from_le_bytes([patch[0], patch[1], patch[2], 0]) as usize) % file.len();
                match patch[3] {
                    0 => file.truncate(at),
                    x => file[at] ^= x,
                }
            }
            file
        }
    };
    let index = index_file(
        &cache(),
        &std::fs::canonicalize(&fixture.transcript).unwrap(),
    );
    std::fs::write(&fixture.transcript, &fixture.bytes).unwrap();
    std::fs::write(&index, &file).unwrap();
    let _ = std::fs::remove_file(format!("{}.unsynced", index.display()));
    let expected = fold_at_once(format, &fixture.bytes);
    let t =
        Transcript::open(&fixture.transcript, &options(format)).expect("the transcript is fine");
    let answer_right = t.summary == expected.summary;
    match &t.outcome {
        IndexOutcome::Created { .. } | IndexOutcome::Rebuilt { .. } => {
            assert!(answer_right, "a fresh fold is wrong: {}", t.outcome);
            let rows = OpenOptions {
                load_dedup: true,
                ..options(format)
            };
            let again = Transcript::open(&fixture.transcript, &rows).unwrap();
            assert_eq!(again.outcome, IndexOutcome::Fresh);
            assert_eq!(again.summary, expected.summary);
            assert_eq!(again.buckets(), Some(expected.buckets.clone()));
        }
        IndexOutcome::Fresh | IndexOutcome::CaughtUp { .. } => {
            if !answer_right {
                let check = Transcript::verify(&fixture.transcript, &options(format)).unwrap();
                assert!(
                    !check.is_valid(),
                    "a wrong answer the deep check calls valid: {}",
                    t.outcome
                );
            }
        }
        other => panic!("unexpected outcome {other}"),
    }
});
