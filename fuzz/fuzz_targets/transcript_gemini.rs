//! Arbitrary lines through the Gemini CLI reader: folded across simulated catch-ups (the state
//! encoded as the index stores it and recalled between pieces, cuts anywhere, torn lines
//! included) it must equal one fold of the whole; the summary must hold together; and on the
//! lines `serde_json` reads as plain objects the answer must be the naive oracle's
//! (`tests/common/transcript_oracle.rs`). The same bytes as an older single-JSON session
//! (`session-*.json`): read as a document, never a panic; when it is read, its answer is the
//! oracle's on its messages as lines.
#![no_main]

use agentlog::transcript::{Format, OpenOptions, Transcript, TranscriptError};
use libfuzzer_sys::fuzz_target;

#[path = "../common/transcripts.rs"]
mod common;
#[path = "../../tests/common/transcript_oracle.rs"]
mod oracle;

fuzz_target!(|data: &[u8]| {
    common::check_reader(Format::Gemini, data);
    let dir = common::workdir();
    let path = dir.join("session-fuzz.json");
    std::fs::write(&path, data).expect("write the document");
    let options = OpenOptions {
        index_dir: Some(dir.join("cache")),
        load_dedup: true,
        ..OpenOptions::default()
    };
    match Transcript::open(&path, &options) {
        Ok(t) => {
            assert!(t.index.is_none(), "a document has no index");
            // The library's tolerant reader skips over fields it does not read without checking
            // them (a lone surrogate escape, a number out of f64's range): such a document has no
            // `serde_json::Value` for this oracle to read, so it is left out here.
            let Ok(doc) = serde_json::from_slice::<serde_json::Value>(data) else {
                return;
            };
            // The reader reads each message as the document spells it; the oracle reads it
            // written out again from a `Value`. They may differ by design where a message
            // repeats a key or holds an escape (which could spell a key), as on lines
            // (`common::normalized`): such a document is left unchecked.
            if !messages_read_alike(data) {
                return;
            }
            let mut lines = Vec::new();
            if let Some(messages) = doc.get("messages").and_then(|m| m.as_array()) {
                for m in messages {
                    lines.extend(serde_json::to_vec(m).expect("a value serializes"));
                    lines.push(b'\n');
                }
            }
            let observed = oracle::observed(&t.summary, t.buckets().expect("buckets loaded"));
            assert_eq!(
                observed,
                oracle::gemini(&lines),
                "the document against the oracle"
            );
        }
        Err(TranscriptError::NotADocument { .. }) => {}
        Err(e) => panic!("a document in a scratch directory: {e}"),
    }
});

/// Whether every message of the document is one the reader and the oracle read alike: no
/// repeated key, no backslash.
fn messages_read_alike(data: &[u8]) -> bool {
    use serde_json::value::RawValue;
    let Ok(top) = serde_json::from_slice::<std::collections::HashMap<String, &RawValue>>(data)
    else {
        return false;
    };
    let Some(messages) = top.get("messages") else {
        return true;
    };
    let Ok(messages) = serde_json::from_str::<Vec<&RawValue>>(messages.get()) else {
        return false;
    };
    messages
        .iter()
        .all(|m| !m.get().contains('\\') && !common::repeats_a_key(m.get().as_bytes()))
}
