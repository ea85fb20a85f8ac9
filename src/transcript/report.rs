//! The machine-readable answer for a transcript: the document `agentlog transcript --json`
//! prints and the Python binding returns. One definition, so the two cannot drift apart.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::{Transcript, WithSubagents};

/// The `agentlog transcript --json` document: the path and format, the boundaries, each
/// generation's usage, the usage since the latest compaction and over the lifetime (with the
/// subagents' when `subagents` is given), the index's outcome and details, and the diagnostics.
pub fn report(t: &Transcript, subagents: Option<&WithSubagents>) -> Value {
    let format = t.format;
    let s = &t.summary;
    let boundaries: Vec<Value> = s
        .boundaries
        .iter()
        .map(|b| {
            json!({
                "offset": b.offset,
                "line": b.line,
                "kind": b.kind.name(),
                "trigger": b.trigger,
                "pre_tokens": b.pre_tokens,
            })
        })
        .collect();
    let generations: Vec<Value> = s
        .generations
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let offset = i
                .checked_sub(1)
                .and_then(|b| s.boundaries.get(b))
                .map_or(0, |b| b.offset);
            json!({"offset": offset, "usage": g.to_json(format)})
        })
        .collect();
    let mut out = Map::new();
    out.insert("path".into(), display_path(&t.path).into());
    out.insert("format".into(), format.name().into());
    out.insert("boundaries".into(), boundaries.into());
    out.insert("generations".into(), generations.into());
    out.insert(
        "since_compaction".into(),
        s.since_compaction().to_json(format),
    );
    out.insert("lifetime".into(), s.lifetime.to_json(format));
    if let Some(found) = subagents {
        out.insert(
            "lifetime_with_subagents".into(),
            found.lifetime.to_json(format),
        );
        let files: Vec<Value> = found
            .subagents
            .iter()
            .map(|sub| match &sub.read {
                Ok(t) => json!({
                    "path": display_path(&sub.path),
                    "lifetime": t.summary.lifetime.to_json(format),
                    "index_outcome": t.outcome.code(),
                }),
                Err(e) => json!({"path": display_path(&sub.path), "error": e.to_string()}),
            })
            .collect();
        out.insert("subagents".into(), files.into());
    }
    out.insert("index_outcome".into(), t.outcome.code().into());
    out.insert(
        "index".into(),
        serde_json::to_value(&t.outcome).unwrap_or(Value::Null),
    );
    out.insert(
        "index_path".into(),
        t.index.as_deref().map(display_path).into(),
    );
    out.insert("covered_bytes".into(), t.coverage.end.into());
    out.insert("lines".into(), s.lines.into());
    out.insert("models".into(), s.models.clone().into());
    out.insert(
        "diagnostics".into(),
        serde_json::to_value(&s.diagnostics).unwrap_or(Value::Null),
    );
    Value::Object(out)
}

fn display_path(path: &Path) -> String {
    path.display().to_string()
}
