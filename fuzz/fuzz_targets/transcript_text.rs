//! Arbitrary lines through the text extraction of transcript search, in each format (the first
//! byte picks it): it never panics, and what it finds is a document the index can hold: a known
//! line type, text that is not empty and has no whitespace at either end, from a line that is
//! a JSON object. Whitespace around the line changes nothing.
#![no_main]

use agentlog::search::transcript_line_text;
use agentlog::transcript::Format;
use libfuzzer_sys::fuzz_target;

const KINDS: [&str; 13] = [
    "user",
    "assistant",
    "compacted",
    "message",
    "function_call",
    "custom_tool_call",
    "local_shell_call",
    "function_call_output",
    "custom_tool_call_output",
    "custom_message",
    "compaction",
    "branch_summary",
    "response_item",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let format = Format::ALL[usize::from(pick) % Format::ALL.len()];
    for line in rest.split(|b| *b == b'\n') {
        let found = transcript_line_text(format, line);
        if let Some(doc) = &found {
            assert!(KINDS.contains(&doc.kind.as_str()), "kind {:?}", doc.kind);
            assert!(!doc.text.is_empty());
            assert_eq!(doc.text.trim(), doc.text);
            assert!(matches!(
                serde_json::from_slice::<serde_json::Value>(line),
                Ok(serde_json::Value::Object(_))
            ));
        }
        let mut padded = b" \t".to_vec();
        padded.extend_from_slice(line);
        padded.push(b' ');
        assert_eq!(transcript_line_text(format, &padded), found);
    }
});
