//! Transcripts (Claude Code, Codex, pi) as export sources, read back with the `parquet` crate's
//! reader: one event row per complete line, generations equal to the naive transcript oracle
//! and to `agentlog transcript --json`, through appends with torn tails, truncations,
//! rewrites, a Claude Code message whose winning line changes, and exports stopped at every
//! step. Nothing is written beside a transcript.
// Test figures (offsets, row counts) are far below 2^53, and Parquet keeps integers as i64,
// so the numeric casts are deliberate; a failing helper fails its test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss
)]

mod common;
mod export_support;
#[path = "common/transcript_fixtures.rs"]
mod fixtures;
#[path = "common/transcript_gen.rs"]
mod generate;
#[path = "common/transcript_oracle.rs"]
mod oracle;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentlog::export::{ExportError, ExportOptions, ExportReport, export};
use agentlog::transcript::Format;
use export_support::{Row, date_of, events_by_source, read_table, visible_files};
use parquet::record::Field;

const HOST: &str = "test-host";

/// A transcript in a projects-like tree of its own, an index directory and a dataset.
struct Setup {
    root: tempfile::TempDir,
    index: tempfile::TempDir,
    out: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            root: tempfile::tempdir().unwrap(),
            index: tempfile::tempdir().unwrap(),
            out: tempfile::tempdir().unwrap(),
        }
    }

    /// Writes `bytes` as `proj/<name>.jsonl` (or at a deeper relative path) and returns it.
    fn write(&self, relative: &str, bytes: &[u8]) -> PathBuf {
        let path = self.root.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn options(&self) -> ExportOptions {
        ExportOptions {
            host: HOST.to_owned(),
            transcript_index_dir: Some(self.index.path().to_path_buf()),
            ..ExportOptions::new(self.out.path())
        }
    }

    fn export(&self, sources: &[&Path]) -> ExportReport {
        let sources: Vec<PathBuf> = sources.iter().map(|p| p.to_path_buf()).collect();
        export(&sources, &self.options(), &mut |_| {}).expect("export")
    }
}

/// The complete lines of `bytes`: (offset, line without its newline).
fn complete_lines(bytes: &[u8]) -> Vec<(u64, &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = bytes[at..].iter().position(|&b| b == b'\n') {
        out.push((at as u64, &bytes[at..at + i]));
        at += i + 1;
    }
    out
}

fn complete_prefix(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    &bytes[..end]
}

/// (column, the format's name in `agentlog transcript --json`) of each figure a format has;
/// the token columns not listed are null for it.
fn figures(format: Format) -> &'static [(&'static str, &'static str)] {
    match format {
        Format::ClaudeCode => &[
            ("input_tokens", "input_tokens"),
            ("output_tokens", "output_tokens"),
            ("cached_tokens", "cache_read_input_tokens"),
            ("cache_write_tokens", "cache_creation_input_tokens"),
            ("total_tokens", "total_tokens"),
            ("api_calls", "messages"),
        ],
        Format::Codex => &[
            ("input_tokens", "input_tokens"),
            ("output_tokens", "output_tokens"),
            ("cached_tokens", "cached_input_tokens"),
            ("thinking_tokens", "reasoning_output_tokens"),
            ("total_tokens", "total_tokens"),
            ("api_calls", "usage_events"),
        ],
        Format::Pi => &[
            ("input_tokens", "input"),
            ("output_tokens", "output"),
            ("cached_tokens", "cacheRead"),
            ("cache_write_tokens", "cacheWrite"),
            ("total_tokens", "totalTokens"),
            ("api_calls", "messages"),
        ],
        Format::Copilot => &[
            ("input_tokens", "inputTokens"),
            ("output_tokens", "outputTokens"),
            ("cached_tokens", "cacheReadTokens"),
            ("thinking_tokens", "reasoningTokens"),
            ("cache_write_tokens", "cacheWriteTokens"),
            ("api_calls", "requests"),
        ],
        Format::Gemini => &[
            ("input_tokens", "input_and_tool"),
            ("output_tokens", "output_and_thoughts"),
            ("cached_tokens", "cached"),
            ("thinking_tokens", "thoughts"),
            ("total_tokens", "total"),
            ("api_calls", "messages"),
        ],
        Format::Qwen => &[
            ("input_tokens", "promptTokenCount"),
            ("output_tokens", "candidatesTokenCount"),
            ("cached_tokens", "cachedContentTokenCount"),
            ("thinking_tokens", "thoughtsTokenCount"),
            ("total_tokens", "totalTokenCount"),
            ("api_calls", "messages"),
        ],
        Format::OpenCode => unreachable!("the export reads line transcripts"),
        // Kimi Code records no total of its own.
        Format::Kimi => &[
            ("input_tokens", "inputOther"),
            ("output_tokens", "output"),
            ("cached_tokens", "inputCacheRead"),
            ("cache_write_tokens", "inputCacheCreation"),
            ("api_calls", "usage_records"),
        ],
    }
}

const TOKEN_COLUMNS: [&str; 6] = [
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "thinking_tokens",
    "cache_write_tokens",
    "total_tokens",
];

/// A generation's figures as `agentlog transcript --json` names them.
/// A generation's usage object as `agentlog transcript --json` writes it, from the oracle's
/// figures: only its `native` part (the format's own names), which the columns carry.
fn usage_json(format: Format, t: &oracle::Sum) -> serde_json::Value {
    let native = match format {
        Format::ClaudeCode => serde_json::json!({
            "input_tokens": t.input, "output_tokens": t.output,
            "cache_creation_input_tokens": t.cache_creation,
            "cache_read_input_tokens": t.cache_read, "total_tokens": t.total,
            "messages": t.messages,
        }),
        Format::Codex => serde_json::json!({
            "input_tokens": t.input + t.cache_read, "cached_input_tokens": t.cache_read,
            "output_tokens": t.output, "reasoning_output_tokens": t.reasoning,
            "total_tokens": t.total, "usage_events": t.messages,
        }),
        Format::Pi => serde_json::json!({
            "input": t.input, "output": t.output, "cacheRead": t.cache_read,
            "cacheWrite": t.cache_creation, "totalTokens": t.total,
            "cost_total": t.cost as f64 / 1e12, "messages": t.messages,
        }),
        Format::Copilot => serde_json::json!({
            "inputTokens": t.input + t.cache_read, "outputTokens": t.output,
            "cacheReadTokens": t.cache_read, "cacheWriteTokens": t.cache_creation,
            "reasoningTokens": t.reasoning, "requests": t.messages,
        }),
        Format::Gemini => serde_json::json!({
            "input_and_tool": t.input + t.cache_read, "cached": t.cache_read,
            "output_and_thoughts": t.output, "thoughts": t.reasoning,
            "total": t.total, "messages": t.messages,
        }),
        Format::Qwen => serde_json::json!({
            "promptTokenCount": t.input + t.cache_read, "candidatesTokenCount": t.output,
            "thoughtsTokenCount": t.reasoning, "cachedContentTokenCount": t.cache_read,
            "totalTokenCount": t.total, "messages": t.messages,
        }),
        Format::OpenCode => unreachable!("the export reads line transcripts"),
        Format::Kimi => serde_json::json!({
            "inputOther": t.input, "output": t.output, "inputCacheRead": t.cache_read,
            "inputCacheCreation": t.cache_creation, "usage_records": t.messages,
        }),
    };
    serde_json::json!({ "native": native })
}

/// Asserts the generations rows of `id` equal `usages` (one `agentlog transcript --json`
/// usage object per generation), figure for figure, and the absent figures are null.
fn assert_generation_figures(rows: &[Row], format: Format, usages: &[serde_json::Value], id: &str) {
    assert_eq!(rows.len(), usages.len(), "{id}: one row per generation");
    for (g, (row, usage)) in rows.iter().zip(usages).enumerate() {
        assert_eq!(row.int("generation"), Some(g as i64), "{id}");
        let listed = figures(format);
        for (column, name) in listed {
            let want = usage["native"][*name].as_i64();
            assert!(want.is_some(), "{id}: {name} in the usage object");
            assert_eq!(row.int(column), want, "{id} generation {g}: {column}");
        }
        for column in TOKEN_COLUMNS {
            if !listed.iter().any(|(c, _)| *c == column) {
                assert_eq!(
                    row.int(column),
                    None,
                    "{id}: {column} is null for {format:?}"
                );
            }
        }
        match (format, row.values.get("cost")) {
            (Format::Pi, Some(Field::Double(cost))) => {
                let want = usage["native"]["cost_total"].as_f64().unwrap();
                assert!(
                    (cost - want).abs() <= 1e-9 * want.abs().max(1.0),
                    "{id}: cost"
                );
            }
            (Format::Pi, other) => panic!("{id}: pi's cost column holds {other:?}"),
            (_, Some(Field::Null)) => {}
            (_, other) => panic!("{id}: cost should be null, is {other:?}"),
        }
    }
}

fn table_of(out: &Path, table: &str, id: &str) -> Vec<Row> {
    let mut rows: Vec<Row> = read_table(out, table)
        .into_iter()
        .filter(|r| r.text("source_id").as_deref() == Some(id))
        .collect();
    rows.sort_by_key(|r| r.int("generation"));
    rows
}

/// Asserts that the dataset holds exactly the complete lines of `bytes` as `id`'s event rows,
/// and generations equal to the naive oracle's, and one sessions row.
fn assert_exact(out: &Path, id: &str, format: Format, bytes: &[u8]) {
    let bytes = complete_prefix(bytes);
    let lines = complete_lines(bytes);
    let expected = oracle::expected(format, bytes);
    let by = events_by_source(out);
    let empty = Vec::new();
    let rows = by.get(id).unwrap_or(&empty);
    assert_eq!(rows.len(), lines.len(), "{id}: one row per complete line");
    let boundaries: Vec<u64> = expected.boundaries.iter().map(|b| b.0).collect();
    let mut per_generation: BTreeMap<i64, i64> = BTreeMap::new();
    for (i, (row, (offset, line))) in rows.iter().zip(&lines).enumerate() {
        let generation = boundaries.iter().filter(|&&b| b <= *offset).count() as i64;
        *per_generation.entry(generation).or_default() += 1;
        assert_eq!(row.source_kind, "transcript");
        assert_eq!(row.int("offset"), Some(*offset as i64), "{id} line {i}");
        assert_eq!(row.int("line"), Some(i as i64 + 1), "{id}");
        assert_eq!(row.int("seq"), Some(i as i64), "{id}");
        assert_eq!(row.int("generation"), Some(generation), "{id} at {offset}");
        assert_eq!(row.text("host").as_deref(), Some(HOST));
        assert_eq!(row.date, date_of(row.int("ts")), "{id}: date of ts");
        if let Some(json) = row.text("json") {
            assert_eq!(json.as_bytes(), *line, "{id}: the row's JSON is its line");
        }
    }
    let generations = table_of(out, "generations", id);
    let usages: Vec<serde_json::Value> = expected
        .generations
        .iter()
        .map(|t| usage_json(format, t))
        .collect();
    if lines.is_empty() {
        assert!(generations.is_empty(), "{id}: no lines, no generations");
    } else {
        assert_generation_figures(&generations, format, &usages, id);
        for (g, row) in generations.iter().enumerate() {
            let want = g.checked_sub(1).map(|b| boundaries[b] as i64);
            assert_eq!(row.int("boundary_offset"), want, "{id}: boundary of {g}");
            assert_eq!(
                row.int("events"),
                per_generation.get(&(g as i64)).copied().or(Some(0)),
                "{id}: lines in generation {g}"
            );
        }
    }
    let sessions = table_of(out, "sessions", id);
    assert_eq!(
        sessions.len(),
        usize::from(!lines.is_empty()),
        "{id}: sessions row"
    );
    if let Some(row) = sessions.first() {
        assert_eq!(row.text("format").as_deref(), Some(format.name()));
    }
}

/// Every event part file of the dataset with its bytes.
fn event_parts(out: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    visible_files(out, "events")
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

/// The files under `dir`, by relative path, with their bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(
                    path.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&path).unwrap(),
                );
            }
        }
    }
    out
}

/// A cut inside the line that holds byte `at`, so the file ends torn.
fn torn_cut(bytes: &[u8], at: usize) -> usize {
    let at = at.min(bytes.len());
    match bytes[..at].iter().rposition(|&b| b == b'\n') {
        Some(i) if i + 2 < bytes.len() => i + 2,
        _ => at,
    }
}

/// Exports `bytes` in growing prefixes (each ending torn), then truncated, then rewritten
/// with `other`: exact after every export, event parts never rewritten by an incremental one.
fn grow_truncate_rewrite(format: Format, bytes: &[u8], other: &[u8], name: &str) {
    let setup = Setup::new();
    let cuts = [bytes.len() / 3, bytes.len() * 2 / 3, bytes.len()];
    let path = setup.write(name, &bytes[..torn_cut(bytes, cuts[0])]);
    let id = Path::new(name)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let before = tree(setup.root.path());
    let mut previous: BTreeMap<PathBuf, Vec<u8>> = BTreeMap::new();
    for (round, cut) in cuts.iter().enumerate() {
        let cut = if round + 1 == cuts.len() {
            *cut
        } else {
            torn_cut(bytes, *cut)
        };
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let report = setup.export(&[&path]);
        let action = report.sources[0].action;
        assert_eq!(
            action,
            if round == 0 { "first" } else { "incremental" },
            "{name}: {:?}",
            report.sources[0].reason
        );
        assert_eq!(report.sources[0].kind, "transcript");
        assert_exact(setup.out.path(), &id, format, &bytes[..cut]);
        let parts = event_parts(setup.out.path());
        for (part, content) in &previous {
            assert_eq!(
                parts.get(part),
                Some(content),
                "{name}: {} rewritten",
                part.display()
            );
        }
        previous = parts;
    }
    let again = setup.export(&[&path]);
    assert_eq!(
        again.sources[0].action, "unchanged",
        "{:?}",
        again.sources[0].reason
    );
    assert_eq!(again.files, 0);

    let short = complete_prefix(&bytes[..bytes.len() / 4]).len();
    std::fs::write(&path, &bytes[..short]).unwrap();
    let report = setup.export(&[&path]);
    assert_eq!(report.sources[0].action, "reexported", "{name}: truncated");
    assert_exact(setup.out.path(), &id, format, &bytes[..short]);

    std::fs::write(&path, other).unwrap();
    let report = setup.export(&[&path]);
    assert_eq!(report.sources[0].action, "reexported", "{name}: rewritten");
    assert_exact(setup.out.path(), &id, format, other);

    // The transcript's directory holds what the agent wrote there, nothing of ours.
    let after = tree(setup.root.path());
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>(),
        "nothing written beside the transcript"
    );
}

#[test]
fn generated_transcripts_of_every_format_grow_shrink_and_are_rewritten_exactly() {
    for (format, seed) in [
        (Format::ClaudeCode, 11),
        (Format::Codex, 12),
        (Format::Pi, 13),
        (Format::Kimi, 14),
    ] {
        let bytes = generate::transcript(format, seed, 160);
        let other = generate::transcript(format, seed + 100, 90);
        grow_truncate_rewrite(format, &bytes, &other, "proj/generated.jsonl");
    }
}

#[test]
fn vendored_transcripts_grow_shrink_and_are_rewritten_exactly() {
    let dir = fixtures::data_dir();
    for (format, file, other) in [
        (
            Format::ClaudeCode,
            "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
            "claude-code/agentlogs-compact.jsonl",
        ),
        (
            Format::Codex,
            "codex/rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl",
            "codex/agentlogs-crud.jsonl",
        ),
        (
            Format::Pi,
            "pi/agentlogs-branched.jsonl",
            "pi/agentlogs-crud.jsonl",
        ),
        (
            Format::Kimi,
            "kimi/assistant_tools.jsonl",
            "kimi/subagent_agent-0.jsonl",
        ),
    ] {
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let other = std::fs::read(dir.join(other)).unwrap();
        grow_truncate_rewrite(format, &bytes, &other, "proj/vendored.jsonl");
    }
}

#[test]
fn a_directory_exports_every_transcript_under_it_and_matches_the_cli() {
    let setup = Setup::new();
    let data = fixtures::data_dir();
    let mut copied = Vec::new();
    for (path, format) in fixtures::all() {
        let relative = path.strip_prefix(&data).unwrap().to_path_buf();
        let to = setup.write(relative.to_str().unwrap(), &std::fs::read(&path).unwrap());
        copied.push((to, format));
    }
    setup.write("notes/README.jsonl", b"{\"hello\": 1}\n");
    let report = setup.export(&[setup.root.path()]);
    assert_eq!(
        report.sources.len(),
        copied.len(),
        "every transcript, and only those"
    );
    let sessions = read_table(setup.out.path(), "sessions");
    assert_eq!(sessions.len(), copied.len());
    for (path, format) in &copied {
        let canonical = std::fs::canonicalize(path).unwrap();
        let source = report
            .sources
            .iter()
            .find(|s| s.log == canonical)
            .expect("exported");
        let id = &source.source_id;
        let session = sessions
            .iter()
            .find(|r| r.text("path").as_deref() == Some(canonical.to_str().unwrap()))
            .expect("its sessions row");
        assert_eq!(session.text("source_id").as_deref(), Some(id.as_str()));
        let subagent = path.parent().unwrap().ends_with("subagents");
        assert_eq!(
            session.text("origin").as_deref(),
            subagent.then_some("subagent")
        );
        // Per-generation figures equal `agentlog transcript FILE --json`.
        let index = setup.index.path().to_str().unwrap();
        let output = common::agentlog(&[
            "transcript",
            canonical.to_str().unwrap(),
            "--json",
            "--index-dir",
            index,
        ]);
        let answer = common::json(&output);
        let usages: Vec<serde_json::Value> = answer["generations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["usage"].clone())
            .collect();
        // Ids of different files may coincide (one stem in two formats' directories): the
        // source key in the file names tells them apart.
        let key = key_of(source);
        let mut rows: Vec<Row> = read_table(setup.out.path(), "generations")
            .into_iter()
            .filter(|r| has_key(r, &key))
            .collect();
        rows.sort_by_key(|r| r.int("generation"));
        assert_generation_figures(&rows, *format, &usages, id);
        let count = read_table(setup.out.path(), "events")
            .iter()
            .filter(|r| has_key(r, &key))
            .count() as u64;
        assert_eq!(
            count,
            answer["lines"].as_u64().unwrap(),
            "{id}: rows = lines"
        );
    }
}

/// The source key in the names of a source's files.
fn key_of(source: &agentlog::export::SourceReport) -> String {
    let name = source.files[0]
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    name[HOST.len() + 1..HOST.len() + 17].to_owned()
}

fn has_key(row: &Row, key: &str) -> bool {
    row.file
        .file_name()
        .unwrap()
        .to_string_lossy()
        .contains(key)
}

fn claude_line(uuid: &str, fields: &serde_json::Value) -> String {
    let mut line = serde_json::json!({
        "parentUuid": null,
        "isSidechain": false,
        "sessionId": "s1",
        "uuid": uuid,
        "cwd": "/work/project",
    });
    for (k, v) in fields.as_object().unwrap() {
        line[k] = v.clone();
    }
    line.to_string() + "\n"
}

fn assistant(uuid: &str, ts: &str, output: u64) -> String {
    claude_line(
        uuid,
        &serde_json::json!({
            "type": "assistant",
            "timestamp": ts,
            "requestId": "req_1",
            "message": {"id": "msg_1", "model": "m", "role": "assistant",
                "usage": {"input_tokens": 10, "output_tokens": output,
                          "cache_creation_input_tokens": 3, "cache_read_input_tokens": 100}},
        }),
    )
}

#[test]
fn a_message_whose_winning_line_changes_rewrites_its_generation_not_the_event_parts() {
    let setup = Setup::new();
    let mut bytes = claude_line(
        "u1",
        &serde_json::json!({"type": "user", "timestamp": "2026-03-01T10:00:00Z",
                             "message": {"role": "user", "content": "hi"}}),
    );
    bytes += &assistant("a1", "2026-03-01T10:00:01Z", 1);
    let path = setup.write("proj/s1.jsonl", bytes.as_bytes());
    setup.export(&[&path]);
    assert_exact(setup.out.path(), "s1", Format::ClaudeCode, bytes.as_bytes());
    let first_generations = visible_files(setup.out.path(), "generations");
    let parts = event_parts(setup.out.path());

    // The same message streamed on: its later line carries the larger usage and wins.
    let mut grown = bytes.clone();
    grown += &assistant("a2", "2026-03-01T10:00:02Z", 50);
    std::fs::write(&path, &grown).unwrap();
    let report = setup.export(&[&path]);
    assert_eq!(report.sources[0].action, "incremental");
    assert_exact(setup.out.path(), "s1", Format::ClaudeCode, grown.as_bytes());
    let generations = table_of(setup.out.path(), "generations", "s1");
    assert_eq!(generations.len(), 1);
    assert_eq!(
        generations[0].int("output_tokens"),
        Some(50),
        "the larger usage wins"
    );
    assert_eq!(generations[0].int("api_calls"), Some(1), "one message");
    let now = visible_files(setup.out.path(), "generations");
    assert_eq!(
        now.len(),
        1,
        "the generations file was replaced, not added to"
    );
    assert_ne!(now, first_generations);
    let after = event_parts(setup.out.path());
    for (part, content) in &parts {
        assert_eq!(
            after.get(part),
            Some(content),
            "event parts are never rewritten"
        );
    }
    // Each line's own usage and message keys are in its row.
    let rows = &events_by_source(setup.out.path())["s1"];
    let outputs: Vec<Option<i64>> = rows.iter().map(|r| r.int("output_tokens")).collect();
    assert_eq!(outputs, [None, Some(1), Some(50)]);
    assert_eq!(rows[2].text("message_id").as_deref(), Some("msg_1"));
    assert_eq!(rows[2].text("request_id").as_deref(), Some("req_1"));
    assert_eq!(rows[2].int("cached_tokens"), Some(100));
    assert_eq!(rows[2].int("cache_write_tokens"), Some(3));
    assert_eq!(rows[0].text("type").as_deref(), Some("user"));

    // A compaction opens generation 1; the new generation's rows and figures follow it.
    let mut compacted = grown.clone();
    compacted += &claude_line(
        "b1",
        &serde_json::json!({"type": "system", "subtype": "compact_boundary",
            "timestamp": "2026-03-02T09:00:00Z",
            "compactMetadata": {"trigger": "manual", "preTokens": 1234}}),
    );
    compacted += &claude_line(
        "a3",
        &serde_json::json!({"type": "assistant", "timestamp": "2026-03-02T09:00:05Z",
            "requestId": "req_2",
            "message": {"id": "msg_2", "model": "m", "role": "assistant",
                "usage": {"input_tokens": 7, "output_tokens": 8}}}),
    );
    std::fs::write(&path, &compacted).unwrap();
    setup.export(&[&path]);
    assert_exact(
        setup.out.path(),
        "s1",
        Format::ClaudeCode,
        compacted.as_bytes(),
    );
    let generations = table_of(setup.out.path(), "generations", "s1");
    assert_eq!(generations.len(), 2);
    assert_eq!(
        generations[1].text("boundary_initiator").as_deref(),
        Some("manual")
    );
    assert_eq!(
        generations[1].text("boundary_kind").as_deref(),
        Some("compact_boundary")
    );
    assert_eq!(generations[1].int("before_tokens"), Some(1234));
    assert_eq!(generations[1].date, "2026-03-02");
    let session = &table_of(setup.out.path(), "sessions", "s1")[0];
    assert_eq!(session.text("cwd").as_deref(), Some("/work/project"));
    assert_eq!(session.text("project").as_deref(), Some("proj"));
    assert_eq!(session.date, "2026-03-01");
    assert_eq!(session.int("last_ts"), Some(1_772_442_005_000_000));
}

#[test]
fn an_export_stopped_at_each_step_shows_no_row_twice_and_the_next_is_exact() {
    let bytes = generate::transcript(Format::ClaudeCode, 21, 200);
    let cut = torn_cut(&bytes, bytes.len() / 2);
    let setup = Setup::new();
    let path = setup.write("proj/stopped.jsonl", &bytes[..cut]);
    setup.export(&[&path]);
    std::fs::write(&path, &bytes).unwrap();
    let mut step = 1;
    loop {
        let mut options = setup.options();
        options.fail_at_step = Some(step);
        match export(std::slice::from_ref(&path), &options, &mut |_| {}) {
            Err(ExportError::Interrupted { .. }) => {}
            Ok(_) => break,
            Err(e) => panic!("step {step}: {e}"),
        }
        let offsets: Vec<i64> = events_by_source(setup.out.path())
            .values()
            .flatten()
            .map(|r| r.int("offset").unwrap())
            .collect();
        let mut unique = offsets.clone();
        unique.dedup();
        assert_eq!(offsets, unique, "step {step}: a row is visible twice");
        let generations = read_table(setup.out.path(), "generations");
        let mut numbers: Vec<i64> = generations
            .iter()
            .map(|r| r.int("generation").unwrap())
            .collect();
        numbers.sort_unstable();
        numbers.dedup();
        assert_eq!(
            numbers.len(),
            generations.len(),
            "step {step}: a generation twice"
        );
        step += 1;
    }
    assert!(step > 3, "the export took {step} steps");
    assert_exact(setup.out.path(), "stopped", Format::ClaudeCode, &bytes);
}

#[test]
fn files_that_are_no_transcripts_are_refused_and_empty_ones_wait() {
    let setup = Setup::new();
    let other = setup.write("x/data.jsonl", b"{\"a\": 1}\n[2]\n");
    match export(&[other], &setup.options(), &mut |_| {}) {
        Err(ExportError::NotASource { .. }) => {}
        other => panic!("{other:?}"),
    }
    let only_others = tempfile::tempdir().unwrap();
    std::fs::write(only_others.path().join("a.jsonl"), b"not json\n").unwrap();
    match export(
        &[only_others.path().to_path_buf()],
        &setup.options(),
        &mut |_| {},
    ) {
        Err(ExportError::NotASource { .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(visible_files(setup.out.path(), "events").is_empty());

    // A transcript with no complete line yet is a transcript with nothing to export.
    let bytes = generate::transcript(Format::Pi, 5, 30);
    let first_newline = bytes.iter().position(|&b| b == b'\n').unwrap();
    let path = setup.write("p/empty.jsonl", &bytes[..first_newline]);
    let report = setup.export(&[&path]);
    assert_eq!(report.rows, 0);
    assert_exact(
        setup.out.path(),
        "empty",
        Format::Pi,
        &bytes[..first_newline],
    );
    std::fs::write(&path, &bytes).unwrap();
    setup.export(&[&path]);
    assert_exact(setup.out.path(), "empty", Format::Pi, &bytes);
}

#[test]
fn subagent_files_are_sources_of_their_own() {
    let setup = Setup::new();
    let main = generate::transcript(Format::ClaudeCode, 31, 40);
    let sub = generate::transcript(Format::ClaudeCode, 32, 20);
    setup.write("proj/sess.jsonl", &main);
    setup.write("proj/sess/subagents/agent-1.jsonl", &sub);
    let report = setup.export(&[setup.root.path()]);
    let mut ids: Vec<&str> = report
        .sources
        .iter()
        .map(|s| s.source_id.as_str())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["sess", "sess/agent-1"]);
    assert_exact(setup.out.path(), "sess", Format::ClaudeCode, &main);
    assert_exact(setup.out.path(), "sess/agent-1", Format::ClaudeCode, &sub);
    let session = &table_of(setup.out.path(), "sessions", "sess/agent-1")[0];
    assert_eq!(session.text("parent_session").as_deref(), Some("sess"));
    assert_eq!(session.text("origin").as_deref(), Some("subagent"));
}

#[derive(Clone, Debug)]
enum Op {
    /// The transcript grows by this share (per mille) of the full one, often to a torn line.
    Grow {
        per_mille: u16,
    },
    /// Cut back to this share of what it holds (the agent rewrote it shorter).
    Truncate {
        keep_percent: u8,
    },
    /// Replaced by another transcript's start, as long as it was.
    Rewrite {
        seed: u64,
    },
    Export,
    ExportStopped {
        step: u64,
    },
    Compact,
    DeleteState,
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    prop_oneof![
        4 => (1u16..400).prop_map(|per_mille| Op::Grow { per_mille }),
        1 => (0u8..100).prop_map(|keep_percent| Op::Truncate { keep_percent }),
        1 => any::<u64>().prop_map(|seed| Op::Rewrite { seed }),
        3 => Just(Op::Export),
        2 => (1u64..10).prop_map(|step| Op::ExportStopped { step }),
        1 => Just(Op::Compact),
        1 => Just(Op::DeleteState),
    ]
}

fn format_of(k: u8) -> Format {
    match k % 3 {
        0 => Format::ClaudeCode,
        1 => Format::Codex,
        _ => Format::Pi,
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 24,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Random sequences of growth (torn lines included), truncations, rewrites, exports (some
    /// stopped part way), compactions and lost states: after each export that finishes, the
    /// dataset is exactly the transcript's complete lines and the oracle's generations; after
    /// a stopped one, no row is visible twice.
    #[test]
    fn random_histories_of_a_transcript_export_exactly(
        format in 0u8..3,
        seed in 0u64..1000,
        ops in proptest::collection::vec(op(), 1..14),
    ) {
        let format = format_of(format);
        let full = generate::transcript(format, seed, 120);
        let setup = Setup::new();
        let path = setup.write("proj/prop.jsonl", b"");
        let mut now: Vec<u8> = Vec::new();
        let mut grown = 0usize;
        let mut exported_clean = true;
        for op in ops {
            match op {
                Op::Grow { per_mille } => {
                    grown = (grown + full.len() * usize::from(per_mille) / 1000).min(full.len());
                    now = full[..grown].to_vec();
                }
                Op::Truncate { keep_percent } => {
                    let keep = now.len() * usize::from(keep_percent) / 100;
                    now.truncate(keep);
                    grown = grown.min(keep);
                }
                Op::Rewrite { seed } => {
                    let mut other = generate::transcript(format, seed, 120);
                    other.truncate(now.len());
                    now = other;
                    grown = 0;
                }
                Op::Export => {
                    setup.export(&[&path]);
                    assert_exact(setup.out.path(), "prop", format, &now);
                    exported_clean = true;
                }
                Op::ExportStopped { step } => {
                    let mut options = setup.options();
                    options.fail_at_step = Some(step);
                    match export(std::slice::from_ref(&path), &options, &mut |_| {}) {
                        Ok(_) => exported_clean = true,
                        Err(ExportError::Interrupted { .. }) => exported_clean = false,
                        Err(e) => panic!("{e}"),
                    }
                    let mut offsets: Vec<i64> = read_table(setup.out.path(), "events")
                        .iter()
                        .map(|r| r.int("offset").unwrap())
                        .collect();
                    let total = offsets.len();
                    offsets.sort_unstable();
                    offsets.dedup();
                    proptest::prop_assert_eq!(offsets.len(), total, "a row visible twice");
                }
                Op::Compact => {
                    // Compaction merges what a finished export committed.
                    if exported_clean {
                        agentlog::export::compact(std::slice::from_ref(&path), &setup.options())
                            .expect("compact");
                    }
                }
                Op::DeleteState => {
                    let dir = setup.out.path().join("_agentlog").join(HOST);
                    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                        if entry.path().extension().is_some_and(|e| e == "state") {
                            std::fs::remove_file(entry.path()).unwrap();
                        }
                    }
                }
            }
            if std::fs::read(&path).unwrap() != now {
                std::fs::write(&path, &now).unwrap();
            }
        }
        setup.export(&[&path]);
        assert_exact(setup.out.path(), "prop", format, &now);
    }
}

#[test]
fn boundaries_that_differ_from_those_exported_start_the_transcript_over() {
    use agentlog::export::SourceState;
    let bytes = generate::transcript(Format::ClaudeCode, 41, 150);
    let cut = complete_prefix(&bytes[..bytes.len() / 2]).len();
    let setup = Setup::new();
    let path = setup.write("proj/moved.jsonl", &bytes[..cut]);
    setup.export(&[&path]);
    // A state whose generations say a boundary sat elsewhere (as a build with other reader
    // rules would have exported): the rows before the resume point cannot be continued.
    let dir = setup.out.path().join("_agentlog").join(HOST);
    let state_path = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "state"))
        .unwrap();
    let mut state = SourceState::decode(&std::fs::read(&state_path).unwrap()).unwrap();
    let next = state.generations.len() as u64;
    state
        .generations
        .push(agentlog::export::ExportedGeneration {
            generation: next,
            boundary_offset: Some(1),
            boundary_initiator: "auto".to_owned(),
            ..agentlog::export::ExportedGeneration::default()
        });
    state.fold.boundaries += 1;
    std::fs::write(&state_path, state.encode()).unwrap();
    std::fs::write(&path, &bytes).unwrap();
    let report = setup.export(&[&path]);
    assert_eq!(report.sources[0].action, "reexported");
    assert!(
        report.sources[0]
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("boundaries")),
        "{:?}",
        report.sources[0].reason
    );
    assert_exact(setup.out.path(), "moved", Format::ClaudeCode, &bytes);
}
