//! `usage` over many transcripts against a naive oracle: every file parsed whole, Claude Code
//! files read as one stream in path order and pi files one after the other (so a message in
//! several files counts once), and the `usage` and `statusline` commands as processes.
// Test helpers: a failed step fails the test; the oracle reads integral floats as counts.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

#[path = "common/transcript_fixtures.rs"]
mod fixtures;
#[path = "common/transcript_gen.rs"]
mod generate;
#[path = "common/transcript_oracle.rs"]
mod oracle;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use agentlog::transcript::{
    Format, GroupBy, OpenOptions, UNINDEXED_FILE, UsageOptions, UsageReport, day_of, discover,
    usage,
};
use oracle::Sum;
use serde_json::Value;

/// A tree of transcripts: every fixture, generated Claude Code, Codex and pi files, a Claude
/// Code and a pi file copied whole into another project, and a resumed session of each (a
/// file's first half, then lines of its own).
fn tree(root: &Path) -> Vec<(PathBuf, Format)> {
    let mut out = Vec::new();
    let mut put = |rel: &str, bytes: &[u8], format: Format| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        out.push((path, format));
    };
    for (i, (path, format)) in fixtures::all().into_iter().enumerate() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        put(
            &format!("fixtures/{i:02}/{name}"),
            &std::fs::read(&path).unwrap(),
            format,
        );
    }
    let claude = fixtures::all()
        .into_iter()
        .find(|(_, f)| *f == Format::ClaudeCode)
        .unwrap()
        .0;
    put(
        "copies/claude-copy.jsonl",
        &std::fs::read(&claude).unwrap(),
        Format::ClaudeCode,
    );
    for seed in 0..4 {
        let bytes = generate::transcript(Format::ClaudeCode, 100 + seed, 120);
        put(&format!("gen/p{seed}/s.jsonl"), &bytes, Format::ClaudeCode);
        if seed == 0 {
            let half = &bytes[..bytes.len() / 2];
            let cut = half.iter().rposition(|&b| b == b'\n').unwrap() + 1;
            let mut resumed = bytes[..cut].to_vec();
            resumed.extend(generate::transcript(Format::ClaudeCode, 900, 40));
            put("gen/p9/resumed.jsonl", &resumed, Format::ClaudeCode);
        }
        let codex = generate::transcript(Format::Codex, 200 + seed, 60);
        put(
            &format!("codex/{seed}/rollout.jsonl"),
            &codex,
            Format::Codex,
        );
    }
    for (rel, bytes) in pi_tree() {
        put(&rel, &bytes, Format::Pi);
    }
    out
}

/// pi files: a fixture copied whole, generated sessions (their entry ids are the same from one
/// seed to the next, their usage is not: the same id in two files is not a copy by itself),
/// and a resumed session (a generated file's first half, then entries of its own).
fn pi_tree() -> Vec<(String, Vec<u8>)> {
    let fixture = fixtures::all()
        .into_iter()
        .find(|(_, f)| *f == Format::Pi)
        .unwrap()
        .0;
    let mut out = vec![(
        "pi-copies/pi-copy.jsonl".to_owned(),
        std::fs::read(fixture).unwrap(),
    )];
    for seed in 0..3 {
        let bytes = generate::transcript(Format::Pi, 400 + seed, 90);
        if seed == 0 {
            let half = &bytes[..bytes.len() / 2];
            let cut = half.iter().rposition(|&b| b == b'\n').unwrap() + 1;
            let mut resumed = bytes[..cut].to_vec();
            let own = String::from_utf8(generate::transcript(Format::Pi, 901, 40)).unwrap();
            // Its own entries get ids of their own.
            resumed.extend(own.replace("\"id\":\"0000", "\"id\":\"ffff").into_bytes());
            out.push(("pi-gen/p9/resumed.jsonl".to_owned(), resumed));
        }
        out.push((format!("pi-gen/p{seed}/s.jsonl"), bytes));
    }
    out
}

/// The oracle's tokens by (day, model): Claude Code files as one stream in path order, pi
/// files one after the other in path order, Codex and Kimi Code files one by one.
fn expected(files: &[(PathBuf, Format)]) -> BTreeMap<(String, String), Sum> {
    let mut sorted: Vec<(PathBuf, Format)> = files
        .iter()
        .map(|(p, f)| (std::fs::canonicalize(p).unwrap(), *f))
        .collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut claude = Vec::new();
    let mut pi = Vec::new();
    let mut parts = Vec::new();
    for (path, format) in &sorted {
        let bytes = std::fs::read(path).unwrap();
        match format {
            Format::ClaudeCode => claude.extend_from_slice(&bytes),
            Format::Pi => pi.push(bytes),
            // Files of these formats share no ids in this tree: each counts on its own.
            Format::Codex | Format::Copilot | Format::Gemini | Format::Qwen | Format::Kimi => {
                parts.push((*format, oracle::expected(*format, &bytes)));
            }
            Format::OpenCode => unreachable!("no OpenCode data among these"),
        }
    }
    parts.push((
        Format::ClaudeCode,
        oracle::expected(Format::ClaudeCode, &claude),
    ));
    let pi: Vec<&[u8]> = pi.iter().map(Vec::as_slice).collect();
    parts.push((Format::Pi, oracle::pi_files(&pi)));
    let mut out: BTreeMap<(String, String), Sum> = BTreeMap::new();
    for (_, e) in parts {
        for ((quarter, model), tally) in e.buckets {
            let day = day_of(quarter).map_or("unknown".to_owned(), |d| d.to_string());
            let model = model.unwrap_or_else(|| "unknown".to_owned());
            out.entry((day, model)).or_default().add(&tally);
        }
    }
    out.retain(|_, t| !t.is_zero());
    out
}

fn rows_by(expected: &BTreeMap<(String, String), Sum>, by_day: bool) -> BTreeMap<String, Sum> {
    let mut out: BTreeMap<String, Sum> = BTreeMap::new();
    for ((day, model), t) in expected {
        let key = if by_day { day } else { model };
        out.entry(key.clone()).or_default().add(t);
    }
    out
}

/// The report's rows in the oracle's terms; every row, and the totals, add up.
fn observed(report: &UsageReport) -> BTreeMap<String, Sum> {
    for t in report.rows.iter().map(|r| &r.tally).chain([&report.totals]) {
        let u = &t.usage;
        assert_eq!(
            u.input + u.output + u.cache_creation + u.cache_read,
            u.total(),
            "a row that does not add up"
        );
        assert!(u.reasoning <= u.output && u.cache_creation_1h <= u.cache_creation);
    }
    let mut totals = Sum::default();
    for r in &report.rows {
        totals.add(&Sum::of(&r.tally));
    }
    assert_eq!(
        totals,
        Sum::of(&report.totals),
        "the totals are the rows' sum"
    );
    report
        .rows
        .iter()
        .filter(|r| !r.tally.is_empty())
        .map(|r| (r.key.clone(), Sum::of(&r.tally)))
        .collect()
}

/// Reads `paths` with every index opened (no run-level snapshot).
fn read(paths: &[PathBuf], options: &UsageOptions) -> UsageReport {
    usage(paths, options, &|_, _| {})
}

/// Every file through its index, however small (the index is what these tests read).
fn options(cache: &Path, by: GroupBy) -> UsageOptions {
    UsageOptions {
        open: OpenOptions {
            index_dir: Some(cache.to_path_buf()),
            max_unindexed_file: Some(0),
            ..OpenOptions::default()
        },
        by,
        snapshot: false,
        ..UsageOptions::default()
    }
}

#[test]
fn usage_by_day_and_model_matches_the_oracle_with_copies_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    let cache = dir.path().join("cache");
    let files = tree(&root);
    let (found, skipped) = discover(std::slice::from_ref(&root));
    assert!(skipped.is_empty());
    assert_eq!(found.len(), files.len());
    let want = expected(&files);
    let by_day = read(&found, &options(&cache, GroupBy::Day));
    assert!(by_day.skipped.is_empty(), "{:?}", by_day.skipped);
    assert!(by_day.cross_file_duplicates > 0, "the copies were not seen");
    assert_eq!(&observed(&by_day), &rows_by(&want, true));
    let by_model = read(&found, &options(&cache, GroupBy::Model));
    assert_eq!(&observed(&by_model), &rows_by(&want, false));
    assert_eq!(
        by_model.index_outcomes.get("fresh"),
        Some(&(files.len() as u64))
    );

    // Without the copies, the totals are the same.
    let originals: Vec<PathBuf> = found
        .iter()
        .filter(|p| {
            let s = p.to_string_lossy();
            !s.contains("/copies/") && !s.contains("/p9/")
        })
        .cloned()
        .collect();
    let without = read(&originals, &options(&cache, GroupBy::Day));
    let grown = |r: &UsageReport| r.totals.usage.total();
    assert!(grown(&by_day) >= grown(&without));
    let claude_only = |r: &UsageReport| r.files.get("claude-code").copied();
    assert_eq!(claude_only(&by_day), claude_only(&without).map(|n| n + 2));
}

#[test]
fn split_by_model_gives_the_oracles_day_and_model_cells_with_and_without_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    let cache = dir.path().join("cache");
    let files = tree(&root);
    let (found, _) = discover(std::slice::from_ref(&root));
    let want = expected(&files);
    for snapshot in [false, true, true] {
        let report = read(
            &found,
            &UsageOptions {
                split_by_model: true,
                snapshot,
                ..options(&cache, GroupBy::Day)
            },
        );
        let mut cells: BTreeMap<(String, String), Sum> = BTreeMap::new();
        for (day, models) in &report.by_model {
            assert!(report.rows.iter().any(|r| &r.key == day), "{day} has a row");
            for m in models {
                assert_eq!(m.by, GroupBy::Model);
                assert!(m.cost.models.iter().eq([&m.key]), "one model per cell");
                cells.insert((day.clone(), m.key.clone()), Sum::of(&m.tally));
            }
        }
        cells.retain(|_, t| !t.is_zero());
        assert_eq!(cells, want, "snapshot {snapshot}");
        // The rows are what they are without the split.
        let plain = read(
            &found,
            &UsageOptions {
                snapshot,
                ..options(&cache, GroupBy::Day)
            },
        );
        assert_eq!(report.rows, plain.rows);
        assert!(plain.by_model.is_empty());
    }
    // Session and block rows are not split.
    for by in [GroupBy::Session, GroupBy::Block] {
        let report = read(
            &found,
            &UsageOptions {
                split_by_model: true,
                ..options(&cache, by)
            },
        );
        assert!(
            !report.rows.is_empty() && report.by_model.is_empty(),
            "{by:?}"
        );
    }
}

/// How many pi entries of later files the oracle takes for copies of earlier files' entries.
fn pi_copies(files: &[Vec<u8>]) -> u64 {
    let alone: u64 = files
        .iter()
        .map(|f| oracle::expected(Format::Pi, f).lifetime.messages)
        .sum();
    let slices: Vec<&[u8]> = files.iter().map(Vec::as_slice).collect();
    alone - oracle::pi_files(&slices).lifetime.messages
}

#[test]
fn pi_entries_copied_into_other_files_count_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    let cache = dir.path().join("cache");
    let mut files = Vec::new();
    for (path, format) in fixtures::all() {
        if format == Format::Pi {
            let rel = format!(
                "pi-fixtures/{}",
                path.file_name().unwrap().to_string_lossy()
            );
            files.push((rel, std::fs::read(&path).unwrap()));
        }
    }
    files.extend(pi_tree());
    let mut written = Vec::new();
    for (rel, bytes) in &files {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        written.push((path, Format::Pi));
    }
    let (found, _) = discover(std::slice::from_ref(&root));
    assert_eq!(found.len(), files.len());
    let in_order: Vec<Vec<u8>> = found.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let copies = pi_copies(&in_order);
    assert!(copies > 0, "the tree holds no copied pi entry");
    let want = expected(&written);
    // Once building the indexes, once answered from them (the entries read back from rows).
    for outcome in ["created", "fresh"] {
        let by_day = read(&found, &options(&cache, GroupBy::Day));
        assert_eq!(
            by_day.index_outcomes.get(outcome),
            Some(&(files.len() as u64))
        );
        assert_eq!(by_day.cross_file_duplicates, copies, "{outcome}");
        assert_eq!(&observed(&by_day), &rows_by(&want, true));
        let by_model = read(&found, &options(&cache, GroupBy::Model));
        assert_eq!(&observed(&by_model), &rows_by(&want, false));
    }
    // Read alone, every file counts its copies too.
    let alone: u64 = found
        .iter()
        .map(|p| {
            read(std::slice::from_ref(p), &options(&cache, GroupBy::Day))
                .totals
                .messages
        })
        .sum();
    let together = read(&found, &options(&cache, GroupBy::Day));
    assert_eq!(alone, together.totals.messages + copies);
}

#[test]
fn a_grown_file_is_caught_up_never_rebuilt_and_still_matches() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    let cache = dir.path().join("cache");
    let mut files = tree(&root);
    let (found, _) = discover(std::slice::from_ref(&root));
    read(&found, &options(&cache, GroupBy::Day));
    let extra = generate::transcript(Format::ClaudeCode, 777, 30);
    let target = root.join("gen/p1/s.jsonl");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&target)
        .unwrap()
        .write_all(&extra)
        .unwrap();
    let again = read(&found, &options(&cache, GroupBy::Day));
    assert_eq!(again.index_outcomes.get("caught_up"), Some(&1));
    assert_eq!(again.index_outcomes.get("rebuilt"), None);
    assert_eq!(again.index_outcomes.get("created"), None);
    files.retain(|_| true);
    assert_eq!(&observed(&again), &rows_by(&expected(&files), true));
}

/// The index files in `cache` (the snapshot is not one).
fn indexes_in(cache: &Path) -> usize {
    std::fs::read_dir(cache).map_or(0, |d| {
        d.filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".redb"))
            .count()
    })
}

#[test]
fn small_files_are_read_without_an_index_and_answer_as_indexed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    let mut files = tree(&root);
    let (found, _) = discover(std::slice::from_ref(&root));
    let small: Vec<&PathBuf> = found
        .iter()
        .filter(|p| std::fs::metadata(p).unwrap().len() <= UNINDEXED_FILE)
        .collect();
    let large = found.len() - small.len();
    assert!(!small.is_empty(), "the tree holds no small file");
    let indexed = read(&found, &options(&dir.path().join("indexed"), GroupBy::Day));
    assert_eq!(indexes_in(&dir.path().join("indexed")), found.len());
    let cache = dir.path().join("cache");
    for snapshot in [false, true] {
        let unindexed = UsageOptions {
            snapshot,
            open: OpenOptions {
                index_dir: Some(cache.clone()),
                ..OpenOptions::default()
            },
            ..options(&cache, GroupBy::Day)
        };
        let report = read(&found, &unindexed);
        if !snapshot {
            let read_only = report.index_outcomes.get("read_only").copied();
            assert_eq!(read_only, Some(small.len() as u64));
        }
        assert_eq!(indexes_in(&cache), large, "a small file was given an index");
        assert_eq!(observed(&report), observed(&indexed));
        assert_eq!(&observed(&report), &rows_by(&expected(&files), true));
        assert_eq!(report.cross_file_duplicates, indexed.cross_file_duplicates);
    }
    // A small Claude Code file grown past the limit gets its index; the answer still matches
    // the oracle.
    let target = files
        .iter()
        .find(|(p, f)| {
            *f == Format::ClaudeCode && std::fs::metadata(p).unwrap().len() <= UNINDEXED_FILE
        })
        .map(|(p, _)| p.clone())
        .expect("a small Claude Code file");
    let mut seed = 900;
    while std::fs::metadata(&target).unwrap().len() <= UNINDEXED_FILE {
        let extra = generate::transcript(Format::ClaudeCode, seed, 200);
        seed += 1;
        std::fs::OpenOptions::new()
            .append(true)
            .open(&target)
            .unwrap()
            .write_all(&extra)
            .unwrap();
    }
    let unindexed = UsageOptions {
        open: OpenOptions {
            index_dir: Some(cache.clone()),
            ..OpenOptions::default()
        },
        ..options(&cache, GroupBy::Day)
    };
    let report = read(&found, &unindexed);
    assert_eq!(indexes_in(&cache), large + 1);
    assert_eq!(report.index_outcomes.get("created"), Some(&1));
    files.retain(|_| true);
    assert_eq!(&observed(&report), &rows_by(&expected(&files), true));
}

#[test]
fn since_and_until_keep_whole_days() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    let files = tree(&root);
    let (found, _) = discover(std::slice::from_ref(&root));
    let want = rows_by(&expected(&files), true);
    let days: Vec<String> = want.keys().filter(|d| *d != "unknown").cloned().collect();
    let (since, until) = (
        days[1].parse().unwrap(),
        days[days.len() - 2].parse().unwrap(),
    );
    let opts = UsageOptions {
        since: Some(since),
        until: Some(until),
        ..options(&dir.path().join("cache"), GroupBy::Day)
    };
    let got = observed(&read(&found, &opts));
    let kept: BTreeMap<String, Sum> = want
        .into_iter()
        .filter(|(d, _)| d != "unknown" && *d >= days[1] && *d <= days[days.len() - 2])
        .collect();
    assert_eq!(&got, &kept);
}

fn agentlog(args: &[&str], stdin: Option<&[u8]>, home: &Path) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentlog"));
    cmd.args(args)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env("AGENTLOG_CACHE_DIR", home.join("cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(stdin.unwrap_or_default()).unwrap();
    drop(pipe);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_usage_command_reads_the_default_places_and_prints_rows_and_totals() {
    let home = tempfile::tempdir().unwrap();
    let claude = home.path().join(".claude/projects");
    let files = tree(&claude);
    let (code, out, err) = agentlog(&["usage", "--json"], None, home.path());
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["by"], "day");
    let want = rows_by(&expected(&files), true);
    let total: u64 = want.values().map(|t| t.total).sum();
    assert_eq!(v["totals"]["total_tokens"], total);
    assert_eq!(v["rows"].as_array().unwrap().len(), want.len());
    let row = &v["rows"][0];
    for field in [
        "day",
        "input_tokens",
        "output_tokens",
        "cache_creation_tokens",
        "cache_read_tokens",
        "total_tokens",
        "messages",
    ] {
        assert!(row.get(field).is_some(), "{field} in {row}");
    }
    // The human table ends with the totals, and a bad date is bad input.
    let (code, out, _) = agentlog(&["usage", "--by", "project"], None, home.path());
    assert_eq!(code, 0);
    assert!(out.lines().any(|l| l.starts_with("total")), "{out}");
    let (code, _, err) = agentlog(&["usage", "--since", "yesterday"], None, home.path());
    assert_eq!(code, 2, "{err}");
}

#[test]
fn the_statusline_command_answers_from_its_stdin_and_refuses_bad_input() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join(".claude/projects/p");
    let bytes = generate::transcript(Format::ClaudeCode, 5, 80);
    std::fs::create_dir_all(&project).unwrap();
    let path = project.join("s.jsonl");
    std::fs::write(&path, &bytes).unwrap();
    let input = serde_json::json!({
        "session_id": "s",
        "transcript_path": path,
        "model": {"id": "claude-opus-4-6", "display_name": "Opus"},
        "cwd": "/somewhere",
        "unknown": {"fields": [1, 2]},
    })
    .to_string();
    let (code, out, err) = agentlog(
        &["statusline", "--json"],
        Some(input.as_bytes()),
        home.path(),
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let e = oracle::expected(Format::ClaudeCode, &bytes);
    assert_eq!(v["session_total_tokens"], e.lifetime.total);
    assert_eq!(
        v["since_compaction"]["total_tokens"],
        e.generations.last().unwrap().total
    );
    assert_eq!(v["context_tokens"], serde_json::json!(e.context));
    assert_eq!(v["context_window"], 200_000);
    assert!(v["context_tokens"].is_u64() || v["context_tokens"].is_null());
    let (code, out, _) = agentlog(&["statusline"], Some(input.as_bytes()), home.path());
    assert_eq!(code, 0);
    assert!(out.starts_with("Opus | ctx "), "{out}");
    for bad in [
        "",
        "not json",
        "[1,2]",
        "{\"transcript_path\": 3}",
        "{\"model\": {}}",
    ] {
        let (code, out, err) =
            agentlog(&["statusline", "--json"], Some(bad.as_bytes()), home.path());
        assert_eq!(code, 2, "{bad:?}: {out} {err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["error"], "bad_input");
    }
}

/// The status line as a library call: the context, the session's and since-compaction totals
/// equal the oracle's (a plain forward scan), after each of several appends (caught up, or
/// folded in memory), and the JSON is the struct as it serializes.
#[test]
fn the_statusline_call_answers_as_the_oracle_after_every_append() {
    use agentlog::transcript::{StatusInput, StatusOptions, statusline};
    let dir = tempfile::tempdir().unwrap();
    for seed in 0..4u64 {
        let whole = generate::transcript(Format::ClaudeCode, 300 + seed, 150);
        let path = dir.path().join(format!("p/{seed}.jsonl"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let input = StatusInput {
            transcript_path: path.clone(),
            model_name: Some("Opus".to_owned()),
            ..StatusInput::default()
        };
        let options = StatusOptions {
            index_dir: Some(dir.path().join("cache")),
            now: None,
            timezone: None,
            prices: None,
        };
        let cuts = [whole.len() / 3, whole.len() / 2, whole.len()];
        for cut in cuts {
            let end = whole[..cut]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            std::fs::write(&path, &whole[..cut]).unwrap();
            let line = statusline(&input, &options).unwrap();
            let e = oracle::expected(Format::ClaudeCode, &whole[..end]);
            assert_eq!(line.context_tokens, e.context, "seed {seed} at {cut}");
            assert_eq!(line.session_total_tokens, e.lifetime.total);
            assert_eq!(
                Sum::of(&line.since_compaction.tally),
                *e.generations.last().unwrap()
            );
            assert_eq!(line.context_window, 200_000);
            let json = serde_json::to_value(&line).unwrap();
            assert_eq!(json["session_total_tokens"], e.lifetime.total);
            assert!(line.line().starts_with("Opus | ctx "));
        }
    }
}

#[test]
fn the_statusline_counts_today_from_the_first_call_on() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join(".claude/projects/p");
    std::fs::create_dir_all(&project).unwrap();
    let now = jiff::Timestamp::now().to_string();
    let line = |id: &str, tokens: u64| {
        serde_json::json!({
            "type": "assistant", "isSidechain": false, "timestamp": now, "requestId": format!("r{id}"),
            "message": {"id": id, "model": "claude-opus-4-6", "usage": {
                "input_tokens": tokens, "output_tokens": 1,
                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
        })
        .to_string()
            + "\n"
    };
    let main = project.join("a.jsonl");
    std::fs::write(&main, line("m1", 100)).unwrap();
    // Another session of the project written today, and one of another project: not counted.
    std::fs::write(project.join("b.jsonl"), line("m2", 1000)).unwrap();
    let elsewhere = home.path().join(".claude/projects/q");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("c.jsonl"), line("m3", 10_000)).unwrap();
    let input = serde_json::json!({"transcript_path": main}).to_string();
    for _ in 0..2 {
        let (code, out, err) = agentlog(
            &["statusline", "--json"],
            Some(input.as_bytes()),
            home.path(),
        );
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["today_total_tokens"], 101 + 1001, "{v}");
        assert_eq!(v["session_total_tokens"], 101);
        assert_eq!(v["context_tokens"], 100);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// pi entries spread at random over files, some copied into another file (or twice into
    /// one), some files starting with a copy of another's first lines (a resumed session):
    /// `usage` equals the oracle, building the indexes and then answered from them.
    #[test]
    fn pi_entries_spread_over_files_with_copies_count_as_the_oracle_says(
        seed in proptest::prelude::any::<u64>(),
        steps in 5usize..80,
        files in 1usize..5,
        placement in proptest::collection::vec((0usize..5, 0usize..5, 0u8..100), 200),
        resumes in proptest::collection::vec((0usize..5, 0usize..5, 0u16..1000), 0..3),
    ) {
        let bytes = generate::transcript(Format::Pi, seed, steps);
        let text = String::from_utf8(bytes).unwrap();
        let mut lines = text.lines();
        let header = lines.next().unwrap().to_owned();
        let mut spread: Vec<Vec<String>> = vec![Vec::new(); files];
        for (i, line) in lines.enumerate() {
            let (home, other, p) = placement[i % placement.len()];
            spread[home % files].push(line.to_owned());
            if p < 20 {
                spread[other % files].push(line.to_owned());
            }
        }
        for (from, to, fraction) in resumes {
            let (from, to) = (from % files, to % files);
            let k = spread[from].len() * usize::from(fraction) / 1000;
            let mut resumed = spread[from][..k].to_vec();
            resumed.append(&mut spread[to]);
            spread[to] = resumed;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut paths = Vec::new();
        let mut contents = Vec::new();
        for (k, body) in spread.iter().enumerate() {
            let mut file = header.clone() + "\n";
            for line in body {
                file.push_str(line);
                file.push('\n');
            }
            let path = dir.path().join(format!("f{k}.jsonl"));
            std::fs::write(&path, &file).unwrap();
            paths.push(std::fs::canonicalize(&path).unwrap());
            contents.push(file.into_bytes());
        }
        let slices: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
        let oracle = oracle::pi_files(&slices);
        let copies = pi_copies(&contents);
        let mut opts = options(&dir.path().join("cache"), GroupBy::Model);
        opts.open.format = Some(Format::Pi);
        for _ in 0..2 {
            let report = read(&paths, &opts);
            proptest::prop_assert!(report.skipped.is_empty(), "{:?}", report.skipped);
            proptest::prop_assert_eq!(report.cross_file_duplicates, copies);
            // Every field, the cost in exact units, and the messages.
            proptest::prop_assert_eq!(Sum::of(&report.totals), oracle.lifetime);
            let mut by_model: BTreeMap<String, Sum> = BTreeMap::new();
            for ((_, model), t) in &oracle.buckets {
                by_model.entry(model.clone().unwrap_or_else(|| "unknown".to_owned())).or_default().add(t);
            }
            by_model.retain(|_, v| !v.is_zero());
            proptest::prop_assert_eq!(observed(&report), by_model);
        }
    }
}

/// "Today" is a day of the status line's zone: the same transcript counts different messages
/// as today's in UTC and in New York, each as a plain reading of the timestamps says.
#[test]
fn the_statusline_today_is_a_day_of_its_zone() {
    use agentlog::transcript::{StatusInput, StatusOptions, statusline};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p/s.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let stamps = [
        ("2026-03-09T02:00:00Z", 1_000u64),
        ("2026-03-09T05:00:00Z", 20_000),
        ("2026-03-10T01:00:00Z", 300_000),
    ];
    let mut bytes = String::new();
    for (i, (at, tokens)) in stamps.iter().enumerate() {
        bytes += &serde_json::json!({
            "type": "assistant", "isSidechain": false, "timestamp": at, "requestId": format!("r{i}"),
            "message": {"id": format!("m{i}"), "model": "claude-opus-4-6", "usage": {
                "input_tokens": tokens, "output_tokens": 0,
                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
        })
        .to_string();
        bytes.push('\n');
    }
    std::fs::write(&path, bytes).unwrap();
    let now: jiff::Timestamp = "2026-03-10T03:00:00Z".parse().unwrap();
    let input = StatusInput {
        transcript_path: path.clone(),
        ..StatusInput::default()
    };
    for (zone, name) in [("UTC", "UTC"), ("America/New_York", "America/New_York")] {
        let tz = jiff::tz::TimeZone::get(zone).unwrap();
        // The oracle: a message is today's when its local date is now's local date.
        let today = tz.to_datetime(now).date();
        let expected: u64 = stamps
            .iter()
            .filter(|(at, _)| tz.to_datetime(at.parse().unwrap()).date() == today)
            .map(|(_, t)| t)
            .sum();
        let options = StatusOptions {
            index_dir: Some(dir.path().join("cache")),
            now: Some(now),
            timezone: Some(tz),
            prices: None,
        };
        let line = statusline(&input, &options).unwrap();
        assert_eq!(line.today_total_tokens, expected, "{zone}");
        assert_eq!(line.timezone, name);
        assert_eq!(line.session_total_tokens, 321_000);
    }
    // The two zones disagree here, so the test tells them apart.
    assert_ne!(
        jiff::tz::TimeZone::UTC.to_datetime(now).date(),
        jiff::tz::TimeZone::get("America/New_York")
            .unwrap()
            .to_datetime(now)
            .date()
    );
}
