//! Arbitrary bytes as Claude Code's status line input, and as the transcript whose context
//! the status line shows: parsing must never panic; an accepted input must be a JSON object
//! whose `transcript_path` is the non-empty string returned; the `statusline` call over the
//! bytes as a transcript must answer the context, session total and since-compaction usage of
//! one fold of its complete lines; and on the lines `serde_json` reads as plain objects the
//! context must be the naive oracle's (a forward scan: the latest main-chain assistant line's
//! prompt, 0 after a later compaction boundary).
#![no_main]

use agentlog::transcript::{
    Format, StatusInput, StatusOptions, fold_bytes, parse_status_input, statusline,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

#[path = "../common/transcripts.rs"]
mod common;
#[path = "../../tests/common/transcript_oracle.rs"]
mod oracle;

fuzz_target!(|data: &[u8]| {
    common::install_panic_filter();
    if let Ok(input) = parse_status_input(data) {
        let v: Value = serde_json::from_slice(data).expect("accepted input is JSON");
        let path = v
            .get("transcript_path")
            .and_then(Value::as_str)
            .expect("a transcript_path");
        assert!(!path.is_empty());
        assert_eq!(input.transcript_path.as_os_str(), path);
    }
    let dir = common::workdir().join("statusline");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let path = dir.join("t.jsonl");
    std::fs::write(&path, data).expect("write");
    let input = StatusInput {
        transcript_path: path,
        ..StatusInput::default()
    };
    let options = StatusOptions {
        index_dir: Some(dir.join("cache")),
        now: None,
        timezone: None,
        prices: None,
    };
    let line = statusline(&input, &options).expect("the status line of a readable file");
    let fold = fold_bytes(Format::ClaudeCode, data);
    let s = fold.summary();
    assert_eq!(line.context_tokens, s.context);
    assert_eq!(line.session_total_tokens, s.lifetime.usage.total());
    assert_eq!(line.since_compaction.tally, s.since_compaction());
    let plain = common::normalized(data);
    let folded = fold_bytes(Format::ClaudeCode, &plain);
    assert_eq!(
        folded.summary().context,
        oracle::expected(Format::ClaudeCode, &plain).context,
        "context of {:?}",
        String::from_utf8_lossy(&plain)
    );
});
