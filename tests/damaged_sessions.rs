//! Every read of a damaged stored session refuses alike (docs/SESSIONS.md, "Reading a damaged
//! session"): each read path, library and command line, on each class of damage, through the
//! index-backed store and through the plain JSONL source.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::sync::Arc;

use agentlog::query::{
    EventFilter, JsonlSource, QueryConfig, QueryError, QueryService, Store, StoreConfig,
    WindowRequest,
};
use common::{agentlog, json};
use serde_json::Value;

const HEADER: &str = r#"{"type":"session","version":0,"id":"s","createdAt":1}"#;
const TURN_START: &str = r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#;
const USER: &str = r#"{"type":"user/message","seq":1,"time":2,"data":{"id":"u1","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"hello there"}]},"surfaceOp":"append"}"#;
const ASSISTANT: &str = r#"{"type":"assistant/message","seq":3,"time":4,"data":{"turn":1,"step":1,"message":{"id":"a3","role":"assistant","source":{"kind":"model","provider":"p","model":"m"},"content":[{"type":"text","text":"hello back"}]}},"surfaceOp":"append"}"#;
const TURN_END: &str =
    r#"{"type":"turn/end","seq":4,"time":5,"data":{"turn":1,"reason":{"kind":"completed"}}}"#;
const STEP: &str = r#"{"type":"step/start","seq":2,"time":3,"data":{"turn":1,"step":1}}"#;

/// What every read of the session should do.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// Refuse with this code.
    Refuse(&'static str),
    /// Answer from the committed events, whose seqs are `0..n`.
    Answer(u64),
}

/// One class of damage: its name, the log's text, and what reads do with it.
struct Case {
    name: &'static str,
    log: String,
    expect: Expect,
}

/// `line` as seq 2 of a five-event turn, so a `turn/end` follows it.
fn inside(line: &str) -> String {
    [HEADER, TURN_START, USER, line, ASSISTANT, TURN_END].join("\n") + "\n"
}

/// `line` as the last line, after which no `turn/end` comes.
fn at_the_end(line: &str) -> String {
    [HEADER, TURN_START, USER, line].join("\n") + "\n"
}

fn cases() -> Vec<Case> {
    use Expect::{Answer, Refuse};
    let corrupt = Refuse("corrupt_session");
    let shape = r#"{"type":"user/message","seq":2,"time":3,"data":{"role":"user","source":{"kind":"user"},"content":[]},"surfaceOp":"append"}"#;
    let surface_op_on_log_only =
        r#"{"type":"step/start","seq":2,"time":3,"data":{"turn":1,"step":1},"surfaceOp":"append"}"#;
    let legacy = r#"{"type":"turn/end","seq":2,"time":3,"data":{"turn":1}}"#;
    // A legacy prune of seq 0, a `turn/start`: no message id to inherit. The window read of
    // seqs 0 and 1 holds neither it nor any legacy message.
    let legacy_prune = r#"{"type":"tool/result","seq":2,"time":3,"data":{"callId":"c","content":[],"isError":false},"surfaceOp":{"op":"replace","start":0,"end":0},"sourceEventSeqs":[0]}"#;
    let mut cases = vec![
        Case {
            name: "clean",
            log: inside(STEP),
            expect: Answer(5),
        },
        // Damage a crash can leave: it ends the committed region, and a later turn/end shows
        // the region was acknowledged.
        Case {
            name: "invalid JSON line",
            log: inside(r#"{"type":"step/start","seq":2,"#),
            expect: corrupt,
        },
        Case {
            name: "blank line",
            log: inside("   "),
            expect: corrupt,
        },
        Case {
            name: "envelope violation",
            log: inside(r#"{"type":"step/start","seq":2,"time":3,"data":{},"extra":true}"#),
            expect: corrupt,
        },
        Case {
            name: "bad surfaceOp",
            log: inside(
                r#"{"type":"user/message","seq":2,"time":3,"data":{"id":"u2","role":"user","source":{"kind":"user"},"content":[]},"surfaceOp":"prepend"}"#,
            ),
            expect: corrupt,
        },
        Case {
            name: "seq gap",
            log: inside(&STEP.replace("\"seq\":2", "\"seq\":7")),
            expect: corrupt,
        },
        Case {
            name: "seq duplicate",
            log: inside(&STEP.replace("\"seq\":2", "\"seq\":1")),
            expect: corrupt,
        },
        // The same damage after the last turn/end is a torn tail: every read sees seqs 0..2.
        Case {
            name: "invalid JSON line at the end",
            log: at_the_end(r#"{"type":"step/start","seq":2,"#),
            expect: Answer(2),
        },
        Case {
            name: "blank line at the end",
            log: at_the_end(""),
            expect: Answer(2),
        },
        Case {
            name: "envelope violation at the end",
            log: at_the_end(r#"{"type":"step/start","seq":2,"time":3,"data":{},"extra":true}"#),
            expect: Answer(2),
        },
        Case {
            name: "seq gap at the end",
            log: at_the_end(&STEP.replace("\"seq\":2", "\"seq\":9")),
            expect: Answer(2),
        },
        Case {
            name: "torn final line",
            log: [HEADER, TURN_START, USER, r#"{"type":"step/st"#].join("\n"),
            expect: Answer(2),
        },
        // A well-formed event that breaks a read rule: corrupt wherever it stands.
        Case {
            name: "message shape",
            log: inside(shape),
            expect: corrupt,
        },
        Case {
            name: "message shape at the end",
            log: at_the_end(shape),
            expect: corrupt,
        },
        Case {
            name: "surfaceOp on a log-only type",
            log: inside(surface_op_on_log_only),
            expect: corrupt,
        },
        Case {
            name: "surfaceOp on a log-only type at the end",
            log: at_the_end(surface_op_on_log_only),
            expect: corrupt,
        },
        Case {
            name: "malformed legacy shape",
            log: inside(legacy),
            expect: corrupt,
        },
        Case {
            name: "malformed legacy shape at the end",
            log: at_the_end(legacy),
            expect: corrupt,
        },
        // What only the whole log shows: the index stops at a legacy message, and the log is
        // judged whole.
        Case {
            name: "legacy prune without a recorded id",
            log: inside(legacy_prune),
            expect: corrupt,
        },
        Case {
            name: "legacy prune without a recorded id at the end",
            log: at_the_end(legacy_prune),
            expect: corrupt,
        },
        // Whole-log rules the index answers from its type table.
        Case {
            name: "retired type",
            log: inside(r#"{"type":"mode/set","seq":2,"time":3,"data":{}}"#),
            expect: corrupt,
        },
        Case {
            name: "unknown type",
            log: inside(r#"{"type":"zz/future","seq":2,"time":3,"data":{}}"#),
            expect: Refuse("unsupported_format"),
        },
        Case {
            name: "unknown ignorable type",
            log: inside(r#"{"type":"zz/future","seq":2,"time":3,"data":{},"ignorable":true}"#),
            expect: Answer(5),
        },
    ];
    for (name, header, expect) in [
        ("header not JSON", "{\"type\":\"session\",", corrupt),
        (
            "header of the wrong shape",
            r#"{"type":"session","version":0,"id":"s","createdAt":-1}"#,
            corrupt,
        ),
        (
            "header of a newer format",
            r#"{"type":"session","version":1,"id":"s","createdAt":1}"#,
            Refuse("unsupported_format"),
        ),
    ] {
        cases.push(Case {
            name,
            log: inside(STEP).replacen(HEADER, header, 1),
            expect,
        });
    }
    cases
}

fn write_store(root: &Path, log: &str) {
    std::fs::create_dir_all(root.join("s")).unwrap();
    std::fs::write(root.join("s/events.jsonl"), log).unwrap();
}

/// Every read path of the service on session `s`, by name: the seqs it answers with, or its
/// error.
fn read_paths(service: &QueryService<'_>) -> Vec<(&'static str, Result<Vec<u64>, QueryError>)> {
    let seqs = |seqs: &mut dyn Iterator<Item = u64>| seqs.collect::<Vec<u64>>();
    let text = [EventFilter::Text {
        text: "hello".into(),
    }];
    vec![
        (
            "read_session",
            service
                .read_session("s")
                .map(|s| seqs(&mut s.events.iter().map(|e| e.seq))),
        ),
        (
            "list_events",
            service
                .list_events("s")
                .map(|r| seqs(&mut r.iter().map(|e| e.seq))),
        ),
        (
            "list_events_of_types, log-only",
            service
                .list_events_of_types("s", &["turn/start"])
                .map(|r| seqs(&mut r.iter().map(|e| e.seq))),
        ),
        (
            "list_events_of_types, surface",
            service
                .list_events_of_types("s", &["user/message"])
                .map(|r| seqs(&mut r.iter().map(|e| e.seq))),
        ),
        (
            "filter_events",
            service
                .filter_events("s", &text)
                .map(|r| seqs(&mut r.iter().map(|d| d.record.seq))),
        ),
        (
            "read_surface",
            service
                .read_surface("s")
                .map(|s| seqs(&mut s.events.iter().map(|e| e.seq))),
        ),
        (
            "read_event",
            service
                .read_event(&WindowRequest::new("s", 0).with_neighbours(0, 1))
                .map(|w| seqs(&mut w.events.iter().map(|e| e.seq))),
        ),
        (
            "trace_event",
            service.trace_event("s", 0).map(|t| vec![t.target.seq]),
        ),
    ]
}

/// What a clean read path answers on a log whose committed events are `0..n`.
fn answer(path: &str, n: u64) -> Vec<u64> {
    let all: Vec<u64> = (0..n).collect();
    let user_and_assistant: Vec<u64> = [1, 3].into_iter().filter(|s| *s < n).collect();
    match path {
        "read_session" | "list_events" => all,
        "list_events_of_types, log-only" | "trace_event" => vec![0],
        "list_events_of_types, surface" => vec![1],
        "filter_events" | "read_surface" => user_and_assistant,
        "read_event" => all.into_iter().take(2).collect(),
        other => panic!("unknown path {other}"),
    }
}

#[test]
fn every_library_read_refuses_a_damaged_session_alike() {
    for case in cases() {
        for indexed in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            write_store(dir.path(), &case.log);
            let store = if indexed {
                Store::open(dir.path(), StoreConfig::default()).unwrap()
            } else {
                let source = Arc::new(JsonlSource::new(dir.path()));
                Store::with_source(dir.path(), StoreConfig::default(), source).unwrap()
            };
            let service = QueryService::new(&store, QueryConfig::default()).unwrap();
            // Twice: the second read goes through the index the first one built.
            for round in 0..2 {
                for (path, got) in read_paths(&service) {
                    let at = format!("{} / {path} / indexed {indexed} / round {round}", case.name);
                    match (case.expect, got) {
                        (Expect::Refuse(code), Err(e)) => assert_eq!(e.code(), code, "{at}: {e}"),
                        (Expect::Answer(n), Ok(seqs)) => assert_eq!(seqs, answer(path, n), "{at}"),
                        (expect, got) => panic!("{at}: expected {expect:?}, got {got:?}"),
                    }
                }
            }
            // A window on the far side of a torn tail finds nothing there.
            if let Expect::Answer(n) = case.expect {
                let err = service.read_event(&WindowRequest::new("s", n)).unwrap_err();
                assert_eq!(err.code(), "event_not_found", "{}", case.name);
            }
            // Listing never reads events: a session whose events are damaged is listed, one
            // whose header cannot be read is not.
            let listed = service.list_sessions().unwrap();
            let header_readable = !case.name.starts_with("header");
            assert_eq!(listed.len(), usize::from(header_readable), "{}", case.name);
            let traced = service.trace_session("s").map(|t| t.target.header.id);
            if header_readable {
                assert_eq!(traced.unwrap(), "s", "{}", case.name);
            } else {
                assert_eq!(traced.unwrap_err().code(), "session_not_found");
            }
        }
    }
}

/// A replace naming a node that is not on the surface passes every rule one line is checked
/// for; only the fold finds it, so the reads that fold refuse and the others answer (an O(1)
/// read would otherwise have to fold the whole surface).
#[test]
fn a_surface_only_the_fold_finds_broken_is_refused_by_the_reads_that_fold() {
    let replace = r#"{"type":"user/message","seq":2,"time":3,"data":{"id":"u2","role":"user","source":{"kind":"user"},"content":[]},"surfaceOp":{"op":"replace","start":9,"end":9},"sourceEventSeqs":[1]}"#;
    let dir = tempfile::tempdir().unwrap();
    write_store(dir.path(), &inside(replace));
    let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
    let service = QueryService::new(&store, QueryConfig::default()).unwrap();
    for (path, got) in read_paths(&service) {
        match path {
            "list_events_of_types, log-only" | "read_event" => {
                assert_eq!(got.unwrap(), answer(path, 5), "{path}");
            }
            _ => assert_eq!(got.unwrap_err().code(), "invalid_surface", "{path}"),
        }
    }
}

/// The command line's session reads, each with `--json`: the seqs it printed, or its error code.
fn command_paths(root: &str) -> Vec<(&'static str, Result<Vec<u64>, String>)> {
    let run = |args: &[&str]| {
        let out = agentlog(args);
        let v = json(&out);
        match out.status.code() {
            Some(0) => Ok(v),
            _ => Err(v["error"].as_str().unwrap_or("no code").to_owned()),
        }
    };
    let seqs = |v: &Value| -> Vec<u64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e["seq"].as_u64().unwrap())
            .collect()
    };
    vec![
        (
            "events",
            run(&["events", root, "s", "--json"]).map(|v| seqs(&v)),
        ),
        (
            "events --type",
            run(&["events", root, "s", "--type", "turn/start", "--json"]).map(|v| seqs(&v)),
        ),
        (
            "events --text",
            run(&["events", root, "s", "--text", "hello", "--json"]).map(|v| seqs(&v)),
        ),
        (
            "read",
            run(&["read", root, "s", "0", "--after", "1", "--json"]).map(|v| seqs(&v["events"])),
        ),
        (
            "trace-event",
            run(&["trace-event", root, "s", "0", "--json"])
                .map(|v| vec![v["target"]["seq"].as_u64().unwrap()]),
        ),
    ]
}

#[test]
fn every_command_refuses_a_damaged_session_alike() {
    for case in cases() {
        let dir = tempfile::tempdir().unwrap();
        write_store(dir.path(), &case.log);
        let root = dir.path().to_str().unwrap();
        for (command, got) in command_paths(root) {
            let at = format!("{} / {command}", case.name);
            let expected = match command {
                "events" => "list_events",
                "events --type" => "list_events_of_types, log-only",
                "events --text" => "filter_events",
                "read" => "read_event",
                _ => "trace_event",
            };
            match (case.expect, got) {
                (Expect::Refuse(code), Err(got)) => assert_eq!(got, code, "{at}"),
                (Expect::Answer(n), Ok(seqs)) => assert_eq!(seqs, answer(expected, n), "{at}"),
                (expect, got) => panic!("{at}: expected {expect:?}, got {got:?}"),
            }
        }
    }
}
