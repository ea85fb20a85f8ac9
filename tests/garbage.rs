//! Every public entry point, fed garbage: nothing panics, every failure is a typed error.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use agentlog::event::{Extractor, Profile, Timestamp, TokenValue};
use agentlog::generation::{
    GenerationRequest, Tier, current_generation_at, full_scan, generations_at,
    read_manifest_molt_count, reverse_scan,
};
use agentlog::index::{Index, IndexOptions, Writer, WriterOptions};
use agentlog::log::{
    LineScanner, LogError, LogPaths, LogWriter, SyncPolicy, WindowSum, open_for_read,
};
use common::Agent;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn parsers_take_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let extractor = Extractor::new(Profile::lingtai());
        let _ = extractor.extract(&bytes);
        let text = String::from_utf8_lossy(&bytes);
        let _ = Timestamp::parse(&text);
        let _ = TokenValue::from_str_value(&text);
        let _ = TokenValue::from_f64(f64::from_bits(u64::from_le_bytes({
            let mut b = [0u8; 8];
            for (d, s) in b.iter_mut().zip(&bytes) { *d = *s; }
            b
        })));
    }

    #[test]
    fn whole_pipeline_takes_any_log(bytes in proptest::collection::vec(any::<u8>(), 0..2000), window in 0u64..3000) {
        let agent = Agent::with_log(&bytes);
        for tier in [Tier::Index, Tier::ReverseScan, Tier::FullScan] {
            let mut request = GenerationRequest::latest();
            request.start_tier = tier;
            request.reverse_scan_bytes = window;
            let _ = current_generation_at(&agent.paths, &request);
        }
        let _ = generations_at(&agent.paths, &GenerationRequest::latest());
        let mut writer = Writer::open(&agent.paths, WriterOptions { sync: SyncPolicy::None, ..WriterOptions::default() }).expect("writer");
        let _ = writer.append_json(&bytes);
        let _ = writer.append_batch_json(&[&bytes[..bytes.len() / 2], &bytes[bytes.len() / 2..]]);
        writer.close().expect("close");
        common::assert_tiers_match_oracle(&agent.paths, None, 8 << 20);
    }

    #[test]
    fn index_files_of_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..20_000)) {
        let agent = Agent::with_log(&common::lines(&[common::token(1.0, 5, 1, 0)]));
        std::fs::write(&agent.paths.index, &bytes).unwrap();
        let index = Index::open(&agent.paths, &IndexOptions::default()).expect("rebuilt");
        common::assert_index_matches_oracle(&index, &agent.log());
    }
}

#[test]
fn extreme_options_do_not_hang_or_panic() {
    let agent = Agent::with_log(&common::synthetic(50, 1));
    for options in [
        IndexOptions {
            commit_bytes: 0,
            ..IndexOptions::default()
        },
        IndexOptions {
            max_line: 0,
            ..IndexOptions::default()
        },
        IndexOptions {
            max_line: usize::MAX,
            ..IndexOptions::default()
        },
        IndexOptions {
            repair_budget: std::time::Duration::ZERO,
            ..IndexOptions::default()
        },
    ] {
        let index = Index::open(&agent.paths, &options).expect("open");
        let oracle = common::oracle::Oracle::with_max_line(&agent.log(), options.max_line);
        assert_eq!(index.state().events, oracle.events);
    }
    for window in [0, 1, u64::MAX] {
        let mut request = GenerationRequest::latest();
        request.start_tier = Tier::ReverseScan;
        request.reverse_scan_bytes = window;
        assert!(current_generation_at(&agent.paths, &request).is_ok());
    }
    let index = agent.open_index();
    assert!(index.totals_before(u64::MAX).is_ok());
    assert!(index.totals_between(u64::MAX, 0).is_ok());
    assert!(index.event_at(u64::MAX).unwrap().is_none());
    assert!(index.offset_of_seq(u64::MAX).unwrap().is_none());
    assert!(
        index
            .offsets_of_type("", u64::MAX, usize::MAX)
            .unwrap()
            .is_empty()
    );
    assert!(
        index
            .offsets_of_type("llm_response", 0, 0)
            .unwrap()
            .is_empty()
    );
    assert!(index.type_name(u32::MAX).is_none());
    let file = std::fs::File::open(&agent.paths.log).unwrap();
    assert_eq!(WindowSum::of(&file, u64::MAX - 10, 5).unwrap(), None);
    assert_eq!(WindowSum::of(&file, 0, 1 << 40).unwrap(), None);
    let mut scanner = LineScanner::new(&file, u64::MAX - 1, u64::MAX, 0, 0);
    assert!(scanner.next_line().unwrap().is_none());
    assert!(full_scan(&file, Extractor::new(Profile::lingtai()), 0).is_ok());
    assert!(reverse_scan(&file, 0, &Extractor::new(Profile::lingtai()), 0).is_ok());
}

fn no_log_error(path: &Path) {
    let paths = LogPaths::for_log_file(path);
    assert!(Index::open(&paths, &IndexOptions::default()).is_err());
    assert!(current_generation_at(&paths, &GenerationRequest::latest()).is_err());
    assert!(open_for_read(path).is_err());
}

#[test]
fn paths_that_are_not_logs_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    // Missing, a directory, a FIFO (which must not hang the reader).
    no_log_error(&dir.path().join("missing.jsonl"));
    let directory = dir.path().join("dir.jsonl");
    std::fs::create_dir(&directory).unwrap();
    no_log_error(&directory);
    assert!(matches!(
        open_for_read(&directory),
        Err(LogError::NotAFile {
            kind: "directory",
            ..
        })
    ));
    assert!(matches!(
        LogWriter::open(&directory, SyncPolicy::None),
        Err(LogError::NotAFile { .. })
    ));
    let fifo = dir.path().join("fifo.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    no_log_error(&fifo);
    assert!(matches!(
        open_for_read(&fifo),
        Err(LogError::NotAFile { kind: "FIFO", .. })
    ));
    assert!(matches!(
        LogWriter::open(&fifo, SyncPolicy::None),
        Err(LogError::NotAFile { .. })
    ));
    // Paths that are not paths at all.
    for odd in ["", "/", "\0", "../../../../../../../../etc/passwd/x"] {
        let _ = open_for_read(Path::new(odd));
        let _ = Index::open(&LogPaths::for_log_file(odd), &IndexOptions::default());
        let _ = read_manifest_molt_count(Path::new(odd));
    }
}

#[test]
fn unreadable_log_is_a_typed_error_for_an_unprivileged_user() {
    // As root every file is readable, so run the CLI as `nobody` against a mode-000 log.
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let agent_dir = dir.path().join("agent");
    std::fs::create_dir_all(agent_dir.join("logs")).unwrap();
    std::fs::set_permissions(&agent_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(
        agent_dir.join("logs"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let log = agent_dir.join("logs/events.jsonl");
    std::fs::write(&log, common::token(1.0, 5, 1, 0)).unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o000)).unwrap();
    let status_as_nobody = || {
        std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_agentlog"))
            .args(["status", agent_dir.to_str().unwrap(), "--json"])
            .env("AGENTLOG_LOG", "off")
            .output()
            .expect("run as nobody")
    };
    let out = status_as_nobody();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("Permission denied"), "{stdout}");
    // A readable log in a directory the user cannot write: the index cannot be created, so
    // status steps down to a scan and says why.
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = status_as_nobody();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["tier"], "reverse_scan", "{v}");
    assert!(
        v["stepped_aside"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("Permission denied"),
        "{v}"
    );
    assert_eq!(v["api_calls"], 1);
}

#[test]
fn a_line_of_hundreds_of_megabytes_does_not_exhaust_memory() {
    let agent = Agent::new();
    {
        use std::io::Write;
        let mut file = std::io::BufWriter::new(std::fs::File::create(&agent.paths.log).unwrap());
        file.write_all(common::token(1.0, 5, 1, 0).as_bytes())
            .unwrap();
        file.write_all(b"{\"type\": \"llm_response\", \"input_tokens\": 9, \"pad\": \"")
            .unwrap();
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..256 {
            file.write_all(&chunk).unwrap();
        }
        file.write_all(b"\"}\n").unwrap();
        file.write_all(common::token(2.0, 7, 1, 0).as_bytes())
            .unwrap();
    }
    // The process may not map more than 512 MiB: a reader that buffered the 256 MiB line
    // (or two copies of it) would fail.
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 524288; exec '{}' status '{}' --json",
            env!("CARGO_BIN_EXE_agentlog"),
            agent.path().display()
        ))
        .env("AGENTLOG_LOG", "off")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(v["api_calls"], 2, "{v}");
    assert_eq!(v["input_tokens"], 12);
    assert_eq!(v["diagnostics"]["too_long_lines"], 1, "{v}");
}

/// Found by the `log_bytes` fuzz target: a line of only whitespace longer than the line limit
/// is a too-long invalid line (the limit comes first), in the index and in every scan tier.
#[test]
fn a_blank_line_longer_than_the_limit_is_too_long() {
    let mut log = Vec::new();
    log.extend_from_slice(b"{\"type\": \"llm_response\", \"input_tokens\": 1}\n");
    log.extend_from_slice(&[b'\t'; 60]);
    log.extend_from_slice(b"\n\n");
    log.extend_from_slice(b"{\"type\": \"llm_response\", \"input_tokens\": 2}\n");
    let agent = Agent::with_log(&log);
    let options = IndexOptions {
        max_line: 48,
        ..IndexOptions::default()
    };
    let index = Index::open(&agent.paths, &options).unwrap();
    let diagnostics = &index.state().diagnostics;
    assert_eq!(
        (diagnostics.invalid_lines, diagnostics.too_long_lines),
        (1, 1)
    );
    assert_eq!(diagnostics.blank_lines, 1);
    let oracle = common::oracle::Oracle::with_max_line(&log, options.max_line);
    assert_eq!(oracle.invalid_lines, 1);
    for tier in [Tier::Index, Tier::ReverseScan, Tier::FullScan] {
        let request = GenerationRequest {
            start_tier: tier,
            index: options.clone(),
            ..GenerationRequest::latest()
        };
        let s = current_generation_at(&agent.paths, &request).unwrap();
        assert_eq!(s.tier, tier);
        assert_eq!(
            (
                s.totals.api_calls,
                s.totals.input_tokens,
                s.diagnostics.too_long_lines
            ),
            (2, 3, 1),
            "{tier:?}"
        );
    }
}

#[test]
fn a_hostile_log_gets_the_same_answer_from_every_tier() {
    let mut log = Vec::new();
    log.extend_from_slice(common::molt(1.0, 3, "system").as_bytes());
    for line in [
        &b"{\"type\": \"llm_response\", \"input_tokens\": 5, \"note\": \"nul \\u0000 escaped is fine\"}"[..],
        b"{\"type\": \"llm_response\", \"input_tokens\": 5, \"raw\": \"\x00\"}",
        b"{\"type\": \"llm_response\", \"input_tokens\": 5, \"bad\": \"\xc3\x28\"}",
        b"\xff\xfe\xfd",
        b"{\"type\": \"llm_response\", \"input_tokens\": 18446744073709551616, \"output_tokens\": -9223372036854775809}",
        b"{\"type\": \"llm_response\", \"ts\": \"NaN\", \"time\": \"inf\", \"input_tokens\": 1}",
        b"{\"type\": \"llm_response\", \"ts\": 1e999, \"input_tokens\": 1}",
        b"{\"type\": \"llm_response\", \"input_tokens\": 1, \"input_tokens\": 2, \"input_tokens\": \"3\"}",
        b"{\"type\": \"psyche_molt\", \"molt_count\": 3, \"molt_count\": 4}",
        b"{\"type\": \"llm_response\", \"input_tokens\": 100}",
    ] {
        log.extend_from_slice(line);
        log.push(b'\n');
    }
    let deep = format!(
        "{{\"type\": \"llm_response\", \"input_tokens\": 7, \"x\": {}{}}}\n",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    log.extend_from_slice(deep.as_bytes());
    let agent = Agent::with_log(&log);
    for expected in [None, Some(3), Some(4)] {
        common::assert_tiers_match_oracle(&agent.paths, expected, 8 << 20);
        common::assert_tiers_match_oracle(&agent.paths, expected, 200);
    }
    let s = current_generation_at(&agent.paths, &GenerationRequest::expecting(4)).unwrap();
    assert_eq!((s.totals.api_calls, s.totals.input_tokens), (1, 100));
}
