//! The oracle's Gemini CLI and Qwen Code rules, read as plainly as docs/TRANSCRIPTS.md says
//! them: Gemini, the last record of an id with tokens counts (in the generation of the id's
//! first record), a `$set` of `messages` is a boundary; Qwen, each assistant record's
//! `usageMetadata` once per `uuid`, a `chat_compression` record a boundary.

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;

use super::{Acc, Expected, Sum, count, lines, n, quarter, text};

/// A Gemini record's tokens: input without the cached part plus the tool prompt, cache read,
/// output with the thoughts, the thoughts; the total as the four parts add up.
fn gemini_sum(t: &Value) -> Sum {
    let [input, output, cached, thoughts, tool] =
        ["input", "output", "cached", "thoughts", "tool"].map(|k| n(t.get(k)));
    let cached = cached.min(input);
    Sum::message(
        [
            input - cached + tool,
            output + thoughts,
            0,
            cached,
            thoughts,
            0,
        ],
        input + tool + output + thoughts,
        0,
    )
}

/// A counted record: the generation of its id's first record, its bucket and its sum.
type Counted = (usize, (i64, Option<String>), Sum);

/// One Gemini CLI transcript (JSONL).
pub fn gemini(bytes: &[u8]) -> Expected {
    let mut acc = Acc::new();
    // id -> its last record (in the generation of its first).
    let mut by_id: BTreeMap<String, Counted> = BTreeMap::new();
    let mut unkeyed: Vec<Counted> = Vec::new();
    for (offset, line, v) in lines(bytes) {
        let Some(v) = v else { continue };
        if let Some(set) = v.get("$set").filter(|s| s.is_object()) {
            if set.get("messages").is_some() {
                acc.boundary(offset, line, "history_rewrite", None, None);
            }
            continue;
        }
        if v.get("type").and_then(Value::as_str) != Some("gemini") {
            continue;
        }
        let Some(t) = v.get("tokens").filter(|t| t.is_object()) else {
            continue;
        };
        let sum = gemini_sum(t);
        acc.context = Some(sum.input + sum.cache_read);
        let bucket = (quarter(v.get("timestamp")), text(v.get("model")));
        let generation = acc.boundaries.len();
        match text(v.get("id")) {
            Some(id) => {
                let first = by_id.get(&id).map_or(generation, |e| e.0);
                by_id.insert(id, (first, bucket, sum));
            }
            None => unkeyed.push((generation, bucket, sum)),
        }
    }
    for (generation, bucket, sum) in by_id.into_values().chain(unkeyed) {
        acc.add(generation, bucket, sum);
    }
    acc.done()
}

/// One Qwen Code transcript.
pub fn qwen(bytes: &[u8]) -> Expected {
    let mut acc = Acc::new();
    let mut seen: HashSet<String> = HashSet::new();
    for (offset, line, v) in lines(bytes) {
        let Some(v) = v else { continue };
        let uuid = text(v.get("uuid"));
        match v.get("type").and_then(Value::as_str) {
            Some("system")
                if v.get("subtype").and_then(Value::as_str) == Some("chat_compression") =>
            {
                if uuid.is_some_and(|u| !seen.insert(u)) {
                    continue;
                }
                let pre = v
                    .get("systemPayload")
                    .and_then(|p| p.get("info"))
                    .and_then(|i| count(i.get("originalTokenCount")));
                acc.boundary(offset, line, "chat_compression", None, pre);
            }
            Some("assistant") => {
                let Some(u) = v.get("usageMetadata").filter(|u| u.is_object()) else {
                    continue;
                };
                if uuid.is_some_and(|u| !seen.insert(u)) {
                    continue;
                }
                let prompt = n(u.get("promptTokenCount"));
                let cached = n(u.get("cachedContentTokenCount")).min(prompt);
                let candidates = n(u.get("candidatesTokenCount"));
                let thoughts = n(u.get("thoughtsTokenCount"));
                // Thoughts are inside the candidates, unless the total counts them apart.
                let apart = thoughts > 0
                    && count(u.get("totalTokenCount")) == Some(prompt + candidates + thoughts);
                let output = if apart {
                    candidates + thoughts
                } else {
                    candidates
                };
                let sum = Sum::message(
                    [prompt - cached, output, 0, cached, thoughts.min(output), 0],
                    prompt + output,
                    0,
                );
                acc.context = Some(prompt);
                let bucket = (quarter(v.get("timestamp")), text(v.get("model")));
                let generation = acc.boundaries.len();
                acc.add(generation, bucket, sum);
            }
            _ => {}
        }
    }
    acc.done()
}
