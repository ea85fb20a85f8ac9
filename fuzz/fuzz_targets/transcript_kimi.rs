//! Arbitrary lines through the Kimi Code reader: folded across simulated catch-ups (the state
//! encoded as the index stores it and recalled between pieces, cuts anywhere, torn lines
//! included) it must equal one fold of the whole; the summary must hold together (generations
//! add up to the lifetime, every boundary at the start of its line); and on the lines `serde_json`
//! reads as plain objects the answer must be the naive oracle's (`tests/common/transcript_oracle.rs`).
#![no_main]

use agentlog::transcript::Format;
use libfuzzer_sys::fuzz_target;

#[path = "../common/transcripts.rs"]
mod common;
#[path = "../../tests/common/transcript_oracle.rs"]
mod oracle;

fuzz_target!(|data: &[u8]| {
    common::check_reader(Format::Kimi, data);
});
