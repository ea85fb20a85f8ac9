//! The machine-readable answer for a transcript: the document `agentlog transcript --json`
//! prints and the Python binding returns. One definition, so the two cannot drift apart:
//! [`report`] builds it as a value, [`write_report`] writes the same bytes straight out (its
//! size grows with the number of boundaries, and building it first cost most of a warm call).

use std::path::Path;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value, json};

use super::format::Format;
use super::tally::Tally;
use super::{Boundary, Transcript, WithSubagents};

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

/// Writes the [`report`] document to `out`, the same bytes `serde_json::to_writer` writes for
/// it (keys in sorted order, as a [`Value`] holds them), without building it first.
pub fn write_report<W: std::io::Write>(
    t: &Transcript,
    subagents: Option<&WithSubagents>,
    out: W,
) -> serde_json::Result<()> {
    serde_json::to_writer(out, &Document { t, subagents })
}

/// The document, its keys written in sorted order.
struct Document<'a> {
    t: &'a Transcript,
    subagents: Option<&'a WithSubagents>,
}

impl Serialize for Document<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let t = self.t;
        let (s, format) = (&t.summary, t.format);
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("boundaries", &Boundaries(&s.boundaries))?;
        map.serialize_entry("covered_bytes", &t.coverage.end)?;
        // Small and fixed in size: as a value, whose keys come out sorted.
        map.serialize_entry(
            "diagnostics",
            &serde_json::to_value(&s.diagnostics).unwrap_or(Value::Null),
        )?;
        map.serialize_entry("format", format.name())?;
        map.serialize_entry("generations", &Generations(t))?;
        map.serialize_entry(
            "index",
            &serde_json::to_value(&t.outcome).unwrap_or(Value::Null),
        )?;
        map.serialize_entry("index_outcome", t.outcome.code())?;
        map.serialize_entry("index_path", &t.index.as_deref().map(display_path))?;
        map.serialize_entry("lifetime", &Usage(format, &s.lifetime))?;
        if let Some(found) = self.subagents {
            map.serialize_entry("lifetime_with_subagents", &Usage(format, &found.lifetime))?;
        }
        map.serialize_entry("lines", &s.lines)?;
        map.serialize_entry("models", &s.models)?;
        map.serialize_entry("path", &display_path(&t.path))?;
        map.serialize_entry("since_compaction", &Usage(format, &s.since_compaction()))?;
        if let Some(found) = self.subagents {
            // A handful of files: built as values, as `report` does.
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
            map.serialize_entry("subagents", &files)?;
        }
        map.end()
    }
}

struct Boundaries<'a>(&'a [Boundary]);

impl Serialize for Boundaries<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for b in self.0 {
            seq.serialize_element(&BoundaryObject(b))?;
        }
        seq.end()
    }
}

struct BoundaryObject<'a>(&'a Boundary);

impl Serialize for BoundaryObject<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let b = self.0;
        let mut map = serializer.serialize_map(Some(5))?;
        map.serialize_entry("kind", b.kind.name())?;
        map.serialize_entry("line", &b.line)?;
        map.serialize_entry("offset", &b.offset)?;
        map.serialize_entry("pre_tokens", &b.pre_tokens)?;
        map.serialize_entry("trigger", &b.trigger)?;
        map.end()
    }
}

struct Generations<'a>(&'a Transcript);

impl Serialize for Generations<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let s = &self.0.summary;
        let mut seq = serializer.serialize_seq(Some(s.generations.len()))?;
        for (i, g) in s.generations.iter().enumerate() {
            let offset = i
                .checked_sub(1)
                .and_then(|b| s.boundaries.get(b))
                .map_or(0, |b| b.offset);
            seq.serialize_element(&GenerationObject(offset, Usage(self.0.format, g)))?;
        }
        seq.end()
    }
}

struct GenerationObject<'a>(u64, Usage<'a>);

impl Serialize for GenerationObject<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("offset", &self.0)?;
        map.serialize_entry("usage", &self.1)?;
        map.end()
    }
}

/// A tally in its format's own field names ([`Tally::to_json`]), keys in sorted order.
struct Usage<'a>(Format, &'a Tally);

/// Where a usage field's value comes from.
#[derive(Clone, Copy)]
enum Slot {
    Token(usize),
    Cost,
    Events,
}

/// Each format's usage fields ([`Tally::fields`]) in sorted order.
fn sorted_fields(format: Format) -> &'static [(&'static str, Slot)] {
    use Slot::{Cost, Events, Token};
    match format {
        Format::ClaudeCode => &[
            ("cache_creation_input_tokens", Token(2)),
            ("cache_read_input_tokens", Token(3)),
            ("input_tokens", Token(0)),
            ("messages", Events),
            ("output_tokens", Token(1)),
            ("total_tokens", Token(4)),
        ],
        Format::Codex => &[
            ("cached_input_tokens", Token(1)),
            ("input_tokens", Token(0)),
            ("output_tokens", Token(2)),
            ("reasoning_output_tokens", Token(3)),
            ("total_tokens", Token(4)),
            ("usage_events", Events),
        ],
        Format::Pi => &[
            ("cacheRead", Token(2)),
            ("cacheWrite", Token(3)),
            ("cost_total", Cost),
            ("input", Token(0)),
            ("messages", Events),
            ("output", Token(1)),
            ("totalTokens", Token(4)),
        ],
    }
}

impl Serialize for Usage<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (format, tally) = (self.0, self.1);
        let fields = sorted_fields(format);
        let mut map = serializer.serialize_map(Some(fields.len()))?;
        for (name, slot) in fields {
            match slot {
                Slot::Token(i) => {
                    map.serialize_entry(name, &tally.tokens.get(*i).copied().unwrap_or(0))?;
                }
                // As a value does: a number that is not finite is null.
                Slot::Cost => map.serialize_entry(name, &Value::from(tally.cost))?,
                Slot::Events => map.serialize_entry(name, &tally.events)?,
            }
        }
        map.end()
    }
}
