use super::*;
use crate::event::Profile;
use proptest::prelude::{Just, Strategy, any, prop_oneof};

fn both(line: &str) {
    let extractor = Extractor::new(Profile::lingtai());
    let serde = extractor.extract_with_serde(line.as_bytes());
    let fast = extract(&extractor, line.as_bytes(), None);
    if let Some(fast) = &fast {
        assert_eq!(Ok(fast), serde.as_ref(), "{line:?}");
    }
    assert_eq!(extractor.extract(line.as_bytes()), serde, "{line:?}");
}

fn takes_fast_path(line: &str) -> bool {
    extract(&Extractor::new(Profile::lingtai()), line.as_bytes(), None).is_some()
}

#[test]
fn ordinary_lines_take_the_fast_path_and_agree() {
    for line in [
        r#"{"type": "llm_response", "ts": 1786000004.512, "kernel_runtime": {"version": "0.19.5", "list": [1, -2.5e-3, true, false, null, {}, []]}, "input_tokens": 48213, "output_tokens": "912", "thinking_tokens": 3.9, "cached_tokens": null}"#,
        r#"{"type":"psyche_molt","molt_count":4,"before_tokens":171234,"after_tokens":9120,"initiator":"system"}"#,
        r#"  {"event":"daemon_start","ts":"2026-08-08T09:00:00Z","note":"tab\t and \"quotes\" and \u00e9 and é"} "#,
        r#"{"type":"x","time":1786000000500,"seq":7,"seq":-1}"#,
        r#"{"type":"a","type":1,"event":"b"}"#,
        r#"{"type":"x","initiator":"\u0041gent","molt_count":0}"#,
        "{}",
        "{\"type\":\"x\"}\r",
        // Plain numbers and strings, read without serde_json, beside ones just past the limits.
        r#"{"ts":1786000005.962,"input_tokens":9067,"seq":0,"initiator":"agent"}"#,
        r#"{"ts":123456789012345.6,"time":12345678901234.5,"input_tokens":18446744073709551615}"#,
        r#"{"ts":0.000000000000001,"output_tokens":9999999999999999999,"molt_count":10000000000000000000}"#,
        r#"{"ts":0.1,"time":9007199254740993.0,"cached_tokens":"912","thinking_tokens":3.0}"#,
        // Whitespace other than lingtai's `": "` and `", "`, around every separator.
        r#"{"molt_count" : 0,"ts" :1.5 , "seq":  7,"type"  :  "x"  ,  "initiator":"a" }"#,
        "{\"type\"\t:\r\n\"x\",\n\"input_tokens\":\t[ 1 ,2 ] , \"o\": { \"a\" : 1 } }",
    ] {
        assert!(takes_fast_path(line), "{line}");
        both(line);
    }
    // Strings that end at every offset of a word and run across words, with a non-ASCII
    // character or an escape at each position in some of them.
    for pad in 0..24 {
        for len in [0, 1, 7, 8, 9, 15, 16, 17, 200, 1500] {
            let text = "x".repeat(len);
            let line = format!(r#"{{"p":"{}","type":"{text}","ts":1.5}}"#, "a".repeat(pad));
            assert!(takes_fast_path(&line), "{line}");
            both(&line);
            let line = format!(
                r#"{{"p":"{}é","type":"{text}\n","ts":1.5}}"#,
                "a".repeat(pad)
            );
            assert!(takes_fast_path(&line), "{line}");
            both(&line);
        }
    }
}

#[test]
fn doubtful_lines_fall_back_and_still_agree() {
    for line in [
        r#"{"typ\u0065":"llm_response"}"#,
        r#"{"a":"\ud83d\ude00"}"#,
        r#"{"a":"\ud800"}"#,
        r#"{"a":1e400}"#,
        r#"{"a":1e299}"#,
        r#"{"a":12345e296}"#,
        r#"{"a":1e0001}"#,
        "{\"a\":\"\u{1}\"}",
        "{\"a\":1,}",
        "{\"a\":01}",
        "{\"a\":1.}",
        "{\"a\":-}",
        "{\"a\":tru}",
        "{\"a\" 1}",
        "{} {}",
        "[1]",
        "\u{c}{}",
        "",
        "  ",
        "{\"type\":",
    ] {
        assert!(!takes_fast_path(line), "{line}");
        both(line);
    }
    // Invalid UTF-8 in a string, in the first block and in later ones, and outside strings.
    let extractor = Extractor::new(Profile::lingtai());
    for pad in [0, 5, 8, 60, 64, 200, 1500] {
        for bad in [&b"\xff"[..], b"\xc3", b"\xed\xa0\x80", b"\xe9t\xc3\xa9"] {
            let mut line = format!(r#"{{"type":"x","p":"{}"#, "a".repeat(pad)).into_bytes();
            line.extend_from_slice(bad);
            line.extend_from_slice(br#"","ts":1}"#);
            assert_eq!(extract(&extractor, &line, None), None, "{line:?}");
            let expected = Err(super::super::LineProblem::NotUtf8);
            assert_eq!(extractor.extract(&line), expected, "{line:?}");
        }
    }
    let deep = format!("{{\"a\":{}{}}}", "[".repeat(70), "]".repeat(70));
    assert!(!takes_fast_path(&deep));
    both(&deep);
    let shallow = format!("{{\"a\":{}{}}}", "[".repeat(60), "]".repeat(60));
    assert!(takes_fast_path(&shallow));
    both(&shallow);
}

#[test]
fn string_stops_are_found_in_every_lane() {
    // Every byte value in every lane of a word, after plain bytes and with a stop after it
    // (a borrow from a lower lane must not hide or fake a stop).
    for at in 0..8 {
        for byte in 0..=u8::MAX {
            let mut bytes = [b'a'; 16];
            bytes[at] = byte;
            bytes[15] = b'"';
            let is_stop = byte == b'"' || byte == b'\\' || byte < 0x20;
            let mut cursor = Cursor::new(&bytes);
            let expected = if is_stop { at } else { 15 };
            assert_eq!(cursor.next_stop(0), Some(expected), "{byte:#x} at {at}");
            assert_eq!(cursor.saw_non_ascii(), byte >= 0x80, "{byte:#x} at {at}");
        }
    }
}

#[test]
fn strings_end_at_every_position_and_block_boundary() {
    for len in 1..=40 {
        let starts = |at: usize| [0, at.saturating_sub(9), at.saturating_sub(1), at];
        for at in 0..len {
            let mut bytes = vec![b'a'; len];
            bytes[at] = b'"';
            for from in starts(at) {
                let mut cursor = Cursor::new(&bytes);
                assert_eq!(
                    cursor.string(from),
                    Some((at, false)),
                    "\" at {at} of {len}"
                );
            }
            for stop in [0x00, 0x1f, b'\n'] {
                bytes[at] = stop;
                let mut cursor = Cursor::new(&bytes);
                assert_eq!(cursor.string(at.saturating_sub(1)), None, "{stop} at {at}");
            }
            // An escaped quote does not end the string; the one after it does.
            if at + 2 < len {
                bytes[at] = b'\\';
                bytes[at + 1] = b'"';
                bytes[len - 1] = b'"';
                for from in starts(at) {
                    let mut cursor = Cursor::new(&bytes);
                    let end = if len - 1 == at + 1 {
                        None
                    } else {
                        Some((len - 1, true))
                    };
                    assert_eq!(cursor.string(from), end, "\\\" at {at} of {len}");
                }
            }
            // No closing quote at all.
            let mut cursor = Cursor::new(&bytes[..at]);
            assert_eq!(cursor.string(0), None, "unclosed, {at}");
        }
    }
    // Bytes that look close to a stop are not stops: 0x20, 0x7f, and non-ASCII ones whose
    // low seven bits are a stop's (0xa2, 0xdc, 0x80-0x9f).
    let mut bytes = [0x20, 0x7f, 0xa2, 0xdc, 0x80, 0x9f, 0x5b, 0x23].repeat(20);
    bytes.push(b'"');
    let mut cursor = Cursor::new(&bytes);
    assert_eq!(cursor.string(0), Some((160, false)));
    assert!(cursor.saw_non_ascii());
}

/// A JSON value as text, from pieces chosen to sit on the fast path's edges: escapes,
/// surrogates, control bytes, number shapes near its limits, odd whitespace.
fn json_value() -> impl Strategy<Value = String> + Clone {
    let string_piece = prop_oneof![
        60 => "[a-z ]{0,12}",
        // Long runs, so that strings cross 64-byte blocks (and, rarely, a 1 KiB window).
        6 => "[a-z]{40,140}",
        1 => "[a-z]{900,1100}",
        3 => Just("\\\"".to_owned()),
        3 => Just("\\\\".to_owned()),
        3 => Just("\\n\\t\\/".to_owned()),
        3 => Just("\\u00e9".to_owned()),
        3 => Just("\\ud83d\\ude00".to_owned()),
        3 => Just("é€😀".to_owned()),
        1 => Just("\\ud800".to_owned()),
        1 => Just("\\udc00".to_owned()),
        1 => Just("\\x".to_owned()),
        1 => Just("\t".to_owned()),
        1 => Just("\u{1}".to_owned()),
    ];
    let string = proptest::collection::vec(string_piece, 0..4)
        .prop_map(|pieces| format!("\"{}\"", pieces.concat()));
    let number = prop_oneof![
        8 => any::<i64>().prop_map(|n| n.to_string()),
        8 => any::<u64>().prop_map(|n| n.to_string()),
        8 => any::<f64>().prop_map(|f| format!("{f:e}")),
        4 => (0u32..400, -400i32..400).prop_map(|(m, e)| format!("{m}e{e}")),
        2 => (1usize..330).prop_map(|n| "9".repeat(n)),
        2 => (1usize..330).prop_map(|n| format!("0.{}", "1".repeat(n))),
        // Plain decimals on both sides of `PLAIN_DECIMAL_DIGITS`, as timestamps look.
        8 => (any::<u64>(), 1usize..20, 0usize..20).prop_map(|(digits, whole, places)| {
            let digits = format!("{digits:020}");
            let whole = digits[..whole].trim_start_matches('0');
            let whole = if whole.is_empty() { "0" } else { whole };
            format!("{whole}.{}", &digits[20 - places.max(1)..])
        }),
        2 => Just("-0".to_owned()),
        1 => Just("01".to_owned()),
        1 => Just("1.".to_owned()),
        1 => Just("1e0005".to_owned()),
        1 => Just("-".to_owned()),
    ];
    let leaf = prop_oneof![
        4 => string.clone(),
        4 => number,
        1 => prop_oneof![
            6 => Just("true"), 6 => Just("false"), 6 => Just("null"), 1 => Just("nul"), 1 => Just("True")
        ]
        .prop_map(str::to_owned),
    ];
    leaf.prop_recursive(4, 32, 6, move |inner| {
        let key = prop_oneof![
            3 => prop_oneof![
                Just("type"), Just("event"), Just("ts"), Just("time"), Just("seq"),
                Just("input_tokens"), Just("output_tokens"), Just("cached_tokens"),
                Just("thinking_tokens"), Just("molt_count"), Just("initiator"),
                Just("before_tokens"), Just("after_tokens"), Just("other"),
            ]
            .prop_map(|k| format!("\"{k}\"")),
            1 => string.clone(),
        ];
        let ws = prop_oneof![5 => Just(""), 5 => Just(" "), 2 => Just("\t"), 2 => Just("\r\n"), 1 => Just("\u{c}")];
        prop_oneof![
            proptest::collection::vec((key, ws.clone(), inner.clone()), 0..6).prop_map(
                |members| {
                    let body: Vec<String> = members
                        .into_iter()
                        .map(|(k, w, v)| format!("{k}{w}:{w}{v}"))
                        .collect();
                    format!("{{{}}}", body.join(", "))
                }
            ),
            proptest::collection::vec(inner, 0..5)
                .prop_map(|items| format!("[{}]", items.join(","))),
        ]
    })
}

/// A top-level member of a line, under an index key or another: `", "` or another comma
/// before it, then the key, a colon and a value.
fn json_member() -> impl Strategy<Value = String> + Clone {
    let key = prop_oneof![
        Just("type"),
        Just("event"),
        Just("ts"),
        Just("time"),
        Just("seq"),
        Just("input_tokens"),
        Just("output_tokens"),
        Just("cached_tokens"),
        Just("thinking_tokens"),
        Just("molt_count"),
        Just("initiator"),
        Just("before_tokens"),
        Just("after_tokens"),
        Just("other"),
        Just("other"),
        Just("typ\\u0065"),
    ];
    // The separators: mostly lingtai's, sometimes any JSON whitespace around them.
    let colon = prop_oneof![6 => Just(": "), 2 => Just(":"), 1 => Just(" :  "), 1 => Just("\t:\n")];
    let comma =
        prop_oneof![6 => Just(", "), 2 => Just(","), 1 => Just(" ,  "), 1 => Just("\r\n,\t")];
    (key, colon, json_value(), comma)
        .prop_map(|(key, colon, value, comma)| format!("{comma}\"{key}\"{colon}{value}"))
}

fn json_whitespace() -> impl Strategy<Value = &'static str> + Clone {
    prop_oneof![5 => Just(""), 5 => Just(" "), 2 => Just("\n"), 1 => Just("\u{c}")]
}

/// A line: an object (the usual case) of such values under index keys and others.
fn json_line() -> impl Strategy<Value = String> {
    let ws = json_whitespace();
    // A first member of any length moves everything after it across block boundaries.
    let pad = (0usize..80).prop_map(|n| format!("\"pad\": \"{}\"", "p".repeat(n)));
    prop_oneof![
        9 => (pad, proptest::collection::vec(json_member(), 0..8), ws.clone(), ws).prop_map(
            |(pad, members, lead, trail)| format!("{lead}{{{pad}{}}}{trail}", members.concat())
        ),
        1 => json_value(),
    ]
}

/// Lines drawn from a few members, as a runtime's lines repeat its envelope: each line is
/// a `{`, some of the members in some order (the first without its comma), and a `}`, and
/// sometimes one byte of it is changed.
fn repetitive_lines() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let pool = proptest::collection::vec(json_member(), 1..8);
    let picks = proptest::collection::vec(
        (
            proptest::collection::vec(any::<proptest::sample::Index>(), 0..10),
            json_whitespace(),
            proptest::option::weighted(0.15, (any::<proptest::sample::Index>(), any::<u8>())),
        ),
        1..12,
    );
    (pool, picks).prop_map(|(pool, picks)| {
        picks
            .into_iter()
            .map(|(members, lead, edit)| {
                let mut body = String::new();
                for (n, pick) in members.iter().enumerate() {
                    let member = pick.get(&pool);
                    let member = if n == 0 {
                        // The first member has no comma before it.
                        member.trim_start_matches([' ', ',', '\r', '\n', '\t'])
                    } else {
                        member
                    };
                    body.push_str(member);
                }
                let mut line = format!("{lead}{{{body}}}").into_bytes();
                if let Some((at, byte)) = edit {
                    let i = at.index(line.len());
                    line[i] = byte;
                }
                line
            })
            .collect()
    })
}

/// Lingtai's shapes, as the kernel writes them, and lines that differ from
/// them in one place each: a changed envelope value, an index key inside the envelope, a
/// non-ASCII value, invalid UTF-8, a broken member, a missing comma.
fn lingtai_sequence() -> Vec<String> {
    let envelope = r#""address": "agent-alice", "agent_name": "alice", "ts": TS, "kernel_version": "0.19.5", "kernel_runtime_stamp": "0.19.5", "kernel_runtime": {"version": "0.19.5", "stamp": "0.19.5", "mode": "package", "source": "package", "installed_version": "0.19.5"}"#;
    let line = |ty: &str, ts: &str, rest: &str| {
        format!(
            r#"{{"type": "{ty}", {}{rest}}}"#,
            envelope.replace("TS", ts)
        )
    };
    vec![
        line(
            "llm_call",
            "1786000000.01",
            r#", "model": "gpt-5.5", "api_call_id": "api_3f9c2a1b7d4e""#,
        ),
        line(
            "llm_response",
            "1786000004.512",
            r#", "input_tokens": 48213, "output_tokens": 912, "thinking_tokens": 384, "cached_tokens": 45056, "estimated": false"#,
        ),
        line(
            "llm_response",
            "1786000005.5",
            r#", "input_tokens": 100, "output_tokens": 2, "thinking_tokens": 0, "cached_tokens": 1, "estimated": false"#,
        ),
        line(
            "psyche_molt",
            "1786000060.25",
            r#", "before_tokens": 171234, "after_tokens": 9120, "molt_count": 4"#,
        ),
        line("tool_call", "1786000061", r#", "tool": "grep""#),
        line("tool_call", "1786000062", r#", "tool": "grep""#),
        line(
            "tool_call",
            "1786000062",
            r#", "tool": "grep", "input_tokens": 7"#,
        ),
        line("tool_call", "1786000062", r#", "tool": "grép""#),
        line("tool_call", "1786000062", r#", "tool": "grép""#),
        line("tool_call", "1786000062", r#", "tool": "grep""#).replace(r#"alice""#, r#"alicé""#),
        line("tool_call", "1786000062", r#", "tool": "grep""#),
        line("tool_call", "1786000063", r#", "tool": "grep""#).replace(r#""mode""#, r#""seq""#),
        line("tool_call", "1786000063", r#", "tool": "grep""#).replace("agent-alice", "agent-bob"),
        line("tool_call", "1786000063", r#", "tool": "grep""#).replace(
            r#""0.19.5", "kernel_runtime""#,
            r#""0.19.5" "kernel_runtime""#,
        ),
        line("tool_call", "1786000063", r#", "tool": "grep""#),
        line("tool_call", "1786000063", r#", "tool": "grep""#)
            .replace(r#""alice", "#, "\"alice\",\n "),
        line("tool_call", "1786000063", r#", "tool": "grep""#)
            .replace(r#""alice", "#, r#""alice" "#),
        line("tool_call", "1786000064", r#", "tool": "grep""#),
        line("tool_call", "1786000064", r#", "tool": "grep""#)
            .replace(r#"package"}"#, r#"package"]"#),
        line("tool_call", "1786000064", r#", "tool": "grep""#)
            .replace(r#""agent_name": "alice", "#, ""),
        line("tool_call", "1786000064", r#", "tool": "grep""#),
        line("tool_call", "1786000064", r#", "tool": "grep""#).replace(r#""address""#, r#""ts""#),
        line("tool_call", "1786000065", r#", "tool": "grep""#),
    ]
}

#[test]
fn the_memo_steps_over_the_envelope_and_agrees_everywhere() {
    let extractor = Extractor::new(Profile::lingtai());
    let mut memo = LineMemo::new();
    let mut lines: Vec<Vec<u8>> = lingtai_sequence()
        .into_iter()
        .map(String::into_bytes)
        .collect();
    // Invalid UTF-8 in a member the next line repeats, and after a repeated member.
    let mut bad = lines[1].clone();
    let at = bad.windows(5).position(|w| w == b"alice").unwrap_or(0);
    bad[at] = 0xff;
    lines.insert(5, bad.clone());
    lines.insert(6, bad);
    // The `address` member, its comma and the whitespace after it (none of the values
    // holds a comma).
    let envelope = |line: &[u8]| {
        let start = line.windows(9).position(|w| w == b"\"address\"")?;
        let comma = start + line.get(start..)?.iter().position(|&b| b == b',')?;
        let end = comma
            + 1
            + line
                .get(comma + 1..)?
                .iter()
                .take_while(|b| b.is_ascii_whitespace())
                .count();
        line.get(start..end).map(<[u8]>::to_vec)
    };
    let mut last_read = None;
    let mut stepped = 0;
    for line in &lines {
        let serde = extractor.extract_with_serde(line);
        let mut probe = memo.clone();
        assert_eq!(
            extractor.extract_with_memo(&mut memo, line),
            serde,
            "{}",
            String::from_utf8_lossy(line)
        );
        // Stepped over exactly when the last line the fast path read had this member.
        let here = envelope(line);
        let expected = here.is_some() && here == last_read;
        probe.begin(&extractor.by_len);
        let at = line.windows(9).position(|w| w == b"\"address\"");
        let repeated = at.and_then(|at| probe.repeat(1, line, at));
        assert_eq!(
            repeated.is_some(),
            expected,
            "{}",
            String::from_utf8_lossy(line)
        );
        stepped += usize::from(expected);
        if extract(&extractor, line, None).is_some() {
            last_read = here;
        }
    }
    assert_eq!(stepped, 15);
}

#[test]
fn a_fair_share_of_generated_lines_exercise_the_fast_path() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let extractor = Extractor::new(Profile::lingtai());
    let strategy = json_line();
    let fast = (0..1000)
        .filter(|_| {
            let line = strategy
                .new_tree(&mut runner)
                .map(|t| t.current())
                .unwrap_or_default();
            extract(&extractor, line.as_bytes(), None).is_some()
        })
        .count();
    assert!(
        fast > 200,
        "only {fast} of 1000 generated lines took the fast path"
    );
}

#[test]
fn decimals_past_the_plain_limit_are_left_to_serde_json() {
    // 16 and 17 digits: a division of their digits by a power of ten is not the correctly
    // rounded value (found by search), so they must not be read as plain decimals.
    for text in [
        "3867241079.1262988",
        "38672410791262.988",
        "8278021336265740.2",
    ] {
        let (end, shape) = Cursor::new(text.as_bytes()).number(0).expect("a number");
        assert_eq!((end, shape), (text.len(), Shape::Other), "{text}");
        let value = ValueBytes {
            bytes: text.as_bytes(),
            shape,
        };
        let ours = value.read::<f64>().map(f64::to_bits).ok();
        let theirs = serde_json::from_str::<f64>(text).map(f64::to_bits).ok();
        assert_eq!(ours, theirs, "{text}");
        let line = format!(r#"{{"type":"x","ts":{text}}}"#);
        both(&line);
    }
}

proptest::proptest! {
    /// A number the cursor scans reads, bit for bit, as serde_json reads it: the plain
    /// shapes' own reading (an exact division for decimals) included, on both sides of
    /// their digit limits. (The fields themselves round or truncate, which could hide an
    /// error of one ulp.)
    #[test]
    fn numbers_read_exactly_as_serde_json_reads_them(
        digits in any::<u64>(),
        whole in 1usize..20,
        places in 0usize..20,
        negative in any::<bool>(),
    ) {
        let digits = format!("{digits:020}");
        let int = digits[..whole].trim_start_matches('0');
        let int = if int.is_empty() { "0" } else { int };
        let mut text = format!("{}{int}", if negative { "-" } else { "" });
        if places > 0 {
            text = format!("{text}.{}", &digits[20 - places..]);
        }
        let cursor = Cursor::new(text.as_bytes());
        let (end, shape) = cursor.number(0).expect("a valid number");
        proptest::prop_assert_eq!(end, text.len());
        let value = ValueBytes { bytes: text.as_bytes(), shape };
        let ours = value.read::<f64>().map(f64::to_bits).ok();
        let theirs = serde_json::from_str::<f64>(&text).map(f64::to_bits).ok();
        proptest::prop_assert_eq!(ours, theirs, "{} ({:?})", text, shape);
        if let Shape::Integer = shape {
            let value = ValueBytes { bytes: text.as_bytes(), shape };
            let ours = value.read::<u64>().ok();
            proptest::prop_assert_eq!(ours, serde_json::from_str::<u64>(&text).ok());
        }
    }
}

#[test]
fn a_memo_filled_by_another_extractor_starts_afresh() {
    let lingtai = Extractor::new(Profile::lingtai());
    // A profile that reads `address`, which lingtai's ignores.
    let mut reads_address = Profile::lingtai();
    reads_address.molt_count_field = "address".to_owned();
    let other = Extractor::new(reads_address);
    let lines = lingtai_sequence();
    let mut memo = LineMemo::new();
    for line in &lines[..3] {
        assert!(
            lingtai
                .extract_with_memo(&mut memo, line.as_bytes())
                .is_ok()
        );
    }
    let line = lines[3].as_bytes();
    let answer = other.extract_with_memo(&mut memo, line);
    assert_eq!(answer, other.extract_with_serde(line));
    assert_eq!(
        answer.map(|f| f.molt_count),
        Ok(crate::event::MoltCount::Invalid)
    );
    // A clone shares the key table, and so the memo; another extractor does not.
    let clone = lingtai.clone();
    assert!(clone.extract_with_memo(&mut memo, line).is_ok());
    let next = lines[4].as_bytes();
    let address = next.windows(9).position(|w| w == b"\"address\"");
    let steps_with = |extractor: &Extractor| {
        let mut probe = memo.clone();
        probe.begin(&extractor.by_len);
        address.and_then(|at| probe.repeat(1, next, at)).is_some()
    };
    assert!(steps_with(&lingtai), "kept for a clone");
    assert!(!steps_with(&other), "emptied for another extractor");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 500, ..Default::default() })]

    /// Through any sequence of lines, the memo of the previous one changes no answer.
    #[test]
    fn the_memo_agrees_with_serde_on_any_sequence(lines in repetitive_lines()) {
        let extractor = Extractor::new(Profile::lingtai());
        let mut memo = LineMemo::new();
        for line in &lines {
            let serde = extractor.extract_with_serde(line);
            proptest::prop_assert_eq!(
                extractor.extract_with_memo(&mut memo, line),
                serde,
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, ..Default::default() })]

    /// Whatever the line, the fast path and the serde path give the same answer.
    #[test]
    fn the_fast_path_agrees_with_serde_on_any_line(
        value in json_line(),
        edit in proptest::option::weighted(0.3, (any::<proptest::sample::Index>(), any::<u8>())),
    ) {
        let mut line = value.into_bytes();
        if let Some((at, byte)) = edit
            && !line.is_empty()
        {
            let i = at.index(line.len());
            line[i] = byte;
        }
        let extractor = Extractor::new(Profile::lingtai());
        let fast = extract(&extractor, &line, None);
        let serde = extractor.extract_with_serde(&line);
        if let Some(fast) = fast {
            proptest::prop_assert_eq!(Ok(fast), serde.clone());
        }
        proptest::prop_assert_eq!(extractor.extract(&line), serde);
    }
}
